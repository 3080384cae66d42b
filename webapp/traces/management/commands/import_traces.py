"""`manage.py import_traces PATH...`: import trace files and folders, one report line per file."""

from django.core.management.base import BaseCommand, CommandError

from swarmscope.importers import SourceFile
from swarmscope.importers.files import iter_files
from webapp.accounts.services import DEFAULT_PROJECT, do_get_or_create_project
from webapp.traces.ingest import do_import_sources


class Command(BaseCommand):
    help = "Import orchestration traces (any supported format, detected by content) from files and folders."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--project", default=DEFAULT_PROJECT, help="project name (created if absent)")

    def handle(self, *args, paths, project, **options):
        try:
            files = list(iter_files(paths))
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from None
        outcomes = do_import_sources(
            do_get_or_create_project(project), [SourceFile(name=str(p), data=p.read_bytes()) for p in files]
        )
        failed = 0
        for outcome in outcomes:
            failed += bool(outcome.error)
            for line in outcome.lines:
                (self.stderr if outcome.error else self.stdout).write(line)
        if failed:
            raise CommandError(f"{failed} of {len(outcomes)} files failed")
