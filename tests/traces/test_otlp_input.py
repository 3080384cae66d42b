"""Bad and unusual OTLP requests: a clear 400 naming the problem and nothing stored, or a 200 that
says what it did not keep; the same on the path where the worker re-derives the trace."""

import gzip
import json

import pytest
from django.db.models import QuerySet
from django.test import Client
from google.protobuf.json_format import ParseDict
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from swarmscope.importers import otlp
from swarmscope.importers.otel import Span
from tests.traces.test_otlp_streaming import _file_traces
from webapp.traces import span_ingest
from webapp.traces.models import StoredSpan, Trace


@pytest.fixture
def spans(fixtures):
    (spans,) = _file_traces([fixtures / "otlp_genai_small.json"])
    return spans


def post(client, spans, encoding="protobuf"):
    if encoding == "protobuf":
        return client.post(
            "/v1/traces",
            data=gzip.compress(otlp.encode_protobuf(spans)),
            content_type="application/x-protobuf",
            HTTP_CONTENT_ENCODING="gzip",
        )
    return client.post("/v1/traces", data=json.dumps(otlp.encode_json(spans)), content_type="application/json")


def status(response) -> Status:
    """The `google.rpc.Status` of an OTLP error answer: protobuf for a protobuf request, else its JSON
    form, which holds nothing else (`ParseDict` refuses unknown fields)."""
    if response["Content-Type"] == "application/x-protobuf":
        return Status.FromString(response.content)
    assert response["Content-Type"] == "application/json"
    return ParseDict(response.json(), Status())


def with_nul(span: Span) -> Span:
    return Span.from_dict({**span.to_dict(), "attributes": {**span.attributes, "x.note": "a\x00b"}})


@pytest.mark.parametrize("sync_spans", [2000, 2])  # derived in the request; by the worker
def test_a_nul_character_in_any_attribute_is_refused_on_every_path(api_client, spans, settings, sync_spans):
    settings.SWARMSCOPE_OTLP_SYNC_SPANS = sync_spans
    assert post(api_client, spans[:3]).status_code == 200
    response = post(api_client, spans[3:4] + [with_nul(spans[4])])
    assert response.status_code == 400
    assert "NUL character" in status(response).message and spans[4].span_id in status(response).message
    assert StoredSpan.objects.count() == 3


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_a_span_id_reused_with_other_content_is_reported_not_stored(api_client, spans, encoding):
    assert post(api_client, spans, encoding).status_code == 200
    changed = Span.from_dict({**spans[0].to_dict(), "name": "something else"})
    response = post(api_client, [changed, spans[1]], encoding)  # spans[1]: a plain retry
    assert response.status_code == 200
    if encoding == "protobuf":
        partial = ExportTraceServiceResponse.FromString(response.content).partial_success
        assert (partial.rejected_spans, "stored span is kept" in partial.error_message) == (1, True)
    else:
        assert response.json()["partialSuccess"]["rejectedSpans"] == "1"
    assert StoredSpan.objects.get(span_id=spans[0].span_id).data["name"] == spans[0].name


def test_an_empty_request_is_accepted(api_client):
    for body in ("{}", '{"resourceSpans": []}'):
        assert api_client.post("/v1/traces", data=body, content_type="application/json").status_code == 200
    empty = ExportTraceServiceRequest()
    empty.resource_spans.add()  # a resource without spans (the test client drops an empty body)
    response = api_client.post("/v1/traces", data=empty.SerializeToString(), content_type="application/protobuf")
    assert response.status_code == 200 and response["Content-Type"] == "application/x-protobuf"
    assert not Trace.objects.exists()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s.update(startTimeUnixNano="0"), "startTimeUnixNano '0' is not a time"),
        (lambda s: s.update(startTimeUnixNano="abc"), "startTimeUnixNano 'abc' is not a time"),
        (lambda s: s.update(startTimeUnixNano=str(2**70)), "is not a time in nanoseconds"),
        (lambda s: s.pop("startTimeUnixNano"), "startTimeUnixNano None"),
        (lambda s: s.update(spanId="abc"), "spanId 'abc' is neither 16 hex digits"),
    ],
)
def test_a_malformed_span_is_named(api_client, spans, change, message):
    doc = otlp.encode_json(spans)
    change(doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1])
    response = api_client.post("/v1/traces", data=json.dumps(doc), content_type="application/json")
    assert response.status_code == 400
    error = status(response).message
    assert "resourceSpans[0].scopeSpans[0].spans[1]" in error and message in error
    assert not Trace.objects.exists()


@pytest.mark.parametrize(
    "shape, message",
    [
        ({"resourceSpans": ["x"]}, "resourceSpans must be a list of objects"),
        ({"resourceSpans": [{"scopeSpans": {"spans": []}}]}, "resourceSpans[0].scopeSpans must be a list of objects"),
        ({"resourceSpans": [{"scopeSpans": [{"spans": "oops"}]}]}, "scopeSpans[0].spans must be a list of objects"),
    ],
)
def test_a_malformed_request_is_named(api_client, shape, message):
    response = api_client.post("/v1/traces", data=json.dumps(shape), content_type="application/json")
    assert response.status_code == 400 and message in status(response).message


def test_errors_are_a_status_in_the_request_encoding_and_other_content_types_415(api_client, spans):
    """OTLP spec, "OTLP/HTTP Response": a failed request's body is a google.rpc.Status (protobuf for a
    protobuf request, else its JSON form, nothing else), naming the bad field; an unsupported
    Content-Type is 415 Unsupported Media Type; the api_view refusals (401) answer the same way."""
    doc = otlp.encode_json(spans)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["spanId"] = "abc"
    as_json = api_client.post("/v1/traces", data=json.dumps(doc), content_type="application/json")
    assert as_json.status_code == 400 and set(as_json.json()) == {"code", "message"}
    assert status(as_json).code == 3 and "spans[1]" in status(as_json).message  # INVALID_ARGUMENT
    request = ExportTraceServiceRequest.FromString(otlp.encode_protobuf(spans))
    request.resource_spans[0].scope_spans[0].spans[1].span_id = b"\x01\x02\x03"
    as_protobuf = api_client.post("/v1/traces", data=request.SerializeToString(), content_type="application/x-protobuf")
    assert (as_protobuf.status_code, status(as_protobuf).code) == (400, 3)
    assert "span 1" in status(as_protobuf).message and "is 3 bytes, expected 8" in status(as_protobuf).message
    text = api_client.post("/v1/traces", data=json.dumps(otlp.encode_json(spans)), content_type="text/plain")
    assert text.status_code == 415 and "Content-Type 'text/plain'" in status(text).message
    anonymous = Client().post("/v1/traces", data=otlp.encode_protobuf(spans), content_type="application/x-protobuf")
    assert (anonymous.status_code, status(anonymous).code) == (401, 16)  # UNAUTHENTICATED
    assert "authentication required" in status(anonymous).message
    assert not Trace.objects.exists()


def test_a_concurrent_first_request_locks_the_trace_the_other_created(project, monkeypatch):
    """Two first requests of a trace at once (PostgreSQL): the second one's insert fails on the
    identity constraint once the first commits, and it locks that row instead of failing (500)."""
    trace_id = "ab" * 16
    existing = Trace.objects.create(
        project=project, identity_key=f"otlp:{trace_id}", source_format="otlp", source_id=trace_id
    )
    real_first, calls = QuerySet.first, []

    def first_misses_once(self):
        calls.append(1)
        return None if len(calls) == 1 else real_first(self)  # the other request had not committed yet

    monkeypatch.setattr(QuerySet, "first", first_misses_once)
    assert span_ingest._lock_or_create_span_trace(project, otlp, trace_id) == existing
    assert Trace.objects.count() == 1
