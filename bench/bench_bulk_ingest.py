"""Benchmark: one very large batch through the REST API while another project writes 1-event batches.

Serves the app with Daphne (as `manage.py up` does, without Celery or Redis: the in-memory channel
layer) on a free loopback port over SQLite (a fresh file in a temporary data folder) and/or
PostgreSQL (the database `swarmscope_bench_bulk`, dropped first and at the end). Two projects, each
with its own API token. For each size N: project A creates a trace and sends all N events in ONE
`POST /api/traces/<id>/events/` (a JSON array of events `{"id", "t", "type": "message", "agent",
"to", "content"}`, about 90 bytes each; encoded before the clock starts), while a second thread
sends 1-event batches to a trace of project B over its own keep-alive connection, back to back,
until the big answer arrives. Reports the big batch's events/s (N over its request's wall time),
the server process's peak RSS (VmHWM of /proc/<pid>/status, which only grows: read after each
size, so the largest size sets it; run one size per invocation for a clean figure), and for the
small writes: how many, their non-2xx answers, p50 / p99 / max latency (the longest a write of
another project waited). Checks the big trace's stored `event_count`.

    .venv/bin/python bench/bench_bulk_ingest.py [--events 100000,1000000] [--db sqlite,postgresql]

Environment: BENCH_PG (default postgres://postgres@127.0.0.1:5432); SWARMSCOPE_INGEST_CHUNK_ROWS and
the other settings pass through to the server.
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

from tests.servers import app_env, free_port, manage, start, stop, wait_http  # noqa: E402

DATABASE = "swarmscope_bench_bulk"
#: The big request may take minutes (the issue measured 325 s for 10^6 events on SQLite).
BIG_TIMEOUT_S = 1800
SMALL_TIMEOUT_S = 120


def big_body(n: int) -> bytes:
    """N message events as one JSON array, 100 agents."""
    return json.dumps(
        [
            {
                "id": f"e{i:07d}",
                "t": i * 0.001,
                "type": "message",
                "agent": f"agent_{i % 100}",
                "to": f"agent_{(i + 1) % 100}",
                "content": f"step {i}",
            }
            for i in range(n)
        ],
        separators=(",", ":"),
    ).encode()


class Client:
    """One keep-alive HTTP/1.1 connection authorised by an API token."""

    def __init__(self, port: int, token: str, timeout: float):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
        self.connection.request(method, path, body=body, headers=self.headers)
        response = self.connection.getresponse()
        text = response.read()
        try:
            return response.status, json.loads(text or b"{}")
        except ValueError:
            return response.status, {"text": text[:300].decode(errors="replace")}

    def create_trace(self, name: str) -> int:
        status, doc = self.request("POST", "/api/traces/", json.dumps({"name": name}).encode())
        if status != 201:
            raise RuntimeError(f"POST /api/traces/ answered {status}: {doc}")
        return doc["trace"]["id"]


def peak_rss_mib(pid: int) -> float:
    """VmHWM (peak resident set) of process `pid`, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def run_size(port: int, tokens: tuple[str, str], n: int, pid: int) -> dict:
    big, small = Client(port, tokens[0], BIG_TIMEOUT_S), Client(port, tokens[1], SMALL_TIMEOUT_S)
    big_trace, small_trace = big.create_trace(f"bulk {n}"), small.create_trace(f"small writes during {n}")
    body = big_body(n)
    done = threading.Event()
    latencies: list[float] = []
    statuses: list[int] = []
    refusals: list[str] = []
    answer: dict = {}

    def small_writer() -> None:
        k = 0
        while not done.is_set():
            event = {"id": f"s{k}", "t": k * 0.01, "type": "message", "agent": "solo"}
            start_s = time.perf_counter()
            try:
                status, doc = small.request("POST", f"/api/traces/{small_trace}/events/", json.dumps([event]).encode())
            except (OSError, http.client.HTTPException) as exc:
                status, doc = 0, {"error": repr(exc)}
                small.connection.close()
            if not 200 <= status < 300:
                refusals.append(f"{status} {str(doc)[:200]}")
            latencies.append(time.perf_counter() - start_s)
            statuses.append(status)
            k += 1

    writer = threading.Thread(target=small_writer, daemon=True)
    writer.start()
    time.sleep(0.5)  # the small writes are running before the big one starts
    start_s = time.perf_counter()
    status, doc = big.request("POST", f"/api/traces/{big_trace}/events/", body)
    wall = time.perf_counter() - start_s
    done.set()
    writer.join(SMALL_TIMEOUT_S)
    answer.update(status=status, doc=doc)
    if status != 200 or doc.get("events_added") != n:
        raise RuntimeError(f"big batch answered {status}: {str(doc)[:500]}")
    _, stored = big.request("GET", f"/api/traces/{big_trace}/")
    if stored["event_count"] != n:
        raise RuntimeError(f"trace {big_trace} stores {stored['event_count']} events, expected {n}")
    flat = sorted(x * 1000 for x in latencies)
    return {
        "events": n,
        "mib": len(body) / 2**20,
        "wall_s": wall,
        "events_per_s": n / wall,
        "peak_rss_mib": peak_rss_mib(pid),
        "small": len(flat),
        "non_2xx": sum(1 for s in statuses if not 200 <= s < 300),
        "p50_ms": statistics.median(flat) if flat else 0.0,
        "p99_ms": flat[min(len(flat) - 1, round(0.99 * (len(flat) - 1)))] if flat else 0.0,
        "max_ms": flat[-1] if flat else 0.0,
        "refusals": refusals,
    }


def admin(server: str, sql: str) -> None:
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(sql)


def serve(db: str, sizes: list[int], pg: str) -> None:
    with tempfile.TemporaryDirectory(prefix="swarmscope-bench-bulk-") as tmp:
        extra = {"DATABASE_URL": f"{pg}/{DATABASE}"} if db == "postgresql" else {}
        env = app_env(
            Path(tmp),
            SWARMSCOPE_LOG_LEVEL="WARNING",
            DJANGO_SUPERUSER_PASSWORD="bench-password",
            DJANGO_DEBUG="0",
            DJANGO_SECRET_KEY="bench-only-secret",
            SECURE_SSL_REDIRECT="0",
            SWARMSCOPE_INGEST_RATE="1000000",
            **extra,
        )
        tokens = []
        for command in (
            ("migrate", "--verbosity", "0"),
            ("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@localhost"),
            ("create_token", "admin", "--project", "Bulk"),
            ("create_token", "admin", "--project", "Small writes"),
        ):
            result = manage(*command, env=env)
            if result.returncode != 0:
                raise RuntimeError(f"manage.py {' '.join(command)}: {result.stderr[-2000:]}")
            if command[0] == "create_token":
                tokens.append(result.stdout.strip().splitlines()[-1])
        port = free_port()
        log = Path(tmp) / "daphne.log"
        process = start(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.config.asgi:application"],
            env,
            log,
        )
        try:
            wait_http(f"http://127.0.0.1:{port}/api/traces/", process, log)
            run_size(port, (tokens[0], tokens[1]), 100, process.pid)  # warm-up, not reported
            print(f"{db}: server RSS after warm-up {peak_rss_mib(process.pid):.0f} MiB", flush=True)
            print(
                f"{'db':>10s} {'events':>8s} {'MiB':>6s} {'wall s':>7s} {'events/s':>9s} {'peak RSS MiB':>12s} "
                f"{'small':>6s} {'non-2xx':>7s} {'p50 ms':>7s} {'p99 ms':>7s} {'max ms':>8s}",
                flush=True,
            )
            for n in sizes:
                r = run_size(port, (tokens[0], tokens[1]), n, process.pid)
                print(
                    f"{db:>10s} {n:8d} {r['mib']:6.1f} {r['wall_s']:7.1f} {r['events_per_s']:9.0f} "
                    f"{r['peak_rss_mib']:12.0f} {r['small']:6d} {r['non_2xx']:7d} {r['p50_ms']:7.0f} "
                    f"{r['p99_ms']:7.0f} {r['max_ms']:8.0f}",
                    flush=True,
                )
                for refusal in sorted(set(r["refusals"]))[:5]:
                    print(f"  non-2xx: {refusal}", flush=True)
                if r["refusals"]:  # why, from the server's log
                    lines = log.read_text(errors="replace").splitlines()
                    causes = sorted({ln.strip()[:200] for ln in lines if "Error" in ln or "FATAL" in ln})
                    for cause in causes[:5]:
                        print(f"  server log: {cause}", flush=True)
        finally:
            stop(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="100000,1000000", help="comma-separated batch sizes")
    parser.add_argument("--db", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = [int(n) for n in args.events.split(",")]
    pg = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs (client and server "
        f"share them); chunk rows {os.environ.get('SWARMSCOPE_INGEST_CHUNK_ROWS', 'default')}",
        flush=True,
    )
    for db in args.db.split(","):
        if db == "postgresql":
            admin(pg, f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
            admin(pg, f"CREATE DATABASE {DATABASE}")
        try:
            serve(db, sizes, pg)
        finally:
            if db == "postgresql":
                admin(pg, f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


if __name__ == "__main__":
    main()
