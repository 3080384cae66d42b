"""A hierarchical CrewAI crew: CrewAI's manager (built from `manager_llm`) runs both tasks and hands
the work to its two coworkers with CrewAI's "Delegate work to coworker" tool: the Researcher, who
looks the facts up with the `lookup_facts` tool, then the Writer. Memory is off, so nothing embeds.

Instrumented as OpenInference documents for CrewAI: `CrewAIInstrumentor` for the crew, task and
tool spans, plus the instrumentor of the model client underneath. CrewAI 1.x calls OpenAI models
through its native provider, the `openai` SDK (LiteLLM is an optional extra, not installed), so that
is `OpenAIInstrumentor`. The model is OPENAI_BASE_URL (the test's scripted server).
"""

import otel_setup
from openinference.instrumentation.crewai import CrewAIInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor

provider = otel_setup.setup()
CrewAIInstrumentor().instrument(tracer_provider=provider)
OpenAIInstrumentor().instrument(tracer_provider=provider)

from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402

FACTS = "Honeybees communicate the direction of flowers with a waggle dance."


@tool("lookup_facts")
def lookup_facts(topic: str) -> str:
    """Look up verified facts about a topic."""
    return FACTS


def llm() -> LLM:
    return LLM(model="gpt-4o-mini", temperature=0)


researcher = Agent(
    role="Researcher",
    goal="Find accurate facts",
    backstory="You look facts up before you answer.",
    tools=[lookup_facts],
    llm=llm(),
    allow_delegation=False,
)
writer = Agent(
    role="Writer",
    goal="Write clear prose",
    backstory="You turn facts into one clear sentence.",
    llm=llm(),
    allow_delegation=False,
)
research = Task(
    description="Research how honeybees tell each other where flowers are.",
    expected_output="One verified fact.",
)
write = Task(
    description="Write one sentence about honeybee communication for children.",
    expected_output="One sentence.",
)
crew = Crew(
    agents=[researcher, writer],
    tasks=[research, write],
    process=Process.hierarchical,
    manager_llm=llm(),
    memory=False,
    verbose=False,
)
result = crew.kickoff()
print(result.raw)
otel_setup.finish(provider)
