"""The stdlib SDK against a local HTTP server (tests/servers.py is for the app; this one scripts
answers): 429 waits for Retry-After and resends, other 4xx fail at once with the body; settings
from the environment; `register()` exporting spans and log records with the bearer token.
(tests/swarmscope/test_client_dist.py installs the client alone and sends to the real app.)"""

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import swarmscope
import swarmscope_client
from swarmscope.client import Client, SwarmscopeClient, SwarmscopeError
from tests.servers import REPO


@pytest.fixture
def scripted():
    """A server that answers each POST with the next (status, headers, body) of `answers`."""
    answers, seen = [], []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((time.monotonic(), self.path, body, {k.lower(): v for k, v in self.headers.items()}))
            status, headers, body = answers.pop(0)
            payload = json.dumps(body).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", answers, seen
    server.shutdown()


def test_a_rate_limited_batch_waits_for_retry_after_and_is_sent_again(scripted):
    url, answers, seen = scripted
    answers += [(429, {"Retry-After": "1"}, {"error": "over the ingestion rate"}), (200, {}, {"added": 1})]
    result = SwarmscopeClient(url, "ssk_x").send_batch(7, [{"id": "e1", "t": 0, "type": "message", "agent": "a"}])
    assert result == {"added": 1}
    assert len(seen) == 2 and seen[0][1:3] == seen[1][1:3]  # the same batch, to the same place
    assert seen[1][0] - seen[0][0] >= 0.9


def test_a_bad_request_fails_at_once_with_the_servers_reason(scripted):
    url, answers, seen = scripted
    answers += [(400, {}, {"error": "events[0].t: must be a number", "field": "events[0].t"})]
    with pytest.raises(SwarmscopeError) as raised:
        SwarmscopeClient(url, "ssk_x").send_batch(7, [{"id": "e1", "t": "x", "type": "message", "agent": "a"}])
    assert raised.value.status == 400 and raised.value.body["field"] == "events[0].t" and len(seen) == 1


def test_leaving_a_stream_sends_the_rest_then_closes_it_once(scripted):
    url, answers, seen = scripted
    answers += [(201, {}, {"trace": {"id": 7, "project": 1}}), (200, {}, {"seq": 2}), (200, {}, {"closed": True})]
    with SwarmscopeClient(url, "ssk_x").stream("run", batch_size=10) as trace:
        trace.event(id="e1", t=0.0, type="message", agent="a")
        trace.edge("e1", "e1", "next")
    assert [path for _, path, _, _ in seen] == ["/api/traces/", "/api/traces/7/events/", "/api/traces/7/close/"]
    assert json.loads(seen[1][2])["events"][0]["id"] == "e1"
    trace.close()  # a second close sends nothing
    assert len(seen) == 3 and trace.closed
    with pytest.raises(ValueError, match="stream into trace 7 is closed"):
        trace.event(id="e2", t=1.0, type="message", agent="a")


def test_a_failed_close_leaves_the_stream_open_and_an_older_server_is_no_error(scripted):
    url, answers, seen = scripted
    client = SwarmscopeClient(url, "ssk_x", retries=0)
    answers += [(403, {}, {"error": "closing a trace's stream needs the reviewer role"})]
    trace = swarmscope_client.TraceStream(client, 7)
    with pytest.raises(SwarmscopeError) as refused:
        trace.close()
    assert refused.value.status == 403 and not trace.closed
    answers += [(404, {}, {"error": "not found"})]  # a server without the call: its idle time decides
    trace.close()
    assert trace.closed and [path for _, path, _, _ in seen] == ["/api/traces/7/close/"] * 2
    # leaving with an exception: the close is tried, the block's own exception is what propagates
    answers += [(500, {}, {"error": "down"})]
    with pytest.raises(KeyError), swarmscope_client.TraceStream(client, 8):
        raise KeyError("the swarm crashed")
    assert seen[-1][1] == "/api/traces/8/close/"


def test_a_refused_last_batch_still_closes_the_stream_and_reaches_the_caller(scripted):
    """The only batch has a bad event: leaving the block ends the trace's live state all the same
    (the close is sent), then raises the refusal; the empty trace is left, closed."""
    url, answers, seen = scripted
    answers += [(201, {}, {"trace": {"id": 7, "project": 1}})]
    answers += [(400, {}, {"error": "events[0].t: must be a number", "field": "events[0].t"})]
    answers += [(200, {}, {"closed": True})]
    with pytest.raises(SwarmscopeError) as refused:
        with SwarmscopeClient(url, "ssk_x", retries=0).stream("run") as trace:
            trace.event(id="e1", t="x", type="message", agent="a")
    assert refused.value.status == 400 and refused.value.body["field"] == "events[0].t"
    assert [path for _, path, _, _ in seen] == ["/api/traces/", "/api/traces/7/events/", "/api/traces/7/close/"]
    assert trace.closed


@pytest.fixture
def no_settings(monkeypatch):
    for name in ("SWARMSCOPE_URL", "SWARMSCOPE_API_KEY", "SWARMSCOPE_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_client_reads_its_settings_from_the_environment_and_arguments_win(no_settings):
    no_settings.setenv("SWARMSCOPE_URL", "http://app.example:8000/")
    no_settings.setenv("SWARMSCOPE_API_KEY", "ssk_env")
    no_settings.setenv("SWARMSCOPE_PROJECT", "3")
    client = Client()
    assert (client.url, client.api_key, client.project) == ("http://app.example:8000", "ssk_env", 3)
    client = Client("http://other:1", "ssk_arg", project=4)
    assert (client.url, client.api_key, client.project) == ("http://other:1", "ssk_arg", 4)
    assert "ssk_" not in repr(client)
    assert swarmscope.Client is swarmscope_client.Client is SwarmscopeClient  # one implementation


def test_a_missing_setting_names_its_variable(no_settings):
    with pytest.raises(ValueError, match="SWARMSCOPE_URL"):
        Client()
    no_settings.setenv("SWARMSCOPE_URL", "http://app.example:8000")
    with pytest.raises(ValueError, match="SWARMSCOPE_API_KEY"):
        Client()
    no_settings.setenv("SWARMSCOPE_API_KEY", "ssk_env")
    no_settings.setenv("SWARMSCOPE_PROJECT", "my project")
    with pytest.raises(ValueError, match="SWARMSCOPE_PROJECT.*number"):
        Client()
    no_settings.setenv("SWARMSCOPE_PROJECT", "")
    assert Client().project is None


def test_a_trace_filed_under_another_project_than_the_one_named_fails(scripted, no_settings):
    url, answers, seen = scripted
    answers += [(201, {}, {"trace": {"id": 9, "project": 2}})] * 2
    assert Client(url, "ssk_x", project=2).create_trace("run")["id"] == 9
    with pytest.raises(ValueError, match="trace 9 went to project 2, not SWARMSCOPE_PROJECT=5"):
        Client(url, "ssk_x", project=5).create_trace("run")
    assert seen[0][3]["authorization"] == "Bearer ssk_x"


def test_importing_the_client_loads_no_opentelemetry_and_no_library():
    code = (
        "import sys, swarmscope_client, swarmscope.client\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'opentelemetry', 'numpy', 'networkx', 'django'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_register_exports_spans_and_log_records_with_the_bearer_token(scripted, no_settings):
    from opentelemetry._logs import LogRecord
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from swarmscope_client import register

    url, answers, seen = scripted
    answers += [(200, {}, {})] * 2
    no_settings.setenv("SWARMSCOPE_API_KEY", "ssk_otel")
    provider = register(endpoint=url + "/v1/traces", project=7, batch=False, set_global_tracer_provider=False)
    with provider.get_tracer("tests").start_as_current_span("invoke_agent planner"):
        provider.logger_provider.get_logger("tests").emit(LogRecord(body="hello", event_name="gen_ai.user.message"))
    assert provider.force_flush(5000)
    provider.shutdown()
    assert sorted(path for _, path, _, _ in seen) == ["/v1/logs", "/v1/traces"]
    assert {headers["authorization"] for *_, headers in seen} == {"Bearer ssk_otel"}
    assert {headers["content-type"] for *_, headers in seen} == {"application/x-protobuf"}
    spans = ExportTraceServiceRequest.FromString(next(body for _, path, body, _ in seen if path == "/v1/traces"))
    (resource_spans,) = spans.resource_spans
    assert {a.key: a.value.int_value for a in resource_spans.resource.attributes}["swarmscope.project"] == 7
    assert resource_spans.scope_spans[0].spans[0].name == "invoke_agent planner"


def test_register_speaks_grpc_to_the_receivers_port_and_refuses_other_protocols(no_settings):
    from swarmscope_client import otel, register

    assert otel.grpc_endpoint("http://app.example:8000", explicit=False) == "http://app.example:4317"
    assert otel.grpc_endpoint("https://collector:4444", explicit=True) == "https://collector:4444"
    provider = register(
        endpoint="http://127.0.0.1:1", api_key="ssk_x", protocol="grpc", set_global_tracer_provider=False
    )
    provider.shutdown()  # nothing was sent: exporters connect on first export
    with pytest.raises(ValueError, match="http/protobuf, grpc"):
        register(endpoint="http://127.0.0.1:1", api_key="ssk_x", protocol="http/json")
    with pytest.raises(ValueError, match="SWARMSCOPE_URL"):
        register(api_key="ssk_x", set_global_tracer_provider=False)


def test_create_trace_sends_one_idempotency_key_that_its_retries_reuse(scripted, monkeypatch):
    url, answers, seen = scripted
    monkeypatch.setattr(time, "sleep", lambda s: None)
    answers += [(503, {}, {"error": "busy"}), (502, {}, {"error": "gateway"}), (201, {}, {"trace": {"id": 7}})]
    answers += [(201, {}, {"trace": {"id": 8}})]
    client = SwarmscopeClient(url, "ssk_x")
    assert client.create_trace("run")["id"] == 7
    keys = [headers.get("idempotency-key") for _, _, _, headers in seen]
    assert len(keys) == 3 and keys[0] is not None and len(set(keys)) == 1  # one logical call, one key
    assert keys[0].startswith('"') and keys[0].endswith('"')  # an sf-string, as the IETF draft writes it
    assert client.create_trace("run")["id"] == 8
    assert seen[-1][3]["idempotency-key"] != keys[0]  # a new call, a fresh key


def test_a_failed_flush_keeps_its_batch_in_order_for_the_next_one(scripted):
    url, answers, seen = scripted
    client = SwarmscopeClient(url, "ssk_x", retries=0)
    trace = swarmscope_client.TraceStream(client, 7, batch_size=1000, flush_interval=3600)
    trace.event(id="e1", t=0.0, type="message", agent="a")
    trace.event(id="e2", t=1.0, type="message", agent="a")
    trace.edge("e1", "e2", "causal")
    answers += [(500, {}, {"error": "down"})]
    with pytest.raises(SwarmscopeError):
        trace.flush()
    trace.event(id="e3", t=2.0, type="message", agent="a")  # queued after the failure
    answers += [(200, {}, {"seq": 2}), (200, {}, {"closed": True})]
    trace.close()
    sent = json.loads(seen[1][2])
    assert [e["id"] for e in sent["events"]] == ["e1", "e2", "e3"] and sent["edges"] == [
        {"src": "e1", "dst": "e2", "type": "causal"}
    ]
    assert [path for _, path, _, _ in seen] == ["/api/traces/7/events/"] * 2 + ["/api/traces/7/close/"]


def test_a_network_failure_keeps_the_batch_and_a_refused_batch_is_not_sent_again(scripted):
    url, answers, seen = scripted
    client = SwarmscopeClient(url, "ssk_x", retries=0, timeout=5)
    dead = swarmscope_client.TraceStream(SwarmscopeClient("http://127.0.0.1:9", "ssk_x", retries=0), 7)
    dead.event(id="e1", t=0.0, type="message", agent="a")
    with pytest.raises(OSError):  # nothing listens on port 9: connection refused
        dead.flush()
    assert [e["id"] for e in dead._events] == ["e1"]
    trace = swarmscope_client.TraceStream(client, 7, flush_interval=3600)
    trace.event(id="e1", t="x", type="message", agent="a")
    answers += [(400, {}, {"error": "must be a number", "field": "t", "index": 0})]
    with pytest.raises(SwarmscopeError):
        trace.flush()
    answers += [(200, {}, {"closed": True})]
    trace.close()  # the refused batch is gone: the close is all that is sent
    assert [path for _, path, _, _ in seen] == ["/api/traces/7/events/", "/api/traces/7/close/"]
