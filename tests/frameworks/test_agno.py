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
