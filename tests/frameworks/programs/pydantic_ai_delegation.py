"""pydantic-ai agent delegation (https://ai.pydantic.dev/multi-agent-applications/#agent-delegation):
a `coordinator` whose tools run two other agents with the coordinator's usage (`usage=ctx.usage`).

    coordinator --ask_researcher("moons of Mars")--> researcher --search("moons of Mars")
    coordinator --ask_writer(<the researcher's notes>)--> writer
    coordinator answers with the writer's text

Every model is pydantic-ai's own `FunctionModel`, scripted below with the usage each response
reports. Instrumented as pydantic-ai documents it, `Agent.instrument_all(InstrumentationSettings(...))`
with the data format `version` taken from PYDANTIC_AI_INSTRUMENTATION_VERSION (default: the
package's default), exporting with the OTel SDK from the OTEL_* environment (`otel_setup`).
"""

import asyncio
import os
import warnings

import otel_setup
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage

QUESTION = "Write two sentences about the moons of Mars."
SEARCH_RESULT = "Phobos and Deimos orbit Mars; Phobos is the larger."
NOTES = "Mars has two moons, Phobos and Deimos."
DRAFT = "Mars has two small moons. Phobos, the larger, and Deimos were found in 1877."
FINAL = "Done: Mars has two small moons. Phobos, the larger, and Deimos were found in 1877."


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]


def coordinator_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    done = [r.tool_name for r in _returns(messages)]
    if not done:
        return ModelResponse(
            parts=[ToolCallPart("ask_researcher", {"question": "moons of Mars"}, tool_call_id="c1")],
            usage=RequestUsage(input_tokens=100, output_tokens=10),
        )
    if done == ["ask_researcher"]:
        return ModelResponse(
            parts=[ToolCallPart("ask_writer", {"notes": NOTES}, tool_call_id="c2")],
            usage=RequestUsage(input_tokens=120, output_tokens=12),
        )
    return ModelResponse(parts=[TextPart(FINAL)], usage=RequestUsage(input_tokens=150, output_tokens=15))


def researcher_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if not _returns(messages):
        return ModelResponse(
            parts=[ToolCallPart("search", {"query": "moons of Mars"}, tool_call_id="r1")],
            usage=RequestUsage(input_tokens=50, output_tokens=5),
        )
    return ModelResponse(parts=[TextPart(NOTES)], usage=RequestUsage(input_tokens=60, output_tokens=6))


def writer_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(DRAFT)], usage=RequestUsage(input_tokens=70, output_tokens=7))


researcher = Agent(FunctionModel(researcher_model, model_name="scripted"), name="researcher", instructions="Research.")
writer = Agent(FunctionModel(writer_model, model_name="scripted"), name="writer", instructions="Write.")
coordinator = Agent(
    FunctionModel(coordinator_model, model_name="scripted"), name="coordinator", instructions="Delegate."
)


@researcher.tool_plain
def search(query: str) -> str:
    """Search the web."""
    return SEARCH_RESULT


@coordinator.tool
async def ask_researcher(ctx: RunContext[None], question: str) -> str:
    """Ask the researcher."""
    result = await researcher.run(question, usage=ctx.usage)
    return result.output


@coordinator.tool
async def ask_writer(ctx: RunContext[None], notes: str) -> str:
    """Ask the writer to draft from notes."""
    result = await writer.run(f"Draft from: {notes}", usage=ctx.usage)
    return result.output


def main() -> None:
    provider = otel_setup.setup()
    version = os.environ.get("PYDANTIC_AI_INSTRUMENTATION_VERSION")
    with warnings.catch_warnings():  # versions 2-4 are deprecated (still offered)
        warnings.simplefilter("ignore")
        settings = InstrumentationSettings(version=int(version)) if version else InstrumentationSettings()
    Agent.instrument_all(settings)
    result = asyncio.run(coordinator.run(QUESTION))
    print(result.output)
    print("usage", result.usage().input_tokens, result.usage().output_tokens)
    otel_setup.finish(provider)


if __name__ == "__main__":
    main()
