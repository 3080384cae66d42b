"""LangGraph, as researchers run it: the prebuilt supervisor (`langgraph-supervisor`) and a
hand-written `StateGraph` routing with `Command(goto=...)`, each traced by OpenInference's LangChain
instrumentor and by LangSmith's own OTel export (`LANGSMITH_TRACING_MODE=otel`: OTel only, nothing
sent to LangSmith). The model is `ChatOpenAI` answering from ScriptedOpenAI.

Every expectation below is written from the programs (tests/frameworks/programs/lg_*.py) and the
scripts here, not from what Swarmscope printed."""

from __future__ import annotations

import json

import pytest

from tests.frameworks.facts import agents, delegations, measured_tokens, said, spawns, tool_calls, tool_results
from tests.frameworks.scripted_openai import Call, Reply, Usage

HEADCOUNTS = "FAANG headcounts 2024: Meta 67317, Apple 164000, Amazon 1551000, Netflix 14000, Google 181269."
TOWER = "The Eiffel Tower is 330 metres tall."
LANGSMITH_OTEL = {
    "SWARMSCOPE_LANGGRAPH_TRACING": "langsmith",
    "LANGSMITH_TRACING": "true",
    "LANGSMITH_TRACING_MODE": "otel",  # langsmith 0.15: OTel only (the legacy LANGSMITH_OTEL_ONLY)
}
TRACINGS = [pytest.param({}, id="openinference"), pytest.param(LANGSMITH_OTEL, id="langsmith-otel")]


class Scripted:
    """A script that keeps the usage it answered with (the tokens the trace must measure)."""

    def __init__(self, answer):
        self.answer, self.tokens = answer, 0

    def __call__(self, request) -> Reply:
        reply = self.answer(request)
        self.tokens += reply.usage.input + reply.usage.output
        return reply


def supervisor_script(r) -> Reply:
    """The supervisor (offered the transfer tools) sends the research expert, then the math expert,
    then answers; each expert calls its tool once, then answers from the tool's output."""
    if "transfer_to_math_expert" in r.tools:
        sent = [m for role, m in r.messages if m.startswith("call transfer_to_")]
        if not sent:
            return Reply(calls=(Call("transfer_to_research_expert", {}),), usage=Usage(101, 11))
        if len(sent) == 1:
            return Reply(calls=(Call("transfer_to_math_expert", {}),), usage=Usage(131, 12))
        return Reply(text="Meta and Apple have 231317 employees together.", usage=Usage(171, 13))
    if "web_search" in r.tools:
        if any(HEADCOUNTS in output for output in r.tool_outputs):
            return Reply(text="Meta has 67317 employees and Apple 164000.", usage=Usage(61, 17))
        return Reply(calls=(Call("web_search", {"query": "Meta Apple headcount 2024"}),), usage=Usage(41, 19))
    if "add" in r.tools:
        if any(output.startswith("231317") for output in r.tool_outputs):
            return Reply(text="67317 + 164000 = 231317.", usage=Usage(83, 23))
        return Reply(calls=(Call("add", {"a": 67317, "b": 164000}),), usage=Usage(73, 29))
    raise AssertionError(f"a model call the program does not make: {r}")


def stategraph_script(r) -> Reply:
    """The supervisor names the researcher, then the writer, then FINISH; the researcher searches
    once and reports; the writer writes one sentence."""
    if r.system.startswith("You are a supervisor"):
        answered = [m for role, m in r.messages if role == "assistant"]
        choice, usage = [("researcher", Usage(31, 2)), ("writer", Usage(43, 3)), ("FINISH", Usage(59, 4))][
            min(len(answered), 2)
        ]
        return Reply(text=choice, usage=usage)
    if r.system.startswith("You are a researcher"):
        if any(TOWER in output for output in r.tool_outputs):
            return Reply(text="It is 330 metres tall.", usage=Usage(37, 7))
        return Reply(calls=(Call("search", {"query": "Eiffel Tower height"}),), usage=Usage(29, 11))
    if r.system.startswith("You are a writer"):
        return Reply(text="The Eiffel Tower stands 330 metres tall.", usage=Usage(47, 13))
    raise AssertionError(f"a model call the program does not make: {r}")


def _arguments(content: str | None) -> dict:
    """A tool call's arguments: JSON, or (OpenInference's `input.value` of a one-argument tool) the
    bare value, given here as `{"query": value}`."""
    assert content is not None
    try:
        value = json.loads(content)
    except ValueError:
        return {"query": content}
    return value if isinstance(value, dict) else {"query": value}


def _turns(trace) -> list[tuple[str, str | None]]:
    """`said`, with a call of a tool without arguments written one way (`name()`)."""
    return [(agent, (text or "").replace("({})", "()")) for agent, text in said(trace)]


@pytest.mark.parametrize("tracing", TRACINGS)
def test_prebuilt_supervisor(run_program, tracing):
    script = Scripted(supervisor_script)
    ran = run_program("langgraph", "lg_supervisor", script, env=tracing)
    assert ran.stdout.strip() == "Meta and Apple have 231317 employees together."
    assert len(ran.model_requests) == 7
    trace = ran.trace

    # three agents: the supervisor and its two experts (no `LangGraph`, `agent`, `call_agent`, service);
    # sorted: the store keeps agents in the order streamed batches first showed them
    assert sorted(agents(trace)) == ["math_expert", "research_expert", "supervisor"]
    assert {a.name: a.parent for a in trace.agents} == {
        "supervisor": None,
        "research_expert": "supervisor",
        "math_expert": "supervisor",
    }
    # the hand-offs are the transfer tools; each expert's answer returns to the supervisor
    assert spawns(trace) == [("supervisor", "research_expert"), ("supervisor", "math_expert")]
    assert delegations(trace) == [("supervisor", "research_expert"), ("supervisor", "math_expert")]
    handoffs = [e for e in trace.events if e.type == "delegate"]
    assert [e.tool for e in handoffs] == ["transfer_to_research_expert", "transfer_to_math_expert"]
    returns = sorted((e for e in trace.events if e.type == "return"), key=lambda e: e.t)
    assert [(e.agent, e.to, e.content) for e in returns] == [
        ("research_expert", "supervisor", "Meta has 67317 employees and Apple 164000."),
        ("math_expert", "supervisor", "67317 + 164000 = 231317."),
    ]
    # tools: the expert that called each, its arguments and result (the text, not LangChain's message)
    calls = tool_calls(trace)
    assert [(agent, tool) for agent, tool, _ in calls] == [("research_expert", "web_search"), ("math_expert", "add")]
    assert [_arguments(content) for _, _, content in calls] == [
        {"query": "Meta Apple headcount 2024"},
        {"a": 67317, "b": 164000},
    ]
    assert tool_results(trace) == [("research_expert", "web_search", HEADCOUNTS), ("math_expert", "add", "231317.0")]
    # every model turn once, on the agent that made it, as text
    assert _turns(trace) == [
        ("supervisor", "transfer_to_research_expert()"),
        ("research_expert", 'web_search({"query": "Meta Apple headcount 2024"})'),
        ("research_expert", "Meta has 67317 employees and Apple 164000."),
        ("supervisor", "transfer_to_math_expert()"),
        ("math_expert", 'add({"a": 67317, "b": 164000})'),
        ("math_expert", "67317 + 164000 = 231317."),
        ("supervisor", "Meta and Apple have 231317 employees together."),
    ]
    # the experts' ReAct steps are their graph nodes
    steps = {(e.agent, e.type): e.attributes.get("graph_node") for e in trace.events if e.type != "spawn"}
    assert steps[("math_expert", "tool_call")] == "tools" and steps[("math_expert", "message")] == "agent"
    assert measured_tokens(trace) == script.tokens == 785
    assert not any(e.attributes.get("tokens_estimated") for e in trace.events if e.type in ("message", "return"))


@pytest.mark.parametrize("tracing", TRACINGS)
def test_stategraph_command_goto(run_program, tracing):
    script = Scripted(stategraph_script)
    ran = run_program("langgraph", "lg_stategraph", script, env=tracing)
    assert ran.stdout.strip() == "The Eiffel Tower stands 330 metres tall."
    assert len(ran.model_requests) == 6
    trace = ran.trace

    # each node is an agent; the graph run is none
    assert sorted(agents(trace)) == ["researcher", "supervisor", "writer"]
    assert {a.name: a.parent for a in trace.agents} == {
        "supervisor": None,
        "researcher": "supervisor",
        "writer": "supervisor",
    }
    # Command(goto=...) hands control over: to the worker and back, in order; `__end__` is no agent
    assert delegations(trace) == [
        ("supervisor", "researcher"),
        ("researcher", "supervisor"),
        ("supervisor", "writer"),
        ("writer", "supervisor"),
    ]
    assert spawns(trace) == [("supervisor", "researcher"), ("supervisor", "writer")]
    assert [e for e in trace.events if e.type == "return"] == []  # control passes, nothing returns
    calls = tool_calls(trace)
    assert [(agent, tool) for agent, tool, _ in calls] == [("researcher", "search")]
    assert _arguments(calls[0][2]) == {"query": "Eiffel Tower height"}
    assert tool_results(trace) == [("researcher", "search", TOWER)]
    assert _turns(trace) == [
        ("supervisor", "researcher"),
        ("researcher", 'search({"query": "Eiffel Tower height"})'),
        ("researcher", "It is 330 metres tall."),
        ("supervisor", "writer"),
        ("writer", "The Eiffel Tower stands 330 metres tall."),
        ("supervisor", "FINISH"),
    ]
    # each hand-off leads to the receiver's next turn
    by_id = {e.id: e for e in trace.events}
    handed = [
        (by_id[x.src].agent, by_id[x.dst].agent)
        for x in trace.edges
        if x.type == "message" and by_id[x.src].type == "delegate"
    ]
    assert sorted(handed) == sorted(delegations(trace))
    assert measured_tokens(trace) == script.tokens == 286
