"""LlamaIndex AgentWorkflow with hand-offs, instrumented with OpenInference's LlamaIndexInstrumentor
as its docs say: the root FunctionAgent `triage` (tool `get_user`) may hand off to `researcher`
(tool `lookup`) and `calculator` (tool `multiply`); `researcher` may hand back to `triage`. The
model is llama-index-llms-openai's OpenAI at OPENAI_BASE_URL (the test's scripted server), streamed
as FunctionAgent does by default; with LLAMA_STREAM_USAGE=1 it asks for usage in the stream
(`stream_options.include_usage`), else the stream carries none.
"""

import asyncio
import os

import otel_setup
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

provider = otel_setup.setup()
LlamaIndexInstrumentor().instrument(tracer_provider=provider)

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent  # noqa: E402
from llama_index.llms.openai import OpenAI  # noqa: E402


def get_user(user_id: str) -> str:
    """The name of a user."""
    return "Ada"


def lookup(topic: str) -> str:
    """Looks a fact up."""
    return "The speed of light is 299792 km/s."


def multiply(a: int, b: int) -> int:
    """Multiplies two integers."""
    return a * b


extra = {"stream_options": {"include_usage": True}} if os.environ.get("LLAMA_STREAM_USAGE") == "1" else {}
llm = OpenAI(
    model="gpt-4o-mini",
    api_base=os.environ["OPENAI_BASE_URL"],
    api_key=os.environ["OPENAI_API_KEY"],
    additional_kwargs=extra,
)
triage = FunctionAgent(
    name="triage",
    description="Routes the user's question.",
    system_prompt="You are triage.",
    tools=[get_user],
    llm=llm,
    can_handoff_to=["researcher", "calculator"],
)
researcher = FunctionAgent(
    name="researcher",
    description="Looks facts up.",
    system_prompt="You are the researcher.",
    tools=[lookup],
    llm=llm,
    can_handoff_to=["triage"],
)
calculator = FunctionAgent(
    name="calculator",
    description="Does arithmetic.",
    system_prompt="You are the calculator.",
    tools=[multiply],
    llm=llm,
    can_handoff_to=[],
)
workflow = AgentWorkflow(agents=[triage, researcher, calculator], root_agent="triage")


async def main() -> str:
    response = await workflow.run(user_msg="User u1 asks: what is twice the speed of light?")
    return str(response)


print("ANSWER:", asyncio.run(main()))
otel_setup.finish(provider)
