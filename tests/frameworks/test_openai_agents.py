"""OpenAI Agents SDK + OpenInference, over the Responses API (the SDK's default) and Chat
Completions, exported over OTLP/HTTP and OTLP/gRPC: the trace holds what
programs/openai_agents_handoffs.py did, written here by hand from the program."""

import pytest

from tests.frameworks import facts
from tests.frameworks.scripted_openai import Call, ModelRequest, Reply, Usage

ANSWER = "Refund issued for order 42. 'Thanks' in French is 'merci'."

#: Each agent's model calls, in order: (reply, usage). Usage is distinct per call so sums are checkable.
TRIAGE = [
    Reply(calls=(Call("lookup_order", {"order_id": "42"}),), usage=Usage(100, 10)),
    Reply(calls=(Call("translate", {"input": "thanks"}),), usage=Usage(120, 12)),
    Reply(calls=(Call("transfer_to_billing"),), usage=Usage(140, 8)),
]
BILLING = [
    Reply(calls=(Call("refund", {"order_id": "42"}),), usage=Usage(200, 15)),
    Reply(calls=(Call("transfer_to_support"),), usage=Usage(220, 9)),
]
TRANSLATOR = Reply("merci", usage=Usage(30, 3, reasoning=1))
SUPPORT = Reply(ANSWER, usage=Usage(300, 40, cached=64))
TOKENS = sum(r.usage.input + r.usage.output for r in [*TRIAGE, *BILLING, TRANSLATOR, SUPPORT])


def script(request: ModelRequest) -> Reply:
    """Which agent is asking (its instructions), and how far it got (the tool outputs it has seen)."""
    if "You translate" in request.system:
        return TRANSLATOR
    if "You are support" in request.system:
        return SUPPORT
    if "You are billing" in request.system:
        return BILLING[1] if request.says("Refunded order 42") else BILLING[0]
    assert "You are triage" in request.system, request
    return TRIAGE[len(request.tool_outputs)]


def check(trace, details: bool = True) -> None:
    """`details`: the instrumentor records reasoning and cached tokens (it does for a Responses
    generation, not for a Chat Completions one: its `generation` spans carry prompt and completion
    counts only)."""
    assert sorted(facts.agents(trace)) == ["billing", "support", "translator", "triage"]
    assert facts.delegations(trace) == [("triage", "translator"), ("triage", "billing"), ("billing", "support")]
    calls = facts.tool_calls(trace)
    assert [(agent, tool) for agent, tool, _ in calls] == [("triage", "lookup_order"), ("billing", "refund")]
    assert all('"order_id": "42"' in args.replace(" ", "").replace(":", ": ") for _, _, args in calls), calls
    assert [(a, t, r) for a, t, r in facts.tool_results(trace)] == [
        ("triage", "lookup_order", "Order 42: shipped 3 days late"),
        ("billing", "refund", "Refunded order 42"),
    ]
    texts = [content for _, content in facts.said(trace)]
    assert sum(ANSWER in (c or "") for c in texts) == 1, texts  # the answer once, not twice
    assert [c for c in texts if c and ANSWER in c] == [ANSWER]
    assert ("translator", "merci") in facts.said(trace)
    # the agent-as-tool delegation carries the translator's input
    (ask,) = [e for e in trace.events if e.type == "delegate" and e.to == "translator"]
    assert "thanks" in (ask.content or ""), ask
    assert facts.measured_tokens(trace) == TOKENS
    assert trace.costs.get("reasoning_tokens") == (1 if details else None)
    assert trace.costs.get("cache_read_tokens") == (64 if details else None)


@pytest.mark.parametrize("api", ["responses", "chat_completions"])
def test_handoffs_and_agent_as_tool_over_http(run_program, api):
    ran = run_program("openai-agents", "openai_agents_handoffs", script, env={"AGENTS_API": api})
    assert {r.api for r in ran.model_requests} == {"responses" if api == "responses" else "chat"}
    assert ran.stdout.strip().splitlines()[-1] == ANSWER
    check(ran.trace, details=api == "responses")


def test_the_same_program_over_grpc(run_program, grpc_endpoint):
    ran = run_program("openai-agents", "openai_agents_handoffs", script, endpoint=grpc_endpoint, protocol="grpc")
    check(ran.trace)
    assert ran.trace.attributes["sources"] == ["OTLP/gRPC"]
