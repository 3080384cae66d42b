"""LangGraph's prebuilt supervisor (`langgraph-supervisor`): a supervisor hands off to two expert
agents (`create_react_agent` each) through its `transfer_to_<agent>` tools; each expert calls its
tool and answers, and the supervisor answers last.

Traced as the test asks (SWARMSCOPE_LANGGRAPH_TRACING):
- `openinference` (default): OpenInference's LangChain instrumentor on the OTel SDK's provider,
  `LangChainInstrumentor().instrument(tracer_provider=provider)`, as its README says;
- `langsmith`: LangSmith's own OpenTelemetry export (the test sets LANGSMITH_TRACING=true and
  LANGSMITH_TRACING_MODE=otel), which exports through the global provider `otel_setup` sets.
The model is `ChatOpenAI` at OPENAI_BASE_URL (the test's scripted server)."""

import os

import otel_setup

provider = otel_setup.setup()
TRACING = os.environ.get("SWARMSCOPE_LANGGRAPH_TRACING", "openinference")
if TRACING == "openinference":
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)

from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402
from langgraph_supervisor import create_supervisor  # noqa: E402


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def web_search(query: str) -> str:
    """Search the web for information."""
    return "FAANG headcounts 2024: Meta 67317, Apple 164000, Amazon 1551000, Netflix 14000, Google 181269."


model = ChatOpenAI(model="gpt-4o-mini", temperature=0)
math_agent = create_react_agent(model=model, tools=[add], name="math_expert", prompt="You are a math expert.")
research_agent = create_react_agent(
    model=model, tools=[web_search], name="research_expert", prompt="You are a world class researcher."
)
workflow = create_supervisor(
    [research_agent, math_agent],
    model=model,
    prompt="You are a team supervisor managing a research expert and a math expert.",
)
app = workflow.compile()
result = app.invoke({"messages": [{"role": "user", "content": "What is the combined headcount of Meta and Apple?"}]})
print(result["messages"][-1].content)
if TRACING == "langsmith":  # LangSmith hands runs to OTel from its background thread: wait for it
    from langchain_core.tracers.langchain import wait_for_all_tracers

    wait_for_all_tracers()
otel_setup.finish(provider)
