"""Monocle's request span (`agentic.turn`, earlier `agentic.request`): the request an agent system
received from outside, not an agent acting (monocle_apptrace `SPAN_TYPES.AGENTIC_REQUEST`: "the
initial request sent to an agent from an external source"; Agent Framework's names no agent). One
that names no agent and only runs agents is the run of the system, like a GenAI `invoke_workflow`:
no agent, its output (the answer handed back) no turn, the agents it runs roots.

Before, its agent fell back to the service (Monocle's service is the workflow name), and where the
request span recorded the answer that "agent" acted and became the orchestrator of the one real
agent (spawn, delegate, the answer again: 4 events, critical steps 2 for one LLM call), while the
same run whose answer was an error (no output) came in as the single LLM call: one of seven
same-shape single-agent Agent Framework traces (github.com/Arindam200/awesome-ai-apps,
`microsoft_agents_starter/.monocle/*travel_agent*`)."""

import copy
import json

import pytest

from swarmscope.importers import SourceFile, read_files
from swarmscope.metrics import compute_metrics

ASK = "Plan a weekend in Lisbon."
ANSWER = "Day 1: Alfama and the castle. Day 2: Belem."


@pytest.fixture
def spans(fixtures):
    return json.loads((fixtures / "monocle_single_agent_turn.json").read_text())


def read(spans):
    result = read_files([SourceFile("monocle.json", json.dumps(spans).encode())])
    assert not result.failed
    [trace] = result.traces
    return trace


def by_type(spans, span_type):
    return next(s for s in spans if s["attributes"].get("span.type") == span_type)


@pytest.mark.parametrize("span_type", ["agentic.turn", "agentic.request"])
def test_a_single_agent_under_a_request_span_has_no_orchestrator(spans, span_type):
    by_type(spans, "agentic.turn")["attributes"]["span.type"] = span_type
    trace = read(spans)
    assert [(a.name, a.parent) for a in trace.agents] == [("PlannerAgent", None)]
    assert [(e.type, e.agent, e.content) for e in trace.events] == [("message", "PlannerAgent", ANSWER)]
    assert trace.name == "trip_app" and trace.attributes["input"] == ASK
    metrics = compute_metrics(trace)
    assert metrics["orchestrators"] == [] and metrics["critical_steps"] == 1
    assert metrics["protocol_overhead"] == 0.0


def test_the_run_reads_the_same_whether_the_request_span_recorded_the_answer_or_not(spans):
    failed = copy.deepcopy(spans)
    for span in failed:  # the model call failed: no answer anywhere above it
        for event in span["events"]:
            if event["name"] == "data.output":
                event["attributes"] = (
                    {"error_code": "error"} if span["attributes"]["span.type"] != "agentic.turn" else {}
                )
    inference = by_type(failed, "inference")
    next(e for e in inference["events"] if e["name"] == "data.output")["attributes"]["response"] = "Error code: 401"
    answered, errored = read(spans), read(failed)
    shape = lambda t: ([(a.name, a.parent) for a in t.agents], [(e.type, e.agent) for e in t.events])  # noqa: E731
    assert shape(answered) == shape(errored) == ([("PlannerAgent", None)], [("message", "PlannerAgent")])


def test_a_request_span_with_work_of_its_own_still_acts(spans):
    """A model call directly under the request span (Agent Framework's concurrent workflow
    aggregates its experts' answers in `Workflow.run`) is work: the span keeps its agent (the
    service), which invokes the agent below."""
    turn = by_type(spans, "agentic.turn")
    call = copy.deepcopy(by_type(spans, "inference"))
    call["context"]["span_id"], call["parent_id"] = "0x00000000000000d5", turn["context"]["span_id"]
    call["start_time"], call["end_time"] = "2026-01-01T00:00:04.110000Z", "2026-01-01T00:00:04.190000Z"
    trace = read(spans + [call])
    assert [(a.name, a.parent) for a in trace.agents] == [("trip_app", None), ("PlannerAgent", "trip_app")]
    assert ("message", "trip_app") in [(e.type, e.agent) for e in trace.events]
    assert compute_metrics(trace)["orchestrators"] == ["trip_app"]


def test_a_request_span_that_names_its_agent_is_that_agents(spans):
    turn = by_type(spans, "agentic.turn")
    turn["attributes"]["entity.1.name"] = "PlannerAgent"
    trace = read(spans)
    assert [a.name for a in trace.agents] == ["PlannerAgent"]
    assert compute_metrics(trace)["orchestrators"] == []
