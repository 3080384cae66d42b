"""The span -> orchestration trace mapping shared by the OpenTelemetry importers
(swarmscope.importers.otel), on spans written out by hand."""

import base64
import json

import pytest

from swarmscope.importers.chatlog import TOKENS_ESTIMATED
from swarmscope.importers.otel import (
    Span,
    SpanEvent,
    build_trace,
    bytes_id,
    hex_id,
    render,
)
from swarmscope.importers.otlp import json_id
from swarmscope.model import validate_trace

TRACE = "0" * 31 + "1"
SECOND = 1_000_000_000


def span(sid, parent=None, name="op", start=0.0, end=1.0, service="svc", **attributes):
    """A span from times in seconds and attributes given as keywords (`__` for dots)."""
    return Span(
        trace_id=TRACE,
        span_id=sid.rjust(16, "0"),
        parent_id=parent.rjust(16, "0") if parent else None,
        name=name,
        start_ns=int(start * SECOND),
        end_ns=int(end * SECOND),
        service=service,
        attributes={key.replace("__", "."): value for key, value in attributes.items()},
    )


def build(*spans):
    trace = build_trace(spans, source_format="test", trace_id=TRACE)
    validate_trace(trace)
    return trace


def test_hex_id():
    assert hex_id("0xABCDEF0123456789", 8, prefix=True) == "abcdef0123456789"  # the OTel SDK's JSON
    assert hex_id("b4", 8) == "00000000000000b4"  # Jaeger drops leading zeros
    assert hex_id("", 8) is None and hex_id(None, 8) is None
    assert hex_id("0000000000000000", 8) is None  # the all-zero id means "no parent"
    for text in ("not an id!", "0xABCDEF0123456789", "AAECAwQFBgc=", "1" * 17):
        with pytest.raises(ValueError):
            hex_id(text, 8)  # a "0x" only where the format writes one; never base64; never too long


def test_bytes_id():
    assert bytes_id(bytes(range(8)), 8) == "0001020304050607"
    assert bytes_id(b"", 8) is None and bytes_id(bytes(8), 8) is None
    with pytest.raises(ValueError, match="7 bytes"):
        bytes_id(bytes(7), 8)


def test_json_id_hex_or_base64_by_length():
    """OTLP/JSON writes hex (the spec); the plain protobuf JSON mapping base64. The lengths differ,
    so nothing is guessed: a base64 id whose text starts with "0x" is base64 (the bug that refused
    one protobuf batch in four)."""
    assert json_id("AAECAwQFBgc=", 8, "spanId") == "0001020304050607"  # protobuf JSON: base64 bytes
    assert json_id("AAECAwQFBgcICQoLDA0ODw==", 16, "traceId") == "000102030405060708090a0b0c0d0e0f"
    raw = bytes.fromhex("d31c0ffee0ddf00d")
    assert base64.b64encode(raw).decode().startswith("0x")
    assert json_id(base64.b64encode(raw).decode(), 8, "spanId") == raw.hex()
    assert json_id("ABCDEF0123456789", 8, "spanId") == "abcdef0123456789"
    assert json_id("", 8, "parentSpanId") is None and json_id("0" * 16, 8, "parentSpanId") is None
    for text in ("not an id!", "AAECAw==", "b4", "0xabcdef01234567", "abcdef012345678g"):
        with pytest.raises(ValueError, match="spanId"):
            json_id(text, 8, "spanId")  # valid base64 of the wrong length, short hex, "0x", not hex


def test_render_chat_messages():
    genai = (
        '[{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},'
        ' {"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]'
    )
    assert render(genai) == "system: Be brief.\nuser: Hi"
    assert (
        render('[{"role": "assistant", "parts": [{"type": "tool_call", "name": "f", "arguments": {"a": 1}}]}]')
        == 'f({"a": 1})'
    )
    monocle = [
        '{"user": [{"type": "input_text", "text": "Hi"}]}',
        '{"tool_function": "g", "tool_arguments": "{}", "call_id": "c1"}',
        '{"call_id": "c1", "output": "done"}',
    ]
    assert render(monocle) == "user: Hi\nassistant: g({})\ntool: done"
    assert render({"role": "assistant", "content": "ok"}) == "ok"


def test_render_other_values():
    assert render('"a JSON string"') == "a JSON string"
    assert render('{"q": "order 7"}') == '{"q": "order 7"}'  # JSON that is no chat stays as given
    assert render({"q": 1}) == '{"q": 1}'
    assert render("plain text") == "plain text"
    assert render("") is None and render(None) is None and render([]) is None


def test_one_agent_per_service_when_spans_name_none():
    trace = build(
        span("1", name="root", start=0, end=10, service="front"),
        span("2", "1", "chat", 1, 2, "front", gen_ai__usage__input_tokens=5, gen_ai__usage__output_tokens=1),
        span("3", "1", "rpc", 3, 8, "back"),
        span("4", "3", "chat", 4, 7, "back", gen_ai__usage__output_tokens=9, gen_ai__completion="done"),
        span("5", "1", "chat", 9, 10, "front", gen_ai__usage__output_tokens=2),
    )
    assert [(a.name, a.parent, a.attributes["named_by"]) for a in trace.agents] == [
        ("front", None, "service"),
        ("back", "front", "service"),
    ]
    assert [(e.type, e.agent) for e in trace.events] == [
        ("message", "front"),
        ("spawn", "front"),
        ("delegate", "front"),
        ("return", "back"),
        ("message", "front"),
    ]
    assert trace.events[3].tokens == 9 and trace.events[3].content == "done"
    assert trace.events[0].tokens == 6  # input + output


def test_framework_default_agent_name_is_not_an_agent():
    """LangGraph names every graph "LangGraph": the agent is then the service."""
    trace = build(
        span(
            "1",
            name="invoke_agent LangGraph",
            service="detector",
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="LangGraph",
            gen_ai__provider__name="langgraph",
        ),
        span(
            "2",
            "1",
            "chat",
            0.1,
            0.9,
            "detector",
            gen_ai__operation__name="chat",
            gen_ai__agent__name="LangGraph",
            gen_ai__provider__name="langgraph",
        ),
    )
    assert [a.name for a in trace.agents] == ["detector"]


def test_remote_agent_seen_from_outside_gets_one_turn_event():
    """An invoke_agent client span with an output and nothing inside: one message of that agent."""
    trace = build(
        span(
            "1",
            name="invoke_agent Lead",
            start=0,
            end=5,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="Lead",
        ),
        span("2", "1", "chat", 0.5, 1, gen_ai__operation__name="chat", gen_ai__completion="ask Remote"),
        span(
            "3",
            "1",
            "invoke_agent Remote",
            1,
            3,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="Remote",
            gen_ai__output__messages="42",
        ),
        span("4", "1", "chat", 3.5, 4, gen_ai__operation__name="chat", gen_ai__completion="the answer is 42"),
    )
    remote = [e for e in trace.events if e.agent == "Remote"]
    assert [(e.type, e.t, e.t_end, e.content, e.to) for e in remote] == [("return", 1.0, 3.0, "42", "Lead")]
    assert remote[0].tokens == 1 and remote[0].attributes[TOKENS_ESTIMATED] is True


def test_missing_parents_cycles_and_duplicates_degrade_gracefully():
    looped = [
        span("a", "b", "execute_tool t", 0, 1, gen_ai__operation__name="execute_tool", gen_ai__agent__name="A"),
        span("b", "a", "chat", 1, 2, gen_ai__operation__name="chat", gen_ai__agent__name="A"),
    ]
    assert [e.type for e in build(*looped).events] == ["tool_call", "message"]
    orphans = [
        span("c", "f", "chat", 0, 1, gen_ai__operation__name="chat"),
        span(
            "d",
            "f",
            "execute_tool t",
            1,
            2,
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__name="t",
            gen_ai__agent__name="Caller",
        ),
        span("c", None, "duplicate id: the first record wins", 5, 6),
    ]
    trace = build(*orphans)
    assert {e.agent for e in trace.events} == {"Caller"}  # the tool names the missing parent's agent
    assert trace.events[0].attributes["parent_span_id"] == "f".rjust(16, "0")
    with pytest.raises(ValueError):
        build_trace([], source_format="test", trace_id=TRACE)


def test_span_event_content_and_errors():
    chat = span("1", name="chat", gen_ai__operation__name="chat")
    chat.events = [SpanEvent("gen_ai.user.message", None, {"content": "hello"})]
    tool = span("2", "1", "execute_tool t", 0.2, 0.5, gen_ai__operation__name="execute_tool", gen_ai__tool__name="t")
    tool.error = "boom"
    trace = build(chat, tool)
    message, call, result = trace.events
    assert (message.content, message.attributes["content_from"]) == ("hello", "input")
    assert (call.type, result.type, result.content, result.attributes["status"], result.attributes["error"]) == (
        "tool_call",
        "tool_result",
        None,
        "error",
        "boom",
    )


def agent_span(sid, parent, agent, start, end, **attributes):
    """An `invoke_agent` span of `agent` (GenAI conventions), with no LLM or tool spans below it."""
    return span(
        sid,
        parent,
        f"invoke_agent {agent}",
        start,
        end,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name=agent,
        **attributes,
    )


CHAIN = [
    agent_span("3", "2", "leaf", 2, 4, gen_ai__completion="leaf done", gen_ai__usage__output_tokens=5),
    agent_span("2", "1", "mid", 1, 6, gen_ai__prompt="split it"),
    agent_span("1", None, "boss", 0, 10),
]


def test_agent_spans_only_three_levels():
    """boss -> mid -> leaf, seen only as agent spans: each is a turn of its agent; each nested span
    is its invoker's spawn + delegate. An agent span without input or output still is a turn."""
    trace = build(*CHAIN)
    assert [(a.name, a.parent) for a in trace.agents] == [("boss", None), ("mid", "boss"), ("leaf", "mid")]
    assert [(e.type, e.agent, e.to, e.t, e.t_end, e.content) for e in trace.events] == [
        ("message", "boss", None, 0.0, 10.0, None),
        ("spawn", "boss", "mid", 1.0, None, None),
        ("delegate", "boss", "mid", 1.0, None, "split it"),
        ("message", "mid", None, 1.0, 6.0, "split it"),
        ("spawn", "mid", "leaf", 2.0, None, None),
        ("delegate", "mid", "leaf", 2.0, None, "split it"),  # leaf has no input: its caller's
        ("message", "leaf", None, 2.0, 4.0, "leaf done"),
    ]
    assert trace.events[3].attributes["content_from"] == "input"  # mid has no output
    assert trace.events[-1].tokens == 5
    mid, leaf = "2".rjust(16, "0"), "3".rjust(16, "0")
    assert {(e.type, e.src, e.dst) for e in trace.edges} == {
        ("spawn", f"{mid}:spawn", mid),
        ("message", f"{mid}:delegate", mid),
        ("spawn", f"{leaf}:spawn", leaf),
        ("message", f"{leaf}:delegate", leaf),
    }


def test_agent_spans_return_to_the_invokers_next_event():
    """Two agents invoked one after the other: the first one's turn returns to the invoker's next
    event (the second delegation), like any other invocation."""
    trace = build(
        agent_span("1", None, "boss", 0, 10),
        agent_span("2", "1", "a", 1, 3, gen_ai__completion="A"),
        agent_span("3", "1", "b", 4, 6, gen_ai__completion="B"),
    )
    assert [(e.type, e.agent, e.to) for e in trace.events] == [
        ("message", "boss", None),
        ("spawn", "boss", "a"),
        ("delegate", "boss", "a"),
        ("return", "a", "boss"),
        ("spawn", "boss", "b"),
        ("delegate", "boss", "b"),
        ("message", "b", None),
    ]
    assert ("return", trace.events[3].id, trace.events[4].id) in {(e.type, e.src, e.dst) for e in trace.edges}


def test_agent_spans_sent_twice_make_no_duplicate_events():
    """The union of all requests' spans may hold a span twice: the first record wins."""
    assert build(*CHAIN, *CHAIN).to_dict() == build(*CHAIN).to_dict()


def test_agent_spans_without_their_root_then_with_it():
    """Spans arrive over several requests: the trace is built from the children alone (their parent
    a placeholder), then rebuilt from all of them. Event ids stay the same."""
    partial = build(*CHAIN[:2])
    assert [(a.name, a.parent) for a in partial.agents] == [("mid", None), ("leaf", "mid")]
    assert [(e.type, e.agent) for e in partial.events] == [
        ("message", "mid"),
        ("spawn", "mid"),
        ("delegate", "mid"),
        ("message", "leaf"),
    ]
    full = build(*CHAIN)
    assert [(a.name, a.parent) for a in full.agents] == [("boss", None), ("mid", "boss"), ("leaf", "mid")]
    assert {e.id for e in partial.events} < {e.id for e in full.events}


def test_render_anthropic_content_blocks_and_python_none():
    # Anthropic message content blocks: tool_use -> name(input), tool_result -> its text, text -> text
    said = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Berlin"}},
        ],
    }
    assert render(said) == 'Checking.\nget_weather({"city": "Berlin"})'
    answered = [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Cloudy"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "Sunny"}]}
            ],
        },
    ]
    assert render(answered) == "user: Cloudy\nuser: Sunny"
    # Python's repr of None is no content; bound arguments holding object reprs are what is left
    assert render("None") is None
    bound = {"run_response": "RunResponse(content=None, model='m')", "session_id": "s1", "message": "Hi"}
    assert render(bound) == "Hi"
    assert render({"run_response": "RunResponse(content=None, model='m')"}) is None
    assert render('{"text": "None"}') == '{"text": "None"}'  # only the whole value


CALL = {"name": "f", "arguments": "{}"}


def test_llm_turn_without_output_takes_the_enclosing_calls_output():
    # agno: OpenAIChat.invoke (output: the tool call) wraps the provider's generation, whose output
    # is the text "None": the turn is the call, its own prompt kept as `input`
    outer = span(
        "1",
        name="OpenAIChat.invoke",
        gen_ai__operation__name="chat",
        gen_ai__request__model="m",
        gen_ai__completion=json.dumps({"role": "assistant", "content": None, "tool_calls": [{"function": CALL}]}),
    )
    inner = span(
        "2",
        "1",
        "chat m",
        0.1,
        0.9,
        gen_ai__operation__name="chat",
        gen_ai__request__model="m",
        gen_ai__prompt="user: go",
        gen_ai__completion="None",
    )
    (turn,) = [e for e in build(outer, inner).events if e.type == "message"]
    assert (turn.content, turn.attributes["input"], "content_from" in turn.attributes) == ("f({})", "user: go", False)
    # with no output anywhere, the turn's prompt stays flagged
    bare = span("2", name="chat m", gen_ai__operation__name="chat", gen_ai__prompt="user: go")
    (turn,) = build(bare).events
    assert (turn.content, turn.attributes["content_from"]) == ("user: go", "input")
