"""A token count out of 0..MAX_TOKENS: `manage.py import_traces` fails the file and /v1/traces answers
a 400 OTLP Status, each naming the span and the attribute, with nothing stored (was a 500:
OverflowError at the insert); 2**31 - 1 is kept, and a trace's total past 32 bits too."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from google.protobuf.json_format import ParseDict
from google.rpc.status_pb2 import Status

from swarmscope.importers import otlp
from swarmscope.model import MAX_TOKENS
from webapp.traces.models import Event, StoredSpan, Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]

CHAT_SPANS = ("c100000000000001", "c100000000000002", "c100000000000003")  # chat spans, input + output


@pytest.fixture
def doc(fixtures):
    return json.loads((fixtures / "otlp_multi_agent_spans.json").read_text())


def _set(doc, span_id, key, value):
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    span = next(s for s in spans if s["spanId"] == span_id)
    span["attributes"] = [a for a in span["attributes"] if a["key"] != key] + [{"key": key, "value": value}]


BAD = [
    ("gen_ai.usage.input_tokens", {"intValue": "99999999999999999999999"}, "99999999999999999999999"),
    ("gen_ai.usage.output_tokens", {"doubleValue": 1e308}, "1e+308"),
    ("gen_ai.usage.input_tokens", {"intValue": "-500"}, "-500"),
    ("llm.token_count.completion", {"intValue": "-1"}, "-1"),
    ("gen_ai.usage.cache_read.input_tokens", {"intValue": str(MAX_TOKENS + 1)}, str(MAX_TOKENS + 1)),
]


def _import(path):
    out, err = StringIO(), StringIO()
    try:
        call_command("import_traces", str(path), stdout=out, stderr=err)
    except CommandError:
        return 1, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("key, value, shown", BAD)
def test_import_traces_fails_the_file_naming_span_and_attribute(doc, tmp_path, key, value, shown):
    _set(doc, CHAT_SPANS[0], key, value)
    (tmp_path / "spans.json").write_text(json.dumps(doc))
    code, _, err = _import(tmp_path / "spans.json")
    assert code == 1 and "spans.json: failed: " in err
    assert f"span {CHAT_SPANS[0]}" in err and f"{key} must be an integer from 0 to {MAX_TOKENS}, got {shown}" in err
    assert not Trace.objects.exists() and not Event.objects.exists()


def test_import_traces_refuses_counts_whose_sum_overflows(doc, tmp_path):
    for span_id in CHAT_SPANS:
        _set(doc, span_id, "gen_ai.usage.input_tokens", {"doubleValue": 4e18})
    (tmp_path / "spans.json").write_text(json.dumps(doc))
    code, _, err = _import(tmp_path / "spans.json")
    assert code == 1 and "gen_ai.usage.input_tokens must be an integer" in err
    assert not Trace.objects.exists()


def _status(response) -> Status:
    return ParseDict(response.json(), Status())


@pytest.mark.parametrize("sync_spans", [2000, 2])  # derived in the request; by the worker
@pytest.mark.parametrize("key, value, shown", BAD)
def test_v1_traces_answers_400_naming_span_and_attribute(api_client, doc, settings, sync_spans, key, value, shown):
    settings.SWARMSCOPE_OTLP_SYNC_SPANS = sync_spans
    _set(doc, CHAT_SPANS[0], key, value)
    response = api_client.post("/v1/traces", data=json.dumps(doc), content_type="application/json")
    assert response.status_code == 400
    message = _status(response).message
    assert _status(response).code == 3  # INVALID_ARGUMENT
    assert "('chat gpt-4o')" in message and f"span {CHAT_SPANS[0]}" in message
    assert f"{key} must be an integer from 0 to {MAX_TOKENS}, got {shown}" in message
    assert not Trace.objects.exists() and not StoredSpan.objects.exists()


def test_v1_traces_protobuf_answers_400(api_client, doc):
    _set(doc, CHAT_SPANS[1], "gen_ai.usage.output_tokens", {"intValue": "-500"})
    spans = [
        otlp.span_from_json(span, otlp.attributes(rs["resource"]["attributes"]))
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    response = api_client.post("/v1/traces", data=otlp.encode_protobuf(spans), content_type="application/x-protobuf")
    assert response.status_code == 400
    message = Status.FromString(response.content).message
    assert f"span {CHAT_SPANS[1]}" in message and "gen_ai.usage.output_tokens must be an integer" in message
    assert not Trace.objects.exists() and not StoredSpan.objects.exists()


def test_the_largest_count_is_kept_and_the_trace_total_past_32_bits(api_client, doc, tmp_path):
    for span_id in CHAT_SPANS:
        _set(doc, span_id, "gen_ai.usage.input_tokens", {"intValue": str(MAX_TOKENS)})
        _set(doc, span_id, "gen_ai.usage.output_tokens", {"intValue": "0"})
    response = api_client.post("/v1/traces", data=json.dumps(doc), content_type="application/json")
    assert response.status_code == 200
    (trace,) = Trace.objects.all()
    assert list(trace.events.filter(tokens=MAX_TOKENS).values_list("tokens", flat=True)) == [MAX_TOKENS] * 3
    assert trace.total_tokens == 3 * MAX_TOKENS
    trace.delete()
    (tmp_path / "spans.json").write_text(json.dumps(doc))
    assert _import(tmp_path / "spans.json")[0] == 0
    assert Trace.objects.get().total_tokens == 3 * MAX_TOKENS
