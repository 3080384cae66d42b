"""OTLP logs (`POST /v1/logs`, JSON and protobuf): GenAI content events sent on the logs signal join
their spans by trace and span id whichever arrives first, and the trace is the one the same
content gives as span events; bad requests are a 400 naming the record and field, storing nothing.

Fixtures: `otlp_multi_agent_spans.json` (an orchestrator delegating to a researcher and a writer,
`chat` spans without content) and `otlp_multi_agent_logs.json` (their content: the older GenAI
events `gen_ai.system.message` / `gen_ai.user.message` / `gen_ai.choice` with the content in the
body, one `gen_ai.client.inference.operation.details` with it in attributes, and one plain log
without trace context).
"""

import copy
import gzip
import json

import pytest
from django.test import Client
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse

from swarmscope.importers import otlp
from swarmscope.importers.otel import SpanEvent
from tests.traces.test_otlp_input import status
from tests.traces.test_otlp_streaming import import_once, stored_form
from webapp.traces.models import StoredLogRecord, Trace
from webapp.traces.tasks import derive_spans

TRACE_ID = "5e1f0c2a9b7d4e3f8a6b1c0d2e4f6a8b"


@pytest.fixture
def spans(fixtures):
    (spans,) = otlp.split(json.loads((fixtures / "otlp_multi_agent_spans.json").read_text())).values()
    return spans


@pytest.fixture
def logs_doc(fixtures):
    return json.loads((fixtures / "otlp_multi_agent_logs.json").read_text())


@pytest.fixture
def records(logs_doc):
    return otlp.split_logs(logs_doc)


def post_spans(client, spans):
    response = client.post(
        "/v1/traces",
        data=gzip.compress(otlp.encode_protobuf(spans)),
        content_type="application/x-protobuf",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert response.status_code == 200, response.content


def post_logs(client, records, encoding="protobuf"):
    if encoding == "protobuf":
        return client.post(
            "/v1/logs",
            data=gzip.compress(otlp.encode_logs_protobuf(records)),
            content_type="application/x-protobuf",
            HTTP_CONTENT_ENCODING="gzip",
        )
    return client.post("/v1/logs", data=json.dumps(otlp.encode_logs_json(records)), content_type="application/json")


def the_trace() -> Trace:
    return Trace.objects.get(identity_key=f"otlp:{TRACE_ID}", project__name="Test project")


def as_span_events(spans, logs_doc):
    """The spans with the fixture's content written as span events, as an SDK records the same
    GenAI events on the span (event name; body fields and attributes as event attributes). Read
    from the raw JSON here, not through `otlp.LogRecord`."""
    events: dict[str, list[SpanEvent]] = {}
    for resource in logs_doc["resourceLogs"]:
        for record in resource["scopeLogs"][0]["logRecords"]:
            if "spanId" not in record:
                continue
            attributes = otlp.attributes(record["attributes"])
            attributes.update(otlp.any_value(record.get("body")) or {})
            events.setdefault(record["spanId"], []).append(
                SpanEvent(record["eventName"], int(record["timeUnixNano"]), attributes)
            )
    with_events = copy.deepcopy(spans)
    for span in with_events:
        span.events = events.get(span.span_id, [])
    return with_events


def without_log_count(form: dict) -> dict:
    return {**form, "attributes": {k: v for k, v in form["attributes"].items() if k != "log_records"}}


# --- the join --------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_content_on_the_logs_signal_is_the_trace_of_the_same_span_events(
    api_client, spans, records, logs_doc, encoding
):
    post_spans(api_client, spans)
    assert all(e.content is None for e in the_trace().events.all())  # spans alone: no content
    response = post_logs(api_client, records, encoding)
    assert response.status_code == 200, response.content
    stored = stored_form(the_trace())
    assert stored["attributes"]["log_records"] == len(records) - 1  # one record has no trace context
    assert without_log_count(stored) == import_once(as_span_events(spans, logs_doc))
    contents = {e.event_id: e.content for e in the_trace().events.all() if e.content}
    assert contents == {
        "c100000000000001": "Researcher: find sources. Writer: draft the brief.",
        "c100000000000002": "Three sources: ...",
        "c100000000000003": "Solid-state batteries replace ...",  # operation.details, in attributes
    }
    assert stored["attributes"]["input"].startswith("system: You coordinate a researcher and a writer.")


def test_the_response_is_an_empty_export_logs_response(api_client, records):
    response = post_logs(api_client, records)
    assert response["Content-Type"] == "application/x-protobuf"
    assert not ExportLogsServiceResponse.FromString(response.content).HasField("partial_success")
    json_response = post_logs(api_client, records, "json")
    assert json_response.json() == {"partialSuccess": {}}


@pytest.mark.parametrize("order", ["logs first", "interleaved"])
def test_logs_that_come_before_their_spans_apply_when_the_spans_arrive(api_client, spans, records, logs_doc, order):
    if order == "logs first":
        assert post_logs(api_client, records).status_code == 200
        assert the_trace().event_count == 0  # the trace waits for its spans
        post_spans(api_client, spans)
    else:  # the writer's content before its spans, the rest after
        early = [r for r in records if r.span_id == "c100000000000003"]
        post_spans(api_client, spans[:3])
        assert post_logs(api_client, early).status_code == 200
        post_spans(api_client, spans[3:])
        assert post_logs(api_client, [r for r in records if r not in early], "json").status_code == 200
    assert without_log_count(stored_form(the_trace())) == import_once(as_span_events(spans, logs_doc))


def test_the_deferred_rebuild_joins_the_logs_too(
    api_client, spans, records, logs_doc, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.SWARMSCOPE_OTLP_SYNC_SPANS = 2  # derived by the worker task, here run eagerly
    monkeypatch.setattr(derive_spans, "apply_async", lambda args, **options: derive_spans.apply(args=args))
    with django_capture_on_commit_callbacks(execute=True):
        post_spans(api_client, spans)
    with django_capture_on_commit_callbacks(execute=True):
        assert post_logs(api_client, records).status_code == 200
    trace = the_trace()
    assert not trace.spans_pending
    assert without_log_count(stored_form(trace)) == import_once(as_span_events(spans, logs_doc))


def test_a_retry_stores_nothing_and_does_not_rebuild(api_client, spans, records):
    post_spans(api_client, spans)
    assert post_logs(api_client, records).status_code == 200
    seq = the_trace().seq
    assert post_logs(api_client, records, "json").status_code == 200  # the same records, other encoding
    assert StoredLogRecord.objects.count() == len(records)
    assert the_trace().seq == seq


def test_a_record_without_trace_context_is_kept_on_its_own(api_client, records):
    plain = [r for r in records if r.trace_id is None]
    assert len(plain) == 1
    assert post_logs(api_client, plain).status_code == 200
    (row,) = StoredLogRecord.objects.all()
    assert row.trace is None and row.span_id == "" and row.project.name == "Test project"
    assert otlp.LogRecord.from_dict(row.data) == plain[0] and plain[0].body == "crew started"
    assert not Trace.objects.exists()


def test_an_empty_request_is_accepted(api_client):
    for body in ("{}", '{"resourceLogs": []}'):
        assert api_client.post("/v1/logs", data=body, content_type="application/json").status_code == 200
    assert not StoredLogRecord.objects.exists() and not Trace.objects.exists()


def test_secrets_in_content_are_redacted_before_storage(api_client, spans, records, settings):
    secret = "sk-" + "a1B2c3D4e5" * 4
    record = next(r for r in records if r.event_name == "gen_ai.user.message")
    record.body = {"content": f"use key {secret}"}
    post_spans(api_client, spans)
    assert post_logs(api_client, [record]).status_code == 200
    assert secret not in json.dumps(list(StoredLogRecord.objects.values_list("data", flat=True)))
    assert secret not in json.dumps(stored_form(the_trace()))


# --- bad requests: 400 naming the record and field, nothing stored --------------------------------


def first_record(doc: dict) -> dict:
    return doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][1]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r.update(traceId="abc"), "logRecords[1]: traceId 'abc' is neither 32 hex digits"),
        (lambda r: r.update(spanId="xyz"), "logRecords[1]: spanId 'xyz' is neither 16 hex digits"),
        (lambda r: r.update(timeUnixNano="soon"), "logRecords[1]: timeUnixNano 'soon' is not a time"),
        (lambda r: r.update(observedTimeUnixNano=str(2**70)), "observedTimeUnixNano"),
        (lambda r: r.update(severityNumber="loud"), "logRecords[1]: severityNumber 'loud' is not an integer"),
        (lambda r: r.update(severityNumber="SEVERITY_NUMBER_LOUD"), "is not a SeverityNumber"),
    ],
)
def test_a_malformed_record_is_named_and_nothing_is_stored(api_client, spans, logs_doc, change, message):
    post_spans(api_client, spans)
    seq = the_trace().seq
    change(first_record(logs_doc))
    response = api_client.post("/v1/logs", data=json.dumps(logs_doc), content_type="application/json")
    assert response.status_code == 400
    error = status(response).message
    assert error.startswith("invalid log records: resourceLogs[0].scopeLogs[0].logRecords[1]") and message in error
    assert not StoredLogRecord.objects.exists() and the_trace().seq == seq


@pytest.mark.parametrize(
    "body, message",
    [
        ('{"resourceSpans": []}', "not an OTLP ExportLogsServiceRequest (no resourceLogs)"),
        ('{"resourceLogs": ["x"]}', "resourceLogs must be a list of objects"),
        ('{"resourceLogs": [{"scopeLogs": {"logRecords": []}}]}', "resourceLogs[0].scopeLogs must be a list"),
        ('{"resourceLogs": [{"scopeLogs": [{"logRecords": 7}]}]}', "scopeLogs[0].logRecords must be a list"),
        ('{"resourceLogs": [', "unreadable OTLP request"),
    ],
)
def test_a_malformed_request_is_named(api_client, body, message):
    response = api_client.post("/v1/logs", data=body, content_type="application/json")
    assert response.status_code == 400 and message in status(response).message
    assert not StoredLogRecord.objects.exists()


def test_bad_protobuf_is_refused(api_client, records):
    response = api_client.post("/v1/logs", data=b"\x0a\x05ab", content_type="application/x-protobuf")
    assert response.status_code == 400 and "not an OTLP ExportLogsServiceRequest" in status(response).message
    request = ExportLogsServiceRequest.FromString(otlp.encode_logs_protobuf(records))
    request.resource_logs[0].scope_logs[0].log_records[2].span_id = b"\x01\x02\x03"  # 3 bytes, not 8
    response = api_client.post("/v1/logs", data=request.SerializeToString(), content_type="application/x-protobuf")
    assert response.status_code == 400
    assert (
        "resourceLogs[0].scopeLogs[0].logRecords[2]: span_id: id '010203' is 3 bytes, expected 8"
        in status(response).message
    )
    assert not StoredLogRecord.objects.exists() and not Trace.objects.exists()


def test_a_nul_character_is_refused_naming_the_record(api_client, records):
    records[3].body = {"content": "a\x00b"}
    response = post_logs(api_client, records)
    assert response.status_code == 400
    assert "log record 3 (gen_ai.user.message) must not contain a NUL character" in status(response).message
    assert not StoredLogRecord.objects.exists() and not Trace.objects.exists()


def test_auth_and_limits_are_those_of_v1_traces(api_client, records, settings, team):
    body = otlp.encode_logs_protobuf(records)
    client = Client()  # no token
    anonymous = client.post("/v1/logs", data=body, content_type="application/x-protobuf")
    assert anonymous.status_code == 401 and "authentication required" in status(anonymous).message
    wrong = client.post("/v1/logs", data=body, content_type="application/x-protobuf", HTTP_AUTHORIZATION="Bearer wrong")
    assert wrong.status_code == 401 and status(wrong).message == "invalid or revoked API token"
    viewer = team.client("vic").post("/v1/logs", data=body, content_type="application/x-protobuf")
    assert viewer.status_code == 403 and "sending OTLP logs" in status(viewer).message
    settings.SWARMSCOPE_MAX_UPLOAD_BYTES = 100
    too_big = api_client.post("/v1/logs", data=body, content_type="application/x-protobuf")
    assert too_big.status_code == 413 and "SWARMSCOPE_MAX_UPLOAD_BYTES" in status(too_big).message
    assert not StoredLogRecord.objects.exists()
    assert api_client.get("/v1/logs").status_code == 405


# --- the decoding (library) -----------------------------------------------------------------------


def test_protobuf_and_json_decode_to_the_same_records(records, logs_doc):
    assert otlp.decode_logs_protobuf(otlp.encode_logs_protobuf(records)) == records
    assert otlp.split_logs(otlp.encode_logs_json(records)) == records
    assert {r.event_name for r in records} == {
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.choice",
        "gen_ai.client.inference.operation.details",
        "",
    }


def test_older_sdks_name_the_event_in_an_attribute_and_string_bodies_are_content():
    doc = {
        "resource_logs": [  # snake_case, as the protobuf JSON mapping also allows
            {
                "scope_logs": [
                    {
                        "log_records": [
                            {
                                "trace_id": TRACE_ID,
                                "span_id": "c100000000000002",
                                "observed_time_unix_nano": "1767225600000000000",
                                "attributes": [{"key": "event.name", "value": {"stringValue": "gen_ai.user.message"}}],
                                "body": {"stringValue": "hello"},
                            }
                        ]
                    }
                ]
            }
        ]
    }
    (record,) = otlp.split_logs(doc)
    assert record.event_name == "gen_ai.user.message" and record.time_ns is None
    event = record.to_span_event()
    assert event == SpanEvent(
        "gen_ai.user.message", 1767225600000000000, {"event.name": "gen_ai.user.message", "content": "hello"}
    )


def test_attach_logs_merges_events_in_time_order(spans, records):
    chat = next(s for s in spans if s.span_id == "c100000000000001")
    chat.events = [SpanEvent("own", chat.start_ns + 50 * 1_000_000, {})]
    attached = {s.span_id: s for s in otlp.attach_logs(spans, records)}
    names = [e.name for e in attached["c100000000000001"].events]
    assert names == ["gen_ai.system.message", "gen_ai.user.message", "own", "gen_ai.choice"]
    assert attached["a100000000000001"] is next(s for s in spans if s.span_id == "a100000000000001")  # untouched
    assert chat.events[0].name == "own" and len(chat.events) == 1  # the input is not changed


def test_span_links_survive_both_encodings():
    """Span links (read by the mapping as `causal` edges) are decoded from JSON and protobuf."""
    from swarmscope.importers.otel import Span, SpanLink

    link = SpanLink("cd" * 16, "02" * 8, {"link.kind": "follows"})
    span = Span(trace_id=TRACE_ID, span_id="01" * 8, parent_id=None, name="x", start_ns=10, end_ns=20, links=[link])
    ((from_json,),) = otlp.split(otlp.encode_json([span])).values()
    ((from_protobuf,),) = otlp.decode_protobuf(otlp.encode_protobuf([span])).values()
    assert from_json == from_protobuf == span
    doc = otlp.encode_json([span])
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["links"].append({"traceId": "nope", "spanId": "02" * 8})
    ((skipped,),) = otlp.split(doc).values()
    assert skipped.links == [link]  # a malformed link is skipped, as malformed events are
