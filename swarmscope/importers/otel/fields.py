"""Trace-level fields of the span mapping: root, name, agents, costs, attributes, labels, scores.

`TraceFields` is the part of the builder (`build._TraceBuilder`) that reads the finished events and
the span tree: it adds no events. The rules: docs/otel-mapping.md, "Trace-level attributes" and
"Evaluations".
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, NamedTuple

from swarmscope.model import Agent, Event, Label

from ..chatlog import TOKENS_ESTIMATED
from . import genai, keys
from .agents import SpanTree
from .genai import Evaluation
from .openinference import tool_names
from .semconv import CREATE, TRACE_ATTRIBUTE_KEYS, WORKFLOW, WORKFLOW_NAME_KEYS, render
from .span import Span, span_memo

#: Token details summed into the trace costs: cost key <- event attribute (`genai.TOKEN_DETAIL_KEYS`).
COST_TOKEN_DETAILS = {
    "cache_read_tokens": "cache_read_input_tokens",
    "cache_creation_tokens": "cache_creation_input_tokens",
    "reasoning_tokens": "reasoning_output_tokens",
}
#: Every span attribute a trace attribute is read from (`TRACE_ATTRIBUTE_KEYS`).
TRACE_ATTRIBUTE_SOURCES = tuple(dict.fromkeys(key for keys_ in TRACE_ATTRIBUTE_KEYS.values() for key in keys_))
EVALUATION_SOURCE = keys.EVALUATION_RESULT_EVENT
#: Agent facts a span states: span attribute -> the fact (`TraceFields._agents`).
AGENT_FACT_KEYS = (
    (keys.AGENT_ID, "id"),
    (keys.AGENT_DESCRIPTION, "description"),
    (keys.SYSTEM_INSTRUCTIONS, "system_prompt"),
)


def agent_facts(span: Span) -> tuple[tuple[str, Any], ...]:
    """(fact, value) of each `AGENT_FACT_KEYS` attribute `span` sets (non-empty), in that order."""
    return tuple((fact, span.attributes[key]) for key, fact in AGENT_FACT_KEYS if span.attributes.get(key))


def workflow_name(span: Span) -> Any:
    """The first `WORKFLOW_NAME_KEYS` attribute `span` sets (non-empty), else None."""
    return next((span.attributes[key] for key in WORKFLOW_NAME_KEYS if span.attributes.get(key)), None)


def span_evaluations(span: Span) -> tuple[tuple[Evaluation, ...], Evaluation | None]:
    """(the `gen_ai.evaluation.result` events of `span`, its own result as an evaluation span)."""
    results, own = tuple(genai.evaluations(span)), genai.span_evaluation(span)
    return NO_EVALUATIONS if not results and own is None else (results, own)


NO_EVALUATIONS: tuple[tuple[Evaluation, ...], None] = ((), None)


class SpanFacts(NamedTuple):
    """What the trace-level fields read from one span alone (`span_facts`)."""

    workflow_name: Any
    agent_facts: tuple[tuple[str, Any], ...]
    evaluations: tuple[tuple[Evaluation, ...], Evaluation | None]


@span_memo
def span_facts(span: Span) -> SpanFacts:
    """`workflow_name`, `agent_facts` and `span_evaluations` of `span`, kept as one memo entry."""
    return SpanFacts(workflow_name(span), agent_facts(span), span_evaluations(span))


class TraceFields(SpanTree):
    """Trace-level fields from the events the builder made (declared here, filled there)."""

    events: list[Event]
    event_span: dict[str, Span]
    appeared: dict[str, float]
    parents: dict[str, str]
    sources: list[str]

    def _root(self) -> Span:
        """The earliest `invoke_workflow` span, else the earliest span without a (received) parent."""
        if WORKFLOW in self.role.values():
            workflow = next((s for s in self.order if not s.missing and self.role[s.sid] == WORKFLOW), None)
            if workflow is not None:
                return workflow
        return next(
            (
                s
                for s in self.order
                if not s.missing and ((parent_id := self.parent[s.sid]) is None or self.by_id[parent_id].missing)
            ),
            self.order[0],
        )

    def _name(self, root: Span) -> str:
        for span in [root] + self.real:
            name = span_facts(span).workflow_name
            if name:
                return str(name)
        if self.role[root.sid] == WORKFLOW:
            return root.name.removeprefix(f"{keys.INVOKE_WORKFLOW} ").strip() or root.name
        return root.name

    def _agents(self) -> list[Agent]:
        """Agents that act or spawn, in order of appearance. Attributes: `named_by` (where the name
        came from), `service` (when one), `id` / `description` (`gen_ai.agent.*`; a `create_agent`
        span's describe the agent it creates), `tools` (the
        tools advertised to its model, OpenInference `llm.tools`); the system prompt from the first
        `gen_ai.system_instructions` of its spans."""
        acting = {e.agent for e in self.events} | set(self.parents)
        services: dict[str, set[str]] = defaultdict(set)
        facts: dict[str, dict[str, Any]] = defaultdict(dict)
        tools: dict[str, list[str]] = defaultdict(list)
        for span in self.order:
            owner = self.owner[span.sid]
            if owner is None:
                continue
            if span.service:
                services[owner].add(span.service)
            stated, advertised = span_facts(span).agent_facts, tool_names(span)
            if not stated and not advertised:
                continue
            if self.role[span.sid] == CREATE:  # it describes the agent it creates
                owner = str(span.attributes.get(keys.AGENT_NAME) or owner)
            for fact, value in stated:
                facts[owner].setdefault(fact, value)
            tools[owner].extend(name for name in advertised if name not in tools[owner])
        agents = []
        for name, first in sorted(self.appeared.items(), key=lambda item: item[1]):
            if name not in acting:
                continue
            known = facts[name]
            attributes: dict[str, Any] = {
                "named_by": self.named_by.get(name, "message"),
                **{key: str(known[key]) for key in ("id", "description") if key in known},
            }
            if len(services[name]) == 1:
                attributes["service"] = next(iter(services[name]))
            if tools[name]:
                attributes["tools"] = tools[name]
            agents.append(
                Agent(
                    name=name,
                    parent=self.parents.get(name),
                    spawned_at=first,
                    system_prompt=render(known.get("system_prompt")),
                    attributes=attributes,
                )
            )
        return agents

    def _costs(self) -> dict[str, float]:
        """tokens: the sum of reported usage, absent where no span reported any (estimates are
        never costs: `swarmscope.tokens`); wall_clock_s, tool_calls; and `cache_read_tokens`,
        `cache_creation_tokens`, `reasoning_tokens` where any span reported them (already counted
        in `tokens`: the spec counts them in the input / output tokens)."""
        reported: int | None = None  # None: no event reported usage
        tool_calls = 0
        counts: dict[str, list[Any]] = defaultdict(list)
        for event in self.events:
            attributes = event.attributes
            if event.tokens is not None and not attributes.get(TOKENS_ESTIMATED):
                reported = event.tokens if reported is None else reported + event.tokens
            if event.type == "tool_call":
                tool_calls += 1
            for attribute in COST_TOKEN_DETAILS.values():
                if attribute in attributes:
                    counts[attribute].append(attributes[attribute])
        end = max(s.end_ns for s in self.real)
        costs: dict[str, float] = {"wall_clock_s": round((end - self.t0) / 1e9, 6), "tool_calls": tool_calls}
        if reported is not None:
            costs = {"tokens": reported, **costs}
        for cost, attribute in COST_TOKEN_DETAILS.items():
            if counts[attribute]:
                costs[cost] = sum(counts[attribute])
        return costs

    def _attributes(self) -> dict[str, Any]:
        """trace_id, sources, spans (count), `start_time_unix_nano` (the origin of `t`),
        conversation/session id, `linked_traces` (other traces this one's span links point to), the
        first input, and `tokens_estimated` when no span reported usage."""
        attributes: dict[str, Any] = {
            "trace_id": self.trace_id,
            "sources": self.sources,
            "spans": len(self.real),
            "start_time_unix_nano": self.t0,
        }
        first: dict[str, Any] = {}  # the first value of each key, in span order
        for span in self.order:
            for key in TRACE_ATTRIBUTE_SOURCES:
                if key not in first and (value := span.attributes.get(key)):
                    first[key] = value
        for name, candidates in TRACE_ATTRIBUTE_KEYS.items():
            value = next((first[key] for key in candidates if key in first), None)
            if value is not None:
                attributes[name] = value
        linked = sorted({k.trace_id for s in self.linking for k in s.links if k.trace_id != self.trace_id})
        if linked:
            attributes["linked_traces"] = linked
        first_input = next((text for s in self.order if not s.missing and (text := self._text(s)[0])), None)
        if first_input is not None:
            attributes["input"] = first_input
        if not any(e.tokens is not None and not e.attributes.get(TOKENS_ESTIMATED) for e in self.events):
            attributes[TOKENS_ESTIMATED] = True
        return attributes

    # -- evaluations

    def _evaluations(self) -> list[tuple[Evaluation, Span]]:
        """(result, the span it is about): `gen_ai.evaluation.result` events on the evaluated span,
        evaluation spans about their parent span (themselves where they have none)."""
        found: list[tuple[Evaluation, Span]] = []
        for span in self.order:
            if span.missing:
                continue
            results, own = span_facts(span).evaluations
            found.extend((result, span) for result in results)
            if own is not None:
                found.append((own, self._parent_span(span) or span))
        return found

    def _labels_and_scores(self) -> tuple[list[Label], dict[str, float]]:
        """Each evaluation result is a label: key = its name ("evaluation" when unnamed), value =
        its score label, else its score; about the first event made from the evaluated span, and its
        agent (where that agent acts). An explanation is a second label, `<name>.explanation`.
        Numeric scores: {name: the mean of that name's scores} (one per trace is usual; per-turn
        results average to one number), the trace's `score_values`; none is a reward by itself
        (`swarmscope.importers.scores.select_reward`)."""
        evaluations = self._evaluations()
        if not evaluations:
            return [], {}
        first_event: dict[str, Event] = {}
        for event in self.events:
            first_event.setdefault(self.event_span[event.id].sid, event)
        agents = {e.agent for e in self.events}
        labels: list[Label] = []
        scores: dict[str, list[float]] = defaultdict(list)
        for result, about in evaluations:
            key = result.name or "evaluation"
            about_event = first_event.get(about.sid)
            event_id = about_event.id if about_event is not None else None
            agent = owner if (owner := self.owner.get(about.sid)) in agents else None
            value: Any = result.label if result.label is not None else result.score
            if value is not None:
                labels.append(Label(key, value, event_id=event_id, agent=agent, source=EVALUATION_SOURCE))
            if result.explanation is not None:
                labels.append(
                    Label(
                        f"{key}.explanation",
                        result.explanation,
                        event_id=event_id,
                        agent=agent,
                        source=EVALUATION_SOURCE,
                    )
                )
            if result.score is not None:
                scores[key].append(result.score)
        return labels, {key: sum(values) / len(values) for key, values in scores.items()}
