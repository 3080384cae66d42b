"""OTLP/JSON importer and protobuf decoding (swarmscope.importers.otlp), GenAI semantic
conventions, with the span mapping of swarmscope.importers.otel."""

import base64
import copy
import json

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

from swarmscope.importers import SourceFile, otlp, read_files
from tests.swarmscope.importers import edge_set as _edges
from tests.swarmscope.importers import span_id as _sid

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def _read(name, doc):
    result = read_files([SourceFile(name, doc if isinstance(doc, bytes) else json.dumps(doc).encode())])
    assert not result.failed, result.failed
    return result


def _spans(doc):
    return [span for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]


def _without_sources(trace):
    data = trace.to_dict()
    data["attributes"].pop("sources")
    return data


@pytest.fixture
def doc(fixtures):
    return json.loads((fixtures / "otlp_genai_small.json").read_text())


@pytest.fixture
def small(doc):
    return _read("otlp_genai_small.json", doc).traces[0]


def test_sniff(doc):
    assert otlp.sniff(doc) and otlp.sniff([doc, doc])  # a request, or one per line (JSONL)
    assert otlp.sniff({"resource_spans": []})
    assert not otlp.sniff({"data": []}) and not otlp.sniff([]) and not otlp.sniff([{"name": "x"}])


def test_any_value():
    items = [
        {"key": "s", "value": {"stringValue": "x"}},
        {"key": "i", "value": {"intValue": "9007199254740993"}},
        {"key": "d", "value": {"doubleValue": 0.5}},
        {"key": "b", "value": {"boolValue": False}},
        {"key": "a", "value": {"arrayValue": {"values": [{"intValue": 1}, {"stringValue": "y"}]}}},
        {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": True}}]}}},
        {"key": "empty", "value": {}},
    ]
    assert otlp.attributes(items) == {
        "s": "x",
        "i": 9007199254740993,
        "d": 0.5,
        "b": False,
        "a": [1, "y"],
        "kv": {"k": True},
        "empty": None,
    }


def test_small_agents_from_gen_ai_agent_name(small):
    """OpenAI Agents SDK style: Triage hands off to BillingAgent through transfer_to_billing_agent.
    The bare "Agent workflow" span of the service names no agent, so Triage is the root."""
    assert small.identity_key == f"otlp:{TRACE_ID}"
    assert (small.name, small.system, small.attributes["conversation_id"]) == (
        "Agent workflow",
        "support-app",
        "conv-1",
    )
    assert [(a.name, a.parent, a.attributes["named_by"]) for a in small.agents] == [
        ("Triage", None, "gen_ai.agent.name"),
        ("BillingAgent", "Triage", "gen_ai.agent.name"),
    ]


def test_small_events_and_edges(small):
    assert [(e.id, e.t, e.type, e.agent, e.to, e.tool) for e in small.events] == [
        (_sid("c1"), 0.2, "message", "Triage", None, None),
        (_sid("d1") + ":spawn", 1.6, "spawn", "Triage", "BillingAgent", None),
        (_sid("c2"), 1.6, "delegate", "Triage", "BillingAgent", "transfer_to_billing_agent"),
        (_sid("d2"), 2.1, "message", "BillingAgent", None, None),
        (_sid("d3"), 3.0, "tool_call", "BillingAgent", None, "lookup_invoice"),
        (_sid("d3") + ":result", 3.4, "tool_result", "BillingAgent", None, "lookup_invoice"),
        (_sid("d4"), 3.5, "message", "BillingAgent", None, None),
    ]
    assert _edges(small, "message") == {(_sid("c2"), _sid("d2"))}
    assert _edges(small, "spawn") == {(_sid("d1") + ":spawn", _sid("d2"))}
    assert _edges(small, "tool_dependency") == {(_sid("d3"), _sid("d3") + ":result")}
    triage = small.events[0]
    assert triage.content == "transfer_to_billing_agent({})" and triage.attributes["input"] == "How much is invoice 7?"
    assert (triage.tokens, triage.attributes["input_tokens"], triage.attributes["model"]) == (83, 75, "gpt-4o")
    assert small.events[-1].content == "Invoice 7 is $42." and small.events[-1].tokens == 149
    assert small.costs == {"tokens": 83 + 102 + 149, "wall_clock_s": 4.7, "tool_calls": 1}


def test_span_order_does_not_matter(doc, small):
    """Children before parents, in other requests: linked once everything has arrived."""
    shuffled = copy.deepcopy(doc)
    shuffled["resourceSpans"].reverse()
    for resource_spans in shuffled["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            scope_spans["spans"].reverse()
    assert _without_sources(_read("shuffled.json", shuffled).traces[0]) == _without_sources(small)


def test_jsonl_requests_and_base64_ids(doc, small):
    """One request per line (a collector's file exporter) with ids as protobuf JSON writes them."""

    def b64(hex_id):
        return base64.b64encode(bytes.fromhex(hex_id)).decode()

    encoded = copy.deepcopy(doc)
    for span in _spans(encoded):
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = b64(span[key])
    lines = [json.dumps({"resourceSpans": [rs]}) for rs in encoded["resourceSpans"]]
    trace = _read("spans.jsonl", "\n".join(lines).encode()).traces[0]
    assert _without_sources(trace) == _without_sources(small)


def _request():
    """An ExportTraceServiceRequest built with the proto classes: Lead calls Researcher as a tool."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    service = resource_spans.resource.attributes.add()
    service.key, service.value.string_value = "service.name", "research-svc"
    spans = resource_spans.scope_spans.add().spans
    trace_id = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")

    def add(span_id, parent, name, start, end, **attributes):
        span = spans.add()
        span.trace_id, span.span_id, span.name = trace_id, bytes([0] * 7 + [span_id]), name
        if parent:
            span.parent_span_id = bytes([0] * 7 + [parent])
        span.start_time_unix_nano = 1_767_225_600_000_000_000 + int(start * 1e9)
        span.end_time_unix_nano = 1_767_225_600_000_000_000 + int(end * 1e9)
        span.kind = 1
        for key, value in attributes.items():
            attribute = span.attributes.add()
            attribute.key = key.replace("__", ".")
            if isinstance(value, int):
                attribute.value.int_value = value
            else:
                attribute.value.string_value = value

    add(
        5,
        3,
        "chat",
        1.1,
        1.9,
        gen_ai__operation__name="chat",
        gen_ai__agent__name="Researcher",
        gen_ai__usage__output_tokens=30,
        gen_ai__completion="three sources",
    )  # child first
    add(1, None, "invoke_agent Lead", 0, 3, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="Lead")
    add(
        2,
        1,
        "chat",
        0.1,
        0.9,
        gen_ai__operation__name="chat",
        gen_ai__usage__input_tokens=12,
        gen_ai__usage__output_tokens=4,
        gen_ai__completion="ask_researcher()",
    )
    add(
        4,
        1,
        "execute_tool ask_researcher",
        1.0,
        2.0,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="ask_researcher",
        gen_ai__tool__call__arguments='{"topic": "tea"}',
    )
    add(
        3,
        4,
        "invoke_agent Researcher",
        1.05,
        1.95,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name="Researcher",
    )
    add(
        6,
        1,
        "chat",
        2.1,
        2.9,
        gen_ai__operation__name="chat",
        gen_ai__usage__output_tokens=7,
        gen_ai__completion="found three sources",
    )
    return request


def test_protobuf_round_trip():
    request = _request()
    chunks = otlp.decode_protobuf(request.SerializeToString())
    assert list(chunks) == ["0af7651916cd43dd8448eb211c80319c"]
    spans = chunks["0af7651916cd43dd8448eb211c80319c"]
    assert spans[0].start_ns == 1767225601100000000 and spans[0].span_id == _sid("05")
    # the protobuf JSON mapping of the same request (ids in base64, 64-bit integers as strings) decodes alike
    assert otlp.split(MessageToDict(request)) == chunks
    trace = otlp.build("0af7651916cd43dd8448eb211c80319c", spans, ["request"])
    assert trace.identity_key == "otlp:0af7651916cd43dd8448eb211c80319c" and trace.system == "research-svc"
    assert [(a.name, a.parent) for a in trace.agents] == [("Lead", None), ("Researcher", "Lead")]
    # the tool span runs another agent: it is the delegation, not a tool call
    assert [(e.id, e.type, e.agent, e.to) for e in trace.events] == [
        (_sid("02"), "message", "Lead", None),
        (_sid("03") + ":spawn", "spawn", "Lead", "Researcher"),
        (_sid("03") + ":delegate", "delegate", "Lead", "Researcher"),
        (_sid("05"), "return", "Researcher", "Lead"),
        (_sid("06"), "message", "Lead", None),
    ]
    assert trace.events[2].content == '{"topic": "tea"}'
    assert _edges(trace, "message") == {(_sid("03") + ":delegate", _sid("05"))}
    assert _edges(trace, "return") == {(_sid("05"), _sid("06"))}


def test_an_empty_export_request_is_otlp_without_traces():
    assert otlp.decode_protobuf(ExportTraceServiceRequest().SerializeToString()) == {}
    result = _read("empty", MessageToDict(ExportTraceServiceRequest()) | {"resourceSpans": []})
    assert (result.files[0].format, result.traces) == ("otlp", [])


def test_protobuf_ids_are_bytes():
    """A protobuf id is read as its bytes, whatever its base64 text looks like; a wrong length names the span."""
    request = _request()
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[1].span_id = bytes.fromhex("d31c0ffee0ddf00d")  # base64 "0xwP/uDd8A0="
    assert _sid("01") not in {
        s.span_id for s in otlp.decode_protobuf(request.SerializeToString())["0af7651916cd43dd8448eb211c80319c"]
    }
    assert "d31c0ffee0ddf00d" in {
        s.span_id for s in otlp.decode_protobuf(request.SerializeToString())["0af7651916cd43dd8448eb211c80319c"]
    }
    spans[1].span_id = bytes(7) + b"\x01\x02"
    with pytest.raises(ValueError, match=r"span 1 \('invoke_agent Lead'\): id .* is 9 bytes, expected 8"):
        otlp.decode_protobuf(request.SerializeToString())


def test_decode_protobuf_rejects_other_bytes():
    with pytest.raises(ValueError, match="ExportTraceServiceRequest"):
        otlp.decode_protobuf(b"\x0a\x05ab")


def _agent_span(span_id, parent, agent, start, end, **attributes):
    """An OTLP/JSON `invoke_agent` span of `agent`; times in seconds, `__` in keys for dots."""
    items = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
        {"key": "gen_ai.agent.name", "value": {"stringValue": agent}},
    ]
    items += [
        {
            "key": key.replace("__", "."),
            "value": {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value},
        }
        for key, value in attributes.items()
    ]
    span = {
        "traceId": TRACE_ID,
        "spanId": _sid(span_id),
        "name": f"invoke_agent {agent}",
        "kind": 1,
        "startTimeUnixNano": str(1_767_225_600_000_000_000 + int(start * 1e9)),
        "endTimeUnixNano": str(1_767_225_600_000_000_000 + int(end * 1e9)),
        "attributes": items,
    }
    if parent:
        span["parentSpanId"] = _sid(parent)
    return span


def test_agent_spans_without_llm_or_tool_children():
    """Exporters that instrument only agents (OpenAI Agents SDK, CrewAI): each `invoke_agent` span is
    a turn of its agent, and a nested one a delegation. The child is listed before its parent."""

    def chat(role, text):
        return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

    worker = _agent_span(
        "2",
        "1",
        "worker",
        1,
        2,
        gen_ai__input__messages=chat("user", "sum 2+2"),
        gen_ai__output__messages=chat("assistant", "4"),
        gen_ai__usage__input_tokens=11,
        gen_ai__usage__output_tokens=3,
    )
    boss = _agent_span("1", None, "boss", 0, 3, gen_ai__prompt="what is 2+2?", gen_ai__completion="It is 4.")
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "crew"}}]},
                "scopeSpans": [{"spans": [worker, boss]}],
            }
        ]
    }
    (trace,) = _read("agents.json", doc).traces
    assert [(a.name, a.parent, a.attributes["named_by"]) for a in trace.agents] == [
        ("boss", None, "gen_ai.agent.name"),
        ("worker", "boss", "gen_ai.agent.name"),
    ]
    assert [(e.id, e.type, e.agent, e.to, e.t, e.t_end, e.content) for e in trace.events] == [
        (_sid("1"), "message", "boss", None, 0.0, 3.0, "It is 4."),
        (_sid("2") + ":spawn", "spawn", "boss", "worker", 1.0, None, None),
        (_sid("2") + ":delegate", "delegate", "boss", "worker", 1.0, None, "sum 2+2"),
        (_sid("2"), "message", "worker", None, 1.0, 2.0, "4"),
    ]
    boss_turn, worker_turn = trace.events[0], trace.events[-1]
    assert boss_turn.attributes["input"] == "what is 2+2?"
    assert (worker_turn.tokens, worker_turn.attributes["input_tokens"]) == (14, 11)
    assert _edges(trace, "spawn") == {(_sid("2") + ":spawn", _sid("2"))}
    assert _edges(trace, "message") == {(_sid("2") + ":delegate", _sid("2"))}


def test_autogen_round_robin_turns_are_messages_to_the_next_speaker(fixtures):
    """AutoGen's RoundRobinGroupChat: nobody invokes `assistant` or `critic` (the manager is a runtime
    span, no agent), they take turns; the next speaker receives each turn (assistant -> critic x2,
    critic -> assistant x2, the last turn to nobody)."""
    (trace,) = _read(
        "otlp_autogen_round_robin.json", json.loads((fixtures / "otlp_autogen_round_robin.json").read_text())
    ).traces
    assert [(a.name, a.parent) for a in trace.agents] == [("assistant", None), ("critic", None)]
    turns = [(e.id, e.type, e.agent, e.to) for e in trace.events]
    assert turns == [
        (f"d00000000000000{i}", "message", agent, to)
        for i, agent, to in (
            (1, "assistant", "critic"),
            (2, "critic", "assistant"),
            (3, "assistant", "critic"),
            (4, "critic", "assistant"),
            (5, "assistant", None),
        )
    ]
    assert _edges(trace, "message") == {(f"d00000000000000{i}", f"d00000000000000{i + 1}") for i in range(1, 5)}
    assert trace.events[0].content.startswith("Here is a haiku") and trace.events[0].tokens == 100 + 21
