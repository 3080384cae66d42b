"""OpenInference spans shaped as the smolagents and LlamaIndex instrumentors write them (the rules
the framework stage checks on real runs, tests/frameworks/test_smolagents.py and
test_llamaindex.py, here without their venvs): `<agent>.run` spans, bound arguments as tool
input, LlamaIndex workflow steps, `handoff(to_agent)`, `ToolOutput` dumps."""

import json
from functools import partial

from swarmscope.importers.otel import build_trace
from swarmscope.importers.otel.openinference import call_arguments, run_task, tool_output_text
from swarmscope.model import validate_trace
from tests.swarmscope.importers.spans import make_span

TRACE = "0" * 31 + "9"
span = partial(make_span, TRACE)


def build(*spans):
    trace = build_trace(spans, source_format="test", trace_id=TRACE)
    validate_trace(trace)
    return trace


def llm(sid, parent, start, end, call, arguments, name="OpenAIModel.generate", tokens=(10, 2)):
    return span(
        sid,
        parent,
        name,
        start,
        end,
        openinference__span__kind="LLM",
        llm__token_count__prompt=tokens[0],
        llm__token_count__completion=tokens[1],
        **{
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.contents.0.message_content.type": "text",
            "llm.output_messages.0.message.contents.0.message_content.text": "",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": call,
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": json.dumps(arguments),
        },
    )


def tool(sid, parent, start, end, name, input_value, output, span_name="SimpleTool"):
    return span(
        sid,
        parent,
        span_name,
        start,
        end,
        openinference__span__kind="TOOL",
        tool__name=name,
        input__value=json.dumps(input_value),
        output__value=output,
    )


def run_args(task):
    return json.dumps({"task": task, "stream": False, "reset": True, "images": None, "max_steps": None})


def smolagents_spans(manager="manager.run", worker="search_agent.run"):
    """A manager's run: step 1 asks its managed agent (its run inside the step), step 2 answers."""
    return [
        span("1", None, manager, 0, 10, openinference__span__kind="AGENT", input__value=run_args("Question?")),
        span("2", "1", "Step 1", 0.1, 6, openinference__span__kind="CHAIN", input__value='{"memory_step": "..."}'),
        llm("3", "2", 0.2, 1, "search_agent", {"task": "Find it."}),
        span("4", "2", worker, 1.1, 5.9, openinference__span__kind="AGENT", input__value=run_args("Task:\nFind it.")),
        span("5", "4", "Step 1", 1.2, 5.8, openinference__span__kind="CHAIN"),
        llm("6", "5", 1.3, 2, "web_search", {"query": "it"}),
        tool(
            "7",
            "5",
            2.1,
            3,
            "web_search",
            {"args": [], "sanitize_inputs_outputs": True, "kwargs": {"query": "it"}},
            "found",
        ),
        span("8", "1", "Step 2", 6.1, 9.9, openinference__span__kind="CHAIN"),
        llm("9", "8", 6.2, 7, "final_answer", {"answer": "done"}),
        tool("10", "8", 7.1, 8, "final_answer", {"args": [], "kwargs": {"answer": "done"}}, "done", "FinalAnswerTool"),
    ]


def test_smolagents_run_spans_are_the_agents_they_run():
    trace = build(*smolagents_spans())
    assert [a.name for a in trace.agents] == ["manager", "search_agent"]
    assert trace.agent("search_agent").parent == "manager"
    (delegate,) = [e for e in trace.events if e.type == "delegate"]
    assert (delegate.agent, delegate.to, delegate.content) == ("manager", "search_agent", "Task:\nFind it.")
    calls = [(e.agent, e.tool, e.content) for e in trace.events if e.type == "tool_call"]
    assert calls == [
        ("search_agent", "web_search", '{"query": "it"}'),
        ("manager", "final_answer", '{"answer": "done"}'),
    ]
    by_id = {e.id: e for e in trace.events}
    returns = [(by_id[x.src].agent, by_id[x.dst].agent) for x in trace.edges if x.type == "return"]
    assert returns == [("search_agent", "manager")]
    assert [e.content for e in trace.events if e.type == "message"][0] == 'search_agent({"task": "Find it."})'
    assert trace.costs["tokens"] == 3 * 12


def test_a_run_span_of_an_unnamed_agent_is_its_class():
    """Instrumentors before agent names (and Agno unnamed) name the run after the class."""
    trace = build(*smolagents_spans(manager="CodeAgent.run", worker="ToolCallingAgent.run"))
    assert [a.name for a in trace.agents] == ["CodeAgent", "ToolCallingAgent"]


def step(sid, name, start, end, event=None):
    value = {"ctx": "<workflows.context.context.Context object at 0x7f01>", "ev": event or "StartEvent()"}
    return span(
        sid, "1", f"AgentWorkflow.{name}", start, end, openinference__span__kind="CHAIN", input__value=json.dumps(value)
    )


def agent_input(agent):
    return f"AgentInput(input=[ChatMessage(role=<MessageRole.USER: 'user'>, ...)], current_agent_name='{agent}')"


HANDED = "Agent writer is now handling the request."


def llamaindex_spans():
    """triage calls `lookup`, hands off to `writer`, which answers."""
    handoff_args = {
        "kwargs": {"to_agent": "writer", "reason": "writes", "ctx": "<workflows.context.Context object at 0x7f02>"}
    }
    return [
        span("1", None, "AgentWorkflow.run", 0, 20, openinference__span__kind="CHAIN", output__value="StopEvent(...)"),
        step("2", "init_run", 0.1, 0.2),
        step("3", "setup_agent", 0.3, 0.4, agent_input("triage")),
        step("4", "run_agent_step", 0.5, 2, "AgentSetup(input=[3 items], current_agent_name='triage')"),
        span(
            "5",
            "4",
            "OpenAI._prepare_chat_with_tools",
            0.6,
            0.7,
            openinference__span__kind="LLM",
            output__value='{"messages": []}',
        ),
        llm("6", "4", 0.8, 1.9, "lookup", {"topic": "x"}, name="OpenAI.astream_chat"),
        step("7", "call_tool", 2.1, 3, "ToolCall(tool_name='lookup', tool_kwargs={'topic': 'x'}, tool_id='c1')"),
        tool(
            "8",
            "7",
            2.2,
            2.9,
            "lookup",
            {"kwargs": {"topic": "x"}},
            json.dumps({"content": "X is y.", "tool_name": "lookup", "raw_input": {}, "raw_output": "X is y."}),
            "FunctionTool.acall",
        ),
        step("9", "aggregate_tool_results", 3.1, 3.2, "ToolCallResult(tool_name='lookup', ...)"),
        step("10", "setup_agent", 3.3, 3.4, agent_input("triage")),
        step("11", "run_agent_step", 3.5, 5, "AgentSetup(input=[5 items], current_agent_name='triage')"),
        llm("12", "11", 3.6, 4.9, "handoff", {"to_agent": "writer", "reason": "writes"}, name="OpenAI.astream_chat"),
        step("13", "call_tool", 5.1, 6, "ToolCall(tool_name='handoff', ...)"),
        tool(
            "14",
            "13",
            5.2,
            5.9,
            "handoff",
            handoff_args,
            json.dumps({"blocks": [{"text": HANDED}], "tool_name": "handoff", "raw_input": {}, "raw_output": HANDED}),
            "FunctionTool.acall",
        ),
        step("15", "aggregate_tool_results", 6.1, 6.2, "ToolCallResult(tool_name='handoff', ...)"),
        step("16", "setup_agent", 6.3, 6.4, agent_input("writer")),
        step("17", "run_agent_step", 6.5, 9, "AgentSetup(input=[7 items], current_agent_name='writer')"),
        llm("18", "17", 6.6, 8.9, "write", {"text": "y"}, name="OpenAI.astream_chat"),
        step("19", "parse_agent_output", 9.1, 9.2, "AgentOutput(response=..., current_agent_name='writer')"),
    ]


def test_llamaindex_agent_workflow_steps_act_for_the_current_agent():
    trace = build(*llamaindex_spans())
    assert [a.name for a in trace.agents] == ["triage", "writer"]  # no AgentWorkflow, no service
    assert trace.agent("writer").parent == "triage"
    (handoff,) = [e for e in trace.events if e.type == "delegate"]
    assert (handoff.agent, handoff.to, handoff.tool) == ("triage", "writer", "handoff")
    assert json.loads(handoff.content) == {"to_agent": "writer", "reason": "writes"}  # not the injected ctx
    assert handoff.attributes["transfer_mode"] == "pass_control"
    assert not [x for x in trace.edges if x.type == "return"]
    turns = [(e.agent, e.content) for e in trace.events if e.type == "message"]
    assert turns == [  # the model calls, not the request's preparation
        ("triage", 'lookup({"topic": "x"})'),
        ("triage", 'handoff({"to_agent": "writer", "reason": "writes"})'),
        ("writer", 'write({"text": "y"})'),
    ]
    results = [(e.agent, e.tool, e.content) for e in trace.events if e.type == "tool_result"]
    assert results == [("triage", "lookup", "X is y.")]
    assert [(e.agent, e.content) for e in trace.events if e.type == "tool_call"] == [("triage", '{"topic": "x"}')]


def test_a_handoff_to_an_agent_the_workflow_lacks_stays_a_tool_call():
    spans = llamaindex_spans()
    spans[13] = tool(
        "14", "13", 5.2, 5.9, "handoff", {"kwargs": {"to_agent": "nobody", "reason": "?"}}, "Agent nobody not found."
    )
    trace = build(*spans[:15])
    assert [a.name for a in trace.agents] == ["triage"]
    assert [e.tool for e in trace.events if e.type == "tool_call"] == ["lookup", "handoff"]


def test_values_recorded_as_a_calls_bound_arguments():
    assert call_arguments('{"args": ["q"], "sanitize_inputs_outputs": true, "kwargs": {}}') == "q"
    assert call_arguments('{"args": [1, 2]}') == "[1, 2]"
    assert json.loads(call_arguments('{"args": [1], "kwargs": {"b": 2}}')) == {"args": [1], "kwargs": {"b": 2}}
    not_a_call = '{"kwargs": {"a": 1}, "task": {"nested": true}}'  # another key holds an object
    assert call_arguments(not_a_call) == not_a_call
    assert call_arguments('{"query": "x"}') == '{"query": "x"}'
    assert run_task(run_args("Do it.")) == "Do it."
    two_texts = json.dumps({"task": "a", "name": "b"})
    assert run_task(two_texts) == two_texts
    dump = {"content": "", "tool_name": "t", "raw_input": {}, "raw_output": 5}
    assert tool_output_text(json.dumps(dump)) == ""
    assert tool_output_text(json.dumps({**dump, "content": None, "blocks": []})) == "5"
    assert tool_output_text('{"tool_name": "t"}') == '{"tool_name": "t"}'
