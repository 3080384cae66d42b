"""`manage.py eval_attribution FOLDER [--method M] [--limit N]`: LLM-judge failure attribution
(swarmscope.judge) on Who&When logs, scored by exact equality against their labels.

Reads the files with the importers (nothing is stored), asks the judge through the client of
SWARMSCOPE_JUDGE_CLIENT (the OpenAI-compatible endpoint of SWARMSCOPE_OPENAI_BASE_URL /
SWARMSCOPE_OPENAI_MODEL, or --base-url / --model; on vLLM each answer is constrained to the form
its method parses: `swarmscope.judge`), prints one line per file and then step and agent accuracy
(step first: the harder, more telling number). A file the judge fails on (an answer that cannot be
parsed, an endpoint error) is reported and counted as wrong.
"""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.module_loading import import_string

from swarmscope import judge
from swarmscope.importers import SourceFile, read_files, whowhen
from swarmscope.importers.files import iter_files


class Command(BaseCommand):
    help = "Score LLM-judge failure attribution (Who&When methods) on a folder of Who&When logs."

    def add_arguments(self, parser):
        parser.add_argument("folder")
        parser.add_argument("--method", choices=judge.METHODS, default="all_at_once")
        parser.add_argument("--limit", type=int, default=None, help="judge at most N logs")
        parser.add_argument("--base-url", default=None)
        parser.add_argument("--model", default=None)
        parser.add_argument("--no-ground-truth", action="store_true", help="do not give the judge the answer")

    def handle(self, *args, folder, method, limit, base_url, model, no_ground_truth, **options):
        if not Path(folder).exists():
            raise CommandError(f"{folder}: no such file or folder")
        try:
            client = import_string(settings.SWARMSCOPE_JUDGE_CLIENT)(
                base_url=base_url or settings.SWARMSCOPE_OPENAI_BASE_URL or None,
                model=model or settings.SWARMSCOPE_OPENAI_MODEL or None,
            )
        except ValueError as exc:
            raise CommandError(f"no judge endpoint: {exc}") from exc
        files = [p for p in iter_files([folder]) if p.suffix == ".json"]
        result = read_files([SourceFile(str(p), p.read_bytes()) for p in files])
        traces = [t for t in result.traces if t.source_format == whowhen.FORMAT]
        if limit is not None:
            traces = traces[:limit]
        if not traces:
            raise CommandError(f"{folder}: no Who&When logs")
        names = {key: report.name for report in result.files for key in report.trace_keys}
        pairs = []
        for trace in traces:
            labels = judge.labels_of(trace)
            name = Path(names.get(trace.identity_key, trace.source_id)).name
            try:
                prediction = judge.judge(trace, client.complete, method, ground_truth=not no_ground_truth)
            except (judge.JudgeParseError, RuntimeError) as exc:
                pairs.append((None, labels))
                self.stdout.write(f"{name}: error: {exc}")
                continue
            pairs.append((prediction, labels))
            self.stdout.write(
                f"{name}: predicted agent={prediction.agent} step={prediction.step} | "
                f"label agent={labels[0]} step={labels[1]} | "
                f"step {'ok' if judge.step_correct(prediction, labels[1]) else 'wrong'}, "
                f"agent {'ok' if judge.agent_correct(prediction, labels[0]) else 'wrong'} "
                f"({prediction.calls} calls)"
            )
        step_acc, agent_acc = judge.accuracy(pairs)
        self.stdout.write(
            f"method {method}, {len(pairs)} logs, exact equality: "
            f"step accuracy {100 * step_acc:.2f} %, agent accuracy {100 * agent_acc:.2f} %"
        )
