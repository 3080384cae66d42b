"""The rules that held-out frameworks and versions needed (docs/otel-mapping.md "Agent identity"), on
spans shaped as each writes them, without their venvs (the framework stage runs the real programs:
tests/frameworks/test_agno.py, test_strands.py, test_agent_framework.py, test_langgraph_old.py)."""

import base64
import json
from functools import partial

from swarmscope.importers import otlp
from swarmscope.importers.otel import build_trace
from swarmscope.importers.otel.langchain import message_str, python_literal
from swarmscope.importers.otel.langgraph import command_goto
from swarmscope.importers.otel.semconv import render
from swarmscope.model import validate_trace
from tests.swarmscope.importers.spans import make_span

TRACE = "0" * 31 + "7"
span = partial(make_span, TRACE)


def build(*spans):
    trace = build_trace(spans, source_format="test", trace_id=TRACE)
    validate_trace(trace)
    return trace


def _oi_llm(sid, parent, start, end, text=None, call=None, tokens=(10, 2)):
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.token_count.prompt": tokens[0],
        "llm.token_count.completion": tokens[1],
        "llm.output_messages.0.message.role": "assistant",
    }
    if text:
        attributes["llm.output_messages.0.message.content"] = text
    if call:
        attributes["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] = call[0]
        attributes["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"] = json.dumps(call[1])
    return span(
        sid, parent, "OpenAIChat.invoke", start, end, **{k.replace(".", "__"): v for k, v in attributes.items()}
    )


def test_agno_member_run_beside_the_delegation_tool_is_the_tools_delegation():
    """Agno: the member's `<name>.run` is a sibling of `delegate_task_to_member` under the team's run."""
    ask = {"member_id": "researcher", "task": "Find the height."}
    trace = build(
        span("1", None, "Editorial_Team.run", 0, 10, openinference__span__kind="AGENT", agent__name="Editorial Team"),
        _oi_llm("2", "1", 0, 1, call=("delegate_task_to_member", ask)),
        span(
            "3",
            "1",
            "delegate_task_to_member",
            1,
            5,
            openinference__span__kind="TOOL",
            tool__name="delegate_task_to_member",
            input__value=json.dumps(ask),
            output__value="330 m",
        ),
        span(
            "4",
            "1",
            "Researcher.run",
            1.1,
            4.9,
            openinference__span__kind="AGENT",
            agent__name="Researcher",
            agno__agent__id="researcher",
            input__value="Find the height.",
            output__value="330 m",
        ),
        _oi_llm("5", "4", 1.2, 4.8, text="330 m"),
        _oi_llm("6", "1", 6, 7, text="It is 330 m."),
    )
    assert [(e.type, e.agent, e.to) for e in trace.events if e.type in ("tool_call", "delegate")] == [
        ("delegate", "Editorial Team", "Researcher")
    ]
    assert [a.parent for a in trace.agents if a.name == "Researcher"] == ["Editorial Team"]


def test_a_run_beside_two_tools_goes_to_the_one_naming_it_else_stays():
    tools = [
        span("3", "1", "lookup", 1, 5, openinference__span__kind="TOOL", tool__name="lookup", input__value="{}"),
        span(
            "4",
            "1",
            "delegate_task_to_member",
            1,
            5,
            openinference__span__kind="TOOL",
            tool__name="delegate_task_to_member",
            input__value=json.dumps({"member_id": "writer"}),
        ),
    ]
    run = span("5", "1", "Writer.run", 2, 3, openinference__span__kind="AGENT", agent__name="Writer")
    lead = span("1", None, "Team.run", 0, 10, openinference__span__kind="AGENT", agent__name="Team")
    trace = build(lead, *tools, run, _oi_llm("6", "5", 2.1, 2.9, text="done"))
    assert [e.tool for e in trace.events if e.type == "tool_call"] == ["lookup"]  # the other is the delegation
    unnamed = span("4", "1", "other", 1, 5, openinference__span__kind="TOOL", tool__name="other", input__value="{}")
    trace = build(lead, tools[0], unnamed, run, _oi_llm("6", "5", 2.1, 2.9, text="done"))
    assert [e.tool for e in trace.events if e.type == "tool_call"] == ["lookup", "other"]  # ambiguous: left


def test_strands_converse_blocks_and_handoff_to_agent_arguments_in_a_tool_message_event():
    def event(name, **attributes):
        from swarmscope.importers.otel import SpanEvent

        return SpanEvent(name=name, time_ns=0, attributes=attributes)

    chat = span(
        "2",
        "1",
        "chat",
        0,
        1,
        gen_ai__operation__name="chat",
        gen_ai__usage__input_tokens=10,
        gen_ai__usage__output_tokens=2,
    )
    chat.events.append(
        event(
            "gen_ai.choice",
            message=json.dumps(
                [
                    {
                        "toolUse": {
                            "toolUseId": "c1",
                            "name": "handoff_to_agent",
                            "input": {"agent_name": "writer", "message": "go"},
                        }
                    }
                ]
            ),
        )
    )
    tool = span(
        "3",
        "1",
        "execute_tool handoff_to_agent",
        1,
        2,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="handoff_to_agent",
    )
    tool.events.append(
        event(
            "gen_ai.tool.message", role="tool", content=json.dumps({"agent_name": "writer", "message": "go"}), id="c1"
        )
    )
    tool.events.append(event("gen_ai.choice", message=json.dumps([{"text": "Handing off to writer: go"}]), id="c1"))
    writer_chat = span(
        "5",
        "4",
        "chat",
        3,
        4,
        gen_ai__operation__name="chat",
        gen_ai__usage__input_tokens=5,
        gen_ai__usage__output_tokens=1,
    )
    writer_chat.events.append(event("gen_ai.choice", message=json.dumps([{"text": "Written."}])))
    trace = build(
        span("0", None, "invoke_swarm", 0, 5, gen_ai__operation__name="invoke_swarm"),
        span(
            "1",
            "0",
            "invoke_agent researcher",
            0,
            2.5,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="researcher",
        ),
        chat,
        tool,
        span(
            "4",
            "0",
            "invoke_agent writer",
            3,
            4.5,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="writer",
        ),
        writer_chat,
    )
    assert [(e.agent, e.to, e.tool) for e in trace.events if e.type == "delegate"] == [
        ("researcher", "writer", "handoff_to_agent")
    ]
    said = [(e.agent, e.content) for e in trace.events if e.type == "message"]
    assert said == [
        ("researcher", 'handoff_to_agent({"agent_name": "writer", "message": "go"})'),
        ("writer", "Written."),
    ]


def test_converse_blocks_render_as_text_and_calls():
    assert render(json.dumps([{"text": "a"}, {"text": "b"}])) == "a\nb"
    assert render(json.dumps([{"toolUse": {"toolUseId": "1", "name": "f", "input": {"x": 1}}}])) == 'f({"x": 1})'
    blocks = [{"toolResult": {"toolUseId": "1", "status": "success", "content": [{"text": "42"}]}}]
    assert render(json.dumps(blocks)) == "42"
    assert render(json.dumps([{"role": "user", "content": json.dumps([{"text": "hi"}])}])) == "hi"


def test_agent_framework_handoff_call_with_no_tool_span_is_the_handoff():
    """Microsoft Agent Framework's handoff workflow: `handoff_to_billing` is in the model's output only."""
    out = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "handoff_to_billing", "arguments": "{}"}],
        }
    ]
    trace = build(
        span("0", None, "invoke_workflow desk", 0, 10, gen_ai__operation__name="invoke_workflow"),
        span(
            "1", "0", "invoke_agent triage", 0, 2, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="triage"
        ),
        span(
            "2",
            "1",
            "chat",
            0,
            1,
            gen_ai__operation__name="chat",
            gen_ai__output__messages=json.dumps(out),
            gen_ai__usage__input_tokens=3,
            gen_ai__usage__output_tokens=1,
        ),
        span(
            "3",
            "0",
            "invoke_agent billing",
            3,
            5,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="billing",
        ),
        span(
            "4",
            "3",
            "chat",
            3,
            4,
            gen_ai__operation__name="chat",
            gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]),
            gen_ai__usage__input_tokens=3,
            gen_ai__usage__output_tokens=1,
        ),
    )
    assert [(e.agent, e.to, e.tool) for e in trace.events if e.type == "delegate"] == [
        ("triage", "billing", "handoff_to_billing")
    ]
    # with the tool span recorded (its call id), the call is that span's, not a second hand-off
    recorded = span(
        "5",
        "1",
        "execute_tool handoff_to_billing",
        1,
        1.5,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="handoff_to_billing",
        gen_ai__tool__call__id="c1",
    )
    spans = [
        span("0", None, "invoke_workflow desk", 0, 10, gen_ai__operation__name="invoke_workflow"),
        span(
            "1", "0", "invoke_agent triage", 0, 2, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="triage"
        ),
        span(
            "2",
            "1",
            "chat",
            0,
            1,
            gen_ai__operation__name="chat",
            gen_ai__output__messages=json.dumps(out),
            gen_ai__usage__input_tokens=3,
            gen_ai__usage__output_tokens=1,
        ),
        recorded,
        span(
            "3",
            "0",
            "invoke_agent billing",
            3,
            5,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="billing",
        ),
    ]
    assert len([e for e in build(*spans).events if e.type == "delegate"]) == 1


def test_older_openinference_langchain_reprs():
    assert render("{'query': 'Eiffel Tower height'}") == '{"query": "Eiffel Tower height"}'
    assert python_literal("{'a': __import__('os')}") is None  # literals only
    assert message_str("content='330 m' name='search' tool_call_id='call_1'") == "330 m"
    assert render(json.dumps({"output": "content='It\\'s 330 m' name='search'"})) == "It's 330 m"
    assert render(json.dumps({"input": "{'query': 'x'}"})) == '{"query": "x"}'  # LangSmith 0.3's wrapper
    for output, goto in [
        ("Command(goto='writer')", ("writer",)),
        ("Command(update={'messages': [AIMessage(content='a, b')]}, goto='supervisor')", ("supervisor",)),
        ("Command(goto=['a', 'b'])", ("a", "b")),
        ("Command(goto=Send(node='x', arg={'k': 1}))", ("x",)),
        ("Command(goto='__end__')", ()),
    ]:
        node = span("1", None, "supervisor", 0, 1, output__value=json.dumps({"output": output}))
        assert command_goto(node) == goto, output


def test_otlp_bytes_holding_json_are_that_text():
    """LangSmith 0.3 sets `gen_ai.prompt` / `gen_ai.completion` to orjson bytes (OTLP `bytesValue`)."""
    document = b'{"generations": [[{"text": "hi"}]]}'
    assert otlp.bytes_text(document) == document.decode()
    assert otlp.bytes_text(b"\x00\x01") == base64.b64encode(b"\x00\x01").decode()
    assert otlp.any_value({"bytesValue": base64.b64encode(document).decode()}) == document.decode()
    assert (
        otlp.any_value({"bytesValue": base64.b64encode(b"not json").decode()}) == base64.b64encode(b"not json").decode()
    )


def test_agno_01_names_raw_responses_and_lazy_transfer_tool():
    """openinference-instrumentation-agno 0.1 (agno 1.x): names by span name and `agno.team`, the raw
    Chat Completions response as an LLM's output (no token counts), the transfer tool returning a
    generator (the member runs after the tool span), `Agent._run`'s bound objects as the run's input."""

    def response(text=None, call=None, usage=(10, 2)):
        message = {"role": "assistant", "content": text, "tool_calls": None}
        if call:
            message["tool_calls"] = [
                {"id": "c1", "type": "function", "function": {"name": call[0], "arguments": json.dumps(call[1])}}
            ]
        body = {"id": "chatcmpl-1", "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}
        return json.dumps(
            body | {"usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}}
        )

    def chat(sid, parent, start, end, output):
        return span(
            sid,
            parent,
            "OpenAIChat.invoke",
            start,
            end,
            openinference__span__kind="LLM",
            llm__input_messages__0__message__role="user",
            llm__input_messages__0__message__content="q",
            output__value=output,
        )

    ask = {"member_id": "researcher", "task_description": "Find it.", "expected_output": "One sentence."}
    trace = build(
        span(
            "1",
            None,
            "Editorial_Team.run",
            0,
            10,
            openinference__span__kind="AGENT",
            agno__team="Editorial Team",
            input__value=json.dumps({"run_response": "TeamRunResponse(content=None, team_name='Editorial Team')"}),
        ),
        chat("2", "1", 0, 1, response(call=("transfer_task_to_member", ask), usage=(100, 10))),
        span(
            "3",
            "1",
            "transfer_task_to_member",
            1,
            1.1,
            openinference__span__kind="TOOL",
            tool__name="transfer_task_to_member",
            input__value=json.dumps(ask),
            output__value="<generator object Team.get_transfer_task_function.<locals>.transfer_task_to_member"
            " at 0x7f26dabca700>",
        ),
        span(
            "4",
            "1",
            "Researcher.run",
            1.2,
            3,
            openinference__span__kind="AGENT",
            agno__agent="Researcher",
            input__value=json.dumps(
                {"run_response": "RunResponse(content=None, agent_name='Researcher')", "session_id": "s"}
            ),
        ),
        chat("5", "4", 1.3, 2.9, response("330 m", usage=(40, 4))),
        chat("6", "1", 4, 5, response("It is 330 m.", usage=(150, 15))),
    )
    assert sorted(a.name for a in trace.agents) == ["Editorial Team", "Researcher"]
    assert [
        (e.type, e.agent, e.content) for e in trace.events if e.type in ("delegate", "tool_call", "tool_result")
    ] == [("delegate", "Editorial Team", json.dumps(ask))]
    said = [(e.agent, e.content, e.tokens) for e in trace.events if e.type in ("message", "return")]
    assert said == [
        ("Editorial Team", f"transfer_task_to_member({json.dumps(ask)})", 110),
        ("Researcher", "330 m", 44),
        ("Editorial Team", "It is 330 m.", 165),
    ]
    assert not any(e.attributes.get("tokens_estimated") for e in trace.events if e.type in ("message", "return"))
