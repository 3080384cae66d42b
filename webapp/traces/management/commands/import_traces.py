"""`manage.py import_traces PATH...`: import trace files and folders, one report line per file."""

import re
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from swarmscope.importers import SourceFile
from webapp.accounts.services import DEFAULT_PROJECT, do_get_or_create_project
from webapp.traces.services import do_import_sources


def natural_key(path: Path) -> list:
    """Sort `2.json` before `10.json`."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def iter_files(paths):
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted((p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")),
                              key=natural_key)
        elif path.is_file():
            yield path
        else:
            raise CommandError(f"{raw}: no such file or folder")


class Command(BaseCommand):
    help = "Import orchestration traces (any supported format, detected by content) from files and folders."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--project", default=DEFAULT_PROJECT, help="project name (created if absent)")

    def handle(self, *args, paths, project, **options):
        files = list(iter_files(paths))
        outcomes = do_import_sources(do_get_or_create_project(project),
                                     [SourceFile(name=str(p), data=p.read_bytes()) for p in files])
        failed = 0
        for outcome in outcomes:
            failed += bool(outcome.error)
            for line in outcome.lines:
                (self.stderr if outcome.error else self.stdout).write(line)
        if failed:
            raise CommandError(f"{failed} of {len(outcomes)} files failed")
