"""`manage.py import_traces PATH... [--project NAME] [--reward-score NAME]`: import trace files and
folders, one report line per file, then the import's notes ("note: ..."; a reward score no trace has)."""

from django.core.management.base import BaseCommand, CommandError

from swarmscope.importers import SourceFile
from swarmscope.importers.files import iter_files
from swarmscope.importers.scores import reward_score_name
from webapp.accounts.services import DEFAULT_PROJECT, do_get_or_create_project
from webapp.traces.ingest import check_reward_score, do_import_sources


class Command(BaseCommand):
    help = "Import orchestration traces (any supported format, detected by content) from files and folders."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--project", default=DEFAULT_PROJECT, help="project name (created if absent)")
        parser.add_argument(
            "--reward-score",
            metavar="NAME",
            help="the evaluation score (a Langfuse score, an OpenTelemetry gen_ai.evaluation.name) that is each "
            "trace's reward; default: the project's reward score setting, else a score named 'reward'. "
            "Other scores stay labels.",
        )

    def handle(self, *args, paths, project, reward_score=None, **options):
        try:
            reward_score = reward_score_name(reward_score, "--reward-score")
            files = list(iter_files(paths))
        except (FileNotFoundError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        target = do_get_or_create_project(project)
        outcomes = do_import_sources(
            target, [SourceFile(name=str(p), data=p.read_bytes()) for p in files], reward_score=reward_score
        )
        failed = 0
        for outcome in outcomes:
            failed += bool(outcome.error)
            for line in outcome.lines:
                (self.stderr if outcome.error else self.stdout).write(line)
        for note in check_reward_score(target, outcomes, reward_score):
            self.stdout.write(f"note: {note}")
        if failed:
            raise CommandError(f"{failed} of {len(outcomes)} files failed")
