"""The current GenAI agent conventions (semantic-conventions-genai) through the shared span mapping:
workflows, plans, agent creation, transfers, remote callers, span links, evaluations, cache tokens."""

import json
from functools import partial
from pathlib import Path

from swarmscope.importers import otlp
from swarmscope.importers.otel import SpanLink, build_trace
from swarmscope.model import validate_trace
from tests.swarmscope.importers.spans import make_span

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FIXTURE = "otlp_genai_agents.json"
TRACE_ID = "8c1d2e3f40516273a4b5c6d7e8f90a1b"
TRACE = "0" * 31 + "9"


def fixture_spans(*, with_links=True):
    """The fixture's spans as the OTLP decoder gives them; with `with_links`, each span also gets
    the links its JSON lists where the decoder did not read them."""
    doc = json.loads((FIXTURES / FIXTURE).read_text())
    (spans,) = otlp.split(doc).values()
    if with_links:
        raw = {
            s["spanId"]: s.get("links", [])
            for rs in doc["resourceSpans"]
            for ss in rs["scopeSpans"]
            for s in ss["spans"]
        }
        for decoded in spans:
            if not decoded.links:
                decoded.links = [SpanLink(k["traceId"], k["spanId"]) for k in raw[decoded.span_id]]
    return spans


def build(spans, trace_id=TRACE):
    trace = build_trace(spans, source_format="test", trace_id=trace_id)
    validate_trace(trace)
    return trace


span = partial(make_span, TRACE)


def chat(sid, parent, agent, start, end, text):
    return span(
        sid,
        parent,
        "chat",
        start,
        end,
        gen_ai__operation__name="chat",
        gen_ai__agent__name=agent,
        gen_ai__completion=text,
        gen_ai__usage__input_tokens=10,
        gen_ai__usage__output_tokens=5,
    )


def test_workflow_plan_create_agent_transfer_and_caller():
    trace = build(fixture_spans(with_links=False), TRACE_ID)
    assert trace.name == "travel_planning"  # the invoke_workflow span is the root
    assert [a.name for a in trace.agents] == ["planner", "researcher", "concierge", "booking_agent"]
    assert "travel-planner" not in [a.name for a in trace.agents]  # the workflow is no agent
    assert trace.agent("researcher").parent == "planner"  # create_agent: planner spawned it
    assert trace.agent("researcher").attributes["id"] == "agt_research"
    assert "id" not in trace.agent("planner").attributes
    by_type = {}
    for event in trace.events:
        by_type.setdefault(event.type, []).append(event)
    (plan,) = by_type["orchestrator_decision"]
    assert (plan.agent, plan.tokens) == ("planner", 80) and plan.content.startswith("1. research flights")
    spawn = next(e for e in by_type["spawn"] if e.to == "researcher")
    assert (spawn.agent, spawn.t) == ("planner", 1.05)  # at create_agent, before any invocation

    # pass_control through a tool not named transfer_to_*: a delegation, and no return
    transfer = next(e for e in by_type["delegate"] if e.agent == "planner")
    assert (transfer.to, transfer.tool, transfer.attributes["transfer_mode"]) == (
        "researcher",
        "route_to_researcher",
        "pass_control",
    )
    by_id = {e.id: e for e in trace.events}
    messages = {(by_id[x.src].agent, by_id[x.dst].agent) for x in trace.edges if x.type == "message"}
    assert messages == {("planner", "researcher"), ("concierge", "booking_agent")}
    assert not [x for x in trace.edges if x.type == "return"]

    # gen_ai.caller.* on a remote invoke_agent: the caller in another process delegates
    remote = next(e for e in by_type["delegate"] if e.agent == "concierge")
    assert (remote.to, remote.content) == ("booking_agent", "Book TP 541 and Hotel Alfama for two.")

    memory = next(e for e in by_type["tool_call"] if e.tool == "search_memory")  # memory operations are tools
    assert (memory.agent, memory.content) == ("researcher", "seat and hotel preferences")
    assert trace.costs["tool_calls"] == 2


def test_evaluations_cache_tokens_and_conversation():
    trace = build(fixture_spans(with_links=False), TRACE_ID)
    labels = {(lb.key, lb.value, lb.event_id, lb.agent) for lb in trace.labels}
    assert ("groundedness", "grounded", "b000000000000008", "researcher") in labels  # an event on the chat span
    assert ("task_completion", "pass", None, None) in labels  # an evaluation span about the workflow
    assert any(lb.key == "groundedness.explanation" for lb in trace.labels)
    # numeric scores are kept by name (per-turn results averaged), and none of them is a reward
    assert trace.attributes["score_values"] == {"groundedness": 0.8, "task_completion": 1.0}
    assert trace.rewards == {}
    assert trace.costs["tokens"] == 80 + 120 + 260
    assert (trace.costs["cache_read_tokens"], trace.costs["cache_creation_tokens"]) == (80, 16)
    assert trace.attributes["session_id"] == trace.attributes["conversation_id"] == "conv-42"


def test_span_links_are_causal_edges():
    trace = build(fixture_spans(), TRACE_ID)
    by_id = {e.id: e for e in trace.events}
    causal = [(by_id[x.src], by_id[x.dst]) for x in trace.edges if x.type == "causal"]
    assert [(src.agent, src.type, dst.agent) for src, dst in causal] == [("researcher", "tool_result", "booking_agent")]
    assert trace.attributes["linked_traces"] == ["0f1e2d3c4b5a69788796a5b4c3d2e1f0"]  # a link to another trace


def test_handoff_attributes_of_the_earlier_proposal_and_return_to_caller():
    handoff = build(
        [
            span(
                "1",
                name="invoke_agent triage",
                end=1,
                gen_ai__operation__name="invoke_agent",
                gen_ai__agent__name="triage",
            ),
            chat("2", "1", "triage", 0.1, 0.5, "billing it is"),
            span(
                "3",
                "1",
                "execute_tool escalate",
                0.6,
                0.7,
                gen_ai__operation__name="execute_tool",
                gen_ai__tool__name="escalate",
                gen_ai__agent__name="triage",
                gen_ai__agent__handoff__source__name="triage",
                gen_ai__agent__handoff__target__name="billing",
            ),
            span(
                "4",
                name="invoke_agent billing",
                start=1,
                end=2,
                gen_ai__operation__name="invoke_agent",
                gen_ai__agent__name="billing",
            ),
            chat("5", "4", "billing", 1.1, 1.5, "paid"),
        ]
    )
    (delegate,) = [e for e in handoff.events if e.type == "delegate"]
    assert (delegate.agent, delegate.to, delegate.attributes["transfer_mode"]) == ("triage", "billing", "pass_control")

    # return_to_caller with the target seen outside the tool span: call-and-return
    call = build(
        [
            span(
                "1",
                name="invoke_agent assistant",
                end=3,
                gen_ai__operation__name="invoke_agent",
                gen_ai__agent__name="assistant",
            ),
            chat("2", "1", "assistant", 0.1, 0.4, "ask the specialist"),
            span(
                "3",
                "1",
                "execute_tool weather",
                0.5,
                0.6,
                gen_ai__operation__name="execute_tool",
                gen_ai__tool__name="weather",
                gen_ai__agent__name="assistant",
                gen_ai__transfer__mode="return_to_caller",
                gen_ai__transfer__target__name="weather-specialist",
            ),
            chat("4", "1", "assistant", 2.0, 2.5, "It is sunny."),
            span(
                "5",
                name="invoke_agent weather-specialist",
                start=0.7,
                end=1.5,
                gen_ai__operation__name="invoke_agent",
                gen_ai__agent__name="weather-specialist",
            ),
            chat("6", "5", "weather-specialist", 0.8, 1.2, "sunny"),
        ]
    )
    by_id = {e.id: e for e in call.events}
    edges = {(x.type, by_id[x.src].agent, by_id[x.dst].agent) for x in call.edges}
    assert ("message", "assistant", "weather-specialist") in edges
    assert ("return", "weather-specialist", "assistant") in edges
