"""`manage.py load_samples`: import the bundled `samples/` into the project "Samples" and stream the
SwarmSim pivot-12 suite into it live (webapp.traces.samples).

The stream runs in a background thread of this command for a bounded time (`--seconds`, default
SWARMSCOPE_SAMPLE_STREAM_S, 40; 0 writes the live traces at once). The command waits for it, then
exits; Ctrl-C stops the stream early (the imported traces stay). `--no-stream` only imports. Run
while `manage.py up` runs, viewers of the app see the live traces grow. Running it again imports
nothing new and restarts the live traces under the same ids (emptied in place: open pages get
them afresh), but keeps those with user work on them (a counterfactual job, an attribution, a
review, a comment or a label) as they are.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from webapp.traces.samples import default_user, do_load_samples


class Command(BaseCommand):
    help = "Import the bundled sample traces into the 'Samples' project and stream a live SwarmSim suite."

    def add_arguments(self, parser):
        parser.add_argument("--user", help="the user who gets the Samples project (default: the first superuser)")
        parser.add_argument(
            "--seconds",
            type=float,
            default=None,
            help="seconds the live stream lasts (default SWARMSCOPE_SAMPLE_STREAM_S, 40; 0: all at once)",
        )
        parser.add_argument("--no-stream", action="store_true", help="only import the bundled files")

    def handle(self, *args, user, seconds, no_stream, **options):
        seconds = settings.SWARMSCOPE_SAMPLE_STREAM_S if seconds is None else seconds
        if seconds < 0:
            raise CommandError("--seconds must be 0 or more")
        if user:
            found = get_user_model().objects.filter(username=user).first()
            if found is None:
                raise CommandError(f"no user named {user!r}")
        else:
            found = default_user()
        report = do_load_samples(found, stream=not no_stream, seconds=seconds)
        for note in report.notes:
            self.stderr.write(note)
        for outcome in report.outcomes:
            for line in outcome.lines:
                (self.stderr if outcome.error else self.stdout).write(line)
        if found is None:
            self.stdout.write("No user exists yet: superusers read the Samples project (manage.py up creates one).")
        if report.live is not None:
            ids = ", ".join(str(t.pk) for t in report.live.traces)
            if ids and report.live.seconds:
                self.stdout.write(
                    f"Streaming the SwarmSim pivot-12 traces {ids} live in a background thread "
                    f"for about {report.live.seconds:.0f} s (Ctrl-C stops it; the imported traces stay)..."
                )
            elif ids:
                self.stdout.write(f"Wrote the SwarmSim pivot-12 traces {ids}.")
            try:
                report.live.wait()
            except KeyboardInterrupt:
                report.live.stop()
                self.stdout.write("Live stream stopped.")
        self.stdout.write(self.style.SUCCESS(report.summary(streamed=True)))
        if report.failed:
            raise CommandError(f"{len(report.failed)} of {len(report.outcomes)} sample files failed")
