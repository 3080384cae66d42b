"""Jaeger JSON importer (swarmscope.importers.jaeger) with the span mapping of swarmscope.importers.otel."""

import json
from collections import Counter

import pytest

from swarmscope.importers import SourceFile, jaeger, read_files
from swarmscope.importers.chatlog import TOKENS_ESTIMATED
from tests.swarmscope.importers import edge_set as _edges
from tests.swarmscope.importers import read_paths as _read
from tests.swarmscope.importers import span_id as _sid

# --- hand-written fixture: run without ../shared -------------------------------------------------


@pytest.fixture
def small(fixtures):
    return _read(fixtures / "jaeger_small.json").traces[0]


def test_sniff(fixtures):
    assert jaeger.sniff(json.loads((fixtures / "jaeger_small.json").read_text()))
    assert jaeger.sniff({"traceID": "ab", "spans": [], "processes": {}})  # a bare trace object
    assert not jaeger.sniff({"data": []})
    assert not jaeger.sniff([{"context": {"trace_id": "ab", "span_id": "cd"}, "name": "x"}])


def test_small_identity_and_agents(small):
    assert small.identity_key == "jaeger:00f0e1d2c3b4a5968778695a4b3c2d1e"
    assert (small.name, small.system) == ("planner.run", "planner-svc")
    assert small.attributes["start_time_unix_nano"] == 1_767_225_600_000_000_000  # the origin of t
    # one agent per service; the worker is invoked across services by the planner
    assert [(a.name, a.parent, a.spawned_at) for a in small.agents] == [
        ("planner-svc", None, 0.0),
        ("worker-svc", "planner-svc", 1.1),
    ]


def test_small_events(small):
    assert [(e.id, e.t, e.t_end, e.type, e.agent, e.to, e.tool) for e in small.events] == [
        (_sid("a2"), 0.1, 1.0, "message", "planner-svc", None, None),
        (_sid("b4") + ":spawn", 1.1, None, "spawn", "planner-svc", "worker-svc", None),
        (_sid("b4") + ":delegate", 1.1, None, "delegate", "planner-svc", "worker-svc", None),
        (_sid("a5"), 1.2, 2.0, "message", "worker-svc", None, None),
        (_sid("a6"), 2.0, 3.0, "tool_call", "worker-svc", None, "lookup"),
        (_sid("a6") + ":result", 3.0, None, "tool_result", "worker-svc", None, "lookup"),
        (_sid("a7"), 3.0, 5.8, "return", "worker-svc", "planner-svc", None),
        (_sid("a8"), 6.1, 9.5, "message", "planner-svc", None, None),
    ]
    first = small.events[0]
    assert first.attributes["span_id"] == _sid("a2") and first.attributes["parent_span_id"] == _sid("a1")
    assert first.attributes["trace_id"] == "00f0e1d2c3b4a5968778695a4b3c2d1e"


def test_small_edges(small):
    assert _edges(small, "spawn") == {(_sid("b4") + ":spawn", _sid("a5"))}
    assert _edges(small, "message") == {(_sid("b4") + ":delegate", _sid("a5"))}
    assert _edges(small, "return") == {(_sid("a7"), _sid("a8"))}
    assert _edges(small, "tool_dependency") == {(_sid("a6"), _sid("a6") + ":result")}
    assert len(small.edges) == 4


def test_small_content_tokens_and_status(small):
    by_id = {e.id: e for e in small.events}
    chat = by_id[_sid("a2")]
    assert chat.content == 'ask_worker({"q": "order 7"})' and chat.attributes["input"] == "Where is order 7?"
    assert (chat.tokens, chat.attributes["input_tokens"], chat.attributes["output_tokens"]) == (120, 100, 20)
    assert chat.attributes["model"] == "gpt-4o" and TOKENS_ESTIMATED not in chat.attributes
    call, result = by_id[_sid("a6")], by_id[_sid("a6") + ":result"]
    assert call.content == '{"q": "order 7"}' and call.attributes[TOKENS_ESTIMATED] is True
    assert (result.content, result.attributes["status"], result.attributes["error"]) == (None, "error", "timeout")
    assert small.costs == {"tokens": 530, "wall_clock_s": 10.0, "tool_calls": 1}


def test_follows_from_reference_is_a_parent():
    doc = {
        "data": [
            {
                "traceID": "1",
                "processes": {"p": {"serviceName": "s"}},
                "spans": [
                    {
                        "traceID": "1",
                        "spanID": "2",
                        "operationName": "chat",
                        "startTime": 5,
                        "duration": 1,
                        "processID": "p",
                        "references": [{"refType": "FOLLOWS_FROM", "traceID": "1", "spanID": "1"}],
                        "tags": [{"key": "gen_ai.operation.name", "type": "string", "value": "chat"}],
                    },
                    {
                        "traceID": "1",
                        "spanID": "1",
                        "operationName": "root",
                        "startTime": 1,
                        "duration": 9,
                        "processID": "p",
                    },
                ],
            }
        ]
    }
    trace = read_files([SourceFile("t.json", json.dumps(doc).encode())]).traces[0]
    assert trace.source_id == "1".rjust(32, "0")
    assert [(e.agent, e.t, e.attributes["parent_span_id"]) for e in trace.events] == [("s", 4e-6, _sid("1"))]


# --- the shared data: ../shared/data/otel-agntcy-a2a --------------------------------------------


def test_get_inventory(shared_data):
    """LangGraph supervisor delegating over A2A to a detector agent that calls network tools."""
    result = _read(shared_data / "otel-agntcy-a2a" / "get-inventory.json")
    assert len(result.traces) == 1
    trace = result.traces[0]
    supervisor, detector = "packetpanic.supervisor", "packetpanic.detector"
    assert trace.identity_key == "jaeger:5edab84350c3da3b38a026540a681652"
    assert trace.attributes["spans"] == 77
    assert [(a.name, a.parent) for a in trace.agents] == [(supervisor, None), (detector, supervisor)]
    assert trace.agents[0].system_prompt.startswith("Eres el Agente Supervisor de un NOC")
    assert trace.agents[1].system_prompt.startswith("Eres un Agente Detector de un NOC")
    assert len(trace.events) == 8
    assert Counter(e.type for e in trace.events) == {
        "message": 3,
        "spawn": 1,
        "delegate": 1,
        "tool_call": 1,
        "tool_result": 1,
        "return": 1,
    }
    assert [e.agent for e in trace.events] == [supervisor] * 3 + [detector] * 4 + [supervisor]

    delegate = next(e for e in trace.events if e.type == "delegate")
    first_detector = next(e for e in trace.events if e.agent == detector)
    assert (delegate.agent, delegate.to) == (supervisor, detector)
    assert _edges(trace, "message") == {(delegate.id, first_detector.id)}
    reply = next(e for e in trace.events if e.type == "return")
    assert reply.content.startswith("INVENTARIO COMPLETO") and reply.to == supervisor
    assert _edges(trace, "return") == {(reply.id, trace.events[-1].id)}
    assert trace.events[-1].content.startswith("## 📋 Inventario de Red")

    call = next(e for e in trace.events if e.type == "tool_call")
    assert (call.agent, call.tool) == (detector, "pyats_list_devices")
    assert _edges(trace, "tool_dependency") == {(call.id, call.id + ":result")}

    first = trace.events[0]
    assert (first.t, first.tokens, first.attributes["model"]) == (0.012127, 890, "anthropic/claude-opus-4-5-20251101")
    assert first.content.startswith("query_detector(")
    assert trace.costs["tokens"] == 890 + 3451 + 4088 + 1495
