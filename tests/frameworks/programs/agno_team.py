"""Agno, a team: the leader (coordinate mode, Agno's default) delegates to its members with Agno's
`delegate_task_to_member` tool: first the researcher, who calls its `lookup` tool and reports, then
the writer, who writes; the leader answers last. With AGNO_TEAM_MODE=broadcast the leader sends one
task to both members at once (`delegate_task_to_members`), run concurrently by `arun`.

Instrumented with OpenInference's Agno instrumentor, as its README says
(`AgnoInstrumentor().instrument(tracer_provider=provider)`). The model is Agno's `OpenAIChat`
(Chat Completions) at OPENAI_BASE_URL (the test's scripted server); AGNO_TELEMETRY=false."""

import asyncio
import os

import otel_setup

provider = otel_setup.setup()

from openinference.instrumentation.agno import AgnoInstrumentor  # noqa: E402

AgnoInstrumentor().instrument(tracer_provider=provider)

from agno.agent import Agent  # noqa: E402
from agno.models.openai import OpenAIChat  # noqa: E402
from agno.team import Team  # noqa: E402

try:
    from agno.team import TeamMode  # agno >= 2
except ImportError:  # agno 1.x: the mode is a string
    TeamMode = str


def lookup(query: str) -> str:
    """Look a fact up."""
    return "The Eiffel Tower is 330 metres tall."


researcher = Agent(
    name="Researcher",
    role="Looks facts up",
    model=OpenAIChat(id="gpt-4o-mini"),
    tools=[lookup],
    instructions="You research facts with the lookup tool.",
)
writer = Agent(
    name="Writer",
    role="Writes one sentence",
    model=OpenAIChat(id="gpt-4o-mini"),
    instructions="You write one sentence.",
)
team = Team(
    name="Editorial Team",
    members=[researcher, writer],
    model=OpenAIChat(id="gpt-4o-mini"),
    instructions="You lead an editorial team.",
    mode=TeamMode(os.environ.get("AGNO_TEAM_MODE", "coordinate")),
)
if team.mode == "broadcast":
    response = asyncio.run(team.arun("How tall is the Eiffel Tower? Write it up in one sentence."))
else:
    response = team.run("How tall is the Eiffel Tower? Write it up in one sentence.")
print(response.content)
otel_setup.finish(provider)
