"""Agno, a team (coordinate mode) + OpenInference's AgnoInstrumentor, exported over OTLP/HTTP: the
trace holds what programs/agno_team.py did, written here by hand from the program."""

import json

from tests.frameworks import facts
from tests.frameworks.scripted_openai import Call, ModelRequest, Reply, Usage

FACT = "The Eiffel Tower is 330 metres tall."
REPORT = "It is 330 metres tall."
SENTENCE = "The Eiffel Tower stands 330 metres tall."
ANSWER = "Here it is: The Eiffel Tower stands 330 metres tall."
ASK_RESEARCHER = "Find the height of the Eiffel Tower."
ASK_WRITER = "Write one sentence: the Eiffel Tower is 330 metres tall."

#: Each agent's model calls, in order; usage distinct per call so sums are checkable.
LEADER = [
    Reply(
        calls=(Call("delegate_task_to_member", {"member_id": "researcher", "task": ASK_RESEARCHER}),),
        usage=Usage(101, 11),
    ),
    Reply(calls=(Call("delegate_task_to_member", {"member_id": "writer", "task": ASK_WRITER}),), usage=Usage(131, 13)),
    Reply(ANSWER, usage=Usage(151, 17)),
]
RESEARCHER = [
    Reply(calls=(Call("lookup", {"query": "Eiffel Tower height"}),), usage=Usage(41, 5)),
    Reply(REPORT, usage=Usage(61, 7)),
]
WRITER = Reply(SENTENCE, usage=Usage(71, 9))
TOKENS = sum(r.usage.input + r.usage.output for r in [*LEADER, *RESEARCHER, WRITER])


def script(request: ModelRequest) -> Reply:
    """Who asks (the tools offered: the leader has Agno's delegation tool), and how far it got."""
    if "delegate_task_to_member" in request.tools:
        return LEADER[len(request.tool_outputs)]
    if "lookup" in request.tools:
        return RESEARCHER[1] if request.says(FACT) else RESEARCHER[0]
    assert request.says("You write one sentence"), request
    return WRITER


def test_team_delegates_to_members(run_program):
    ran = run_program("agno", "agno_team", script, env={"AGNO_TELEMETRY": "false"})
    assert ran.stdout.strip().splitlines()[-1] == ANSWER
    assert len(ran.model_requests) == len(LEADER) + len(RESEARCHER) + 1
    trace = ran.trace

    # the team (its leader) and its two members, by the names the program gave them (not `Editorial_Team.run`)
    assert sorted(facts.agents(trace)) == ["Editorial Team", "Researcher", "Writer"]
    assert {a.name: a.parent for a in trace.agents} == {
        "Editorial Team": None,
        "Researcher": "Editorial Team",
        "Writer": "Editorial Team",
    }
    # `delegate_task_to_member` is the delegation (the member's run is recorded beside the tool span, not
    # in it), carrying the task the leader wrote; not a tool call of its own
    assert facts.delegations(trace) == [("Editorial Team", "Researcher"), ("Editorial Team", "Writer")]
    asks = {e.to: e.content for e in trace.events if e.type == "delegate"}
    assert asks == {"Researcher": ASK_RESEARCHER, "Writer": ASK_WRITER}
    returns = [(s.agent, d.agent) for s, d in sorted(facts.edges_of(trace, "return"), key=lambda e: e[0].t)]
    assert returns == [("Researcher", "Editorial Team"), ("Writer", "Editorial Team")]

    # the one function tool, with the model's arguments and the function's result
    calls = [(agent, tool, json.loads(args)) for agent, tool, args in facts.tool_calls(trace)]
    assert calls == [("Researcher", "lookup", {"query": "Eiffel Tower height"})]
    assert facts.tool_results(trace) == [("Researcher", "lookup", FACT)]

    # every model turn once, by the agent that made it (Agno's delegation tool as the call the leader made)
    assert facts.said(trace) == [
        ("Editorial Team", f'delegate_task_to_member({{"member_id": "researcher", "task": "{ASK_RESEARCHER}"}})'),
        ("Researcher", 'lookup({"query": "Eiffel Tower height"})'),
        ("Researcher", REPORT),
        ("Editorial Team", f'delegate_task_to_member({{"member_id": "writer", "task": "{ASK_WRITER}"}})'),
        ("Writer", SENTENCE),
        ("Editorial Team", ANSWER),
    ]
    assert facts.measured_tokens(trace) == TOKENS
    assert trace.costs["tokens"] == TOKENS


ASK_BOTH = "Find the Eiffel Tower's height and write one sentence about it."


def broadcast_script(request: ModelRequest) -> Reply:
    """Broadcast: the leader sends one task to every member, then answers from their outputs."""
    if "delegate_task_to_members" in request.tools:
        if request.tool_outputs:
            return LEADER[2]
        return Reply(calls=(Call("delegate_task_to_members", {"task": ASK_BOTH}),), usage=Usage(103, 12))
    if "lookup" in request.tools:
        return RESEARCHER[1] if request.says(FACT) else RESEARCHER[0]
    assert request.says("You write one sentence"), request
    return WRITER


def test_broadcast_to_all_members_concurrently(run_program):
    ran = run_program(
        "agno", "agno_team", broadcast_script, env={"AGNO_TELEMETRY": "false", "AGNO_TEAM_MODE": "broadcast"}
    )
    assert ran.stdout.strip().splitlines()[-1] == ANSWER
    trace = ran.trace
    assert sorted(facts.agents(trace)) == ["Editorial Team", "Researcher", "Writer"]
    # one tool call of the leader's reaches both members (in the order their runs started)
    assert sorted(facts.delegations(trace)) == [("Editorial Team", "Researcher"), ("Editorial Team", "Writer")]
    assert {e.to: e.content for e in trace.events if e.type == "delegate"} == {
        "Researcher": ASK_BOTH,
        "Writer": ASK_BOTH,
    }
    assert [t for _, t, _ in facts.tool_calls(trace)] == ["lookup"]
    # the leader's answer gathers both members' returns
    (answer,) = [e for e in trace.events if e.content == ANSWER]
    assert (answer.agent, answer.type) == ("Editorial Team", "aggregate")
    returns = sorted((s.agent, d.agent) for s, d in facts.edges_of(trace, "return"))
    assert returns == [("Researcher", "Editorial Team"), ("Writer", "Editorial Team")]
    tokens = 103 + 12 + sum(r.usage.input + r.usage.output for r in [LEADER[2], *RESEARCHER, WRITER])
    assert facts.measured_tokens(trace) == tokens


def old_script(request: ModelRequest) -> Reply:
    """Agno 1.x: the leader's tool is `transfer_task_to_member(member_id, task_description, expected_output)`."""
    if "transfer_task_to_member" in request.tools:
        asks = [("researcher", ASK_RESEARCHER), ("writer", ASK_WRITER)]
        if len(request.tool_outputs) < 2:
            member, task = asks[len(request.tool_outputs)]
            arguments = {"member_id": member, "task_description": task, "expected_output": "One sentence."}
            return Reply(
                calls=(Call("transfer_task_to_member", arguments),), usage=LEADER[len(request.tool_outputs)].usage
            )
        return LEADER[2]
    return script(request)


def test_older_agno_and_instrumentor(run_program):
    """Held-out versions: agno 1.8 with openinference-instrumentation-agno 0.1 (requirements/agno-old.txt),
    which names agents only by span name (`Editorial_Team.run`) and `agno.team` / `agno.agent`, records
    the raw Chat Completions response (no token counts), a generator's repr as the transfer tool's
    result (the member runs after the tool span) and `Agent._run`'s bound objects as the run's input."""
    ran = run_program("agno-old", "agno_team", old_script, env={"AGNO_TELEMETRY": "false"})
    assert ran.stdout.strip().splitlines()[-1] == ANSWER
    trace = ran.trace
    assert sorted(facts.agents(trace)) == ["Editorial Team", "Researcher", "Writer"]
    assert facts.delegations(trace) == [("Editorial Team", "Researcher"), ("Editorial Team", "Writer")]
    # the delegation's content: the transfer tool's arguments (what the leader wrote), not the run's objects
    asks = {e.to: json.loads(e.content) for e in trace.events if e.type == "delegate"}
    assert asks == {
        "Researcher": {
            "member_id": "researcher",
            "task_description": ASK_RESEARCHER,
            "expected_output": "One sentence.",
        },
        "Writer": {"member_id": "writer", "task_description": ASK_WRITER, "expected_output": "One sentence."},
    }
    returns = [(s.agent, d.agent) for s, d in sorted(facts.edges_of(trace, "return"), key=lambda e: e[0].t)]
    assert returns == [("Researcher", "Editorial Team"), ("Writer", "Editorial Team")]
    calls = [(agent, tool, json.loads(args)) for agent, tool, args in facts.tool_calls(trace)]
    assert calls == [("Researcher", "lookup", {"query": "Eiffel Tower height"})]
    assert facts.tool_results(trace) == [("Researcher", "lookup", FACT)]
    said = [
        (agent, text if text.startswith(("lookup", "It", "The", "Here")) else json.loads(text[24:-1])["member_id"])
        for agent, text in facts.said(trace)
    ]
    assert said == [
        ("Editorial Team", "researcher"),
        ("Researcher", 'lookup({"query": "Eiffel Tower height"})'),
        ("Researcher", REPORT),
        ("Editorial Team", "writer"),
        ("Writer", SENTENCE),
        ("Editorial Team", ANSWER),
    ]
    # tokens: the usage in each recorded response (measured, not estimated from the text)
    assert facts.measured_tokens(trace) == TOKENS
    assert trace.costs["tokens"] == TOKENS
