"""Microsoft Agent Framework, a hand-off workflow (`HandoffBuilder`, agent-framework-orchestrations):
triage hands off to billing with the `handoff_to_billing` tool the workflow gives it; billing
refunds the order (function tool `refund`) and answers; the workflow ends when billing has answered
(a termination condition, so it asks no user for more).

Agent Framework's own OpenTelemetry spans, as its observability docs say for an application that
set its providers up itself: `enable_instrumentation(enable_sensitive_data=...)`, content on spans
unless AF_SENSITIVE_DATA=false (the framework's default: no content).
The model is the framework's `OpenAIChatCompletionClient` at OPENAI_BASE_URL (the test's server)."""

import asyncio
import os

import otel_setup

provider = otel_setup.setup()

from agent_framework import Agent, tool  # noqa: E402
from agent_framework.observability import enable_instrumentation  # noqa: E402
from agent_framework.openai import OpenAIChatCompletionClient  # noqa: E402
from agent_framework.orchestrations import HandoffBuilder  # noqa: E402

enable_instrumentation(enable_sensitive_data=os.environ.get("AF_SENSITIVE_DATA", "true") == "true")


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"Refunded order {order_id}"


def client():
    return OpenAIChatCompletionClient(model="gpt-4o-mini")


triage = Agent(
    client=client(),
    name="triage",
    instructions="You are triage. Route the customer.",
    require_per_service_call_history_persistence=True,
)
billing = Agent(
    client=client(),
    name="billing",
    instructions="You are billing.",
    tools=[refund],
    require_per_service_call_history_persistence=True,
)


def billing_answered(conversation) -> bool:
    return any(m.author_name == "billing" and m.role == "assistant" and m.text for m in conversation)


workflow = (
    HandoffBuilder(name="support_desk", participants=[triage, billing], termination_condition=billing_answered)
    .with_start_agent(triage)
    .build()
)


async def main():
    result = await workflow.run("Please refund order 42.")
    texts = [o for o in result.get_outputs()]
    print(texts[-1].text if texts and hasattr(texts[-1], "text") else texts)


asyncio.run(main())
otel_setup.finish(provider)
