"""OpenInference spans (Phoenix / Arize instrumentations) through the shared span mapping: agents
from `agent.name` / `graph.node.*`, hand-offs, flattened messages, token counts."""

import json
from functools import partial
from pathlib import Path

from swarmscope.importers import SourceFile, read_files
from swarmscope.importers.otel import build_trace
from swarmscope.model import validate_trace
from tests.swarmscope.importers.spans import make_span

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TRACE = "0" * 31 + "7"


def load(name):
    result = read_files([SourceFile(name, (FIXTURES / name).read_bytes())])
    assert not result.failed, result.files
    (trace,) = result.traces
    return trace


span = partial(make_span, TRACE)


def build(*spans):
    trace = build_trace(spans, source_format="test", trace_id=TRACE)
    validate_trace(trace)
    return trace


def llm(sid, parent, start, end, text, **more):
    return span(
        sid,
        parent,
        "response",
        start,
        end,
        openinference__span__kind="LLM",
        **{"llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": text},
        **more,
    )


def test_openai_agents_handoff_is_two_agents_and_one_delegation():
    trace = load("otlp_openinference_handoff.json")
    assert [a.name for a in trace.agents] == ["Triage Agent", "Spanish Agent"]  # not "unknown_service"
    assert trace.agent("Spanish Agent").parent == "Triage Agent"
    assert trace.agent("Triage Agent").attributes["tools"] == ["transfer_to_spanish_agent"]
    (delegate,) = [e for e in trace.events if e.type == "delegate"]
    assert (delegate.agent, delegate.to, delegate.content) == ("Triage Agent", "Spanish Agent", None)
    by_id = {e.id: e for e in trace.events}
    delegations = [edge for edge in trace.edges if edge.type == "message"]
    assert [(by_id[edge.src].type, by_id[edge.dst].agent) for edge in delegations] == [("delegate", "Spanish Agent")]
    assert not [edge for edge in trace.edges if edge.type == "return"]  # a hand-off does not come back

    triage, spanish = [e for e in trace.events if e.type == "message"]
    # content from the flattened llm.output_messages, not the raw response JSON in output.value
    assert triage.content == "transfer_to_spanish_agent({})"
    assert spanish.content.startswith("¡Claro! Su factura de marzo")
    assert spanish.attributes["input"].startswith("system: Eres un agente de soporte.")
    assert "assistant: transfer_to_spanish_agent({})" in spanish.attributes["input"]
    assert (triage.tokens, triage.attributes["cache_read_input_tokens"]) == (133, 64)
    assert trace.costs["tokens"] == 133 + 232 and trace.costs["cache_read_tokens"] == 64
    assert trace.attributes["session_id"] == "chat-7f3a"


def test_transfer_tool_and_graph_parent_without_a_handoff_span():
    """The hand-off as a `transfer_to_*` TOOL span (other instrumentations), and with only the
    second agent's `graph.node.parent_id` saying who handed over."""
    tool = build(
        span("1", name="Agent workflow", end=3, openinference__span__kind="AGENT"),
        span("2", "1", "Triage", 0.1, 1, openinference__span__kind="AGENT", agent__name="Triage"),
        llm("3", "2", 0.2, 0.5, "routing"),
        span(
            "4",
            "2",
            "transfer_to_billing",
            0.6,
            0.7,
            openinference__span__kind="TOOL",
            tool__name="transfer_to_billing",
        ),
        span("5", "1", "Billing", 1, 3, openinference__span__kind="AGENT", agent__name="Billing"),
        llm("6", "5", 1.1, 2, "Your invoice is paid."),
    )
    assert [a.name for a in tool.agents] == ["Triage", "Billing"]
    (delegate,) = [e for e in tool.events if e.type == "delegate"]
    assert (delegate.agent, delegate.to, delegate.tool) == ("Triage", "Billing", "transfer_to_billing")

    graph = build(
        span("1", name="Agent workflow", end=3, openinference__span__kind="AGENT"),
        span("2", "1", "Triage", 0.1, 1, openinference__span__kind="AGENT", graph__node__id="triage_0"),
        llm("3", "2", 0.2, 0.5, "routing"),
        span(
            "5",
            "1",
            "Billing",
            1,
            3,
            openinference__span__kind="AGENT",
            graph__node__id="Billing",
            graph__node__parent_id="triage_0",
        ),
        llm("6", "5", 1.1, 2, "Your invoice is paid."),
    )
    assert [a.name for a in graph.agents] == ["triage_0", "Billing"]
    (delegate,) = [e for e in graph.events if e.type == "delegate"]
    assert (delegate.agent, delegate.to) == ("triage_0", "Billing")


def test_agent_and_chain_spans_named_by_span_name():
    """Where nothing else names them: an AGENT span by its name (ADK's `agent_run [x]`: x), a top
    CHAIN span by its name instead of the service; a wrapper that does not act is no agent."""
    trace = build(
        span("1", name="invocation [hello_app]", end=3, openinference__span__kind="CHAIN"),
        span("2", "1", "agent_run [hello_agent]", 0.1, 2.9, openinference__span__kind="AGENT"),
        llm("3", "2", 0.2, 1, "Hello!"),
    )
    assert [a.name for a in trace.agents] == ["hello_agent"]
    assert trace.agents[0].attributes["named_by"] == "span_name"

    chain = build(
        span("1", name="RunnableSequence", end=2, openinference__span__kind="CHAIN", output__value="done"),
        span("2", "1", "ChatPromptTemplate", 0.1, 0.2, openinference__span__kind="CHAIN", output__value="prompt"),
        llm("3", "1", 0.3, 1, "done"),
    )
    assert [a.name for a in chain.agents] == ["RunnableSequence"]  # nested CHAINs are not agents


def test_flattened_message_shapes():
    """`contents.M.message_content.text`, tool calls without arguments (Google ADK), the nested
    (unflattened) form and completion-API `llm.prompts`."""
    trace = build(
        span("1", name="agent_run [a]", end=3, openinference__span__kind="AGENT"),
        span(
            "2",
            "1",
            "call_llm",
            0.1,
            1,
            openinference__span__kind="LLM",
            **{
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.contents.0.message_content.type": "text",
                "llm.input_messages.0.message.contents.0.message_content.text": "hi",
                "llm.input_messages.0.message.contents.1.message_content.type": "image",
                "llm.output_messages.0.message.role": "model",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "say_hello",
                "llm.token_count.prompt": "28",  # Langfuse keeps attribute values as strings
                "llm.token_count.completion": "3",
            },
        ),
        span(
            "3",
            "1",
            "call_llm",
            1.1,
            2,
            openinference__span__kind="LLM",
            llm__input_messages=json.dumps([{"message": {"role": "user", "content": "again"}}]),
            llm__output_messages=[{"message.role": "assistant", "message.content": "Hello again"}],
        ),
        span("4", "1", "complete", 2.1, 2.5, openinference__span__kind="LLM", llm__prompts=["Say hi"]),
    )
    first, second, third = [e for e in trace.events if e.type == "message"]
    assert (first.content, first.attributes["input"], first.tokens) == ("say_hello()", "hi\n[image]", 31)
    assert (second.content, second.attributes["input"]) == ("Hello again", "again")
    assert (third.content, third.attributes["content_from"]) == ("Say hi", "input")
