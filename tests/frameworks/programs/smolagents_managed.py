"""smolagents managed agents, instrumented with OpenInference's SmolagentsInstrumentor as its docs
say: a `manager` ToolCallingAgent whose team is two managed ToolCallingAgents, `search_agent`
(tool `web_search`, fixed text) and `math_agent` (tool `add`). The model is smolagents'
OpenAIModel (OpenAIServerModel) at OPENAI_BASE_URL, the test's scripted server.
"""

import os

import otel_setup
from openinference.instrumentation.smolagents import SmolagentsInstrumentor

provider = otel_setup.setup()
SmolagentsInstrumentor().instrument(tracer_provider=provider)

from smolagents import OpenAIModel, ToolCallingAgent, tool  # noqa: E402


@tool
def web_search(query: str) -> str:
    """Searches the web.

    Args:
        query: what to search for.
    """
    return "Paris is the capital of France."


@tool
def add(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: the first integer.
        b: the second integer.
    """
    return a + b


model = OpenAIModel(
    model_id="scripted-model", api_base=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"]
)
search_agent = ToolCallingAgent(
    tools=[web_search],
    model=model,
    name="search_agent",
    description="Searches the web for facts.",
    max_steps=3,
    verbosity_level=0,
)
math_agent = ToolCallingAgent(
    tools=[add],
    model=model,
    name="math_agent",
    description="Does arithmetic.",
    max_steps=3,
    verbosity_level=0,
)
manager = ToolCallingAgent(
    tools=[],
    model=model,
    managed_agents=[search_agent, math_agent],
    name="manager",
    max_steps=4,
    verbosity_level=0,
)
answer = manager.run("What is the capital of France, and what is 2 + 3?")
print("ANSWER:", answer)
otel_setup.finish(provider)
