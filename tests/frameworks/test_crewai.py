"""CrewAI, hierarchical process, with OpenInference's CrewAI and OpenAI instrumentors, exported over
OTLP/HTTP: the trace holds what programs/crewai_hierarchical.py did, written here by hand from the
program. CrewAI's manager ("Crew Manager", the role CrewAI gives the manager it builds from
`manager_llm`) runs both tasks and delegates each to a coworker with CrewAI's own "Delegate work to
coworker" tool (native function calling: the model calls `delegate_work_to_coworker`); the
Researcher calls `lookup_facts`, the Writer writes."""

from tests.frameworks import facts
from tests.frameworks.scripted_openai import Call, ModelRequest, Reply, Usage

MANAGER = "Crew Manager"
FACTS = "Honeybees communicate the direction of flowers with a waggle dance."  # lookup_facts' fixed text
RESEARCH_ASK = {
    "task": "Find how honeybees show where flowers are.",
    "context": "Use your lookup tool.",
    "coworker": "Researcher",
}
WRITE_ASK = {
    "task": "Write one sentence for children about bee dances.",
    "context": "Bees use a waggle dance.",
    "coworker": "Writer",
}
FOUND = "Honeybees use a waggle dance."
SENTENCE = "Bees wiggle and dance to tell friends where flowers grow!"
RESEARCH_DONE = "Verified: bees use a waggle dance."
ANSWER = "Final: bees wiggle and dance to show friends the flowers."

#: Each agent's model calls in order (usage distinct per call, so the sum is checkable).
MANAGER_RESEARCH = [
    Reply(calls=(Call("delegate_work_to_coworker", RESEARCH_ASK),), usage=Usage(100, 20)),
    Reply(RESEARCH_DONE, usage=Usage(130, 8)),
]
MANAGER_WRITE = [
    Reply(calls=(Call("delegate_work_to_coworker", WRITE_ASK),), usage=Usage(110, 22)),
    Reply(ANSWER, usage=Usage(140, 12, reasoning=3, cached=32)),
]
RESEARCHER = [
    Reply(calls=(Call("lookup_facts", {"topic": "honeybee dance"}),), usage=Usage(50, 10)),
    Reply(FOUND, usage=Usage(70, 6)),
]
WRITER = Reply(SENTENCE, usage=Usage(60, 12))
CALLS = [*MANAGER_RESEARCH, *MANAGER_WRITE, *RESEARCHER, WRITER]
TOKENS = sum(r.usage.input + r.usage.output for r in CALLS)


def script(request: ModelRequest) -> Reply:
    """Who is asking (CrewAI's system prompt starts "You are <role>."), on which task (the first
    user message), and how far it got (the tool outputs it has seen)."""
    done = len(request.tool_outputs)
    if request.system.startswith("You are Researcher."):
        assert request.tools == ["lookup_facts"], request.tools
        return RESEARCHER[done]
    if request.system.startswith("You are Writer."):
        return WRITER
    assert request.system.startswith(f"You are {MANAGER}."), request.system
    assert request.tools == ["delegate_work_to_coworker", "ask_question_to_coworker"], request.tools
    task = request.messages[0][1]
    return (MANAGER_RESEARCH if "Research how honeybees" in task else MANAGER_WRITE)[done]


def test_hierarchical_crew_delegates_to_its_coworkers(run_program, tmp_path):
    ran = run_program(
        "crewai",
        "crewai_hierarchical",
        script,
        env={"HOME": str(tmp_path), "CREWAI_TRACING_ENABLED": "false", "CREWAI_DISABLE_VERSION_CHECK": "true"},
    )
    assert len(ran.model_requests) == len(CALLS)
    assert ran.stdout.strip().splitlines()[-1] == ANSWER
    trace = ran.trace

    # the manager and the two coworkers: not the crew, the service or the tools
    assert sorted(facts.agents(trace)) == sorted([MANAGER, "Researcher", "Writer"])
    assert facts.delegations(trace) == [(MANAGER, "Researcher"), (MANAGER, "Writer")]
    # each delegation carries the task the manager handed over (the tool's `task` argument)
    research, write = [e for e in sorted(trace.events, key=lambda e: e.t) if e.type == "delegate"]
    assert RESEARCH_ASK["task"] in (research.content or ""), research
    assert WRITE_ASK["task"] in (write.content or ""), write
    # the coworkers return their answers to the manager
    returns = [(src.agent, dst.agent, src.content) for src, dst in facts.edges_of(trace, "return")]
    assert ("Researcher", MANAGER, FOUND) in returns and ("Writer", MANAGER, SENTENCE) in returns, returns

    # the Researcher's one tool call, with its argument and lookup_facts' fixed result; the
    # delegations are delegations, not tool calls of the manager
    assert [(a, t) for a, t, _ in facts.tool_calls(trace)] == [("Researcher", "lookup_facts")]
    (call,) = facts.tool_calls(trace)
    assert '"topic": "honeybee dance"' in (call[2] or ""), call
    assert facts.tool_results(trace) == [("Researcher", "lookup_facts", FACTS)]

    # what each agent said, once each
    said = facts.said(trace)
    texts = [content or "" for _, content in said]
    for agent, text in [("Researcher", FOUND), ("Writer", SENTENCE), (MANAGER, RESEARCH_DONE), (MANAGER, ANSWER)]:
        assert (agent, text) in said, (agent, text, said)
        assert sum(text in t for t in texts) == 1, (text, texts)

    assert facts.measured_tokens(trace) == TOKENS
    assert trace.costs.get("reasoning_tokens") == 3
    assert trace.costs.get("cache_read_tokens") == 32
