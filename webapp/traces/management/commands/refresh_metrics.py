"""`manage.py refresh_metrics [--project ID]`: recompute every stored trace's computed metrics and
the trace list's facts stored with them (models, error count, cost: webapp.traces.prices), e.g. for
traces stored before those facts existed (migration 0013) or after the price table changed. One
trace at a time; prints how many it did."""

from django.core.management.base import BaseCommand

from webapp.traces.services import do_refresh_metrics


class Command(BaseCommand):
    help = "Recompute the computed metrics, models, error counts and costs of the stored traces."

    def add_arguments(self, parser):
        parser.add_argument("--project", type=int, default=None, help="only this project's traces (its id)")

    def handle(self, *args, project=None, **options):
        done = do_refresh_metrics(project_id=project)
        self.stdout.write(f"recomputed the metrics of {done} trace{'s' if done != 1 else ''}")
