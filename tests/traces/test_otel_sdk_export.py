"""The real OpenTelemetry SDK exporters against the running app (`manage.py up`): a multi-agent trace
(an orchestrator `invoke_agent` span delegating to two sub-agents, each with a `chat` span) whose
content goes on the logs signal as GenAI events (LoggerProvider + OTLPLogExporter, the records
carrying the span context), over OTLP/HTTP protobuf and over OTLP/gRPC, configured only through
the documented environment variables (docs/sending-otel.md). It arrives as one trace with its
content. Below: the gRPC receiver's answers to bad calls, in process.

The sender runs in a fresh interpreter and sets itself up with the SDK's own environment
configurator (`opentelemetry.sdk._configuration`, what `opentelemetry-instrument` runs), so
`OTEL_EXPORTER_OTLP_PROTOCOL` picks the exporter as it does for users.
"""

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from swarmscope.importers import otlp
from tests.servers import REPO, app_env, free_port, manage, start, stop, wait_http

SENDER = r"""
import json, sys
from opentelemetry import _logs, trace
from opentelemetry.sdk._configuration import _OTelSDKConfigurator

_OTelSDKConfigurator().configure()  # exporters, endpoint, headers: OTEL_* environment variables only
tracer = trace.get_tracer("research-crew")
events = _logs.get_logger("opentelemetry.instrumentation.genai")


def agent(name):
    return tracer.start_as_current_span(
        f"invoke_agent {name}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
    )


def chat(name, input_tokens, output_tokens):
    return tracer.start_as_current_span(
        "chat gpt-4o",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.agent.name": name,
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
        },
    )


def event(name, body=None, **attributes):  # in the current span's context, as the GenAI events API
    events.emit(event_name=name, body=body, attributes={"gen_ai.system": "openai", **attributes})


def choice(text):
    event("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}})


with agent("orchestrator") as root:
    with chat("orchestrator", 120, 30):
        event("gen_ai.system.message", {"content": "You coordinate a researcher and a writer."})
        event("gen_ai.user.message", {"content": "Write a brief on solid-state batteries."})
        choice("Researcher: find sources. Writer: draft the brief.")
    with agent("researcher"):
        with chat("researcher", 200, 80):
            event("gen_ai.user.message", {"content": "Find sources on solid-state batteries."})
            choice("Three sources: ...")
    with agent("writer"):
        with chat("writer", 300, 150):
            event(
                "gen_ai.client.inference.operation.details",
                **{
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": "Draft the brief."}]}]
                    ),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": "Solid-state batteries ..."}]}]
                    ),
                },
            )
events.emit(body="crew finished")  # a plain log, outside any span
trace.get_tracer_provider().shutdown()  # flushes the batches
_logs.get_logger_provider().shutdown()
print(format(root.get_span_context().trace_id, "032x"))
"""

CONTENT = {
    "orchestrator": "Researcher: find sources. Writer: draft the brief.",
    "researcher": "Three sources: ...",
    "writer": "Solid-state batteries ...",
}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """`manage.py up` (embedded Redis, Daphne, the OTLP/gRPC receiver; no Celery worker: these
    traces are small enough to be derived in the request) and an API token of its admin."""
    tmp = tmp_path_factory.mktemp("otel-sdk")
    port, grpc_port = free_port(), free_port()
    env = app_env(tmp / "data")
    log = tmp / "up.log"
    up = start(
        [sys.executable, "manage.py", "up", "--no-worker", "--port", str(port), "--grpc-port", str(grpc_port)],
        env,
        log,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/", up, log)
        deadline = time.monotonic() + 60
        while f"OTLP/gRPC on 127.0.0.1:{grpc_port}" not in log.read_text():
            assert time.monotonic() < deadline and up.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
        token = manage("create_token", "admin", env=env).stdout.strip()
        yield {"port": port, "grpc_port": grpc_port, "token": token, "env": env, "log": log}
    finally:
        stop(up, signal.SIGINT)


def send(app, protocol: str, endpoint: str) -> str:
    """Run the sender with the exporter set-up users type; the trace id it sent."""
    env = {
        "PATH": app["env"].get("PATH", ""),
        "OTEL_SERVICE_NAME": "research-crew",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=" + urllib.parse.quote(f"Bearer {app['token']}"),
    }
    done = subprocess.run([sys.executable, "-c", SENDER], env=env, cwd=REPO, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    assert "Failed to export" not in done.stderr and "Exception" not in done.stderr, done.stderr
    return done.stdout.strip().splitlines()[-1]


def api(app, path: str):
    request = urllib.request.Request(
        f"http://127.0.0.1:{app['port']}{path}", headers={"Authorization": f"Bearer {app['token']}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def check_arrived(app, trace_id: str, transport: str) -> None:
    """One trace of that id, received over `transport`, with three agents, the two delegations and
    the content of the logs."""
    matches = [t for t in api(app, "/api/traces/?page_size=200")["results"] if t["source_id"] == trace_id]
    assert len(matches) == 1, matches
    snapshot = api(app, f"/api/traces/{matches[0]['id']}/snapshot/")
    events = snapshot["events"]
    assert {a["name"] for a in snapshot["agents"]} == {"orchestrator", "researcher", "writer"}
    delegations = sorted((e["agent"], e["to"]) for e in events if e["type"] == "delegate")
    assert delegations == [("orchestrator", "researcher"), ("orchestrator", "writer")]
    chats = {e["agent"]: e["content"] for e in events if e.get("tool") is None and e["type"] in ("message", "return")}
    assert chats == CONTENT
    attributes = snapshot["trace"]["attributes"]
    assert attributes["sources"] == [transport]
    assert attributes["input"].startswith("system: You coordinate a researcher and a writer.")
    assert attributes["log_records"] == 6  # the plain log has no trace context: kept on its own
    assert snapshot["trace"]["total_tokens"] == 120 + 30 + 200 + 80 + 300 + 150


@pytest.mark.processes
@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "protocol, port_key, transport",
    [("http/protobuf", "port", "OTLP/HTTP"), ("grpc", "grpc_port", "OTLP/gRPC")],
)
def test_the_sdk_exporters_send_one_trace_with_its_content(app, protocol, port_key, transport):
    trace_id = send(app, protocol, f"http://127.0.0.1:{app[port_key]}")
    check_arrived(app, trace_id, transport)


# --- the gRPC receiver's answers, in process ------------------------------------------------------

LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
TRACES_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture
def grpc_channel(transactional_db):
    from webapp.traces.otlp_grpc import make_server

    server, port = make_server("127.0.0.1", 0, workers=1)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield channel
    channel.close()
    server.stop(grace=None)


def call(channel, method, body: bytes, token: str | None):
    metadata = (("authorization", f"Bearer {token}"),) if token else None
    return channel.unary_unary(method)(body, metadata=metadata, timeout=30)


def test_grpc_answers_as_the_http_views_do(grpc_channel, api_token, fixtures, settings):
    logs = otlp.split_logs(json.loads((fixtures / "otlp_multi_agent_logs.json").read_text()))
    (spans,) = otlp.split(json.loads((fixtures / "otlp_multi_agent_spans.json").read_text())).values()
    response = call(grpc_channel, TRACES_EXPORT, otlp.encode_protobuf(spans), api_token)
    assert not ExportTraceServiceResponse.FromString(response).HasField("partial_success")
    response = call(grpc_channel, LOGS_EXPORT, otlp.encode_logs_protobuf(logs), api_token)
    assert not ExportLogsServiceResponse.FromString(response).HasField("partial_success")

    from webapp.traces.models import StoredLogRecord, Trace

    trace = Trace.objects.get(source_id=spans[0].trace_id)
    assert trace.attributes["sources"] == ["OTLP/gRPC"] and trace.attributes["log_records"] == 6
    assert StoredLogRecord.objects.count() == len(logs)

    cases = [
        (
            LOGS_EXPORT,
            otlp.encode_logs_protobuf(logs),
            None,
            grpc.StatusCode.UNAUTHENTICATED,
            "authentication required",
        ),
        (LOGS_EXPORT, otlp.encode_logs_protobuf(logs), "wrong", grpc.StatusCode.UNAUTHENTICATED, "invalid or revoked"),
        (LOGS_EXPORT, b"\x0a\x05ab", api_token, grpc.StatusCode.INVALID_ARGUMENT, "not an OTLP ExportLogsService"),
        (TRACES_EXPORT, b"\x0a\x05ab", api_token, grpc.StatusCode.INVALID_ARGUMENT, "not an OTLP ExportTraceService"),
    ]
    for method, body, token, code, message in cases:
        with pytest.raises(grpc.RpcError) as refused:
            call(grpc_channel, method, body, token)
        assert refused.value.code() == code and message in refused.value.details(), refused.value


def test_grpc_throttling_carries_retry_info(grpc_channel, api_token, settings):
    from django.core.cache import cache
    from google.rpc.error_details_pb2 import RetryInfo

    cache.clear()  # the rate counters of earlier tests
    settings.SWARMSCOPE_INGEST_RATE = 1
    call(grpc_channel, LOGS_EXPORT, b"", api_token)
    with pytest.raises(grpc.RpcError) as refused:
        call(grpc_channel, LOGS_EXPORT, b"", api_token)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "over the ingestion rate" in refused.value.details()
    retry = RetryInfo.FromString(dict(refused.value.trailing_metadata())["google.rpc.retryinfo-bin"])
    assert retry.retry_delay.seconds >= 1


def test_grpc_checks_the_token_before_reading_the_message(transactional_db, api_token, settings):
    """A message over the receive limit: without a token the call is refused for its token (the
    message was never read, or gRPC would have refused its size first); with one, for its size."""
    from webapp.traces.otlp_grpc import make_server

    settings.SWARMSCOPE_MAX_UPLOAD_BYTES = 4096
    server, port = make_server("127.0.0.1", 0, workers=1)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            for token, code, message in [
                (None, grpc.StatusCode.UNAUTHENTICATED, "authentication required"),
                ("wrong", grpc.StatusCode.UNAUTHENTICATED, "invalid or revoked API token"),
                (api_token, grpc.StatusCode.RESOURCE_EXHAUSTED, "larger than max"),
            ]:
                with pytest.raises(grpc.RpcError) as refused:
                    call(channel, TRACES_EXPORT, b"\x0a" * 100_000, token)
                assert refused.value.code() == code and message in refused.value.details(), refused.value
    finally:
        server.stop(grace=None)


@pytest.mark.processes
@pytest.mark.timeout(180)
def test_up_stays_up_when_the_grpc_port_is_taken(tmp_path):
    """Another collector on the gRPC port: `up` says so and serves HTTP (OTLP/HTTP included)."""
    import socket

    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        grpc_port = taken.getsockname()[1]
        log = tmp_path / "up.log"
        up = start(
            [sys.executable, "manage.py", "up", "--no-worker", "--port", str(port), "--grpc-port", str(grpc_port)],
            app_env(tmp_path / "data"),
            log,
        )
        try:
            wait_http(f"http://127.0.0.1:{port}/", up, log)
            deadline = time.monotonic() + 60
            while "OTLP/gRPC receiver exited with code 3" not in log.read_text():
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.2)
            assert f"cannot listen on 127.0.0.1:{grpc_port}" in log.read_text()
            assert up.poll() is None
            refused = urllib.request.Request(f"http://127.0.0.1:{port}/v1/logs", data=b"{}", method="POST")
            with pytest.raises(urllib.error.HTTPError) as answer:
                urllib.request.urlopen(refused, timeout=30)
            assert answer.value.code == 401  # /v1/logs is there, and wants a token
        finally:
            stop(up, signal.SIGINT)
    assert up.returncode == 0, log.read_text()[-3000:]
