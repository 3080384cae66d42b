"""Token counts out of 0..MAX_TOKENS (the event column) are refused by every span importer, naming the
span and the attribute, and the file makes no trace (docs/otel-mapping.md "Tokens"); 2**31 - 1 is kept."""

import copy
import json

import pytest

from swarmscope.importers import SourceFile, otlp, read_files
from swarmscope.model import MAX_TOKENS

CHAT = "c100000000000001"  # a `chat gpt-4o` span of otlp_multi_agent_spans.json (input 120, output 30)


@pytest.fixture
def doc(fixtures):
    return json.loads((fixtures / "otlp_multi_agent_spans.json").read_text())


def _span(doc, span_id=CHAT):
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    return next(s for s in spans if s["spanId"] == span_id)


def _set(span, key, value):
    span["attributes"] = [a for a in span["attributes"] if a["key"] != key] + [{"key": key, "value": value}]


def _read(name, doc):
    return read_files([SourceFile(name, json.dumps(doc).encode())])


def _refused(name, doc):
    result = _read(name, doc)
    assert not result.traces
    (report,) = result.failed
    return report.error


BAD = [
    ("gen_ai.usage.input_tokens", {"intValue": "99999999999999999999999"}, "99999999999999999999999"),
    ("gen_ai.usage.output_tokens", {"doubleValue": 1e308}, "1e+308"),
    ("gen_ai.usage.input_tokens", {"intValue": "-500"}, "-500"),
    ("gen_ai.usage.output_tokens", {"doubleValue": 12.5}, "12.5"),
    ("gen_ai.usage.total_tokens", {"intValue": str(MAX_TOKENS + 1)}, str(MAX_TOKENS + 1)),
    ("gen_ai.usage.prompt_tokens", {"stringValue": "lots"}, "'lots'"),
    ("llm.token_count.prompt", {"intValue": "-1"}, "-1"),
    ("llm.token_count.total", {"intValue": str(4 * 10**18)}, str(4 * 10**18)),
    ("gen_ai.usage.cache_read.input_tokens", {"intValue": "-3"}, "-3"),
    ("gen_ai.usage.cache_creation_input_tokens", {"doubleValue": 1e300}, "1e+300"),
    ("llm.token_count.completion_details.reasoning", {"intValue": str(2**63)}, str(2**63)),
]


@pytest.mark.parametrize("key, value, shown", BAD)
def test_a_bad_token_count_fails_the_otlp_file_naming_span_and_attribute(doc, key, value, shown):
    _set(_span(doc), key, value)
    error = _refused("spans.json", doc)
    assert f"span {CHAT}" in error and "'chat gpt-4o'" in error and "spans[1]" in error
    assert f"{key} must be an integer from 0 to {MAX_TOKENS}, got {shown}" in error


@pytest.mark.parametrize("key, value, shown", BAD[1:5])  # protobuf holds up to 64 bits
def test_a_bad_token_count_fails_the_protobuf_decode(doc, key, value, shown):
    _set(_span(doc), key, value)
    request = otlp.encode_protobuf(_spans_unchecked(doc))
    with pytest.raises(ValueError, match=rf"span 1 \('chat gpt-4o'\): span {CHAT}: {key} must be an integer"):
        otlp.decode_protobuf(request)


def _spans_unchecked(doc):
    """The spans of `doc` decoded without the token check (to encode a bad one as protobuf)."""
    return [
        otlp.span_from_json(span, otlp.attributes(rs.get("resource", {}).get("attributes")))
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


def test_three_spans_whose_sum_overflows_a_64_bit_integer_are_refused(doc):
    for span_id in (CHAT, "c100000000000002", "c100000000000003"):
        _set(_span(doc, span_id), "gen_ai.usage.input_tokens", {"intValue": str(4 * 10**18)})
    assert "gen_ai.usage.input_tokens must be an integer" in _refused("spans.json", doc)


def test_input_plus_output_over_the_column_without_a_total_is_refused(doc):
    _set(_span(doc), "gen_ai.usage.input_tokens", {"intValue": str(MAX_TOKENS)})  # output 30
    error = _refused("spans.json", doc)
    assert f"span {CHAT}" in error and f"input + output tokens ({MAX_TOKENS} + 30) exceed {MAX_TOKENS}" in error


def test_a_bad_count_in_a_monocle_metadata_event_is_refused(doc):
    span = _span(doc)
    span["attributes"] = [a for a in span["attributes"] if "usage" not in a["key"]]
    metadata = {"key": "completion_tokens", "value": {"intValue": "-7"}}
    span.setdefault("events", []).append(
        {"name": "metadata", "timeUnixNano": span["startTimeUnixNano"], "attributes": [metadata]}
    )
    error = _refused("spans.json", doc)
    assert f"span {CHAT}" in error and "completion_tokens of its metadata event must be an integer" in error


def test_a_bad_count_in_a_response_body_usage_is_refused(doc):
    span = _span(doc)
    span["attributes"] = [a for a in span["attributes"] if "usage" not in a["key"]]
    body = {"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}
    body["usage"] = {"prompt_tokens": -9, "completion_tokens": 2}
    _set(span, "output.value", {"stringValue": json.dumps(body)})
    error = _refused("spans.json", doc)
    assert f"span {CHAT}" in error and "input tokens of the usage in output.value must be an integer" in error


def test_the_largest_count_is_kept_and_trace_sums_past_it(doc):
    """2**31 - 1 on each of three calls: each event holds it, the trace's sum (over 32 bits) too."""
    for span_id in (CHAT, "c100000000000002", "c100000000000003"):
        _set(_span(doc, span_id), "gen_ai.usage.input_tokens", {"intValue": str(MAX_TOKENS)})
        _set(_span(doc, span_id), "gen_ai.usage.output_tokens", {"intValue": "0"})
    (trace,) = _read("spans.json", doc).traces
    assert sorted(e.tokens for e in trace.events if e.tokens == MAX_TOKENS) == [MAX_TOKENS] * 3
    assert trace.costs["tokens"] == 3 * MAX_TOKENS


def test_a_bad_count_fails_a_jaeger_file():
    span = {
        "traceID": "4bf92f3577b34da6a3ce929d0e0e4736",
        "spanID": "00f067aa0ba902b7",
        "operationName": "chat gpt-4o",
        "startTime": 1_767_225_600_000_000,
        "duration": 1000,
        "tags": [
            {"key": "gen_ai.operation.name", "type": "string", "value": "chat"},
            {"key": "gen_ai.usage.input_tokens", "type": "int64", "value": -500},
        ],
        "references": [],
    }
    doc = {"data": [{"traceID": span["traceID"], "spans": [span], "processes": {}}]}
    error = _refused("jaeger.json", doc)
    assert "span 00f067aa0ba902b7 ('chat gpt-4o')" in error and "gen_ai.usage.input_tokens must be" in error


@pytest.fixture
def langfuse(fixtures):
    return json.loads((fixtures / "langfuse_reasoning_tokens.json").read_text())


def _generation(doc):
    return next(o for o in doc["observations"] if o["type"] == "GENERATION")


@pytest.mark.parametrize(
    "details, message",
    [
        ({"input": -5, "output": 3}, "usageDetails.input must be an integer from 0 to 2147483647, got -5"),
        ({"input": 10**23}, f"usageDetails.input must be an integer from 0 to {MAX_TOKENS}, got {10**23}"),
        ({"output": 1e308, "total": 9}, "usageDetails.output must be an integer from 0 to 2147483647, got 1e+308"),
        ({"input": 4 * 10**18, "total": 5}, "usageDetails.input must be an integer"),
        ({"input": MAX_TOKENS, "output_reasoning": 5}, "usageDetails: its counts sum to 2147483652, over 2147483647"),
    ],
)
def test_a_bad_langfuse_usage_field_fails_the_file(langfuse, details, message):
    generation = _generation(langfuse)
    generation["usageDetails"] = details
    generation["metadata"] = "{}"  # no OTel attributes: the usage comes from usageDetails
    error = _refused("langfuse.json", langfuse)
    assert f"(id {generation['id']!r}) ({generation['name']!r})" in error and message in error


def test_a_bad_langfuse_attribute_fails_the_file(langfuse):
    generation = _generation(langfuse)
    metadata = json.loads(generation["metadata"])
    metadata.setdefault("attributes", {})["gen_ai.usage.output_tokens"] = -1
    generation["metadata"] = json.dumps(metadata)
    error = _refused("langfuse.json", langfuse)
    assert generation["id"] in error and "gen_ai.usage.output_tokens must be an integer" in error


def test_the_largest_langfuse_count_is_kept(langfuse):
    generation = _generation(langfuse)
    generation["usageDetails"] = {"input": MAX_TOKENS - 1, "output": 1}
    generation["metadata"] = "{}"
    (trace,) = _read("langfuse.json", langfuse).traces
    assert MAX_TOKENS in [e.tokens for e in trace.events]


@pytest.fixture
def langsmith(fixtures):
    return json.loads((fixtures / "langsmith_supervisor_run_tree.json").read_text())


def _usage_metadata(value):
    """Every `usage_metadata` dict inside `value`."""
    if isinstance(value, dict):
        if isinstance(value.get("usage_metadata"), dict):
            yield value["usage_metadata"]
        for item in value.values():
            yield from _usage_metadata(item)
    elif isinstance(value, list):
        for item in value:
            yield from _usage_metadata(item)


@pytest.mark.parametrize("key, value", [("input_tokens", -500), ("output_tokens", 10**23)])
def test_a_bad_langsmith_usage_fails_the_file(langsmith, key, value):
    usage = next(_usage_metadata(langsmith))
    usage[key] = value
    error = _refused("langsmith.json", langsmith)
    assert f"usage {key} must be an integer from 0 to {MAX_TOKENS}, got {value}" in error and "(id '" in error


def test_langsmith_input_plus_output_over_the_column_is_refused(langsmith):
    usage = next(_usage_metadata(langsmith))
    usage.update(input_tokens=MAX_TOKENS, output_tokens=1)
    usage.pop("total_tokens", None)
    assert "input + output tokens" in _refused("langsmith.json", langsmith)


def test_the_mapping_reads_no_other_token_attribute(doc):
    """Other attributes are not token counts: a negative `x.tokens` is kept as it is."""
    original = copy.deepcopy(doc)
    _set(_span(doc), "x.tokens", {"intValue": "-5"})
    assert _read("spans.json", doc).traces and _read("spans.json", original).traces
