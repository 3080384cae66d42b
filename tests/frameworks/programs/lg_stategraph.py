"""A hand-written LangGraph `StateGraph` supervisor, after LangGraph's multi-agent supervisor
tutorial: `supervisor`, `researcher` and `writer` nodes that route with `Command(goto=...)`. The
supervisor asks the model who goes next (`researcher`, `writer`, `FINISH`); the researcher calls
its `search` tool and reports; the writer writes. Each worker goes back to the supervisor.

Traced as `lg_supervisor` is (SWARMSCOPE_LANGGRAPH_TRACING: `openinference`, the default, or
`langsmith`). The model is `ChatOpenAI` at OPENAI_BASE_URL (the test's scripted server)."""

import os
from typing import Literal

import otel_setup

provider = otel_setup.setup()
TRACING = os.environ.get("SWARMSCOPE_LANGGRAPH_TRACING", "openinference")
if TRACING == "openinference":
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.types import Command  # noqa: E402

model = ChatOpenAI(model="gpt-4o-mini", temperature=0)


@tool
def search(query: str) -> str:
    """Search the web."""
    return "The Eiffel Tower is 330 metres tall."


def supervisor(state: MessagesState) -> Command[Literal["researcher", "writer", "__end__"]]:
    system = SystemMessage("You are a supervisor of a researcher and a writer. Answer who acts next, or FINISH.")
    choice = model.invoke([system, *state["messages"]]).content.strip()
    return Command(goto=END if choice == "FINISH" else choice)


def researcher(state: MessagesState) -> Command[Literal["supervisor"]]:
    messages = [SystemMessage("You are a researcher. Use the search tool."), *state["messages"]]
    asked = model.bind_tools([search]).invoke(messages)
    results = [search.invoke(call) for call in asked.tool_calls]
    answer = model.invoke([*messages, asked, *results])
    return Command(goto="supervisor", update={"messages": [AIMessage(answer.content, name="researcher")]})


def writer(state: MessagesState) -> Command[Literal["supervisor"]]:
    answer = model.invoke([SystemMessage("You are a writer. Write one sentence."), *state["messages"]])
    return Command(goto="supervisor", update={"messages": [AIMessage(answer.content, name="writer")]})


builder = StateGraph(MessagesState)
builder.add_node("supervisor", supervisor)
builder.add_node("researcher", researcher)
builder.add_node("writer", writer)
builder.add_edge(START, "supervisor")
graph = builder.compile()
result = graph.invoke({"messages": [HumanMessage("How tall is the Eiffel Tower? Write it up in one sentence.")]})
print(result["messages"][-1].content)
if TRACING == "langsmith":  # LangSmith hands runs to OTel from its background thread: wait for it
    from langchain_core.tracers.langchain import wait_for_all_tracers

    wait_for_all_tracers()
otel_setup.finish(provider)
