"""pydantic-ai agent delegation with pydantic-ai's own instrumentation, in every data format version
it offers (`InstrumentationSettings(version=...)`), exported over OTLP/HTTP: the trace holds what
programs/pydantic_ai_delegation.py did, written here by hand from the program (its `FunctionModel`
scripts and tools)."""

import pytest

from tests.frameworks import facts

QUESTION = "Write two sentences about the moons of Mars."
SEARCH_RESULT = "Phobos and Deimos orbit Mars; Phobos is the larger."
NOTES = "Mars has two moons, Phobos and Deimos."
DRAFT = "Mars has two small moons. Phobos, the larger, and Deimos were found in 1877."
FINAL = "Done: Mars has two small moons. Phobos, the larger, and Deimos were found in 1877."

#: Each model response's usage as the program scripts it: (input, output).
USAGE = {
    "coordinator": [(100, 10), (120, 12), (150, 15)],
    "researcher": [(50, 5), (60, 6)],
    "writer": [(70, 7)],
}
TOKENS = sum(i + o for calls in USAGE.values() for i, o in calls)

#: The data format versions pydantic-ai-slim 2.78.0 offers (`InstrumentationSettings.version`:
#: 2, 3 and 4 deprecated, 5 the default, 6 opt-in).
VERSIONS = [2, 3, 4, 5, 6]


def check(trace) -> None:
    # (as a set: the stored agents' order has been seen to follow the spans' arrival, not their start)
    assert sorted(facts.agents(trace)) == ["coordinator", "researcher", "writer"]
    assert facts.spawns(trace) == [("coordinator", "researcher"), ("coordinator", "writer")]
    assert facts.delegations(trace) == [("coordinator", "researcher"), ("coordinator", "writer")]
    # a delegation carries what the coordinator asked: the arguments of the tool that runs the agent
    asks = [e.content for e in facts._ordered(trace) if e.type == "delegate"]
    assert asks == ['{"question":"moons of Mars"}', f'{{"notes":"{NOTES}"}}'], asks
    # the tools that run agents are the delegations; the one plain tool call, with its arguments
    assert [(a, t) for a, t, _ in facts.tool_calls(trace)] == [("researcher", "search")]
    assert facts.tool_calls(trace) == [("researcher", "search", '{"query":"moons of Mars"}')]
    assert facts.tool_results(trace) == [("researcher", "search", SEARCH_RESULT)]
    # every turn, once, in order; the delegates' last turns are their returns
    assert [(e.agent, e.type, e.content) for e in facts._ordered(trace) if e.type in ("message", "return")] == [
        ("coordinator", "message", 'ask_researcher({"question": "moons of Mars"})'),
        ("researcher", "message", 'search({"query": "moons of Mars"})'),
        ("researcher", "return", NOTES),
        ("coordinator", "message", f'ask_writer({{"notes": "{NOTES}"}})'),
        ("writer", "return", DRAFT),
        ("coordinator", "message", FINAL),
    ]
    returns = [(src.agent, dst.agent) for src, dst in facts.edges_of(trace, "return")]
    assert returns == [("researcher", "coordinator"), ("writer", "coordinator")]
    turns = sorted(e.tokens for e in trace.events if e.type in ("message", "return"))
    assert turns == sorted(i + o for calls in USAGE.values() for i, o in calls)
    assert facts.measured_tokens(trace) == TOKENS


@pytest.mark.parametrize("version", VERSIONS)
def test_delegation_in_every_instrumentation_format(run_program, version):
    ran = run_program(
        "pydantic-ai",
        "pydantic_ai_delegation",
        env={"PYDANTIC_AI_INSTRUMENTATION_VERSION": str(version), "OTEL_SERVICE_NAME": "moons"},
    )
    assert ran.stdout.splitlines()[0] == FINAL
    check(ran.trace)
    assert ran.trace.name  # named after the root agent run


def test_no_service_name_names_no_agent_unknown_service(run_program):
    """Without OTEL_SERVICE_NAME the SDK's resource says `unknown_service:python`: the agents are
    still the ones the agent-run spans name, and nobody is called after the service."""
    ran = run_program("pydantic-ai", "pydantic_ai_delegation")
    check(ran.trace)
    assert not any(name.startswith("unknown_service") for name in facts.agents(ran.trace))
