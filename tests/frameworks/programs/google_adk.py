"""Google ADK: a coordinator with two sub-agents (reached by ADK's `transfer_to_agent`), an agent
used as a tool (`AgentTool`) and a plain function tool, every model a scripted `BaseLlm` (ADK's
own extension point for models: no network, no Google endpoint, no API key).

Instrumentation by SWARMSCOPE_ADK_TRACING:
- `native` (default): ADK's own OpenTelemetry spans (`invoke_agent`, `call_llm`/`generate_content`,
  `execute_tool`), emitted once a tracer provider is set, as ADK's observability docs say;
- `openinference`: `GoogleADKInstrumentor().instrument(tracer_provider=...)`
  (openinference-instrumentation-google-adk), which replaces ADK's agent and LLM spans by its own.

What the program does, in order (the test states it by hand):
1. coordinator: calls `lookup_city(city="Paris")` → {"city": "Paris", "country": "France"};
2. coordinator: calls the agent-as-tool `fact_checker(request="Is the Louvre in Paris?")`;
   fact_checker answers "Yes: the Louvre is in Paris, 1st arrondissement.";
3. coordinator: `transfer_to_agent(agent_name="booker")`;
4. booker: "Booked two nights at Hotel Lutetia, Paris." then `transfer_to_agent("coordinator")`;
5. coordinator: `transfer_to_agent(agent_name="guide")`;
6. guide: "Start at the Louvre at 9am, then walk the Seine to Notre-Dame." (the final answer).
Each model turn reports usage; USAGE below is what each agent's turns report, in order.
"""

import asyncio
import json
import os
import sys
from collections.abc import AsyncGenerator

import otel_setup

provider = otel_setup.setup()
if os.environ.get("SWARMSCOPE_ADK_TRACING", "native") == "openinference":
    from openinference.instrumentation.google_adk import GoogleADKInstrumentor

    GoogleADKInstrumentor().instrument(tracer_provider=provider)

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google.genai import types  # noqa: E402


def call(name: str, **args) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def text(value: str) -> types.Part:
    return types.Part(text=value)


#: Each agent's model turns, in order: (parts, (prompt, candidates, thoughts, cached) tokens).
SCRIPT = {
    "coordinator": [
        ([call("lookup_city", city="Paris")], (120, 11, 0, 0)),
        ([call("fact_checker", request="Is the Louvre in Paris?")], (160, 13, 0, 0)),
        ([call("transfer_to_agent", agent_name="booker")], (190, 7, 0, 0)),
        ([call("transfer_to_agent", agent_name="guide")], (240, 8, 0, 128)),
    ],
    "fact_checker": [
        ([text("Yes: the Louvre is in Paris, 1st arrondissement.")], (40, 12, 0, 0)),
    ],
    "booker": [
        (
            [text("Booked two nights at Hotel Lutetia, Paris."), call("transfer_to_agent", agent_name="coordinator")],
            (210, 16, 0, 0),
        ),
    ],
    "guide": [
        ([text("Start at the Louvre at 9am, then walk the Seine to Notre-Dame.")], (260, 17, 9, 0)),
    ],
}


class ScriptedLlm(BaseLlm):
    """One agent's model: answers each call with that agent's next scripted turn."""

    turns: list = []
    requests: list = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.contents[-1].model_dump(mode="json", exclude_none=True))
        if not self.turns:
            raise RuntimeError(f"{self.model}: no scripted turn left")
        parts, (prompt, candidates, thoughts, cached) = self.turns.pop(0)
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=prompt,
                candidates_token_count=candidates,
                thoughts_token_count=thoughts or None,
                cached_content_token_count=cached or None,
                total_token_count=prompt + candidates + thoughts,  # as Gemini counts: thoughts included
            ),
            model_version=self.model,
        )


def model(agent: str) -> ScriptedLlm:
    return ScriptedLlm(model=f"scripted-{agent}", turns=list(SCRIPT[agent]), requests=[])


def lookup_city(city: str) -> dict:
    """Look up the country a city is in."""
    return {"city": city, "country": "France"}


fact_checker = LlmAgent(
    name="fact_checker",
    model=model("fact_checker"),
    description="Checks one fact and answers yes or no with a reason.",
    instruction="Check the fact you are given.",
)
booker = LlmAgent(
    name="booker",
    model=model("booker"),
    description="Books hotels.",
    instruction="Book a hotel, then hand back to the coordinator.",
)
guide = LlmAgent(
    name="guide",
    model=model("guide"),
    description="Plans a day of sightseeing.",
    instruction="Plan the visit.",
)
coordinator = LlmAgent(
    name="coordinator",
    model=model("coordinator"),
    description="Plans a trip with its team.",
    instruction="Plan the user's trip: check facts, book, then plan the visit.",
    tools=[lookup_city, AgentTool(agent=fact_checker)],
    sub_agents=[booker, guide],
)


async def main() -> None:
    runner = InMemoryRunner(agent=coordinator, app_name="trip_planner")
    session = await runner.session_service.create_session(app_name="trip_planner", user_id="u1")
    message = types.Content(role="user", parts=[text("Plan a day in Paris and book a hotel.")])
    async for event in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
        for part in event.content.parts if event.content else ():
            print(event.author, part.model_dump(mode="json", exclude_none=True), flush=True)
    left = {
        name: len(agent.model.turns)
        for name, agent in (
            ("coordinator", coordinator),
            ("fact_checker", fact_checker),
            ("booker", booker),
            ("guide", guide),
        )
    }
    if any(left.values()):
        sys.exit(f"scripted turns left unused: {left}")
    print("REQUESTS", json.dumps({a.name: a.model.requests for a in (coordinator, fact_checker, booker, guide)}))


asyncio.run(main())
otel_setup.finish(provider)
