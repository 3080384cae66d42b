"""OTel SDK span-list importer (swarmscope.importers.otel_sdk): Monocle dumps of Microsoft Agent
Framework workflows, with the span mapping of swarmscope.importers.otel."""

import json
from collections import Counter

import pytest

from swarmscope.importers import SourceFile, otel_sdk, read_files
from tests.swarmscope.importers import edge_set as _edges
from tests.swarmscope.importers import read_paths as _read
from tests.swarmscope.importers import span_id as _sid

MONOCLE = "otel-monocle-agent-framework"
HANDOFF_ID = "a262a1005533d3dc6fd375c37d31ee95"


def _agents(trace):
    return [(a.name, a.parent) for a in trace.agents]


def _delegations(trace):
    """(sender, receiver) -> number of delegate events."""
    return Counter((e.agent, e.to) for e in trace.events if e.type == "delegate")


# --- hand-written fixtures: run without ../shared -----------------------------------------------


@pytest.fixture
def small_records(fixtures):
    return json.loads((fixtures / "monocle_small.json").read_text())


@pytest.fixture
def small(fixtures):
    return _read(fixtures / "monocle_small.json").traces[0]


def test_sniff(small_records):
    assert otel_sdk.sniff(small_records) and otel_sdk.sniff(small_records[0])
    assert not otel_sdk.sniff([]) and not otel_sdk.sniff([{"name": "x"}])
    assert not otel_sdk.sniff({"question": "?", "history": []})


def test_iso_ns():
    assert otel_sdk.iso_ns("1970-01-01T00:00:01.5Z") == 1_500_000_000
    assert otel_sdk.iso_ns("1970-01-01T01:00:00.000000001+01:00") == 1
    with pytest.raises(ValueError):
        otel_sdk.iso_ns("yesterday")


def test_small_sequential_workflow(small):
    """input-conversation -> Researcher (LLM, a tool) -> Writer, named by the workflow messages."""
    assert small.identity_key == "otel_sdk:5c0ffee5c0ffee5c0ffee5c0ffee5c0f"
    assert small.name == "tea_flow" and small.attributes["input"] == "Write a haiku about tea."
    assert _agents(small) == [
        ("input-conversation", None),
        ("Researcher", "input-conversation"),
        ("Writer", "Researcher"),
    ]
    assert [(e.id, e.t, e.type, e.agent, e.to) for e in small.events] == [
        (_sid("c2") + ":spawn", 0.1, "spawn", "input-conversation", "Researcher"),
        (_sid("c2") + ":delegate", 0.1, "delegate", "input-conversation", "Researcher"),
        (_sid("c3"), 0.2, "message", "Researcher", None),
        (_sid("c4"), 1.0, "tool_call", "Researcher", None),
        (_sid("c4") + ":result", 1.5, "tool_result", "Researcher", None),
        (_sid("c5") + ":spawn", 1.7, "spawn", "Researcher", "Writer"),
        (_sid("c5") + ":delegate", 1.7, "delegate", "Researcher", "Writer"),
        (_sid("c6"), 1.8, "message", "Writer", None),
    ]
    assert _edges(small, "message") == {(_sid("c2") + ":delegate", _sid("c3")), (_sid("c5") + ":delegate", _sid("c6"))}
    assert _edges(small, "spawn") == {(_sid("c2") + ":spawn", _sid("c3")), (_sid("c5") + ":spawn", _sid("c6"))}
    assert _edges(small, "tool_dependency") == {(_sid("c4"), _sid("c4") + ":result")}
    # from_agent_span_id: the Researcher's last event led to the message to the Writer
    assert _edges(small, "causal") == {(_sid("c4") + ":result", _sid("c5") + ":delegate")}


def test_small_content_and_tokens(small):
    by_id = {e.id: e for e in small.events}
    llm = by_id[_sid("c3")]
    assert (llm.content, llm.tokens, llm.attributes["model"]) == ("Call search_web.", 42, "gpt-4o-mini")
    assert llm.attributes["input"] == "system: You research tea.\nuser: Write a haiku about tea."
    assert (by_id[_sid("c4")].tool, by_id[_sid("c4") + ":result"].content) == ("search_web", "Green tea is grassy.")
    delegate = by_id[_sid("c5") + ":delegate"]
    assert delegate.content is None and delegate.tokens is None  # a Python repr is no message text
    assert delegate.attributes["message"].startswith("WorkflowMessage(data=AgentExecutorResponse(")
    assert small.costs == {"tokens": 122, "wall_clock_s": 3.2, "tool_calls": 1}


def test_chunks_of_one_trace_merge_in_any_order(small_records, small):
    """The exporter rolls files: children in one chunk, their parents in the next."""
    first, second = small_records[:4], small_records[4:]
    result = read_files(
        [SourceFile("part-1.json", json.dumps(first).encode()), SourceFile("part-2.json", json.dumps(second).encode())]
    )
    assert not result.failed and len(result.traces) == 1
    merged = result.traces[0]
    assert merged.attributes.pop("sources") == ["part-1.json", "part-2.json"]
    small.attributes.pop("sources")
    assert merged.to_dict() == small.to_dict()


def test_a_broken_chunk_is_reported_and_the_others_still_form_the_trace(small_records):
    text = json.dumps(small_records[4:], indent=1)
    result = read_files(
        [
            SourceFile("part-1.json", json.dumps(small_records[:4]).encode()),
            SourceFile("part-2.json", text[: len(text) // 2].encode()),
        ]
    )
    (failed,) = result.failed
    assert failed.name == "part-2.json" and "invalid JSON" in failed.error and "line" in failed.error
    (trace,) = result.traces
    assert trace.attributes["spans"] == 4
    # the Writer's executor span was in the broken chunk: its LLM call falls back to the service
    assert _agents(trace) == [("input-conversation", None), ("Researcher", "input-conversation"), ("tea_flow", None)]
    assert trace.events[-1].id == _sid("c6") and trace.events[-1].agent == "tea_flow"


def _span(sid, name, parent, start, end, attributes, events=()):
    """A Monocle record in the shape of the shared dumps (times in seconds after 00:00:00)."""

    def iso(seconds):
        return f"2026-01-01T00:00:{seconds:09.6f}Z"

    return {
        "name": name,
        "context": {"trace_id": "ab" * 16, "span_id": sid.rjust(16, "0")},
        "kind": "SpanKind.INTERNAL",
        "parent_id": parent.rjust(16, "0") if parent else None,
        "start_time": iso(start),
        "end_time": iso(end),
        "status": {"status_code": "OK"},
        "attributes": attributes,
        "events": [{"name": n, "timestamp": iso(start), "attributes": a} for n, a in events],
        "resource": {"attributes": {"service.name": "desk_app"}},
    }


def test_executors_labelled_with_the_workflow_name_are_attributed_by_their_messages():
    """The handoff shape: the entry executor and the broadcast receivers carry the workflow's name,
    the turns chained from the entry are sent as 'triage'; the visa agent's executor span is lost
    and only its tool span names it."""
    executor = {"entity.1.type": "agent.microsoft", "entity.1.name": "help_desk", "span.type": "agentic.invocation"}
    inference = {"span.type": "inference", "entity.2.type": "model.llm.m", "entity.2.name": "m"}

    def broadcast(key):
        return [
            (
                "data.input",
                {"input": f"WorkflowMessage(data=..., source_id='triage', target_id=None, source_span_ids=['{key}'])"},
            )
        ]

    chained = {**executor, "entity.1.from_agent": "help_desk", "entity.1.from_agent_span_id": _sid("1")}
    records = [
        _span("1", "execute", "f0", 0, 1, executor, [("data.input", {"input": "I need a visa."})]),
        _span("2", "create", "1", 0.1, 0.9, inference, [("data.input", {"input": "I need a visa."})]),
        _span("3", "execute", "f0", 1.1, 1.2, chained, broadcast("k1")),
        _span("4", "execute", "f0", 1.2, 1.3, chained, broadcast("k1")),
        _span("5", "create", "f1", 1.5, 2.0, inference, [("data.output", {"response": "check it"})]),
        _span(
            "6",
            "invoke",
            "f1",
            2.0,
            2.1,
            {
                "span.type": "agentic.tool.invocation",
                "entity.1.type": "tool.x",
                "entity.1.name": "check_visa",
                "entity.2.type": "agent.x",
                "entity.2.name": "visa",
            },
            [("data.input", {"input": "{}"}), ("data.output", {"response": "eVisa"})],
        ),
    ]
    trace = read_files([SourceFile("h.json", json.dumps(records).encode())]).traces[0]
    assert _agents(trace) == [("triage", None), ("visa", "triage")]
    assert _delegations(trace) == {("triage", "visa"): 1}  # two copies of send k1: one delegate
    assert [(e.type, e.agent) for e in trace.events] == [
        ("message", "triage"),
        ("spawn", "triage"),
        ("delegate", "triage"),
        ("message", "visa"),
        ("tool_call", "visa"),
        ("tool_result", "visa"),
    ]


# --- the shared data: ../shared/data/otel-monocle-agent-framework -------------------------------


def _monocle(shared_data, pattern):
    return sorted((shared_data / MONOCLE).glob(f"monocle_trace_*_{pattern}_*.json"))


def test_group_chat(shared_data):
    (trace,) = _read(*_monocle(shared_data, "groupchat")).traces
    orchestrator = "group_chat_orchestrator"
    assert _agents(trace) == [
        (orchestrator, None),
        ("Planner", orchestrator),
        ("BudgetHawk", orchestrator),
        ("Reviewer", orchestrator),
    ]
    assert trace.attributes["spans"] == 15 and len(trace.events) == 16
    assert Counter(e.type for e in trace.events) == {"delegate": 10, "spawn": 3, "return": 2, "message": 1}
    assert _delegations(trace) == {
        (orchestrator, "Planner"): 3,
        (orchestrator, "BudgetHawk"): 3,
        (orchestrator, "Reviewer"): 4,
    }
    # the Planner's and the BudgetHawk's turns return to the orchestrator's next message
    returns = [e for e in trace.events if e.type == "return"]
    assert [(e.agent, e.to) for e in returns] == [("Planner", orchestrator), ("BudgetHawk", orchestrator)]
    assert all(
        trace.events[[x.id for x in trace.events].index(dst)].agent == orchestrator
        for _, dst in _edges(trace, "return")
    )
    assert trace.events[-1].agent == "Reviewer" and "APPROVED" in trace.events[-1].content


def test_concurrent(shared_data):
    (trace,) = _read(*_monocle(shared_data, "concurrent")).traces
    experts = ["FlightExpert", "HotelExpert", "ActivitiesExpert", "BudgetExpert"]
    workflow = "okahu_demos_ms_openai_concurrent_travel"
    assert _agents(trace) == [(workflow, None), ("dispatcher", None)] + [(name, "dispatcher") for name in experts]
    assert trace.attributes["spans"] == 11 and len(trace.events) == 13
    assert _delegations(trace) == {("dispatcher", name): 1 for name in experts}
    # the four experts' answers return to the consolidating call of the workflow: an aggregate
    (aggregate,) = [e for e in trace.events if e.type == "aggregate"]
    assert aggregate.agent == workflow and aggregate.tokens == 1530
    assert {(src, dst) for src, dst in _edges(trace, "return")} == {
        (e.id, aggregate.id) for e in trace.events if e.type == "return"
    }
    assert sorted(e.agent for e in trace.events if e.type == "return") == sorted(experts)


def test_sequential(shared_data):
    (trace,) = _read(*_monocle(shared_data, "sequential")).traces
    chain = ["DestinationResearcher", "FlightPlanner", "HotelPlanner", "ItineraryWriter"]
    assert _agents(trace) == [("input-conversation", None)] + list(zip(chain, ["input-conversation"] + chain))
    assert trace.attributes["spans"] == 16 and len(trace.events) == 22
    assert _delegations(trace) == {("input-conversation", chain[0]): 1, **{pair: 1 for pair in zip(chain, chain[1:])}}
    tools = Counter((e.agent, e.tool) for e in trace.events if e.type == "tool_call")
    assert tools == {("FlightPlanner", "search_flights"): 2, ("HotelPlanner", "search_hotels"): 2}
    assert len(_edges(trace, "tool_dependency")) == 4 and trace.costs["tool_calls"] == 4


def test_handoff_chunks_merge_and_the_truncated_one_is_reported(shared_data):
    paths = _monocle(shared_data, "handoff")
    assert len(paths) == 3
    result = read_files([SourceFile(path.name, path.read_bytes()) for path in paths])
    (failed,) = result.failed
    assert failed.name.endswith("_2026-06-11_15.01.07.json")
    assert failed.error.endswith("invalid JSON: Expecting ',' delimiter at line 497, column 1")
    (trace,) = result.traces
    good = [report for report in result.files if not report.error]
    assert [report.trace_keys for report in good] == [[f"otel_sdk:{HANDOFF_ID}"]] * 2
    assert trace.attributes["sources"] == [p.name for p in paths[:2]]
    assert trace.attributes["spans"] == 25 + 9 and len(trace.events) == 29

    assert _agents(trace) == [("triage_agent", None), ("visa_agent", "triage_agent")]
    assert set(_delegations(trace)) == {("triage_agent", "visa_agent")}
    first_visa = next(e for e in trace.events if e.agent == "visa_agent")
    assert {dst for _, dst in _edges(trace, "message")} == {first_visa.id}
    (call,) = [e for e in trace.events if e.type == "tool_call"]
    assert (call.agent, call.tool) == ("visa_agent", "check_visa")
    result_event = next(e for e in trace.events if e.type == "tool_result")
    assert result_event.content == "United States citizens visiting Portugal: eVisa required, 30-day stay."
    assert (call.id, result_event.id) in _edges(trace, "tool_dependency")
