"""Benchmark: how far the live metrics lag a streaming trace (`{"type": "metrics"}` on
`/ws/traces/<id>/`, recomputed by the worker's `publish_metrics` at most once per
SWARMSCOPE_LIVE_METRICS_S after live batches).

Serves the app as the browser tests do (`manage.py up --no-worker`: Daphne, embedded Redis,
SQLite), starts one Celery worker of the `default` queue, creates an empty trace through the REST
API and opens its socket with `?token=` (a script's viewer, no browser). One thread posts `--rate`
events/s for `--seconds` seconds in batches of `--batch` events (messages and tool calls with
their results, over `--agents` agents), noting when each batch's response (its commit) came back
and its seq.

Reported: the metrics messages received and the interval between them (how long the panel shows
numbers older than the stream); their staleness, arrival time minus the commit time of
the batch at their seq (p50 / p95 / max); the final lag, from the last batch's commit to the
metrics of that last seq; the worker's run time per publish (from its log: "succeeded in"), first
and last (the trace grows); and whether the final metrics equal the snapshot's (`GET
/api/traces/<id>/snapshot/`, what a reload shows: exit status 1 otherwise).

    .venv/bin/python bench/bench_live_metrics.py [--rate 500] [--batch 50] [--seconds 60] [--agents 20]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_render import load, machine, percentile, running_app  # noqa: E402

from tests.servers import start_worker, stop  # noqa: E402

#: After the last batch, the metrics of its seq have this long to arrive.
DRAIN_S = 180


def api(conn: http.client.HTTPConnection, token: str, method: str, path: str, body=None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    text = response.read()
    if response.status >= 300:
        raise RuntimeError(f"{method} {path}: HTTP {response.status} {text[:300]!r}")
    return json.loads(text)


def batch_events(start: int, size: int, agents: int) -> tuple[list[dict], list[dict]]:
    events, edges = [], []
    for i in range(start, start + size):
        agent = f"agent_{i % agents}"
        if i % 3 == 2:
            events.append(
                {
                    "id": f"e{i}",
                    "t": i * 0.01,
                    "t_end": i * 0.01 + 0.005,
                    "type": "tool_result",
                    "agent": agent,
                    "tool": "search",
                    "content": f"result {i}",
                }
            )
            edges.append({"src": f"e{i - 1}", "dst": f"e{i}", "type": "tool_dependency"})
        elif i % 3 == 1:
            events.append({"id": f"e{i}", "t": i * 0.01, "type": "tool_call", "agent": agent, "tool": "search"})
        else:
            events.append(
                {
                    "id": f"e{i}",
                    "t": i * 0.01,
                    "t_end": i * 0.01 + 0.008,
                    "type": "message",
                    "agent": agent,
                    "to": f"agent_{(i + 1) % agents}",
                    "content": f"message {i}",
                }
            )
    return events, edges


async def listen(url: str, messages: list, stopped: threading.Event) -> None:
    import websockets

    async with websockets.connect(url, max_size=2**24, ping_interval=None) as ws:
        while not stopped.is_set():
            try:
                text = await asyncio.wait_for(ws.recv(), timeout=0.5)
            except TimeoutError:
                continue
            message = json.loads(text)
            messages.append((time.time(), message))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=500, help="events per second")
    parser.add_argument("--batch", type=int, default=50, help="events per request")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--agents", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-live-metrics-") as tmp, running_app(Path(tmp)) as app:
        redis_url = (Path(app.env["SWARMSCOPE_DATA_DIR"]) / "redis" / "url").read_text().strip()
        worker_log = Path(tmp) / "worker.log"
        worker = start_worker("default", {**app.env, "REDIS_URL": redis_url}, worker_log)
        try:
            run(app, args, worker_log)
        finally:
            stop(worker)


def run(app, args, worker_log: Path) -> None:
    parts = urlsplit(app.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    trace = api(conn, app.token, "POST", "/api/traces/", {"name": "live metrics bench", "system": "bench"})["trace"]
    messages: list = []
    stopped = threading.Event()
    url = f"ws://{parts.hostname}:{parts.port}/ws/traces/{trace['id']}/?token={app.token}"
    listener = threading.Thread(target=lambda: asyncio.run(listen(url, messages, stopped)), daemon=True)
    listener.start()
    deadline = time.time() + 30
    while not messages and time.time() < deadline:
        time.sleep(0.05)
    if not messages:
        raise RuntimeError("the trace socket sent no snapshot")

    committed: dict[int, float] = {}  # seq -> time its batch's response came back
    interval = args.batch / args.rate
    start = time.time()
    sent = 0
    while time.time() - start < args.seconds:
        due = start + (sent // args.batch) * interval
        if due > time.time():
            time.sleep(due - time.time())
        events, edges = batch_events(sent, args.batch, args.agents)
        answer = api(conn, app.token, "POST", f"/api/traces/{trace['id']}/events/", {"events": events, "edges": edges})
        committed[answer["seq"]] = time.time()
        sent += args.batch
    last_seq, last_at = max(committed), committed[max(committed)]
    wall = time.time() - start

    def final():
        return next((m for _, m in messages if m.get("type") == "metrics" and m["seq"] == last_seq), None)

    deadline = time.time() + DRAIN_S
    while final() is None and time.time() < deadline:
        time.sleep(0.1)
    stopped.set()
    listener.join(timeout=5)
    metrics = [(at, m) for at, m in messages if m.get("type") == "metrics"]
    staleness = [at - committed[m["seq"]] for at, m in metrics if m["seq"] in committed]
    final_message = final()
    final_at = next((at for at, m in metrics if m is final_message), None)
    snapshot = api(conn, app.token, "GET", f"/api/traces/{trace['id']}/snapshot/")
    equal = final_message is not None and final_message["computed_metrics"] == snapshot["trace"]["computed_metrics"]
    runs = [float(s) for s in re.findall(r"publish_metrics\[[^\]]+\] succeeded in ([0-9.]+)s", worker_log.read_text())]

    print(f"machine: {machine()}; at the end: {load()}")
    print(
        f"sent {sent} events in {len(committed)} batches of {args.batch} over {wall:.1f} s "
        f"({sent / wall:.0f} events/s; target {args.rate}), {args.agents} agents"
    )
    print(f"metrics messages: {len(metrics)} (one per {len(committed) / max(1, len(metrics)):.1f} batches)")
    if staleness:
        print(
            f"staleness (arrival - commit of its seq): p50 {statistics.median(staleness):.2f} s, "
            f"p95 {percentile(staleness, 95):.2f} s, max {max(staleness):.2f} s"
        )
    gaps = [b[0] - a[0] for a, b in zip(metrics, metrics[1:], strict=False)]
    if gaps:
        print(f"interval between metrics messages: p50 {statistics.median(gaps):.2f} s, max {max(gaps):.2f} s")
    print(
        "final lag (last batch's commit -> its metrics): "
        + (f"{final_at - last_at:.2f} s" if final_at is not None else f"none within {DRAIN_S} s")
    )
    if runs:
        print(
            f"worker publish_metrics runs: {len(runs)}, first {runs[0]:.3f} s, last {runs[-1]:.3f} s, "
            f"max {max(runs):.3f} s (trace of {snapshot['trace']['event_count']} events at the end)"
        )
    print(f"final metrics equal the snapshot's (a reload): {equal}")
    if not equal:
        sys.exit(1)


if __name__ == "__main__":
    main()
