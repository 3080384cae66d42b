"""Benchmark: sustained event ingestion through the REST API on PostgreSQL and Redis.

Creates the PostgreSQL database `swarmscope_bench` (dropped first if left over, dropped again at the
end), flushes Redis database 9, migrates, creates a superuser and an API token, and serves the app
with Daphne (as `manage.py up` does, without a Celery worker) on a free loopback port. Then each of
1 and of 2 concurrent client threads streams one `synthetic_trace(1000, 20000)` into its own trace:
`POST /api/traces/<id>/events/` with {"events": [...], "edges": [...]} batches of `--batch` events
(each edge travels with the batch that holds its later end), over one keep-alive connection.
Bodies are encoded before the clock starts. Reports events/s sustained (all clients' events over
the wall time from the first request to the last answer) and batch latency p50/p99 in ms, and
checks every batch's `events_added` and each trace's stored `event_count`.

Target (brief): >= 5,000 events/s. The server is stopped by process group in `finally`.

    .venv/bin/python bench/bench_api.py [--events 20000] [--batch 500] [--clients 1,2] [--debug]

Environment: BENCH_PG (default postgres://postgres@127.0.0.1:5432), BENCH_REDIS_URL (default
redis://127.0.0.1:6379/9).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import psycopg  # noqa: E402
import redis  # noqa: E402

from swarmscope.model import Trace  # noqa: E402
from tests.servers import app_env, free_port, manage, start, stop, wait_http  # noqa: E402
from tests.synthetic import synthetic_trace  # noqa: E402

DATABASE = "swarmscope_bench"
TARGET_EVENTS_PER_S = 5000
#: A batch that takes longer than this is a failure, not a data point.
REQUEST_TIMEOUT_S = 120


def encode_batches(trace: Trace, batch: int) -> list[tuple[bytes, int]]:
    """The trace's events as API bodies of `batch` events each, with the edges whose later end is
    in that batch; returns [(body, number of events)]."""
    events = [e.to_dict() for e in trace.events]
    batch_of = {e["id"]: i // batch for i, e in enumerate(events)}
    edges: list[list[dict]] = [[] for _ in range(0, len(events), batch)]
    for edge in trace.edges:
        edges[max(batch_of[edge.src], batch_of[edge.dst])].append(edge.to_dict())
    return [
        (json.dumps({"events": events[i : i + batch], "edges": edges[i // batch]}).encode(), len(events[i : i + batch]))
        for i in range(0, len(events), batch)
    ]


class Client:
    """One keep-alive HTTP/1.1 connection to the server, authorised by an API token."""

    def __init__(self, port: int, token: str):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
        self.connection.request(method, path, body=body, headers=self.headers)
        response = self.connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")

    def create_trace(self, name: str) -> int:
        status, doc = self.request("POST", "/api/traces/", json.dumps({"name": name}).encode())
        if status != 201:
            raise RuntimeError(f"POST /api/traces/ answered {status}: {doc}")
        return doc["trace"]["id"]

    def close(self) -> None:
        self.connection.close()


def stream(client: Client, trace_id: int, batches: list[tuple[bytes, int]], latencies: list[float]) -> None:
    """Post every batch in order; append each batch's latency in seconds. Raises on a bad answer."""
    for index, (body, count) in enumerate(batches):
        start = time.perf_counter()
        status, doc = client.request("POST", f"/api/traces/{trace_id}/events/", body)
        latencies.append(time.perf_counter() - start)
        if status != 200 or doc.get("events_added") != count:
            raise RuntimeError(f"batch {index} of trace {trace_id}: {status} {str(doc)[:500]}")


def run_clients(port: int, token: str, clients: int, batches: list[tuple[bytes, int]]) -> dict[str, float]:
    """`clients` threads, each streaming `batches` into its own new trace; returns the figures."""
    connections = [Client(port, token) for _ in range(clients)]
    trace_ids = [c.create_trace(f"bench {clients} clients #{i}") for i, c in enumerate(connections)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            stream(connections[i], trace_ids[i], batches, latencies[i])
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=REQUEST_TIMEOUT_S * len(batches))
    wall = time.perf_counter() - start
    if errors or any(t.is_alive() for t in threads):
        raise RuntimeError(f"client failed: {errors[0] if errors else 'timed out'}")
    expected = sum(count for _, count in batches)
    for trace_id, connection in zip(trace_ids, connections):
        status, doc = connection.request("GET", f"/api/traces/{trace_id}/")
        if status != 200 or doc["event_count"] != expected:
            raise RuntimeError(f"trace {trace_id} stores {doc.get('event_count')} events, expected {expected}")
        connection.close()
    flat = sorted(x * 1000 for run in latencies for x in run)
    return {
        "events": expected * clients,
        "wall_s": wall,
        "events_per_s": expected * clients / wall,
        "p50_ms": statistics.median(flat),
        "p99_ms": flat[min(len(flat) - 1, round(0.99 * (len(flat) - 1)))],
        "max_ms": flat[-1],
        "batches": len(flat),
    }


def admin(server: str, sql: str) -> None:
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(sql)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000, help="events per client (agents: events / 20)")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--clients", default="1,2", help="comma-separated numbers of concurrent clients")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--debug", action="store_true", help="serve with DJANGO_DEBUG=1 (the local default)")
    args = parser.parse_args()

    # SIGTERM (run_all's timeout) unwinds through the `finally` blocks that stop the server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
    redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")
    trace = synthetic_trace(max(1, args.events // 20), args.events, args.seed)
    batches = encode_batches(trace, args.batch)
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs (client and server "
        f"share them); PostgreSQL {server}/{DATABASE}, Redis {redis_url}; DJANGO_DEBUG={int(args.debug)}; "
        f"{len(trace.events)} events and {len(trace.edges)} edges per client in {len(batches)} batches of "
        f"{args.batch}, {sum(len(b) for b, _ in batches) / 2**20:.1f} MiB",
        flush=True,
    )

    admin(server, f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
    admin(server, f"CREATE DATABASE {DATABASE}")
    redis.Redis.from_url(redis_url).flushdb()
    try:
        with tempfile.TemporaryDirectory(prefix="swarmscope-bench-api-") as tmp:
            env = app_env(
                Path(tmp),
                DATABASE_URL=f"{server}/{DATABASE}",
                REDIS_URL=redis_url,
                SWARMSCOPE_LOG_LEVEL="WARNING",
                DJANGO_SUPERUSER_PASSWORD="bench-password",
                DJANGO_DEBUG="1" if args.debug else "0",
                DJANGO_SECRET_KEY="bench-only-secret",
                SECURE_SSL_REDIRECT="0",
            )
            for command in (
                ("migrate", "--verbosity", "0"),
                ("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@localhost"),
                ("create_token", "admin"),
            ):
                result = manage(*command, env=env)
                if result.returncode != 0:
                    raise RuntimeError(f"manage.py {' '.join(command)}: {result.stderr[-2000:]}")
            token = result.stdout.strip().splitlines()[-1]
            port = free_port()
            log = Path(tmp) / "daphne.log"
            process = start(
                [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.config.asgi:application"],
                env,
                log,
            )
            try:
                wait_http(f"http://127.0.0.1:{port}/api/traces/", process, log)
                run_clients(port, token, 1, batches[:2])  # warm-up: imports, connections; not reported
                print(
                    f"{'clients':>7s} {'events':>7s} {'wall s':>7s} {'events/s':>9s} {'p50 ms':>7s} "
                    f"{'p99 ms':>7s} {'max ms':>7s}  target >= {TARGET_EVENTS_PER_S} events/s"
                )
                for clients in (int(c) for c in args.clients.split(",")):
                    r = run_clients(port, token, clients, batches)
                    verdict = "met" if r["events_per_s"] >= TARGET_EVENTS_PER_S else "MISSED"
                    print(
                        f"{clients:7d} {r['events']:7d} {r['wall_s']:7.2f} {r['events_per_s']:9.0f} "
                        f"{r['p50_ms']:7.0f} {r['p99_ms']:7.0f} {r['max_ms']:7.0f}  {verdict}",
                        flush=True,
                    )
            finally:
                stop(process)
    finally:
        admin(server, f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        redis.Redis.from_url(redis_url).flushdb()


if __name__ == "__main__":
    main()
