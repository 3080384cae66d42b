"""Microsoft Agent Framework, a hand-off workflow, with the framework's own OpenTelemetry spans
(sensitive data on), exported over OTLP/HTTP: the trace holds what
programs/agent_framework_handoff.py did, written here by hand from the program."""

import json

from tests.frameworks import facts
from tests.frameworks.scripted_openai import Call, ModelRequest, Reply, Usage

ANSWER = "Done: order 42 is refunded."
TRIAGE = Reply(calls=(Call("handoff_to_billing", {}),), usage=Usage(101, 7))
BILLING = [
    Reply(calls=(Call("refund", {"order_id": "42"}),), usage=Usage(151, 9)),
    Reply(ANSWER, usage=Usage(181, 11)),
]


def script(request: ModelRequest) -> Reply:
    if request.system.startswith("You are triage"):
        return TRIAGE
    assert request.system.startswith("You are billing"), request
    return BILLING[1] if request.says("Refunded order 42") else BILLING[0]


def test_handoff_workflow(run_program):
    ran = run_program("agent-framework", "agent_framework_handoff", script, env={"OTEL_SERVICE_NAME": "desk"})
    assert ran.stdout.strip().splitlines()[-1] == ANSWER
    assert len(ran.model_requests) == 3
    # the framework traces building the workflow apart (`workflow.build`, a trace of its own): no agents
    by_name = {t.name: t for t in ran.traces}
    assert sorted(by_name) == ["support_desk", "workflow.build"]
    assert (by_name["workflow.build"].agents, by_name["workflow.build"].events) == ([], [])
    trace = by_name["support_desk"]

    # the two agents (not the executors' messaging spans, not the service)
    assert sorted(facts.agents(trace)) == ["billing", "triage"]
    # triage's `handoff_to_billing` call (the framework records no tool span for it) hands off
    assert facts.delegations(trace) == [("triage", "billing")]
    assert facts.spawns(trace) == [("triage", "billing")]
    (handoff,) = [e for e in trace.events if e.type == "delegate"]
    assert handoff.tool == "handoff_to_billing"
    handed = [(s.agent, d.agent) for s, d in facts.edges_of(trace, "message") if s.type == "delegate"]
    assert handed == [("triage", "billing")]
    calls = [(agent, tool, json.loads(args)) for agent, tool, args in facts.tool_calls(trace)]
    assert calls == [("billing", "refund", {"order_id": "42"})]
    assert facts.tool_results(trace) == [("billing", "refund", "Refunded order 42")]
    assert facts.said(trace) == [
        ("triage", "handoff_to_billing({})"),
        ("billing", 'refund({"order_id": "42"})'),
        ("billing", ANSWER),
    ]
    # tokens: each model call once (the `invoke_agent` spans' sums are not added again)
    tokens = sum(r.usage.input + r.usage.output for r in [TRIAGE, *BILLING])
    assert facts.measured_tokens(trace) == tokens
    assert trace.costs["tokens"] == tokens


def test_handoff_workflow_without_sensitive_data(run_program):
    """The framework's default: no content on spans. The agents, the tool and the tokens are still
    there, and so is the hand-off: nothing records the `handoff_to_billing` call, but the
    workflow's own spans do record the message it sent, from the triage executor to billing's
    (docs/otel-mapping.md, "Messages between agents")."""
    ran = run_program(
        "agent-framework",
        "agent_framework_handoff",
        script,
        env={"OTEL_SERVICE_NAME": "desk", "AF_SENSITIVE_DATA": "false"},
    )
    assert ran.stdout.strip().splitlines()[-1] == ANSWER
    trace = next(t for t in ran.traces if t.name == "support_desk")
    assert sorted(facts.agents(trace)) == ["billing", "triage"]
    assert [(agent, tool) for agent, tool, _ in facts.tool_calls(trace)] == [("billing", "refund")]
    assert facts.delegations(trace) == [("triage", "billing")]
    assert facts.spawns(trace) == [("triage", "billing")]
    handed = [(s.agent, s.type, d.agent) for s, d in facts.edges_of(trace, "message")]
    assert handed == [("triage", "delegate", "billing")]
    assert facts.measured_tokens(trace) == sum(r.usage.input + r.usage.output for r in [TRIAGE, *BILLING])
