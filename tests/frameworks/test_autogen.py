"""AutoGen AgentChat teams (a Swarm with hand-offs, a RoundRobinGroupChat) with autogen-core's
built-in tracing, on AutoGen's own `ReplayChatCompletionClient` and, with the official OpenAI
instrumentor (`opentelemetry-instrumentation-openai-v2`, content on the logs signal), on autogen-ext's
`OpenAIChatCompletionClient` against the scripted server: the trace holds what
programs/autogen_teams.py did, written here by hand from the program."""

import pytest

from tests.frameworks import facts
from tests.frameworks.scripted_openai import Call, ModelRequest, Reply, Usage

SEARCH_RESULT = "Phobos and Deimos orbit Mars; Phobos is the larger."
ANSWER = "Mars has two small moons, Phobos and Deimos. TERMINATE"
DRAFT = "Phobos falls slowly / a grey stone circling the red / night of an old war"
REVISED = "Phobos falls slowly / grey stone circling the red sky / fear in a small moon"
SYLLABLES = "8 syllables; a haiku's middle line has 7"
LINE = "a grey stone circling the red"

#: Not agents: the team's manager and the runtime's agent types, the application span, the service.
NOT_AGENTS = ("SwarmGroupChatManager", "RoundRobinGroupChatManager", "run_team", "teams", "unknown_service")


#: Each agent's model calls in order (the program's SCRIPT), with usage distinct per call.
SCRIPT = {
    "planner": [Reply(calls=(Call("transfer_to_researcher"),), usage=Usage(100, 10))],
    "researcher": [
        Reply(calls=(Call("search", {"query": "moons of Mars"}),), usage=Usage(120, 12)),
        Reply(calls=(Call("transfer_to_writer"),), usage=Usage(140, 14)),
    ],
    "writer": [Reply(ANSWER, usage=Usage(160, 16))],
    "poet": [Reply(DRAFT, usage=Usage(50, 20)), Reply(REVISED, usage=Usage(90, 21))],
    "critic": [
        Reply(calls=(Call("count_syllables", {"line": LINE}),), usage=Usage(70, 7)),
        Reply("APPROVE", usage=Usage(110, 3)),
    ],
}


def scripted():
    """The scripted server's answers: the agent by its system message, the step by how often it asked."""
    asked: dict[str, int] = {}

    def script(request: ModelRequest) -> Reply:
        agent = request.system.removeprefix("You are the ").split(".")[0]
        step = asked.get(agent, 0)
        asked[agent] = step + 1
        return SCRIPT[agent][step]

    return script


#: What each team's agents said, in order, as the model calls of the `openai` mode record it.
SAID = {
    "swarm": [
        ("planner", "transfer_to_researcher({})"),
        ("researcher", 'search({"query": "moons of Mars"})'),
        ("researcher", "transfer_to_writer({})"),
        ("writer", ANSWER),
    ],
    "roundrobin": [
        ("poet", DRAFT),
        ("critic", f'count_syllables({{"line": "{LINE}"}})'),
        ("poet", REVISED),
        ("critic", "APPROVE"),
    ],
}
AGENTS = {"swarm": ["planner", "researcher", "writer"], "roundrobin": ["poet", "critic"]}
TOOLS = {"swarm": [("researcher", "search")], "roundrobin": [("critic", "count_syllables")]}
ARGUMENTS = {"swarm": '{"query": "moons of Mars"}', "roundrobin": f'{{"line": "{LINE}"}}'}
RESULTS = {"swarm": SEARCH_RESULT, "roundrobin": SYLLABLES}


def check_team(trace, team: str) -> None:
    """What both modes record: the agents, the hand-offs (Swarm) or the turns (RoundRobin), the tools."""
    # (as a set: the stored agents' order has been seen to follow the spans' arrival, not their start)
    assert sorted(facts.agents(trace)) == sorted(AGENTS[team])
    assert not any(name.startswith(NOT_AGENTS) for name in facts.agents(trace))
    if team == "swarm":
        # hand-offs pass control: a delegate each, by the `transfer_to_*` tool, and nothing returns
        assert facts.delegations(trace) == [("planner", "researcher"), ("researcher", "writer")]
        assert facts.spawns(trace) == [("planner", "researcher"), ("researcher", "writer")]
        assert [e.tool for e in facts._ordered(trace) if e.type == "delegate"] == [
            "transfer_to_researcher",
            "transfer_to_writer",
        ]
        assert facts.edges_of(trace, "return") == []
    else:
        # nobody delegates in a round robin: each turn is a message to the next speaker
        assert facts.delegations(trace) == [] and facts.spawns(trace) == []
        edges = sorted(facts.edges_of(trace, "message"), key=lambda edge: edge[0].t)
        turns = [(src.agent, dst.agent) for src, dst in edges]
        assert turns == [("poet", "critic"), ("critic", "poet"), ("poet", "critic")], turns
    assert [(a, t) for a, t, _ in facts.tool_calls(trace)] == TOOLS[team]


@pytest.mark.parametrize("team", ["swarm", "roundrobin"])
def test_builtin_tracing_with_the_replay_model(run_program, team):
    """autogen-core's own spans only (agents, tools, the runtime's messaging): no model call is
    recorded, so no content and no token count; the structure is all there is, and it is right."""
    ran = run_program("autogen", "autogen_teams", env={"AUTOGEN_TEAM": team, "OTEL_SERVICE_NAME": "teams"})
    assert ran.model_requests == []
    assert ran.stdout.strip().splitlines()[-1] == (
        f"writer: TextMessage: {ANSWER}" if team == "swarm" else "critic: TextMessage: APPROVE"
    )
    trace = ran.trace
    check_team(trace, team)
    # the tool spans name the tool only: no arguments, no result, and none made up
    assert [args for _, _, args in facts.tool_calls(trace)] == [None]
    assert facts.tool_results(trace) == []
    # a turn per agent span that did not only hand off or call tools, without content
    expected = [("writer", None)] if team == "swarm" else [("poet", None), ("poet", None), ("critic", None)]
    assert facts.said(trace) == expected
    assert facts.measured_tokens(trace) == 0


@pytest.mark.parametrize("team", ["swarm", "roundrobin"])
def test_openai_instrumentor_content_on_the_logs_signal(run_program, team):
    """autogen-ext's OpenAI client against the scripted server, its calls recorded by the official
    instrumentor with the content as log events (`gen_ai.*.message`, `gen_ai.choice`), which the
    app joins to their spans: every turn once, tool calls with the arguments and results the model
    calls name by id, tokens as scripted."""
    env = {
        "AUTOGEN_TEAM": team,
        "AUTOGEN_MODEL": "openai",
        "OTEL_SERVICE_NAME": "teams",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
    }
    ran = run_program("autogen", "autogen_teams", scripted(), env=env)
    agents = [r.system.removeprefix("You are the ").rstrip(".") for r in ran.model_requests]
    assert agents == [agent for agent, _ in SAID[team]]
    trace = ran.trace
    check_team(trace, team)
    assert facts.tool_calls(trace) == [(*TOOLS[team][0], ARGUMENTS[team])]
    assert facts.tool_results(trace) == [(*TOOLS[team][0], RESULTS[team])]
    assert facts.said(trace) == SAID[team]  # each once, as text (not the choice event's JSON)
    asked: dict[str, int] = {}
    usage = []
    for agent, _ in SAID[team]:
        reply = SCRIPT[agent][asked.setdefault(agent, 0)]
        asked[agent] += 1
        usage.append(reply.usage.input + reply.usage.output)
    assert [e.tokens for e in facts._ordered(trace) if e.type == "message"] == usage
    assert facts.measured_tokens(trace) == sum(usage)
