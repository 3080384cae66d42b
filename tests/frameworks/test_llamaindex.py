"""LlamaIndex AgentWorkflow + OpenInference's LlamaIndexInstrumentor, exported over OTLP/HTTP: the
trace holds what programs/llamaindex_handoffs.py did, written here by hand from the program.

FunctionAgent streams its model calls. Without `stream_options.include_usage` (the program's
default, as LlamaIndex sends it) an OpenAI-compatible stream carries no usage, so the
instrumentation reports no tokens and the trace has no measured ones; with it, the tokens are the
scripted usage."""

import json

import pytest

from tests.frameworks import facts
from tests.frameworks.scripted_openai import Call, ModelRequest, Reply, Usage

ANSWER = "Ada, twice the speed of light is 599584 km/s."
FACT = "The speed of light is 299792 km/s."

TRIAGE = [
    Reply(calls=(Call("get_user", {"user_id": "u1"}),), usage=Usage(100, 10)),
    Reply(calls=(Call("handoff", {"to_agent": "researcher", "reason": "needs a fact"}),), usage=Usage(120, 12)),
    Reply(calls=(Call("handoff", {"to_agent": "calculator", "reason": "needs arithmetic"}),), usage=Usage(140, 14)),
]
RESEARCHER = [
    Reply(calls=(Call("lookup", {"topic": "speed of light"}),), usage=Usage(200, 20)),
    Reply(calls=(Call("handoff", {"to_agent": "triage", "reason": "fact found"}),), usage=Usage(210, 21)),
]
CALCULATOR = [
    Reply(calls=(Call("multiply", {"a": 299792, "b": 2}),), usage=Usage(300, 30)),
    Reply(ANSWER, usage=Usage(310, 31)),
]
#: The model calls in the order the workflow makes them.
ORDER = [TRIAGE[0], TRIAGE[1], RESEARCHER[0], RESEARCHER[1], TRIAGE[2], CALCULATOR[0], CALCULATOR[1]]


def _t(edge) -> float:
    return edge[0].t


def script(request: ModelRequest) -> Reply:
    """Which agent asks (its system prompt), and how far the shared chat history got."""
    if "You are triage." in request.system:
        if request.says(FACT):
            return TRIAGE[2]
        return TRIAGE[1] if request.tool_outputs else TRIAGE[0]
    if "You are the researcher." in request.system:
        return RESEARCHER[1] if request.says(FACT) else RESEARCHER[0]
    assert "You are the calculator." in request.system, request
    return CALCULATOR[1] if request.says("599584") else CALCULATOR[0]


@pytest.mark.parametrize("stream_usage", [False, True], ids=["stream", "stream_with_usage"])
def test_agent_workflow_handoffs(run_program, stream_usage):
    ran = run_program("llamaindex", "llamaindex_handoffs", script, env={"LLAMA_STREAM_USAGE": str(int(stream_usage))})
    assert ran.stdout.strip().splitlines()[-1] == f"ANSWER: {ANSWER}"
    assert all(r.body.get("stream") for r in ran.model_requests)
    asked = [bool((r.body.get("stream_options") or {}).get("include_usage")) for r in ran.model_requests]
    assert asked == [stream_usage] * len(ORDER)
    trace = ran.trace

    # the three FunctionAgents (no `AgentWorkflow` or service agent)
    assert sorted(facts.agents(trace)) == ["calculator", "researcher", "triage"]
    # hand-offs in order; each passes control (nothing returns)
    assert facts.delegations(trace) == [("triage", "researcher"), ("researcher", "triage"), ("triage", "calculator")]
    assert facts.spawns(trace) == [("triage", "researcher"), ("triage", "calculator")]
    handoffs = [e for e in trace.events if e.type == "delegate"]
    assert [json.loads(e.content)["reason"] for e in handoffs] == ["needs a fact", "fact found", "needs arithmetic"]
    assert facts.edges_of(trace, "return") == []
    heard = [(src.agent, dst.agent, dst.content) for src, dst in sorted(facts.edges_of(trace, "message"), key=_t)]
    assert heard == [
        ("triage", "researcher", 'lookup({"topic": "speed of light"})'),
        ("researcher", "triage", 'handoff({"to_agent": "calculator", "reason": "needs arithmetic"})'),
        ("triage", "calculator", 'multiply({"a": 299792, "b": 2})'),
    ]

    # tool calls with the model's arguments (not LlamaIndex's `kwargs` wrapper), results as text
    calls = [(agent, tool, json.loads(args)) for agent, tool, args in facts.tool_calls(trace)]
    assert calls == [
        ("triage", "get_user", {"user_id": "u1"}),
        ("researcher", "lookup", {"topic": "speed of light"}),
        ("calculator", "multiply", {"a": 299792, "b": 2}),
    ]
    assert facts.tool_results(trace) == [
        ("triage", "get_user", "Ada"),
        ("researcher", "lookup", FACT),
        ("calculator", "multiply", "599584"),
    ]

    # one turn per model call (not the request's preparation), the answer once
    assert facts.said(trace) == [
        ("triage", 'get_user({"user_id": "u1"})'),
        ("triage", 'handoff({"to_agent": "researcher", "reason": "needs a fact"})'),
        ("researcher", 'lookup({"topic": "speed of light"})'),
        ("researcher", 'handoff({"to_agent": "triage", "reason": "fact found"})'),
        ("triage", 'handoff({"to_agent": "calculator", "reason": "needs arithmetic"})'),
        ("calculator", 'multiply({"a": 299792, "b": 2})'),
        ("calculator", ANSWER),
    ]
    turns = [e for e in trace.events if e.type == "message"]
    if stream_usage:
        assert [e.tokens for e in turns] == [r.usage.input + r.usage.output for r in ORDER]
        assert facts.measured_tokens(trace) == trace.costs["tokens"] == sum(e.tokens for e in turns)
    else:  # the stream reported no usage: nothing measured, every count an estimate
        assert facts.measured_tokens(trace) == 0
        assert all(e.attributes.get("tokens_estimated") for e in turns)
        assert all("input_tokens" not in e.attributes for e in turns)
