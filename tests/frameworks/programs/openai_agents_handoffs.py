"""OpenAI Agents SDK, instrumented with OpenInference (OpenAIAgentsInstrumentor, as its README says).

triage looks an order up (function tool), asks the translator (an agent used as a tool), then hands
off to billing, which refunds (function tool) and hands off to support, which answers. The model API
is AGENTS_API: `responses` (the SDK's default) or `chat_completions`, at OPENAI_BASE_URL.
"""

import asyncio
import os

import otel_setup

provider = otel_setup.setup()

from agents import Agent, Runner, function_tool, set_default_openai_api  # noqa: E402
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402

OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
set_default_openai_api(os.environ.get("AGENTS_API", "responses"))


@function_tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return f"Order {order_id}: shipped 3 days late"


@function_tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"Refunded order {order_id}"


support = Agent(name="support", instructions="You are support. Answer the customer.", model="gpt-4o-mini")
billing = Agent(
    name="billing", instructions="You are billing.", tools=[refund], handoffs=[support], model="gpt-4o-mini"
)
translator = Agent(name="translator", instructions="You translate to French.", model="gpt-4o-mini")
triage = Agent(
    name="triage",
    instructions="You are triage.",
    tools=[lookup_order, translator.as_tool(tool_name="translate", tool_description="Translate to French")],
    handoffs=[billing],
    model="gpt-4o-mini",
)

result = asyncio.run(Runner.run(triage, "Order 42 is late. Also, how do I say 'thanks' in French?"))
print(result.final_output)
otel_setup.finish(provider)
