"""Benchmark: end-to-end OTLP/HTTP trace ingest into Swarmscope and into Arize Phoenix, side by side.

Both tools get the same traces (bench/otlp_cases.py: four multi-agent cases as OpenTelemetry GenAI
spans, deterministic by `--seed`, from a 12-span AutoGen-style round robin to a 33,012-span fan-out
over 301 agents) as an OpenTelemetry SDK's batch exporter sends them: finished spans in end-time
order, `--batch` spans per ExportTraceServiceRequest, each request encoded before the clock starts
and POSTed in order to `http://127.0.0.1:<port>/v1/traces` over one keep-alive connection. 503 and
429 answers (and dropped connections) are retried after Retry-After (else 1 s) for up to
RETRY_DEADLINE_S; other non-2xx answers are counted and that batch is not sent again. Before the
cases, one small warm-up trace (not reported) goes to each server.

- Swarmscope: `manage.py up` on the embedded default (SQLite, embedded Redis, its Celery workers;
  DJANGO_DEBUG=0) in a temporary SWARMSCOPE_DATA_DIR, with a token from `manage.py create_token
  admin`; once with OTLP/protobuf (`application/x-protobuf`), then, with a fresh data folder, with
  OTLP/JSON; with `--postgres URL`, once more with OTLP/protobuf on a new database of that
  PostgreSQL server (dropped afterwards) instead of SQLite. It stores a batch's spans before
  answering; a trace past SWARMSCOPE_OTLP_SYNC_SPANS spans is re-derived by its worker after the
  answer, so it counts as persisted once that is done.
- Phoenix: `phoenix serve` of arize-phoenix `--phoenix-version`, installed into its own venv
  (`--phoenix-venv`, git-ignored) when that is missing or holds another version; embedded SQLite in
  a temporary PHOENIX_WORKING_DIR, bound to 127.0.0.1 (its gRPC port, unused here, listens on all
  interfaces). OTLP/protobuf only: Phoenix refuses OTLP/JSON (415). It answers before storing.

A case is persisted when the answer to its last batch has arrived and the tool's own read API
shows every accepted span of its trace: Swarmscope `GET /api/traces/` (the trace whose `source_id`
is the trace id; `attributes.spans`), Phoenix GraphQL `trace(traceId) { numSpans }` in the default
project, polled every POLL_INTERVAL_S for up to SWARMSCOPE_PERSIST_TIMEOUT_S or `--phoenix-timeout`.

Reported per case and tool, and in total: spans sent and stored, requests, seconds from the first
request to the last answer (ack) and to persisted, spans/s (sent / persisted seconds), request
latency p50/p99/max in ms (every request, retries included) and non-2xx answers by status (the
first answer of each kept in the JSON). Prints a Markdown table and writes JSON (machine, date,
command, git commit and the working tree's changes, Phoenix version and install time, the figures,
every request's latency) to `--out`. Every server is stopped by process group in `finally`.
Client and servers share the machine's CPUs.

`--scaling 1000,10000,33000,100000` measures instead how Swarmscope's cost per request grows with the
trace, in this process (Django's test client posting OTLP/protobuf to the same view, SQLite in a
temporary SWARMSCOPE_DATA_DIR, no server, no worker): for each size, a fan-out trace of about that
many spans (`otlp_cases.fanout`, 300 workers per round) is streamed in `--batch`-span requests and
derived; then `--repeats` times a 1-span request (one more orchestrator `chat` span) is timed, and
the re-derivation it asks for (`span_ingest.do_derive_spans`, what the `derive_spans` task runs)
separately; size 0 is a 1-span request that opens a new trace (built within the request).

    .venv/bin/python bench/bench_otlp_vs_phoenix.py [--cases supervisor,roundrobin,fanout100,fanout-33k,fanout-100k]
        [--batch 500] [--seed 0] [--skip-swarmscope] [--skip-phoenix] [--phoenix-timeout 1200]
        [--postgres postgres://postgres@127.0.0.1:5432] [--encodings protobuf,json]
`--decode` times the decoding alone, in this process, per span of the fanout-33k case's requests:
`webapp.web.api.parse_body` (what the view runs on an OTLP/JSON body: NUL scan, JSON, depth walk),
`otlp.split` of the parsed document and `otlp.decode_protobuf`; CPU time, best of 5 rounds. With
`--decode-baseline FILE` (another version of swarmscope/importers/otlp.py, e.g. from `git show`)
it times that file's decoders alongside and checks that both give the same spans.

    .venv/bin/python bench/bench_otlp_vs_phoenix.py --scaling 1000,10000,33000,100000 [--repeats 3]
        [--profile /tmp/derive.pstats]

`--with-scaling SIZES` measures both in one run: the side-by-side cases, then (servers stopped) the
scaling curve, in one report.
    .venv/bin/python bench/bench_otlp_vs_phoenix.py --decode [--decode-baseline /tmp/otlp_before.py]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import http.client
import json
import os
import platform
import pstats
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_fanout import percentile  # noqa: E402
from otlp_cases import CASES, EPOCH_NS, fanout, requests, to_json  # noqa: E402

from tests.servers import app_env, free_port, manage, start, stop, wait_http  # noqa: E402

PHOENIX_VERSION = "20.26.1"
PHOENIX_VENV = REPO / "var" / "bench" / "phoenix-venv"
OUT = REPO / "bench" / "out" / "otlp_vs_phoenix.json"
CONTENT_TYPES = {"protobuf": "application/x-protobuf", "json": "application/json"}
#: One HTTP request; a batch refused with 503/429 (or a dropped connection) is retried this long.
REQUEST_TIMEOUT_S = 600
RETRY_DEADLINE_S = 600
#: A server must answer this soon after it is started.
START_TIMEOUT_S = 300
INSTALL_TIMEOUT_S = 1800
POLL_INTERVAL_S = 0.5
#: The derived trace must show every span this soon after the last answer.
SWARMSCOPE_PERSIST_TIMEOUT_S = 300
PHOENIX_SPANS_QUERY = "query ($t: ID!) { projects { edges { node { name trace(traceId: $t) { numSpans } } } } }"


@dataclass
class Batch:
    """One ExportTraceServiceRequest in both encodings, and how many spans it carries."""

    bodies: dict[str, bytes]
    spans: int


class Client:
    """One keep-alive HTTP/1.1 connection to a server on 127.0.0.1, with fixed headers."""

    def __init__(self, port: int, headers: dict[str, str]):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
        self.headers = headers

    def request(
        self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json"
    ) -> tuple[int, str | None, bytes]:
        """(status, Retry-After header, body) of one request."""
        self.connection.request(method, path, body=body, headers={**self.headers, "Content-Type": content_type})
        response = self.connection.getresponse()
        return response.status, response.getheader("Retry-After"), response.read()

    def json(self, method: str, path: str, doc: Any = None) -> Any:
        status, _, body = self.request(method, path, None if doc is None else json.dumps(doc).encode())
        if status != 200:
            raise RuntimeError(f"{method} {path} answered {status}: {body[:500]!r}")
        return json.loads(body)

    def close(self) -> None:
        self.connection.close()


@dataclass
class Server:
    """A started tool: its port, the headers its requests need, how it encodes OTLP, how long its
    spans may take to become readable, and `stored(client, trace id hex)` -> (spans, details)."""

    tool: str
    encoding: str
    port: int
    headers: dict[str, str]
    persist_timeout_s: float
    stored: Callable[[Client, str], tuple[int, dict[str, Any]]]
    log: Path
    pid: int | None = None  # the process whose tree's CPU time and peak RSS are reported


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants alive now (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children.get(tree[-1], [])
    return tree


def tree_usage(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of the live process tree of `pid`, and its peak RSS in MB: the
    sum of every process's VmHWM and the largest one."""
    ticks = os.sysconf("SC_CLK_TCK")
    cpu, peaks = 0.0, []
    for member in process_tree(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / ticks
            status = Path(f"/proc/{member}/status").read_text()
            peaks.append(int(status.split("VmHWM:")[1].split()[0]) / 1024)
    return {"cpu_s": cpu, "peak_rss_sum_mb": sum(peaks), "peak_rss_max_mb": max(peaks, default=0.0)}


def swarmscope_stored(client: Client, trace_hex: str) -> tuple[int, dict[str, Any]]:
    doc = client.json("GET", "/api/traces/?q=otlp&page_size=200")
    trace = next((t for t in doc["results"] if t["source_id"] == trace_hex), None)
    if trace is None:
        return 0, {}
    return trace["attributes"].get("spans", 0), {key: trace[key] for key in ("id", "event_count", "agent_count")}


def phoenix_stored(client: Client, trace_hex: str) -> tuple[int, dict[str, Any]]:
    doc = client.json("POST", "/graphql", {"query": PHOENIX_SPANS_QUERY, "variables": {"t": trace_hex}})
    if doc.get("errors"):
        raise RuntimeError(f"Phoenix GraphQL: {doc['errors']}")
    traces = [edge["node"]["trace"] for edge in doc["data"]["projects"]["edges"] if edge["node"]["name"] == "default"]
    return (traces[0]["numSpans"] if traces and traces[0] else 0), {}


@contextlib.contextmanager
def swarmscope(workdir: Path, encoding: str, postgres: str | None = None) -> Iterator[Server]:
    """`manage.py up` on the embedded default in a fresh data folder, and an API token of its admin;
    with `postgres` (a server URL without a database), on a new database there instead of SQLite,
    dropped afterwards."""
    database: dict[str, str] = {}
    name = f"bench_otlp_{encoding}_{os.getpid()}"
    if postgres:
        subprocess.run(["psql", f"{postgres}/postgres", "-qc", f"CREATE DATABASE {name}"], check=True)
        database["DATABASE_URL"] = f"{postgres}/{name}"
    env = app_env(
        workdir / f"swarmscope-{encoding}",
        SWARMSCOPE_LOG_LEVEL=os.environ.get("BENCH_LOG_LEVEL", "WARNING"),
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="bench-only-secret",
        SECURE_SSL_REDIRECT="0",
        **database,
    )
    port, log = free_port(), workdir / f"swarmscope-{encoding}.log"
    process = start([sys.executable, "manage.py", "up", "--port", str(port)], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", process, log, timeout=START_TIMEOUT_S)
        result = manage("create_token", "admin", env=env)
        if result.returncode != 0:
            raise RuntimeError(f"manage.py create_token admin: {result.stderr[-2000:]}")
        token = result.stdout.strip().splitlines()[-1]
        yield Server(
            "Swarmscope" + (" (PostgreSQL)" if postgres else ""),
            encoding,
            port,
            {"Authorization": f"Bearer {token}"},
            SWARMSCOPE_PERSIST_TIMEOUT_S,
            swarmscope_stored,
            log,
            process.pid,
        )
    finally:
        stop(process)
        if os.environ.get("BENCH_LOG_COPY"):
            shutil.copy(log, os.environ["BENCH_LOG_COPY"])
        if postgres:
            subprocess.run(["psql", f"{postgres}/postgres", "-qc", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"])


@contextlib.contextmanager
def phoenix(venv: Path, workdir: Path, persist_timeout_s: float) -> Iterator[Server]:
    """`phoenix serve` on loopback ports with a fresh working folder (embedded SQLite)."""
    port = free_port()
    grpc_port = free_port()
    while grpc_port == port:
        grpc_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PHOENIX_")}
    env.update(
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(grpc_port),
        PHOENIX_WORKING_DIR=str(workdir / "phoenix"),
        PHOENIX_TELEMETRY_ENABLED="false",
        PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
    )
    log = workdir / "phoenix.log"
    process = start([str(venv / "bin" / "phoenix"), "serve"], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", process, log, timeout=START_TIMEOUT_S)
        yield Server("Phoenix", "protobuf", port, {}, persist_timeout_s, phoenix_stored, log)
    finally:
        stop(process)


def installed_phoenix(venv: Path) -> str | None:
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    result = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('arize-phoenix'))"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.stdout.strip() if result.returncode == 0 else None


def ensure_phoenix(venv: Path, version: str) -> float | None:
    """Install arize-phoenix==`version` into `venv` unless it is there; the seconds it took, or None."""
    if installed_phoenix(venv) == version:
        return None
    print(f"installing arize-phoenix=={version} into {venv} ...", flush=True)
    began = time.perf_counter()
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"arize-phoenix=={version}"],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    if result.returncode != 0 or installed_phoenix(venv) != version:
        raise RuntimeError(f"pip install arize-phoenix=={version} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - began


def send(
    client: Client,
    body: bytes,
    content_type: str,
    latency_ms: list[float],
    refused: Counter,
    first_error: dict[str, str],
) -> bool:
    """POST one batch to /v1/traces, retrying 503, 429 and dropped connections; True once a 2xx
    answer came. Appends every request's latency in ms; counts non-2xx answers by status."""
    deadline = time.monotonic() + RETRY_DEADLINE_S
    while True:
        began = time.perf_counter()
        retry_after = None
        try:
            status, retry_after, answer = client.request("POST", "/v1/traces", body, content_type)
            retry = status in (429, 503)
        except (http.client.HTTPException, OSError) as exc:
            client.close()  # the next request opens a new connection
            status, answer = type(exc).__name__, str(exc).encode()
            retry = isinstance(exc, ConnectionError)
        latency_ms.append(round((time.perf_counter() - began) * 1000, 1))
        if isinstance(status, int) and 200 <= status < 300:
            return True
        refused[str(status)] += 1
        first_error.setdefault(str(status), answer[:500].decode("utf-8", "replace"))
        if not retry or time.monotonic() > deadline:
            return False
        try:
            wait = float(retry_after) if retry_after else 1.0
        except ValueError:
            wait = 1.0
        time.sleep(min(max(wait, 0.1), 60.0))


def run_case(server: Server, client: Client, name: str, trace_hex: str, batches: list[Batch]) -> dict[str, Any]:
    """Send `batches` in order, then poll until the trace holds every accepted span (or time is up)."""
    latency_ms: list[float] = []
    refused: Counter = Counter()
    first_error: dict[str, str] = {}
    accepted = 0
    cpu_before = tree_usage(server.pid)["cpu_s"] if server.pid else None
    began = time.perf_counter()
    for batch in batches:
        if send(
            client, batch.bodies[server.encoding], CONTENT_TYPES[server.encoding], latency_ms, refused, first_error
        ):
            accepted += batch.spans
    acked_s = time.perf_counter() - began
    deadline = time.monotonic() + server.persist_timeout_s
    while True:
        stored, details = server.stored(client, trace_hex)
        if stored >= accepted or time.monotonic() > deadline:
            break
        time.sleep(POLL_INTERVAL_S)
    persisted_s = time.perf_counter() - began if stored >= accepted else None
    spans = sum(b.spans for b in batches)
    usage = tree_usage(server.pid) if server.pid else {}
    if cpu_before is not None:
        usage["cpu_s"] -= cpu_before
        print(
            f"{server.tool} {server.encoding} {name}: server processes used {usage['cpu_s']:.1f} CPU s; peak RSS "
            f"{usage['peak_rss_sum_mb']:,.0f} MB in all, {usage['peak_rss_max_mb']:,.0f} MB the largest",
            flush=True,
        )
    return {
        "tool": server.tool,
        "encoding": server.encoding,
        "case": name,
        "trace_id": trace_hex,
        "spans": spans,
        "accepted": accepted,
        "stored": stored,
        "requests": len(latency_ms),
        "acked_s": acked_s,
        "persisted_s": persisted_s,
        **figures(spans, persisted_s, latency_ms),
        "non_2xx": dict(refused),
        "first_error": first_error,
        "stored_trace": details,
        "server_usage": usage,
        "latency_ms": latency_ms,
    }


def figures(spans: int, seconds: float | None, latency_ms: list[float]) -> dict[str, float | None]:
    return {
        "spans_per_s": spans / seconds if seconds else None,
        "p50_ms": statistics.median(latency_ms),
        "p99_ms": percentile(latency_ms, 0.99),
        "max_ms": max(latency_ms),
    }


def total(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The cases of one tool and encoding added up (latency figures over all their requests)."""
    latency_ms = [x for row in rows for x in row["latency_ms"]]
    spans = sum(row["spans"] for row in rows)
    persisted = None if any(row["persisted_s"] is None for row in rows) else sum(row["persisted_s"] for row in rows)
    refused = sum((Counter(row["non_2xx"]) for row in rows), Counter())
    return {
        "tool": rows[0]["tool"],
        "encoding": rows[0]["encoding"],
        "case": "total",
        "spans": spans,
        "accepted": sum(row["accepted"] for row in rows),
        "stored": sum(row["stored"] for row in rows),
        "requests": len(latency_ms),
        "acked_s": sum(row["acked_s"] for row in rows),
        "persisted_s": persisted,
        **figures(spans, persisted, latency_ms),
        "non_2xx": dict(refused),
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    def number(value: float | None, digits: int) -> str:
        return "timeout" if value is None else f"{value:,.{digits}f}"

    lines = [
        "| tool | encoding | case | spans | stored | requests | ack s | persisted s | spans/s | p50 ms "
        "| p99 ms | max ms | non-2xx |",
        "|" + "---|" * 13,
    ]
    for r in rows:
        refused = ", ".join(f"{status}: {n}" for status, n in sorted(r["non_2xx"].items())) or "0"
        case = f"**{r['case']}**" if r["case"] == "total" else r["case"]
        lines.append(
            f"| {r['tool']} | {r['encoding']} | {case} | {r['spans']:,} | {r['stored']:,} | {r['requests']} "
            f"| {r['acked_s']:.2f} | {number(r['persisted_s'], 2)} | {number(r['spans_per_s'], 0)} "
            f"| {r['p50_ms']:.0f} | {r['p99_ms']:.0f} | {r['max_ms']:.0f} | {refused} |"
        )
    return "\n".join(lines)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30).stdout.strip()


# --- the scaling curve: cost of a 1-span request against the size of the trace ----------------------

#: Spans of one fan-out round of 300 workers (`otlp_cases.fanout`: a chat turn, then per worker an
#: `execute_tool` span over an `invoke_agent` span with 5 chat and 4 tool spans).
ROUND_SPANS = 1 + 300 * 11


def scaling_case(size: int, seed: int):
    """A fan-out trace of about `size` spans: 300 workers over round(size / ROUND_SPANS) rounds, or
    one round of size // 11 workers for smaller sizes."""
    if size >= ROUND_SPANS:
        return fanout(f"scaling-{size}", seed, workers=300, rounds=round(size / ROUND_SPANS))
    return fanout(f"scaling-{size}", seed, workers=max(1, size // 11), rounds=1)


def one_more_span(case, index: int):
    """A 1-span ExportTraceServiceRequest: a copy of the orchestrator's first chat span with a new id,
    ending just before the root ends (or, for an empty `case`, a root span of a new trace)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

    span = Span()
    if case is None:
        span.trace_id = bytes.fromhex(f"{index + 1:032x}")
        span.name, span.start_time_unix_nano = "chat gpt-4o-mini", EPOCH_NS
        span.end_time_unix_nano = EPOCH_NS + 10**9
    else:
        root = case.spans[0]
        span.CopyFrom(next(s for s in case.spans if s.parent_span_id == root.span_id and s.name.startswith("chat")))
        span.start_time_unix_nano = root.end_time_unix_nano - 2_000_000 - 1000 * index
        span.end_time_unix_nano = root.end_time_unix_nano - 1_000_000
    span.span_id = bytes.fromhex(f"{0xFEED0000 + index:016x}")
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])])


def scaling(sizes: list[int], seed: int, batch: int, repeats: int, profile: Path | None = None) -> list[dict[str, Any]]:
    """Per size: spans, time to stream and derive the trace, and per 1-span request the latency of
    the request and of the re-derivation it asks for, wall and CPU time of this process, in ms (see
    the module docstring). With `profile`, the re-derivations of the largest size run under
    cProfile (their times then include its overhead): stats written there, the top printed."""
    import django

    with tempfile.TemporaryDirectory(prefix="bench-otlp-scaling-") as tmp:
        os.environ.update(
            SWARMSCOPE_DATA_DIR=tmp,
            DJANGO_SETTINGS_MODULE="webapp.config.settings",
            DJANGO_DEBUG="0",
            DJANGO_SECRET_KEY="bench-only-secret",
            SECURE_SSL_REDIRECT="0",
            SWARMSCOPE_LOG_LEVEL="WARNING",
            ALLOWED_HOSTS="testserver",  # Django's test client's host
        )
        for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
            os.environ.pop(name, None)
        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.test import Client as DjangoClient

        from swarmscope.importers import otlp
        from webapp.accounts.services import do_add_member, do_create_token, do_get_or_create_project
        from webapp.traces import span_ingest

        call_command("migrate", interactive=False, verbosity=0)
        user = get_user_model().objects.create_superuser("admin", "admin@localhost", "bench-password")
        project = do_get_or_create_project()
        do_add_member(project, user)
        client = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {do_create_token(user, project, 'scaling')[1]}")
        asked: list[int] = []
        span_ingest._enqueue_derive = lambda pk, source: asked.append(pk)  # derived below, timed apart

        def post(request) -> tuple[float, float]:
            """(wall ms, CPU ms) of one request."""
            start, cpu = time.perf_counter(), time.process_time()
            response = client.post("/v1/traces", request.SerializeToString(), content_type="application/x-protobuf")
            if response.status_code != 200:
                raise RuntimeError(f"answered {response.status_code}: {response.content[:300]!r}")
            return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000

        profiler = cProfile.Profile() if profile else None

        def derive(profiled: bool = False) -> tuple[float, float]:
            """(wall ms, CPU ms) of the derivations the requests since the last call asked for."""
            start, cpu = time.perf_counter(), time.process_time()
            if profiled and profiler is not None:
                profiler.enable()
            for pk in dict.fromkeys(asked):
                span_ingest.do_derive_spans(pk, otlp, "OTLP/HTTP")
            if profiled and profiler is not None:
                profiler.disable()
            asked.clear()
            return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000

        post(one_more_span(None, 10**6))  # warm-up (imports, first queries); not reported
        rows = []
        for size in [0, *sizes]:
            case = scaling_case(size, seed) if size else None
            load_s = stream_cpu_ms = 0.0
            if case is not None:
                start = time.perf_counter()
                stream_cpu_ms = sum(post(request)[1] for request in requests(case, batch))
                derive()
                load_s = time.perf_counter() - start
            request, derived = [], []
            for index in range(repeats):
                request.append(post(one_more_span(case, index)))
                derived.append(derive(profiled=size == max(sizes)))
            row = {
                "spans": len(case.spans) if case else 0,
                "load_s": round(load_s, 1),
                "stream_request_cpu_us_per_span": round(stream_cpu_ms * 1000 / len(case.spans), 1) if case else None,
                "request_ms": [round(wall, 1) for wall, _ in request],
                "request_cpu_ms": [round(cpu, 1) for _, cpu in request],
                "derive_ms": [round(wall, 1) for wall, _ in derived],
                "derive_cpu_ms": [round(cpu, 1) for _, cpu in derived],
                "load_1min": float(Path("/proc/loadavg").read_text().split()[0]),
                "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            }
            rows.append(row)
            median = {key: statistics.median(row[key]) for key in row if key.endswith("_ms")}
            print(
                f"{row['spans']:>7,} spans (streamed and derived in {load_s:.1f} s; its requests "
                f"{row['stream_request_cpu_us_per_span'] or 0} us CPU a span): 1-span request "
                f"{median['request_ms']:.1f} ms ({median['request_cpu_ms']:.1f} ms CPU), its re-derivation "
                f"{median['derive_ms']:.1f} ms ({median['derive_cpu_ms']:.1f} ms CPU); medians of {repeats}, "
                f"load {row['load_1min']}, peak RSS {row['max_rss_mb']} MB",
                flush=True,
            )
        if profiler is not None and profile is not None:
            profiler.dump_stats(profile)
            pstats.Stats(str(profile)).sort_stats("cumulative").print_stats(30)
        return rows


def decode_costs(seed: int, batch: int, baseline: Path | None) -> dict[str, float]:
    """Microseconds per span of each decoding step (see the module docstring), best of 5 rounds."""
    import importlib.util

    import django

    os.environ.update(DJANGO_SETTINGS_MODULE="webapp.config.settings", DJANGO_SECRET_KEY="bench-only-secret")
    django.setup()
    from swarmscope.importers import otlp
    from webapp.web.api import parse_body

    batches = requests(CASES["fanout-33k"](seed), batch)
    protobuf, texts = [r.SerializeToString() for r in batches], [to_json(r) for r in batches]
    docs = [json.loads(text) for text in texts]
    spans = sum(len(b.resource_spans[0].scope_spans[0].spans) for b in batches)
    steps: dict[str, Callable[[], object]] = {
        "parse_body (JSON)": lambda: [parse_body(text) for text in texts],
        "otlp.split (JSON)": lambda: [otlp.split(doc) for doc in docs],
        "otlp.decode_protobuf": lambda: [otlp.decode_protobuf(body) for body in protobuf],
    }
    if baseline is not None:
        spec = importlib.util.spec_from_file_location("swarmscope.importers.otlp_baseline", baseline)
        assert spec is not None and spec.loader is not None
        before = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = before
        spec.loader.exec_module(before)
        if [before.split(d) for d in docs] != [otlp.split(d) for d in docs] or [
            before.decode_protobuf(b) for b in protobuf
        ] != [otlp.decode_protobuf(b) for b in protobuf]:
            raise RuntimeError(f"{baseline} decodes other spans")
        steps["baseline otlp.split (JSON)"] = lambda: [before.split(doc) for doc in docs]
        steps["baseline otlp.decode_protobuf"] = lambda: [before.decode_protobuf(body) for body in protobuf]
    best = dict.fromkeys(steps, float("inf"))
    for _ in range(5):  # interleaved rounds, CPU time: a busy machine slows all steps alike
        for name, step in steps.items():
            start = time.process_time()
            step()
            best[name] = min(best[name], time.process_time() - start)
    costs = {name: round(seconds / spans * 1e6, 1) for name, seconds in best.items()}
    for name, us in costs.items():
        print(f"{name:32s} {us:6.1f} us/span")
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_cases = ",".join(name for name in CASES if name != "fanout-100k")
    parser.add_argument("--cases", default=default_cases, help=f"comma-separated, of: {', '.join(CASES)}")
    parser.add_argument("--batch", type=int, default=500, help="spans per ExportTraceServiceRequest")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-swarmscope", action="store_true")
    parser.add_argument("--skip-phoenix", action="store_true")
    parser.add_argument(
        "--encodings", default="protobuf,json", help="Swarmscope on SQLite with these encodings (protobuf, json)"
    )
    parser.add_argument("--phoenix-version", default=PHOENIX_VERSION)
    parser.add_argument("--phoenix-venv", type=Path, default=PHOENIX_VENV)
    parser.add_argument(
        "--phoenix-timeout",
        type=float,
        default=1200,
        help="seconds after its last answer for Phoenix to store a case's spans",
    )
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="also run Swarmscope (protobuf) on a new database of this PostgreSQL server, e.g. "
        "postgres://postgres@127.0.0.1:5432",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--scaling", default="", help="comma-separated trace sizes in spans: the scaling curve only")
    parser.add_argument(
        "--with-scaling",
        default="",
        metavar="SIZES",
        help="after the side-by-side cases, the scaling curve of these sizes in the same run and report",
    )
    parser.add_argument("--repeats", type=int, default=3, help="1-span requests per size (--scaling)")
    parser.add_argument(
        "--profile", type=Path, metavar="FILE", help="cProfile the largest size's re-derivations into FILE (--scaling)"
    )
    parser.add_argument("--decode", action="store_true", help="time the decoding alone")
    parser.add_argument("--decode-baseline", type=Path, help="another otlp.py to time alongside (--decode)")
    args = parser.parse_args()
    if args.decode:
        decode_costs(args.seed, args.batch, args.decode_baseline)
        return
    if args.scaling:
        started = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "command": shlex.join(sys.argv)}
        rows = scaling([int(n) for n in args.scaling.split(",")], args.seed, args.batch, args.repeats, args.profile)
        out = args.out.with_name("otlp_scaling.json") if args.out == OUT else args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"benchmark": "otlp_scaling", **started, "results": rows}, indent=1))
        print(f"wrote {out}")
        return
    names = args.cases.split(",")
    if unknown := [n for n in names if n not in CASES]:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")

    # SIGTERM (run_all's timeout) unwinds through the `finally` blocks that stop the servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join([sys.executable, *sys.argv]),
        "git_commit": git("rev-parse", "HEAD"),
        "git_modified": git("status", "--porcelain").splitlines(),
    }  # the code the servers start with
    warm_up = CASES["roundrobin"](args.seed + 1)
    cases = {name: CASES[name](args.seed) for name in names}
    encoded = {
        name: [
            Batch(
                {"protobuf": r.SerializeToString(), "json": to_json(r)}, len(r.resource_spans[0].scope_spans[0].spans)
            )
            for r in requests(case, args.batch)
        ]
        for name, case in [("warm-up", warm_up), *cases.items()]
    }
    phoenix_install_s = None if args.skip_phoenix else ensure_phoenix(args.phoenix_venv, args.phoenix_version)
    phoenix_version = None if args.skip_phoenix else installed_phoenix(args.phoenix_venv)
    described = {
        name: {
            "trace_id": cases[name].trace_id.hex(),
            "spans": len(cases[name].spans),
            "agents": len(cases[name].agents),
            "requests": len(encoded[name]),
            "protobuf_bytes": sum(len(b.bodies["protobuf"]) for b in encoded[name]),
            "json_bytes": sum(len(b.bodies["json"]) for b in encoded[name]),
        }
        for name in names
    }
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs (client and servers "
        f"share them); Phoenix {phoenix_version or 'skipped'}; batches of {args.batch} spans; "
        + "; ".join(
            f"{name}: {d['spans']:,} spans, {d['agents']} agents, {d['requests']} requests, "
            f"{d['protobuf_bytes'] / 2**20:.1f} MiB protobuf / {d['json_bytes'] / 2**20:.1f} MiB JSON"
            for name, d in described.items()
        ),
        flush=True,
    )

    rows: list[dict[str, Any]] = []
    logs: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-otlp-") as tmp:
        workdir = Path(tmp)
        servers = (
            []
            if args.skip_swarmscope
            else [
                lambda encoding=encoding: swarmscope(workdir, encoding)
                for encoding in args.encodings.split(",")
                if encoding
            ]
        )
        if args.postgres and not args.skip_swarmscope:
            servers += [lambda: swarmscope(workdir, "protobuf", args.postgres)]
        servers += [] if args.skip_phoenix else [lambda: phoenix(args.phoenix_venv, workdir, args.phoenix_timeout)]
        for open_server in servers:
            with open_server() as server:
                client = Client(server.port, server.headers)
                try:
                    run_case(server, client, "warm-up", warm_up.trace_id.hex(), encoded["warm-up"])
                    done = []
                    for name in names:
                        done.append(run_case(server, client, name, cases[name].trace_id.hex(), encoded[name]))
                        print(markdown(done[-1:]).splitlines()[-1], flush=True)
                finally:
                    client.close()
                rows += [*done, total(done)]
                if any(row["non_2xx"] for row in done):
                    logs[f"{server.tool} {server.encoding}"] = server.log.read_text(errors="replace")[-4000:]

    print()
    print(markdown(rows))
    curve = (
        scaling([int(n) for n in args.with_scaling.split(",")], args.seed, args.batch, args.repeats)
        if args.with_scaling
        else None
    )
    report = {
        "benchmark": "bench_otlp_vs_phoenix",
        **started,
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "python": platform.python_version()},
        "phoenix": {"version": phoenix_version, "venv": str(args.phoenix_venv), "install_s": phoenix_install_s},
        "seed": args.seed,
        "batch": args.batch,
        "cases": described,
        "results": rows,
        "server_log_tails": logs,
        **({"scaling": curve} if curve is not None else {}),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
