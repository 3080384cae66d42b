"""Benchmark: peak RSS of the requests issue 33 names, each case in a fresh interpreter (ru_maxrss).

- `bomb`: six gzip files of 200 MiB of zeros each (about 200 KiB compressed apiece) read as one
  import (`read_files`), with the app's budget (SWARMSCOPE_MAX_IMPORT_BYTES and
  SWARMSCOPE_MAX_GZIP_RATIO defaults) and, for comparison, without (`--no-budget`: each file capped
  at 200 MiB alone, the earlier behaviour).
- `export`: the OTLP export of a synthetic trace of `--events` events, streamed
  (`iter_otlp_json`, chunks written to /dev/null) and, for comparison, built in memory
  (`json.dumps(to_otlp_json(...))`). The figure is the peak over the RSS after the trace is built.
- `export-db` (run alone: `--case export-db new` / `--case export-db old`, `--db-dir DIR`): the
  app's OTLP export (`otlp_export_chunks`) of a stored synthetic trace of `--events` events
  (imported once into DIR's SQLite database and kept there), in a fresh interpreter with Django set
  up: `new` reads the events a page of SWARMSCOPE_EXPORT_PAGE_EVENTS at a time, `old` the whole
  trace first (`to_core_trace`, the export before paging). The figure is the peak RSS growth over
  the interpreter's RSS once Django is set up and the trace row read.
- `grpc`: the OTLP/gRPC receiver (`make_server`, 4 workers) sent `--calls` concurrent
  `--mib` MiB messages without a token from another process; the receiver's peak RSS growth, with
  the token checked before the message is read and, for comparison, with a unary handler (the
  message read first: the earlier behaviour).

- `sockets` (run alone: `--case sockets new` / `--case sockets old`): 20 websocket readers of one
  trace that stop reading (4 KiB receive buffers) while 16 deltas of ~750 kB are written to it, on
  `manage.py up` (Daphne); Daphne's VmRSS/VmHWM before, 3 s after the writes, and after the clients
  are gone; `new` with SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES = 4 MiB, `old` with 1 TiB (no bound).

    .venv/bin/python bench/bench_request_memory.py [--events 200000] [--calls 8] [--mib 100]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import zlib

MiB = 1024 * 1024
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.chdir(ROOT)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def gzip_bomb(mib: int) -> bytes:
    """A gzip file of `mib` MiB of spaces, compressed a MiB at a time (no big buffer here)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * MiB
    return b"".join(packer.compress(block) for _ in range(mib)) + packer.flush()


def case_bomb(budget: bool) -> dict:
    from swarmscope.importers import DecompressionBudget, SourceFile, read_files

    sources = [SourceFile(f"bomb{i}.json.gz", gzip_bomb(200)) for i in range(6)]
    before = peak_mib()
    limits = DecompressionBudget(total=200 * MiB, ratio=200) if budget else None
    result = read_files(sources, max_decompressed=200 * MiB, budget=limits)
    return {"peak_growth_mib": round(peak_mib() - before, 1), "errors": [f.error for f in result.files][:2]}


def case_export(events: int, streamed: bool) -> dict:
    from swarmscope.otlp_export import iter_otlp_json, to_otlp_json
    from tests.synthetic import synthetic_trace

    trace = synthetic_trace(max(2, events // 50), events)
    before = peak_mib()
    size = 0
    with open(os.devnull, "w") as sink:
        if streamed:
            for chunk in iter_otlp_json(trace):
                size += len(chunk)
                sink.write(chunk)
        else:
            text = json.dumps(to_otlp_json(trace), ensure_ascii=False)
            size = len(text)
            sink.write(text)
    return {"peak_growth_mib": round(peak_mib() - before, 1), "chars": size, "trace_rss_mib": round(before, 1)}


def export_db_env(db_dir: str) -> None:
    """Point the app at `db_dir` (its SQLite database, no Redis: tasks run inline) and set Django up."""
    os.environ.update(SWARMSCOPE_DATA_DIR=db_dir, DJANGO_SETTINGS_MODULE="webapp.config.settings")
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)
    os.environ["SWARMSCOPE_IGNORE_EMBEDDED_REDIS"] = "1"
    import django

    django.setup()


def prepare_export_db(db_dir: str, events: int) -> int:
    """Migrate `db_dir`'s database and store the synthetic trace of `events` events once; its id."""
    export_db_env(db_dir)
    from django.core.management import call_command

    from tests.synthetic import synthetic_trace
    from webapp.accounts.services import do_get_or_create_project
    from webapp.traces import ingest
    from webapp.traces.models import Trace

    call_command("migrate", verbosity=0)
    source_id = f"export-{events}"
    found = Trace.objects.filter(source_id=source_id).first()
    if found is None:
        trace = synthetic_trace(max(2, events // 50), events)
        trace.source_format, trace.source_id = "native", source_id
        found = ingest.do_ingest(do_get_or_create_project("bench"), trace, broadcast=False).trace
    return found.pk


def case_export_db(db_dir: str, trace_id: int, paged: bool) -> dict:
    export_db_env(db_dir)
    from django.conf import settings

    from swarmscope.otlp_export import iter_otlp_json
    from webapp.counterfactuals import services
    from webapp.traces.models import Trace

    trace = Trace.objects.get(pk=trace_id)
    before = peak_mib()
    started = time.monotonic()
    if paged:
        chunks = services.otlp_export_chunks(trace)
    else:
        args, options = _whole(services, trace)
        chunks = iter_otlp_json(*args, **options)
    size = 0
    with open(os.devnull, "w") as sink:
        for chunk in chunks:
            size += len(chunk)
            sink.write(chunk)
    return {
        "peak_growth_mib": round(peak_mib() - before, 1),
        "peak_mib": round(peak_mib(), 1),
        "seconds": round(time.monotonic() - started, 1),
        "chars": size,
        "events": trace.event_count,
        "page_events": settings.SWARMSCOPE_EXPORT_PAGE_EVENTS,
    }


def _whole(services, trace):
    """The export's arguments with the whole trace read first (before paging)."""
    core_trace, options = services._otlp_export_options(trace)
    return (core_trace,), options


def case_grpc(calls: int, mib: int, token_first: bool) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
    os.environ["DATABASE_URL"] = "sqlite:///" + tempfile.mkdtemp() + "/bench.sqlite3"
    os.environ["SWARMSCOPE_MAX_UPLOAD_BYTES"] = str((mib + 1) * MiB)
    import django

    django.setup()
    import grpc

    from webapp.traces import otlp_grpc

    if not token_first:  # the earlier behaviour: a unary handler, the message read before anything
        otlp_grpc.grpc.stream_unary_rpc_method_handler = lambda f, **kw: grpc.unary_unary_rpc_method_handler(
            lambda body, context: f(iter([body]), context), **kw
        )
    server, port = otlp_grpc.make_server("127.0.0.1", 0, workers=4)
    before = peak_mib()
    client = subprocess.run(
        [sys.executable, __file__, "--grpc-client", str(port), "--calls", str(calls), "--mib", str(mib)],
        capture_output=True,
        text=True,
        check=True,
    )
    server.stop(grace=None)
    return {"peak_growth_mib": round(peak_mib() - before, 1), "client": json.loads(client.stdout)}


def grpc_client(port: int, calls: int, mib: int) -> None:
    import grpc

    body = b"\x0a" * (mib * MiB)
    codes: list[str] = []
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", -1)]) as channel:
        method = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")

        def one():
            try:
                method(body, timeout=120)
                codes.append("OK")
            except grpc.RpcError as exc:
                codes.append(f"{exc.code().name}: {exc.details()[:60]}")

        started = time.perf_counter()
        threads = [threading.Thread(target=one) for _ in range(calls)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print(json.dumps({"answers": sorted(set(codes)), "s": round(time.perf_counter() - started, 2)}))


def daphne_pid(port: int) -> int:
    """The pid of the Daphne process `manage.py up` started on `port`."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if b"daphne" in argv and str(port).encode() in argv:
                return int(entry)
    raise RuntimeError("no Daphne process found")


def memory_mib(pid: int) -> dict:
    status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":" in line)
    return {k: round(int(status[k].split()[0]) / 1024, 1) for k in ("VmRSS", "VmHWM")}


def case_sockets(sockets: int, limit: int) -> dict:
    """`sockets` readers that stop reading a trace while 16 deltas of ~750 kB are written to it, on
    `manage.py up` (Daphne) with SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES = `limit`: Daphne's RSS."""
    import asyncio
    import socket as sockets_module

    import websockets

    from swarmscope.client import SwarmscopeClient
    from tests.servers import app_env, free_port, manage, start, stop, wait_http

    data = tempfile.mkdtemp()
    env = app_env(__import__("pathlib").Path(data) / "data", SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES=str(limit))
    port, log = free_port(), __import__("pathlib").Path(data) / "up.log"
    up = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-worker", "--no-grpc"], env, log)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/", up, log)
        token = manage("create_token", "admin", env=env).stdout.strip()
        client = SwarmscopeClient(base, token)
        trace = client.create_trace("slow readers", system="bench")
        pid = daphne_pid(port)
        before = memory_mib(pid)

        async def run() -> dict:
            url = f"ws://127.0.0.1:{port}/ws/traces/{trace['id']}/?token={token}"
            opened = []
            for _ in range(sockets):
                raw = sockets_module.socket()
                raw.setsockopt(sockets_module.SOL_SOCKET, sockets_module.SO_RCVBUF, 4096)
                raw.connect(("127.0.0.1", port))
                ws = await websockets.connect(url, sock=raw, max_queue=1, max_size=None)
                await ws.recv()
                opened.append(ws)
            for batch in range(16):
                events = [
                    {
                        "id": f"e{batch}-{i}",
                        "t": float(batch),
                        "type": "message",
                        "agent": "a",
                        "content": "x" * 150_000,
                    }
                    for i in range(5)
                ]
                await asyncio.to_thread(client.send_batch, trace["id"], events)
            await asyncio.sleep(3)
            during = memory_mib(pid)
            closed = sum(1 for ws in opened if ws.close_code is not None)
            for ws in opened:
                ws.transport.abort()
            await asyncio.sleep(3)
            return {"during": during, "after_close": memory_mib(pid), "closed_by_server_yet": closed}

        result = asyncio.run(run())
        return {"before": before, **result, "limit": limit, "sockets": sockets}
    finally:
        stop(up, __import__("signal").SIGINT)


def run_case(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--case", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--mib", type=int, default=100)
    parser.add_argument("--case", nargs="+")
    parser.add_argument("--grpc-client", type=int)
    parser.add_argument("--db-dir", default=os.path.join(tempfile.gettempdir(), "swarmscope-export-bench"))
    args = parser.parse_args()
    if args.grpc_client:
        return grpc_client(args.grpc_client, args.calls, args.mib)
    if args.case:
        kind, flag = args.case[0], args.case[1] == "new"
        if kind == "export-db":
            os.makedirs(args.db_dir, exist_ok=True)
            if args.case[1] == "prepare":
                print(json.dumps({"trace_id": prepare_export_db(args.db_dir, args.events)}))
            else:
                trace_id = run_case("export-db", "prepare", "--events", str(args.events), "--db-dir", args.db_dir)
                print(json.dumps(case_export_db(args.db_dir, trace_id["trace_id"], flag)))
            return None
        if kind == "sockets":
            print(json.dumps(case_sockets(20, 4 * MiB if flag else 1 << 40)))
            return None
        if kind == "bomb":
            result = case_bomb(flag)
        elif kind == "export":
            result = case_export(args.events, flag)
        else:
            result = case_grpc(args.calls, args.mib, flag)
        print(json.dumps(result))
        return None
    print(os.uname().nodename, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg())
    for kind, extra in [
        ("bomb", []),
        ("export", ["--events", str(args.events)]),
        ("grpc", ["--calls", str(args.calls), "--mib", str(args.mib)]),
    ]:
        for flag in ("new", "old"):
            print(kind, flag, json.dumps(run_case(kind, flag, *extra)), flush=True)
    return None


if __name__ == "__main__":
    main()
