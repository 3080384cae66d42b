"""Strands Agents, a `Swarm` (hand-off by `handoff_to_agent`) and an agent used inside a tool, with
Strands' own OpenTelemetry spans (both GenAI convention versions it writes), exported over
OTLP/HTTP: the trace holds what programs/strands_swarm.py did, written here by hand."""

import json

import pytest

from tests.frameworks import facts
from tests.frameworks.scripted_openai import Call, ModelRequest, Reply, Usage

FACT = "The Eiffel Tower is 330 metres tall."
SENTENCE = "The Eiffel Tower stands 330 metres tall."
FRENCH = "La tour Eiffel mesure 330 mètres."
ANSWER = f"{SENTENCE} / {FRENCH}"
HANDOFF = "Write it up: the tower is 330 metres tall."

RESEARCHER = [
    Reply(calls=(Call("lookup", {"query": "Eiffel Tower height"}),), usage=Usage(41, 5)),
    Reply(calls=(Call("handoff_to_agent", {"agent_name": "writer", "message": HANDOFF}),), usage=Usage(61, 7)),
    Reply("Handed over to the writer.", usage=Usage(81, 6)),
]
WRITER = [
    Reply(calls=(Call("translate", {"text": SENTENCE}),), usage=Usage(101, 11)),
    Reply(ANSWER, usage=Usage(131, 13)),
]
TRANSLATOR = Reply(FRENCH, usage=Usage(21, 3))


def script(request: ModelRequest) -> Reply:
    """Who asks (its system prompt), and how far it got (the tool outputs it has seen)."""
    if request.system.startswith("You translate"):
        return TRANSLATOR
    if request.system.startswith("You research"):
        return RESEARCHER[min(len(request.tool_outputs), 2)]
    assert request.system.startswith("You write"), request
    return WRITER[1] if request.says(FRENCH) else WRITER[0]


CONVENTIONS = [
    pytest.param({}, id="default"),
    pytest.param({"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}, id="latest"),
]


@pytest.mark.parametrize("conventions", CONVENTIONS)
def test_swarm_handoff_and_agent_in_a_tool(run_program, conventions):
    ran = run_program("strands", "strands_swarm", script, env={"OTEL_SERVICE_NAME": "tower", **conventions})
    assert ran.stdout.strip().splitlines()[-1] == ANSWER
    assert len(ran.model_requests) == len(RESEARCHER) + len(WRITER) + 1
    trace = ran.trace

    # the three agents (not the swarm, not the service)
    assert sorted(facts.agents(trace)) == ["researcher", "translator", "writer"]
    # the swarm's hand-off (control passes: nothing returns), then the agent called inside a tool
    assert facts.delegations(trace) == [("researcher", "writer"), ("writer", "translator")]
    assert facts.spawns(trace) == [("researcher", "writer"), ("writer", "translator")]
    handoff, ask = [e for e in trace.events if e.type == "delegate"]
    assert handoff.tool == "handoff_to_agent" and HANDOFF in (handoff.content or ""), handoff
    assert ask.content == SENTENCE, ask  # what the writer sent, not the translator's system prompt
    returns = [(s.agent, d.agent) for s, d in facts.edges_of(trace, "return")]
    assert returns == [("translator", "writer")]

    # the function tool with its arguments and result (the text, not Converse content blocks)
    calls = [(agent, tool, json.loads(args)) for agent, tool, args in facts.tool_calls(trace)]
    assert calls == [("researcher", "lookup", {"query": "Eiffel Tower height"})]
    assert facts.tool_results(trace) == [("researcher", "lookup", FACT)]

    # every model turn once, as text or the call it made
    assert facts.said(trace) == [
        ("researcher", 'lookup({"query": "Eiffel Tower height"})'),
        ("researcher", f'handoff_to_agent({{"agent_name": "writer", "message": "{HANDOFF}"}})'),
        ("researcher", "Handed over to the writer."),
        ("writer", f'translate({{"text": "{SENTENCE}"}})'),
        ("translator", FRENCH),
        ("writer", ANSWER),
    ]
    # tokens: each model call's usage once (the agent spans' sums are not added again)
    tokens = sum(r.usage.input + r.usage.output for r in [*RESEARCHER, *WRITER, TRANSLATOR])
    assert facts.measured_tokens(trace) == tokens
    assert trace.costs["tokens"] == tokens
