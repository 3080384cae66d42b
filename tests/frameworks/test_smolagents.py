"""smolagents managed agents + OpenInference's SmolagentsInstrumentor, exported over OTLP/HTTP: the
trace holds what programs/smolagents_managed.py did, written here by hand from the program."""

import json

from tests.frameworks import facts
from tests.frameworks.scripted_openai import Call, ModelRequest, Reply, Usage

ANSWER = "Paris; 2 + 3 = 5"
FACT = "Paris is the capital of France."

#: Each agent's model calls, in order; usage distinct per call so sums are checkable.
MANAGER = [
    Reply(calls=(Call("search_agent", {"task": "Find the capital of France."}),), usage=Usage(100, 10)),
    Reply(calls=(Call("math_agent", {"task": "Add 2 and 3."}),), usage=Usage(200, 20)),
    Reply(calls=(Call("final_answer", {"answer": ANSWER}),), usage=Usage(300, 30)),
]
SEARCH = [
    Reply(calls=(Call("web_search", {"query": "capital of France"}),), usage=Usage(40, 4)),
    Reply(calls=(Call("final_answer", {"answer": "Paris"}),), usage=Usage(41, 4)),
]
MATH = [
    Reply(calls=(Call("add", {"a": 2, "b": 3}),), usage=Usage(50, 5)),
    Reply(calls=(Call("final_answer", {"answer": 5}),), usage=Usage(51, 5)),
]
TOKENS = sum(r.usage.input + r.usage.output for r in [*MANAGER, *SEARCH, *MATH])


def script(request: ModelRequest) -> Reply:
    """Which agent asks (the tools it offers: the manager offers its managed agents), and how far
    it got (smolagents replays tool results as "Observation:" user messages)."""
    if "search_agent" in request.tools:
        if request.says("managed agent 'math_agent'"):
            return MANAGER[2]
        return MANAGER[1] if request.says("managed agent 'search_agent'") else MANAGER[0]
    if "web_search" in request.tools:
        return SEARCH[1] if request.says(FACT) else SEARCH[0]
    assert "add" in request.tools, request
    return MATH[1] if request.says("Observation:\n5") else MATH[0]


def test_managed_agents(run_program):
    ran = run_program("smolagents", "smolagents_managed", script)
    assert ran.stdout.strip().splitlines()[-1] == f"ANSWER: {ANSWER}"
    assert len(ran.model_requests) == len(MANAGER) + len(SEARCH) + len(MATH)
    trace = ran.trace

    # the three agents by the names the program gave them (not `manager.run`), nothing else
    assert sorted(facts.agents(trace)) == ["manager", "math_agent", "search_agent"]
    assert facts.spawns(trace) == [("manager", "search_agent"), ("manager", "math_agent")]
    assert facts.delegations(trace) == [("manager", "search_agent"), ("manager", "math_agent")]
    # each managed agent gets the task its manager wrote (in smolagents' managed-agent prompt)
    asks = {e.to: e.content or "" for e in trace.events if e.type == "delegate"}
    assert "Task:\nFind the capital of France." in asks["search_agent"], asks
    assert "Task:\nAdd 2 and 3." in asks["math_agent"], asks
    assert not any(ask.startswith("{") for ask in asks.values()), asks  # the task, not the run's arguments
    # each managed agent's last event returns to its manager
    returns = [(src.agent, dst.agent) for src, dst in sorted(facts.edges_of(trace, "return"), key=lambda e: e[0].t)]
    assert returns == [("search_agent", "manager"), ("math_agent", "manager")]

    # tool calls with the arguments the model gave (not the instrumentor's `args`/`kwargs` wrapper)
    calls = [(agent, tool, json.loads(args)) for agent, tool, args in facts.tool_calls(trace)]
    assert calls == [
        ("search_agent", "web_search", {"query": "capital of France"}),
        ("search_agent", "final_answer", {"answer": "Paris"}),
        ("math_agent", "add", {"a": 2, "b": 3}),
        ("math_agent", "final_answer", {"answer": 5}),
        ("manager", "final_answer", {"answer": ANSWER}),
    ]
    assert facts.tool_results(trace) == [
        ("search_agent", "web_search", FACT),
        ("search_agent", "final_answer", "Paris"),
        ("math_agent", "add", "5"),
        ("math_agent", "final_answer", "5"),
        ("manager", "final_answer", ANSWER),
    ]

    # each model turn once, by its agent, as the call the model made
    assert facts.said(trace) == [
        ("manager", 'search_agent({"task": "Find the capital of France."})'),
        ("search_agent", 'web_search({"query": "capital of France"})'),
        ("search_agent", 'final_answer({"answer": "Paris"})'),
        ("manager", 'math_agent({"task": "Add 2 and 3."})'),
        ("math_agent", 'add({"a": 2, "b": 3})'),
        ("math_agent", 'final_answer({"answer": 5})'),
        ("manager", f'final_answer({{"answer": "{ANSWER}"}})'),
    ]
    # tokens: the model's usage, each call once (the run spans' totals are not added again)
    assert facts.measured_tokens(trace) == TOKENS
    assert trace.costs["tokens"] == TOKENS
    turns = [e for e in trace.events if e.type == "message"]
    assert [e.tokens for e in turns] == [110, 44, 45, 220, 55, 56, 330]
