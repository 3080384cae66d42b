"""Langfuse export importer: the hand-written OpenInference hand-off fixture, the ten real framework
exports in ../shared/data/langfuse-exports/ (facts checked by reading each raw file), bad input.

Token totals below are sums of the raw files' token counts (`llm.token_count.*` / `gen_ai.usage.*`
attributes, else the generation's `usageDetails`) over the innermost LLM span of each call; tool
counts are the TOOL spans (OpenInference `TOOL`, GenAI `execute_tool`) that are not hand-offs.
"""

import json
from collections import Counter
from pathlib import Path

import pytest

from swarmscope.importers import SourceFile, detect, langfuse, read_files
from swarmscope.model import Trace

EXPORTS = "langfuse-exports"


def _read(path: Path, name: str | None = None) -> Trace:
    result = read_files([SourceFile(name or path.name, path.read_bytes())])
    assert [f.error for f in result.files] == [None], result.files
    assert [f.format for f in result.files] == ["langfuse"]
    assert len(result.traces) == 1
    return result.traces[0]


def _export(shared_data: Path, name: str) -> Trace:
    return _read(shared_data / EXPORTS / name)


def _acting(trace: Trace) -> set[str]:
    """Agents that make LLM calls or tool calls (orchestrating wrappers left out)."""
    return {e.agent for e in trace.events if e.type == "tool_call" or e in _llm_calls(trace)}


def _delegations(trace: Trace) -> Counter:
    return Counter((e.from_, e.to) for e in trace.events if e.type == "delegate")


def _llm_calls(trace: Trace) -> list:
    return [e for e in trace.events if e.type in ("message", "return", "aggregate") and e.attributes.get("model")]


# --- the hand-written fixture ---------------------------------------------------------------------


def test_openinference_handoff_fixture(fixtures):
    trace = _read(fixtures / "langfuse_openinference_handoff.json")
    assert trace.source_format == "langfuse"
    assert trace.source_id == "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    assert trace.attributes["spans"] == 6  # observations repeated in trace.observations counted once
    assert trace.attributes["session_id"] == "conv-42"
    assert trace.attributes["user_id"] == "user-9"
    assert trace.costs["tokens"] == 76 + 100
    answer = next(e for e in trace.events if e.agent == "Spanish Agent" and e.type in ("message", "return"))
    assert answer.content == "¡Claro! ¿Cuál es el número de su pedido?"  # the top-level record, not the copy
    # Scores: every score a label, categorical scores by their text; trace-level numbers kept by
    # name (`score_values`), none of them a reward (none is named `reward`).
    labels = {label.key: label for label in trace.labels}
    assert labels["helpfulness"].value == 0.75 and labels["helpfulness"].source == "langfuse:EVAL"
    assert labels["language"].value == "es"
    assert labels["answer_ok"].event_id == answer.id
    assert trace.attributes["score_values"] == {"helpfulness": 0.75}
    assert trace.rewards == {}
    assert trace.attributes["scores"][0]["comment"] == "Routed to the right agent."


def test_openinference_handoff_fixture_structure(fixtures):
    """The issue's OpenInference hand-off: two agents (`graph.node.id`), one delegation named by
    `graph.node.parent_id` and the `handoff to` TOOL span, with content; the hand-off is no tool call."""
    trace = _read(fixtures / "langfuse_openinference_handoff.json")
    assert _acting(trace) == {"Triage Agent", "Spanish Agent"}
    assert _delegations(trace)[("Triage Agent", "Spanish Agent")] == 1
    assert trace.costs["tool_calls"] == 0
    triage = next(e for e in trace.events if e.agent == "Triage Agent" and e.attributes.get("model"))
    assert "transfer_to_spanish_agent" in (triage.content or "")


def test_attributes_handed_over_unchanged(fixtures):
    doc = json.loads((fixtures / "langfuse_openinference_handoff.json").read_text())
    chunks = langfuse.split(doc)
    spans = {s.name: s for s in langfuse.to_spans(*next(iter(chunks.items())))}
    spanish = spans["Spanish Agent"]
    assert spanish.attributes["graph.node.parent_id"] == "Triage Agent"
    assert spanish.attributes["otel.scope.name"] == "openinference.instrumentation.openai_agents"
    assert spanish.attributes["langfuse.observation.type"] == "agent"
    assert spanish.service == "unknown_service"
    assert spanish.parent_id == "1000000000000001"
    generation = next(s for s in spans.values() if s.span_id == "1000000000000006")
    assert generation.attributes["llm.token_count.prompt"] == "88"  # as Langfuse stored it
    assert "gen_ai.usage.input_tokens" not in generation.attributes  # usageDetails only fill gaps


# --- the real exports -----------------------------------------------------------------------------


def test_every_shared_export_imports(shared_data):
    files = sorted((shared_data / EXPORTS).glob("*.json"))
    assert len(files) == 10
    result = read_files([SourceFile(p.name, p.read_bytes()) for p in files])
    assert [(f.name, f.format, f.error) for f in result.files] == [(p.name, "langfuse", None) for p in files]
    assert len(result.traces) == 10


def test_agno(shared_data):
    """Agno (OpenInference): one AGENT span `Agent.run` (no agent.name), two LLM calls whose reported
    usage is on the langfuse-sdk `chat gpt-4o-mini` generations inside them (163+20, 663+225; the
    outer OpenInference spans carry no token counts), one `duckduckgo_search` TOOL span."""
    trace = _export(shared_data, "agno-2025-06-11.trace.json")
    assert trace.attributes["session_id"] == "35cc6c90-b657-4819-b66c-c931c03ad569"
    assert trace.costs["tokens"] == 163 + 20 + 663 + 225
    assert trace.costs["tool_calls"] == 1
    assert [e.tool for e in trace.events if e.type == "tool_call"] == ["duckduckgo_search"]
    assert len(_llm_calls(trace)) == 2
    assert _delegations(trace) == Counter()
    # an AGENT span named by its span name: Agno's `Agent.run` describes the (unnamed) agent `Agent`
    assert _acting(trace) == {"Agent"}


def test_autogen(shared_data):
    """AutoGen through the Langfuse SDK: a root span and one `chat gpt-4o` generation (41+3), no
    OpenTelemetry attributes at all: Langfuse's input/output/usage are the only content."""
    trace = _export(shared_data, "autogen-2025-06-06.trace.json")
    assert trace.attributes["session_id"] == "session_abc"
    assert trace.attributes["user_id"] == "user_123"
    assert trace.attributes["tags"] == ["autogen", "dev"]
    assert trace.costs["tokens"] == 44
    assert trace.costs["tool_calls"] == 0
    (call,) = _llm_calls(trace)
    assert call.content == "Hello World!"
    assert call.attributes["model"] == "gpt-4o"
    assert len(trace.agents) == 1


def test_claude_agent_sdk(shared_data):
    """Claude Agent SDK via LangSmith's OTel exporter: four `claude.assistant.turn` llm spans
    (19+29, 5+53, 5+56, 5+94), two `mcp__weather__get_weather` tool spans, one agent; three EVAL
    scores (correctness 0, hallucination 1, toxicity 0)."""
    trace = _export(shared_data, "claude-agent-2025-12-22.trace.json")
    assert trace.costs["tokens"] == 48 + 58 + 61 + 99
    assert trace.costs["tool_calls"] == 2
    assert {e.tool for e in trace.events if e.type == "tool_call"} == {"mcp__weather__get_weather"}
    assert len(_llm_calls(trace)) == 4
    assert len(_acting(trace)) == 1
    assert trace.attributes["score_values"] == {"correctness": 0.0, "hallucination": 1.0, "toxicity": 0.0}
    assert trace.rewards == {}  # evaluations, not rewards (`test_a_score_is_the_reward_when_named`)
    assert {label.source for label in trace.labels} == {"langfuse:EVAL"}


def test_crewai(shared_data):
    """CrewAI (OpenInference): `Crew.kickoff` CHAIN, one `Task._execute_core` AGENT span for the crew's
    only agent (role "Software developer"), one litellm `completion` (190+164), no tools."""
    trace = _export(shared_data, "crewai-2025-07-11.trace.json")
    assert trace.costs["tokens"] == 354
    assert trace.costs["tool_calls"] == 0
    (call,) = _llm_calls(trace)
    assert call.content.startswith("I now can give a great answer")
    assert len(_acting(trace)) == 1
    assert trace.attributes["score_values"] == {"toxicity": 0.8, "hallucination": 1.0}
    assert trace.rewards == {}


def test_google_adk(shared_data):
    """Google ADK (OpenInference): `invocation [hello_app]` CHAIN, `agent_run [hello_agent]` AGENT, two
    `call_llm` (28+3, 39+6), one `say_hello` tool; session and user from the trace."""
    trace = _export(shared_data, "google-adk-2025-08-28.trace.json")
    assert trace.attributes["session_id"] == "demo-session"
    assert trace.attributes["user_id"] == "demo-user"
    assert trace.costs["tokens"] == 76
    assert [e.tool for e in trace.events if e.type == "tool_call"] == ["say_hello"]
    assert len(_llm_calls(trace)) == 2
    (agent,) = _acting(trace)
    assert "hello_agent" in agent


def test_langgraph_callback_handler(shared_data):
    """LangGraph through Langfuse's LangChain callback handler: no OTel attributes, LangGraph metadata
    instead. Nodes `agent` (steps 1, 3) and `tools` (step 2, running `Web-Search`) under the graph run
    `LangGraph`; two `ChatOpenAI` generations (60+15, 108+51); `thread_id` demo-thread-1.

    One model node and a `ToolNode` (with the `should_continue` router): a ReAct agent, one agent
    whose steps the nodes are (docs/otel-mapping.md, "Agent identity"), named by the graph run as
    OpenInference's LangChain tracer exports it (a CHAIN span `LangGraph`). Before, the graph run
    was an orchestrator delegating three times to an agent `agent`: steps read as delegations."""
    trace = _export(shared_data, "langgraph-python-2025-08-22.trace.json")
    assert [a.name for a in trace.agents] == ["LangGraph"]
    assert _delegations(trace) == Counter()
    assert [(e.agent, e.tool) for e in trace.events if e.type == "tool_call"] == [("LangGraph", "Web-Search")]
    assert trace.costs["tokens"] == 75 + 159
    assert len(_llm_calls(trace)) == 2
    assert trace.attributes["session_id"] == "demo-thread-1"
    assert trace.attributes["score_values"] == {"hallucination": 0.1, "toxicity": 0.0}
    assert trace.rewards == {}


def test_llamaindex(shared_data):
    """LlamaIndex (OpenInference): one `OpenAI.complete` LLM span (13+81) under a Langfuse root span."""
    trace = _export(shared_data, "llamaindex-2025-06-05.trace.json")
    assert trace.attributes["session_id"] == "session_abc"
    assert trace.costs == {**trace.costs, "tokens": 94, "tool_calls": 0}
    (call,) = _llm_calls(trace)
    assert call.content.startswith("Langfuse is a tool designed to help developers")


def test_microsoft_agent_framework(shared_data):
    """Agent Framework (GenAI conventions): `invoke_agent` with `gen_ai.agent.name` =
    171105b7-59dd-49c0-9677-0b95395aa46a, two chats (77+86, 216+20), one `get_weather` tool. The
    invoke_agent span's usageDetails (44/180, inferred by Langfuse) are not counted."""
    trace = _export(shared_data, "microsoft-agent-2025-12-17.trace.json")
    assert _acting(trace) == {"171105b7-59dd-49c0-9677-0b95395aa46a"}
    assert trace.costs["tokens"] == 163 + 236
    assert [e.tool for e in trace.events if e.type == "tool_call"] == ["get_weather"]
    assert trace.attributes["score_values"] == {"correctness": 1.0, "hallucination": 0.9, "toxicity": 0.0}
    assert trace.rewards == {}


def test_openai_agents(shared_data):
    """OpenAI Agents SDK (OpenInference): `Agent workflow`, agent `Hello world` (`graph.node.id`), two
    `response` LLM spans (55+15, 85+29), one `get_weather` tool, no hand-off."""
    trace = _export(shared_data, "openai-agents-2025-09-30.trace.json")
    assert _acting(trace) == {"Hello world"}
    assert trace.costs["tokens"] == 70 + 114
    assert [e.tool for e in trace.events if e.type == "tool_call"] == ["get_weather"]
    assert not any(e.to == "Hello world" and e.from_ not in (None, "Agent workflow") for e in trace.events)


def test_pydantic_ai(shared_data):
    """Pydantic AI (GenAI conventions, metadata as an object): `run_joke_generator` runs `joke_agent`
    twice and `evaluator_agent` once; chats 265+73, 417+53 (joke 1), 502+14 (joke 2), 131+69
    (evaluator); three tools under `running 3 tools`. The agent runs' aggregated usage is not
    counted twice. `run_joke_generator` is the program's own function, recorded by Langfuse's SDK
    with no `service.name`: it is named by its span (was `unknown_service`)."""
    trace = _export(shared_data, "pydantic-ai-tools-2025-12-04.trace.json")
    assert [a.name for a in trace.agents] == ["run_joke_generator", "joke_agent", "evaluator_agent"]
    delegations = _delegations(trace)
    assert delegations == Counter(
        {("run_joke_generator", "joke_agent"): 2, ("run_joke_generator", "evaluator_agent"): 1}
    )
    assert trace.costs["tokens"] == 338 + 470 + 516 + 200
    assert sorted(e.tool for e in trace.events if e.type == "tool_call") == [
        "get_dad_joke_suggestion",
        "get_one_liner_suggestion",
        "get_pun_suggestion",
    ]
    assert {e.agent for e in trace.events if e.type == "tool_call"} == {"joke_agent"}


# --- detection and bad input ----------------------------------------------------------------------


def test_sniff_accepts_the_shapes_and_nothing_else(fixtures):
    doc = json.loads((fixtures / "langfuse_openinference_handoff.json").read_text())
    assert detect(doc) is langfuse
    bare = dict(doc["trace"], observations=doc["observations"])
    assert detect(bare) is langfuse
    assert detect({"data": doc["observations"], "meta": {"page": 1}}) is langfuse
    assert detect([doc, doc]) is langfuse
    for other in sorted(fixtures.glob("*.json")):
        if not other.name.startswith("langfuse_"):
            assert not langfuse.sniff(json.loads(other.read_text())), other.name


def test_observations_page_groups_by_trace(fixtures):
    doc = json.loads((fixtures / "langfuse_openinference_handoff.json").read_text())
    page = json.dumps({"data": doc["observations"], "meta": {"page": 1, "totalItems": 6}}).encode()
    result = read_files([SourceFile("observations.json", page)])
    (trace,) = result.traces
    assert trace.attributes["spans"] == 6
    assert trace.labels == []


def test_bad_time_fails_the_whole_file_naming_the_observation(fixtures):
    doc = json.loads((fixtures / "langfuse_openinference_handoff.json").read_text())
    doc["observations"][2]["startTime"] = "yesterday"
    good = (fixtures / "langfuse_openinference_handoff.json").read_bytes()
    result = read_files([SourceFile("bad.json", json.dumps(doc).encode()), SourceFile("other.json", good)])
    bad = result.files[0]
    assert "observations[2]" in bad.error and "1000000000000003" in bad.error and "startTime" in bad.error
    assert result.files[1].error is None
    assert len(result.traces) == 1  # the good file's trace only


def test_non_hex_ids_are_digested(fixtures):
    doc = json.loads((fixtures / "langfuse_openinference_handoff.json").read_text())
    ids = {o["id"]: f"obs-{i}-uuid-like" for i, o in enumerate(doc["observations"])}
    for o in doc["observations"]:
        o["id"] = ids[o["id"]]
        o["parentObservationId"] = ids.get(o["parentObservationId"])
    doc["trace"].pop("observations")
    result = read_files([SourceFile("uuids.json", json.dumps(doc).encode())])
    (trace,) = result.traces
    assert trace.attributes["spans"] == 6
    assert trace.costs["tokens"] == 176


@pytest.mark.parametrize("metadata", ["not json at all", None, ["a", "list"]])
def test_odd_metadata_is_kept_not_fatal(fixtures, metadata):
    doc = json.loads((fixtures / "langfuse_openinference_handoff.json").read_text())
    for o in doc["observations"] + doc["trace"]["observations"]:
        o["metadata"] = metadata
    result = read_files([SourceFile("odd.json", json.dumps(doc).encode())])
    assert result.files[0].error is None
    assert result.traces[0].attributes["spans"] == 6


def test_claude_agent_sdk_content_blocks_read_as_text(shared_data):
    """The `claude.assistant.turn` outputs are Anthropic messages of content blocks: a `tool_use`
    block reads as the call `name(input)`, a `text` block as its text (not the block's JSON)."""
    trace = _export(shared_data, "claude-agent-2025-12-22.trace.json")
    assert [e.content.split("\n")[0] for e in _llm_calls(trace)] == [
        "I'll check the weather in both Berlin and New York for you.",
        'mcp__weather__get_weather({"city": "Berlin"})',
        'mcp__weather__get_weather({"city": "New York"})',
        "Great! Here's the current weather for both cities:",
    ]
    assert not any(e.attributes.get("content_from") for e in _llm_calls(trace))


def test_agno_python_reprs_are_no_content(shared_data):
    """Agno's `Agent.run` input is its bound arguments with its own objects' reprs (`RunResponse(…)`,
    `RunMessages(…)`) beside `session_id` and `message`: the question is the message. The first
    `chat gpt-4o-mini` generation's output is the text `None` (a tool-calling turn): no content, so
    the turn is its enclosing `OpenAIChat.invoke` generation's output, the tool call."""
    trace = _export(shared_data, "agno-2025-06-11.trace.json")
    assert trace.attributes["input"] == "What is currently trending on Twitter?"
    first, last = _llm_calls(trace)
    assert first.content == 'duckduckgo_search({"query":"currently trending on Twitter"})'
    assert "content_from" not in first.attributes
    assert first.attributes["input"].endswith("user: What is currently trending on Twitter?")
    assert last.content.startswith("To find out what's currently trending on Twitter")
