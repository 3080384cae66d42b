"""Strands Agents, a `Swarm` and an agent used as a tool: the researcher looks the fact up (function
tool `lookup`) and hands off to the writer with the swarm's `handoff_to_agent` tool; the writer asks
the translator (an agent called inside the writer's `translate` tool, Strands' "agents as tools"
pattern) and answers.

Strands' own OpenTelemetry spans, as its docs say: `StrandsTelemetry(tracer_provider=provider)` on
the OTel SDK's provider (OTEL_SEMCONV_STABILITY_OPT_IN chooses the GenAI conventions' version: unset,
content as span events; `gen_ai_latest_experimental`, `gen_ai.input.messages` / `output.messages`).
The model is Strands' `OpenAIModel` (Chat Completions) at OPENAI_BASE_URL (the test's server)."""

import otel_setup

provider = otel_setup.setup()

from strands import Agent, tool  # noqa: E402
from strands.models.openai import OpenAIModel  # noqa: E402
from strands.multiagent import Swarm  # noqa: E402
from strands.telemetry import StrandsTelemetry  # noqa: E402

StrandsTelemetry(tracer_provider=provider)


def model():
    return OpenAIModel(model_id="gpt-4o-mini")


@tool
def lookup(query: str) -> str:
    """Look a fact up."""
    return "The Eiffel Tower is 330 metres tall."


translator = Agent(name="translator", model=model(), system_prompt="You translate to French.", callback_handler=None)


@tool
def translate(text: str) -> str:
    """Translate a sentence to French."""
    return str(translator(text)).strip()


researcher = Agent(
    name="researcher",
    model=model(),
    tools=[lookup],
    system_prompt="You research facts with the lookup tool.",
    callback_handler=None,
)
writer = Agent(
    name="writer",
    model=model(),
    tools=[translate],
    system_prompt="You write one sentence, and give it in French too.",
    callback_handler=None,
)
swarm = Swarm([researcher, writer], entry_point=researcher)
result = swarm("How tall is the Eiffel Tower? Write it up in one sentence, in English and French.")
print(str(result.results["writer"].result).strip())
otel_setup.finish(provider)
