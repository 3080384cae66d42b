"""Benchmark: PostgreSQL connections held by one web process under 64 concurrent clients.

Creates the PostgreSQL database `swarmscope_h1_bench` (dropped first if left over, dropped again at
the end), flushes the Redis database of BENCH_REDIS_URL, migrates, creates a superuser, an API token
and one trace of 200 events, and serves the app with Daphne (as `manage.py up` does, without a
Celery worker) on a free loopback port, with the settings' connection pool
(`SWARMSCOPE_DB_POOL_SIZE`, default 8). Then `--clients` threads (64) each loop for `--seconds`
(60) over one keep-alive connection with the token: GET /api/traces/, GET /api/traces/<id>/,
GET /api/traces/<id>/snapshot/, and every fourth request POST /api/traces/ (a new trace, a write).
A sampler counts the server's connections to the database in `pg_stat_activity` every 50 ms.

Reports requests, requests/s, answers by status class, client-side errors, latency p50/p99, and
the most connections to the database seen at once against the pool's size. The run passes when
no answer is 5xx, no request failed, and the connections never exceeded the pool size (+1 for the
sampler's own connection, which is not counted: it is to the `postgres` database).

    .venv/bin/python bench/bench_db_connections.py [--clients 64] [--seconds 60] [--pool-size 8]

`--pool-size 0` serves without the pool (each request thread opens a connection and closes it
after the request), for comparison.

Environment: BENCH_PG (default postgres://postgres@127.0.0.1:5432), BENCH_REDIS_URL (default
redis://127.0.0.1:6379/11).
"""

from __future__ import annotations

import argparse
import collections
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

from tests.servers import app_env, free_port, manage, start, stop, wait_http  # noqa: E402
from tests.synthetic import synthetic_trace  # noqa: E402

DATABASE = "swarmscope_h1_bench"
#: A request that takes longer than this counts as a failed request.
REQUEST_TIMEOUT_S = 120


def admin(server: str, sql: str) -> None:
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(sql)


class Sampler(threading.Thread):
    """Counts the connections to `DATABASE` in pg_stat_activity every `period` s until stopped."""

    def __init__(self, server: str, period: float = 0.05):
        super().__init__(daemon=True)
        self.server, self.period = server, period
        self.samples: list[int] = []
        self.halt = threading.Event()

    def run(self) -> None:
        with psycopg.connect(f"{self.server}/postgres", autocommit=True) as connection:
            while not self.halt.is_set():
                row = connection.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [DATABASE]
                ).fetchone()
                self.samples.append(int(row[0]) if row else 0)
                self.halt.wait(self.period)


def client_loop(port: int, token: str, trace_id: int, until: float, out: dict) -> None:
    """Requests until `until` (time.monotonic); counts statuses, errors and latencies into `out`."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    paths = ["/api/traces/", f"/api/traces/{trace_id}/", f"/api/traces/{trace_id}/snapshot/"]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    i = 0
    while time.monotonic() < until:
        i += 1
        start_t = time.perf_counter()
        try:
            if i % 4 == 0:
                body = json.dumps({"name": f"bench {threading.get_ident()} {i}"}).encode()
                connection.request("POST", "/api/traces/", body=body, headers=headers)
            else:
                connection.request("GET", paths[i % 3], headers=headers)
            response = connection.getresponse()
            response.read()
            out["status"][response.status // 100] += 1
            if response.status >= 500:
                out["server_errors"].append(f"{response.status} on request {i}")
        except (OSError, http.client.HTTPException) as exc:
            out["failed"].append(repr(exc))
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
        out["latency"].append(time.perf_counter() - start_t)
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--pool-size", type=int, default=8, help="SWARMSCOPE_DB_POOL_SIZE of the server")
    args = parser.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
    redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/11")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        row = connection.execute("SHOW max_connections").fetchone()
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs (clients and "
        f"server share them); PostgreSQL {server}/{DATABASE} (max_connections {row[0] if row else '?'}), "
        f"Redis {redis_url}; {args.clients} clients for {args.seconds:g} s; SWARMSCOPE_DB_POOL_SIZE="
        f"{args.pool_size}",
        flush=True,
    )
    admin(server, f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
    admin(server, f"CREATE DATABASE {DATABASE}")
    redis.Redis.from_url(redis_url).flushdb()
    try:
        with tempfile.TemporaryDirectory(prefix="swarmscope-bench-db-") as tmp:
            env = app_env(
                Path(tmp),
                DATABASE_URL=f"{server}/{DATABASE}",
                REDIS_URL=redis_url,
                SWARMSCOPE_LOG_LEVEL="WARNING",
                DJANGO_SUPERUSER_PASSWORD="bench-password",
                DJANGO_DEBUG="0",
                DJANGO_SECRET_KEY="bench-only-secret",
                SECURE_SSL_REDIRECT="0",
                SWARMSCOPE_DB_POOL_SIZE=str(args.pool_size),
                # The load is one token's: the API's per-project write limit is not what is measured.
                SWARMSCOPE_INGEST_RATE="1000000",
                SWARMSCOPE_INGEST_RATE_PROJECT="1000000",
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
                wait_http(f"http://127.0.0.1:{port}/healthz", process, log)
                headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
                setup = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
                setup.request("POST", "/api/traces/", body=json.dumps({"name": "bench"}).encode(), headers=headers)
                trace_id = json.loads(setup.getresponse().read())["trace"]["id"]
                events = [e.to_dict() for e in synthetic_trace(10, 200, 0).events]
                setup.request(
                    "POST",
                    f"/api/traces/{trace_id}/events/",
                    body=json.dumps({"events": events}).encode(),
                    headers=headers,
                )
                answer = setup.getresponse()
                answer.read()
                if answer.status != 200:
                    raise RuntimeError(f"seeding the trace answered {answer.status}")
                setup.close()

                sampler = Sampler(server)
                sampler.start()
                out: dict = {"status": collections.Counter(), "server_errors": [], "failed": [], "latency": []}
                until = time.monotonic() + args.seconds
                started = time.perf_counter()
                threads = [
                    threading.Thread(target=client_loop, args=(port, token, trace_id, until, out), daemon=True)
                    for _ in range(args.clients)
                ]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(args.seconds + REQUEST_TIMEOUT_S + 10)
                wall = time.perf_counter() - started
                sampler.halt.set()
                sampler.join(5)
                load = os.getloadavg()
            finally:
                stop(process)
            lat = sorted(x * 1000 for x in out["latency"])
            requests = len(lat)
            peak = max(sampler.samples or [0])
            print(
                f"requests {requests} in {wall:.1f} s ({requests / wall:.0f}/s); answers "
                + ", ".join(f"{k}xx {v}" for k, v in sorted(out["status"].items()))
                + f"; failed requests {len(out['failed'])}; latency p50 {statistics.median(lat):.0f} ms, "
                f"p99 {lat[min(requests - 1, round(0.99 * (requests - 1)))]:.0f} ms, max {lat[-1]:.0f} ms"
            )
            print(
                f"connections to {DATABASE}: max {peak}, median {statistics.median(sampler.samples or [0]):.0f} "
                f"over {len(sampler.samples)} samples; pool size {args.pool_size}; load average after "
                f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
            )
            for line in (out["server_errors"] + out["failed"])[:5]:
                print("  ", line)
            # --pool-size 0 (no pool: a connection per request thread, closed after it) is the
            # comparison: no cap to keep
            ok = out["status"][5] == 0 and not out["failed"] and (args.pool_size == 0 or peak <= args.pool_size)
            print("PASS" if ok else "FAIL: 5xx answers, failed requests or connections above the pool size")
            if not ok:
                sys.exit(1)
    finally:
        admin(server, f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        redis.Redis.from_url(redis_url).flushdb()


if __name__ == "__main__":
    main()
