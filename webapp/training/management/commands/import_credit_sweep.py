"""`manage.py import_credit_sweep [PATH] [--project NAME]`: store bench/credit_diffusion.py's sweep
(default bench/figures/credit_diffusion.json) as finished runs of a project and print the compare
page of each n's arms and one of every arm and n, which adds the summary vs n (webapp.training.sweeps)."""

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from webapp.accounts.services import do_get_or_create_project
from webapp.training.services import RunInputError
from webapp.training.sweeps import do_import_sweep

DEFAULT_PATH = Path(settings.BASE_DIR) / "bench" / "figures" / "credit_diffusion.json"


class Command(BaseCommand):
    help = "Store the credit-diffusion sweep's runs (bench/credit_diffusion.py) so the compare page draws them."

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", default=str(DEFAULT_PATH), help="the sweep's JSON")
        parser.add_argument("--project", default="Credit diffusion", help="the project the runs go to")

    def handle(self, *args, path, project, **options):
        try:
            sweep = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(f"{path}: {exc}") from None
        try:
            imported = do_import_sweep(do_get_or_create_project(project), sweep)
        except RunInputError as exc:
            raise CommandError(f"{path}: {exc}") from None
        self.stdout.write(
            f"{len(imported.created)} runs stored, {len(imported.kept)} already there (project {project!r})."
        )
        for n, url in sorted(imported.compare_urls.items()):
            self.stdout.write(f"n = {n}: {url}")
        if len(imported.compare_urls) > 1:
            self.stdout.write(f"all n (summary vs n): {imported.compare_all_url}")
