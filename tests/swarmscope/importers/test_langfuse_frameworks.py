"""Langfuse exports of BeeAI, Koog, LangGraph-JS `createAgent` and pydantic-ai (issue 28): agents are
what the frameworks' conventions say they are (docs/otel-mapping.md, "Agent identity").

The fixtures are hand-written after the shapes of the exports in Langfuse's tests
(tests/fixtures/README.txt); each test states what the program did, read from the fixture.
"""

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

from swarmscope.importers import SourceFile, langfuse, read_files
from swarmscope.importers.otel import Span, build_trace, render
from swarmscope.model import Trace

from .test_otel_batches import check_batches


def _read(path: Path, doc: dict | None = None) -> Trace:
    data = json.dumps(doc).encode() if doc is not None else path.read_bytes()
    result = read_files([SourceFile(path.name, data)])
    assert [f.error for f in result.files] == [None], result.files
    (trace,) = result.traces
    return trace


def _spans(path: Path) -> list[Span]:
    ((trace_id, records),) = langfuse.split(json.loads(path.read_text())).items()
    return langfuse.to_spans(trace_id, records)


def _calls(trace: Trace) -> list[tuple[str, str, str | None, str | None]]:
    """(agent, tool, arguments, result) of each tool call, in order."""
    results = {e.attributes["span_id"]: e for e in trace.events if e.type == "tool_result"}
    return [
        (e.agent, e.tool, e.content, getattr(results.get(e.attributes["span_id"]), "content", None))
        for e in trace.events
        if e.type == "tool_call"
    ]


def _llm_calls(trace: Trace) -> list:
    return [e for e in trace.events if e.type in ("message", "return") and e.attributes.get("model")]


def _delegations(trace: Trace) -> Counter:
    return Counter((e.from_, e.to) for e in trace.events if e.type in ("delegate", "spawn"))


# --- BeeAI (openinference-instrumentation-beeai 0.1.x: a span per emitter event) --------------------

BEEAI = "langfuse_beeai_react.json"
WIKI_ARGS = '{"query": "Tallest buildings in Lisbon", "full_text": false}'
WIKI_OUT = '[{"title": "List of tallest buildings in Lisbon", "description": "Torre S\\u00e3o Rafael, 110 m"}]'
METEO_OUT = '{"current": {"rain": 0.0, "temperature_2m": 21.4}}'
ANSWER = "The tallest building in Lisbon is the Torre São Rafael; it is not raining there now (21 °C)."


def test_beeai_react_agent_is_one_agent_with_its_two_tool_calls(fixtures):
    """One ReActAgent ran three iterations: Wikipedia (its tool events start/finish/success), then
    OpenMeteoTool (recorded only by the agent's `update` events), then the answer. Three model
    calls (the last streamed in three chunks, 512+40 tokens reported); no other agent."""
    trace = _read(fixtures / BEEAI)
    assert [a.name for a in trace.agents] == ["ReActAgent"]
    assert _delegations(trace) == Counter()
    assert _calls(trace) == [
        ("ReActAgent", "Wikipedia", WIKI_ARGS, WIKI_OUT),
        ("ReActAgent", "OpenMeteoTool", '{"location_name": "Lisbon"}', METEO_OUT),
    ]
    assert trace.costs["tool_calls"] == 2
    assert Counter(e.type for e in trace.edges)["tool_dependency"] == 2
    calls = _llm_calls(trace)
    assert [e.attributes["model"] for e in calls] == ["gpt-4o-mini"] * 3
    assert calls[-1].content == ANSWER  # the streamed chunks joined, once
    assert calls[0].attributes["content_from"] == "input"  # the instrumentation kept no output
    assert trace.costs["tokens"] == 512 + 40
    assert [e.type for e in trace.events] == [
        "message",
        "tool_call",
        "tool_result",
        "message",
        "tool_call",
        "tool_result",
        "message",
    ]


def test_beeai_tool_error_event_is_the_result_of_the_one_call(fixtures):
    doc = json.loads((fixtures / BEEAI).read_text())
    (success,) = [o for o in doc["observations"] if o["name"] == "tool.search.wikipedia.success-1"]
    metadata = json.loads(success["metadata"])
    metadata["attributes"] = {
        "target": "tool.search.wikipedia.error",
        "name": "error",
        "exception.message": "Wikipedia timed out",
        "openinference.span.kind": "TOOL",
    }
    success.update(name="tool.search.wikipedia.error-1", metadata=json.dumps(metadata))
    trace = _read(fixtures / BEEAI, doc)
    (wiki,) = [e for e in trace.events if e.tool == "Wikipedia" and e.type == "tool_result"]
    assert wiki.attributes["status"] == "error" and wiki.attributes["error"] == "Wikipedia timed out"
    assert [e.tool for e in trace.events if e.type == "tool_call"] == ["Wikipedia", "OpenMeteoTool"]


def test_beeai_event_spans_map_the_same_in_any_batches(fixtures):
    check_batches(BEEAI, _spans(fixtures / BEEAI))


def test_beeai_event_child_spans_of_later_versions_are_no_agents():
    """openinference-instrumentation-beeai >= 0.1.7: a span per run (`agent.name`), events it keeps
    apart as child spans named by the event, with the run's kind and the path in `metadata.path` (an
    `error` child holds the error's explanation as its output)."""
    trace_id = "5eb0000000000000000000000000a002"
    agent = Span(
        trace_id,
        "a000000000000001",
        None,
        "planner",
        0,
        3_000_000_000,
        {"openinference.span.kind": "AGENT", "agent.name": "planner", "output.value": "done"},
    )
    error = Span(
        trace_id,
        "a000000000000002",
        agent.span_id,
        "error",
        1_000_000_000,
        1_000_000_000,
        {
            "openinference.span.kind": "AGENT",
            "metadata.path": "agent.react.error",
            "input.value": "{}",
            "output.value": "The model's reply could not be parsed.",
        },
    )
    chat = Span(
        trace_id,
        "a000000000000003",
        agent.span_id,
        "OpenAIChatModel",
        1_500_000_000,
        2_500_000_000,
        {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini", "output.value": "done"},
    )
    trace = build_trace([agent, error, chat], source_format="otlp", trace_id=trace_id)
    assert [a.name for a in trace.agents] == ["planner"]
    assert [(e.type, e.agent) for e in trace.events] == [("message", "planner")]


# --- Koog (its Langfuse integration: strategy-graph nodes carry `langgraph_node`) -------------------

KOOG = "langfuse_koog_strategy.json"
KOOG_AGENT = "0c7e4b52-2a61-4f0e-9d38-5b7f1a2c9e11"


def test_koog_strategy_nodes_are_steps_of_the_one_agent(fixtures):
    """One Koog agent (no name: `gen_ai.agent.id` only) ran its strategy graph `__start__` ->
    nodeCallLLM -> nodeExecuteTool -> nodeSendToolResult -> `__finish__`: two model calls (60+18,
    95+11), one CurrencyTool call."""
    trace = _read(fixtures / KOOG)
    assert [a.name for a in trace.agents] == [KOOG_AGENT]
    assert _delegations(trace) == Counter()
    assert _calls(trace) == [(KOOG_AGENT, "CurrencyTool", '{"amount": 10, "to": "EUR"}', "10 USD = 9.20 EUR")]
    assert [e.content for e in _llm_calls(trace)] == [
        'CurrencyTool({"amount": 10, "to": "EUR"})',
        "10 USD is about 9.20 EUR.",
    ]
    assert trace.costs["tokens"] == 78 + 106


def test_koog_spans_over_otlp_name_the_same_agent(fixtures):
    """The same spans as Koog sends them over OTLP (the node attributes, no Langfuse metadata)."""
    spans = [
        replace(s, attributes={k: v for k, v in s.attributes.items() if not k.startswith("langfuse.")})
        for s in _spans(fixtures / KOOG)
    ]
    trace = build_trace(spans, source_format="otlp", trace_id=spans[0].trace_id)
    assert [a.name for a in trace.agents] == [KOOG_AGENT]
    assert [c[1] for c in _calls(trace)] == ["CurrencyTool"]
    check_batches(KOOG, _spans(fixtures / KOOG))


def test_koog_nodes_stay_steps_when_every_span_carries_the_node(fixtures):
    """The node metadata on the model calls too (as LangGraph puts it on every run of a task): the
    two nodes that call the model would make a multi-agent graph, but they run inside the agent's
    `invoke_agent` span: its steps."""
    spans = _spans(fixtures / KOOG)
    by_id = {s.span_id: s for s in spans}
    node = "langfuse.observation.metadata.langgraph_node"
    spans = [
        replace(s, attributes={**s.attributes, node: by_id[s.parent_id].attributes[node]})
        if s.parent_id in by_id and node in by_id[s.parent_id].attributes
        else s
        for s in spans
    ]
    trace = build_trace(spans, source_format="otlp", trace_id=spans[0].trace_id)
    assert [a.name for a in trace.agents] == [KOOG_AGENT]
    assert _delegations(trace) == Counter()


# --- LangGraph-JS `createAgent` (Langfuse's LangChain callback handler) ---------------------------

LANGGRAPH_JS = "langfuse_langgraph_js_agent.json"


def test_langgraph_js_create_agent_is_one_agent_with_its_tool_call(fixtures):
    """`createAgent` without a name: nodes `model_request` (steps 1, 3) and `tools` (step 2, running
    get_time; its `ChannelWrite` is LangGraph's bookkeeping) under the graph run `LangGraph`. Every
    run's checkpoint namespace starts with the same leaked task id. Two model calls (70+15, 110+12)."""
    trace = _read(fixtures / LANGGRAPH_JS)
    assert [a.name for a in trace.agents] == ["LangGraph"]  # the graph's name (LangGraph's default)
    assert _delegations(trace) == Counter()
    assert _calls(trace) == [("LangGraph", "get_time", '{"zone": "Asia/Tokyo"}', "It is 21:04 in Tokyo.")]
    assert [e.content for e in _llm_calls(trace)] == [
        'get_time({"zone": "Asia/Tokyo"})',
        "It is 21:04 in Tokyo right now.",
    ]
    assert trace.costs["tokens"] == 85 + 122


# --- pydantic-ai without `service.name` ---------------------------------------------------------------

PYDANTIC_AI = "langfuse_pydantic_ai_unnamed_service.json"


def test_pydantic_ai_agent_is_named_by_its_run_span_not_the_service(fixtures):
    """pydantic-ai 0.2 (instrumentation version 1): the `agent run` span names `geo_agent` in
    `agent_name`; the service is `unknown_service`. One model call (21+8), answered as a
    `gen_ai.choice` event body."""
    trace = _read(fixtures / PYDANTIC_AI)
    assert [a.name for a in trace.agents] == ["geo_agent"]
    (call,) = _llm_calls(trace)
    assert call.agent == "geo_agent"
    assert call.content == "The capital of Australia is Canberra."
    assert trace.costs["tokens"] == 21 + 8  # the agent run's aggregated usage is not counted again


def test_the_programs_own_langfuse_span_names_the_agent_before_the_service(fixtures):
    """Without `agent_name` nothing in the pydantic-ai spans names the agent: the span the program
    recorded through Langfuse's SDK (`pydantic-ai-geo-trace`, its `@observe`d function) does, as an
    OpenInference CHAIN would; `unknown_service` names nothing."""
    doc = json.loads((fixtures / PYDANTIC_AI).read_text())
    for observation in doc["observations"]:
        metadata = json.loads(observation["metadata"])
        metadata.get("attributes", {}).pop("agent_name", None)
        observation["metadata"] = json.dumps(metadata)
    trace = _read(fixtures / PYDANTIC_AI, doc)
    assert [a.name for a in trace.agents] == ["pydantic-ai-geo-trace"]


def test_genai_choice_event_body_renders_as_its_message():
    choice = {"index": 0, "finish_reason": "stop", "message": {"content": "Forty-two."}}
    assert render(json.dumps(choice)) == "Forty-two."
    assert render(json.dumps([{"role": "user", "content": "Answer?"}, {**choice, "event.name": "gen_ai.choice"}])) == (
        "user: Answer?\nassistant: Forty-two."
    )
