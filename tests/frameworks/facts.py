"""Facts of an orchestration trace as a test states them by hand from a framework program: who the
agents are, who delegated or handed off to whom, the tool calls, what each agent said, the tokens."""

from __future__ import annotations

from typing import Any

#: Event types that carry work from one agent to another.
DELEGATIONS = ("delegate", "spawn")


def agents(trace) -> list[str]:
    """Agent names in the trace's order."""
    return [a.name for a in trace.agents]


def delegations(trace) -> list[tuple[str, str]]:
    """`(agent, to)` of each delegate event, in time order."""
    return [(e.agent, e.to) for e in _ordered(trace) if e.type == "delegate"]


def spawns(trace) -> list[tuple[str, str]]:
    return [(e.agent, e.to) for e in _ordered(trace) if e.type == "spawn"]


def tool_calls(trace) -> list[tuple[str, str, str | None]]:
    """`(agent, tool, arguments content)` of each tool call, in time order."""
    return [(e.agent, e.tool, e.content) for e in _ordered(trace) if e.type == "tool_call"]


def tool_results(trace) -> list[tuple[str, str, str | None]]:
    return [(e.agent, e.tool, e.content) for e in _ordered(trace) if e.type == "tool_result"]


def said(trace) -> list[tuple[str, str | None]]:
    """`(agent, content)` of each turn (message, return, aggregate, decision), in time order."""
    kinds = ("message", "return", "aggregate", "orchestrator_decision")
    return [(e.agent, e.content) for e in _ordered(trace) if e.type in kinds]


def measured_tokens(trace) -> int:
    """The tokens the trace reports as measured: events not flagged `tokens_estimated`."""
    return sum(e.tokens or 0 for e in trace.events if not e.attributes.get("tokens_estimated"))


def edges_of(trace, kind: str) -> list[tuple[Any, Any]]:
    """`(src event, dst event)` of the edges of one type."""
    by_id = {e.id: e for e in trace.events}
    return [(by_id[x.src], by_id[x.dst]) for x in trace.edges if x.type == kind]


def _ordered(trace):
    return sorted(trace.events, key=lambda e: (e.t, trace.events.index(e)))
