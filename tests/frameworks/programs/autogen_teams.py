"""AutoGen AgentChat teams with autogen-core's built-in tracing
(https://microsoft.github.io/autogen/stable/user-guide/agentchat-user-guide/tracing.html: the team
made and run inside one application span, `run_team`, on a SingleThreadedAgentRuntime given the
tracer provider, so the runtime's messaging spans are recorded too).

AUTOGEN_TEAM picks the team:

- `swarm`: a Swarm (https://microsoft.github.io/autogen/stable/user-guide/agentchat-user-guide/swarm.html)
  that hands off planner -> researcher -> writer: the planner calls `transfer_to_researcher`; the
  researcher calls `search("moons of Mars")`, then `transfer_to_writer` (two tool iterations in its
  turn); the writer answers and ends the run ("TERMINATE").
- `roundrobin`: a RoundRobinGroupChat of `critic` and `poet`, poet first: poet drafts, critic asks
  for a change, poet revises, critic approves ("APPROVE" ends it); the critic calls
  `count_syllables(line)` in its first turn.

AUTOGEN_MODEL picks the model client:

- `replay` (default): AutoGen's own fake model, `ReplayChatCompletionClient`, one per agent with its
  scripted responses. It records no model call in the trace (its usage counts words and no span
  reports it), so this mode checks the team's spans only.
- `openai`: autogen-ext's `OpenAIChatCompletionClient` against OPENAI_BASE_URL (the test's scripted
  server answers with the same turns and scripted usage), the model calls instrumented by the
  official `opentelemetry-instrumentation-openai-v2` (`OpenAIInstrumentor().instrument()`), whose
  message content goes to the logs signal with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
  and OTEL_LOGS_EXPORTER=otlp (`otel_setup` sets the logger provider up).
"""

import asyncio
import json
import os

import otel_setup
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat, Swarm
from autogen_core import FunctionCall, SingleThreadedAgentRuntime
from autogen_core.models import CreateResult, RequestUsage
from opentelemetry import trace

TASK = {"swarm": "Write two sentences about the moons of Mars.", "roundrobin": "A haiku about Phobos."}
SEARCH_RESULT = "Phobos and Deimos orbit Mars; Phobos is the larger."
ANSWER = "Mars has two small moons, Phobos and Deimos. TERMINATE"
DRAFT = "Phobos falls slowly / a grey stone circling the red / night of an old war"
REVISED = "Phobos falls slowly / grey stone circling the red sky / fear in a small moon"

#: Each agent's model responses in order: text, or tool calls as (name, arguments).
SCRIPT = {
    "planner": [[("transfer_to_researcher", {})]],
    "researcher": [[("search", {"query": "moons of Mars"})], [("transfer_to_writer", {})]],
    "writer": [ANSWER],
    "poet": [DRAFT, REVISED],
    "critic": [[("count_syllables", {"line": "a grey stone circling the red"})], "APPROVE"],
}


def search(query: str) -> str:
    """Search the web."""
    return SEARCH_RESULT


def count_syllables(line: str) -> str:
    """Count the syllables of a line."""
    return "8 syllables; a haiku's middle line has 7"


def replay_client(agent: str):
    from autogen_ext.models.replay import ReplayChatCompletionClient

    results = []
    for n, step in enumerate(SCRIPT[agent]):
        usage = RequestUsage(prompt_tokens=0, completion_tokens=0)
        if isinstance(step, str):
            results.append(CreateResult(finish_reason="stop", content=step, usage=usage, cached=False))
        else:
            calls = [
                FunctionCall(id=f"{agent}-{n}-{i}", name=name, arguments=json.dumps(args))
                for i, (name, args) in enumerate(step)
            ]
            results.append(CreateResult(finish_reason="function_calls", content=calls, usage=usage, cached=False))
    info = {
        "vision": False,
        "function_calling": True,
        "json_output": False,
        "family": "unknown",
        "structured_output": False,
    }
    return ReplayChatCompletionClient(results, model_info=info)


def openai_client(agent: str):
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    # the scripted server knows the agent by its system message; the model name is a known one so
    # that autogen-ext knows its capabilities
    return OpenAIChatCompletionClient(
        model="gpt-4o-mini", base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"]
    )


def team(kind: str, client, runtime):
    if kind == "swarm":
        planner = AssistantAgent(
            "planner", model_client=client("planner"), handoffs=["researcher"], system_message="You are the planner."
        )
        researcher = AssistantAgent(
            "researcher",
            model_client=client("researcher"),
            tools=[search],
            handoffs=["writer"],
            max_tool_iterations=2,
            system_message="You are the researcher.",
        )
        writer = AssistantAgent("writer", model_client=client("writer"), system_message="You are the writer.")
        return Swarm(
            [planner, researcher, writer], termination_condition=TextMentionTermination("TERMINATE"), runtime=runtime
        )
    poet = AssistantAgent("poet", model_client=client("poet"), system_message="You are the poet.")
    critic = AssistantAgent(
        "critic",
        model_client=client("critic"),
        tools=[count_syllables],
        reflect_on_tool_use=False,
        system_message="You are the critic.",
    )
    return RoundRobinGroupChat([poet, critic], termination_condition=TextMentionTermination("APPROVE"), runtime=runtime)


async def run(kind: str, client, provider) -> None:
    # as the AgentChat tracing guide does: the whole run (the agents made, the runtime started)
    # inside one span of the application, so that it is one trace
    with trace.get_tracer("autogen-teams").start_as_current_span("run_team"):
        runtime = SingleThreadedAgentRuntime(tracer_provider=provider)
        runtime.start()
        result = await team(kind, client, runtime).run(task=TASK[kind])
        await runtime.stop_when_idle()
    for message in result.messages:
        print(f"{message.source}: {type(message).__name__}: {message.to_text()}")


def main() -> None:
    provider = otel_setup.setup()
    kind = os.environ.get("AUTOGEN_TEAM", "swarm")
    if os.environ.get("AUTOGEN_MODEL", "replay") == "openai":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument()
        client = openai_client
    else:
        client = replay_client
    asyncio.run(run(kind, client, provider))
    otel_setup.finish(provider)


if __name__ == "__main__":
    main()
