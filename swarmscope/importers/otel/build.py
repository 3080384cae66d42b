"""The event/edge builder: `build_trace` turns one trace id's spans into an orchestration trace.

On the agents that `SpanTree` (agents.py) assigns, it makes the events of each span (LLM turns, tool
calls, hand-offs), the delegations to each invocation (invoker, spawn), the spawn, message, return,
tool_dependency and causal edges; `fields.py` adds the trace-level fields. The rules:
docs/otel-mapping.md. (Over 500 lines: one builder whose passes share the span tree's state.)
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from swarmscope.model import Edge, Event, Trace

from ..chatlog import estimate_missing_tokens
from ..scores import SCORE_VALUES
from . import beeai, exported, genai, keys, langgraph, toolcalls
from .agents import canonical_name
from .fields import TraceFields
from .genai import Transfer
from .openinference import argument_text, handoff_span_target
from .semconv import (
    AGENT,
    CREATE,
    HANDOFF,
    HANDOFF_TOOL_PREFIXES,
    LLM,
    OBJECT_FIELDS_REPR,
    PLAN,
    SPAN_NAME,
    TOOL,
    WORKFLOW,
    entities,
    model_name,
    render,
    span_io,
    tool_name,
    usage,
)
from .span import Span, span_memo

#: `named_by` of agents that invoke another only where they act themselves (a bare service or a
#: span name wrapping the run is no agent).
WEAK_NAMES = ("service", SPAN_NAME)
#: A LangGraph `Command(goto=...)` passes control to the node it names (no return).
GOTO = Transfer(target="", pass_control=True, target_type="agent", mode=keys.PASS_CONTROL)
#: `Span.memo` keys of `_TraceBuilder._message_fields` and `_TraceBuilder._input_sent`.
MESSAGE_FIELDS = f"{__name__}.message_fields"
INPUT_SENT = f"{__name__}.input_sent"


@dataclass
class Delivery:
    """A delegation: `event` (the sender's delegate event) reaching `receiver` in the invocation
    rooted at `root` (None while a broadcast or hand-off waits for its receiver); `returns` False for
    a transfer that passes control (GenAI `pass_control`: no return edge)."""

    event: Event
    sender: str
    receiver: str | None
    root: Span | None = None
    returns: bool = True


#: Event attribute flagging a message whose content is the span's input (no output recorded).
CONTENT_FROM = "content_from"
#: Chat roles of the instructions an agent is given, not a message another agent sends it.
INSTRUCTION_ROLES = ("system", "developer")


@span_memo
def graph_node_parent_id(span: Span) -> str | None:
    """OpenInference's `graph.node.parent_id` of `span` when it is non-empty text, else None."""
    value = span.attributes.get(keys.GRAPH_NODE_PARENT_ID)
    return value if isinstance(value, str) and value else None


@span_memo
def handoff_calls(span: Span) -> tuple[tuple[int, str | None, str, str, str | None, dict[str, Any]], ...]:
    """The hand-off tool calls in a model call's output, of the span alone: (index among the
    output's tool calls, call id, tool name, its hand-off prefix (`transfer_to_` / `handoff_to_`),
    arguments as JSON text, the arguments decoded when they are a JSON object else {}), in order;
    () for most spans (no prefix in the output). `_TraceBuilder._unrecorded_handoffs` matches them
    against the trace's agents."""
    raw = span_io(span)[1]
    text = raw if isinstance(raw, str) else json.dumps(raw, default=str) if raw is not None else ""
    if not any(prefix in text for prefix in HANDOFF_TOOL_PREFIXES):
        return ()
    calls = []
    for index, (call_id, name, arguments) in enumerate(toolcalls.requested_calls(raw)):
        prefix = next((p for p in HANDOFF_TOOL_PREFIXES if name.startswith(p)), None)
        if prefix is None:
            continue
        try:
            decoded = json.loads(arguments) if arguments and arguments.startswith("{") else {}
        except ValueError:
            decoded = {}
        calls.append((index, call_id, name, prefix, arguments, decoded if isinstance(decoded, dict) else {}))
    return tuple(calls)


def build_trace(spans: Iterable[Span], *, source_format: str, trace_id: str, sources: Iterable[str] = ()) -> Trace:
    """The orchestration trace of one trace id's spans, given in any order (chunks merged).

    `trace_id` (hex) becomes `source_id`; `sources` names the files, kept in the trace attributes.
    The result depends on the set of spans only, not on their order; a span id seen twice keeps
    its earliest-starting record. Spans that Swarmscope exported (`exported.is_export`) map back
    to the exported trace. Raises ValueError when there are no spans or a span has no id.
    """
    spans = list(spans)
    if exported.is_export(spans):  # Swarmscope's own export: read back as written
        return exported.build_export(spans, source_format=source_format, trace_id=trace_id, sources=list(sources))
    spans = beeai.fold_event_spans(spans)  # BeeAI's event spans: one span per run (beeai.py)
    return _TraceBuilder(spans, source_format, trace_id, list(sources)).build()


class _TraceBuilder(TraceFields):
    """One use: `build()` creates the events of the span tree (agents assigned), then the edges.

    By event id: `rank` (sort key after `t`), `event_span`, `event_inv` (the invocation the event
    belongs to, for the invoked agent's own events); `inv_events`: (agent, invocation) -> those
    events in lane order. Delegations: `deliveries` (resolved),
    `pending_handoffs`, `pending_broadcasts`; `uninvoked` (span tree root id -> invocation roots
    nobody invoked: group chat turns). Span-level state: `SpanTree`.
    """

    def __init__(self, spans: list[Span], source_format: str, trace_id: str, sources: list[str]):
        super().__init__(spans, trace_id)
        self.source_format, self.sources = source_format, sources
        self.events: list[Event] = []
        self.rank: dict[str, tuple[int, int]] = {}
        self.sort_keys: list[tuple[float, int, int]] = []
        self.end_rank: dict[str, tuple[float, int, int]] = {}
        self.event_span: dict[str, Span] = {}
        self.event_inv: dict[str, str | None] = {}
        self.appeared: dict[str, float] = {}
        self.parents: dict[str, str] = {}
        self.deliveries: list[Delivery] = []
        self.pending_handoffs: list[Delivery] = []
        self.pending_broadcasts: dict[tuple[str, str], Delivery] = {}
        self.uninvoked: dict[str | None, list[Span]] = defaultdict(list)
        self.broadcast_keys: set[tuple[str, str]] = set()
        self.tool_results: list[tuple[Event, Event]] = []
        self.spawns: list[tuple[Event, str]] = []
        self.position: dict[str, int] = {}
        self.lanes: dict[str, list[Event]] = defaultdict(list)
        self.inv_events: dict[tuple[str, str], list[Event]] = defaultdict(list)
        self.lane_starts: dict[str, list[float]] = {}
        self.edge_types: dict[tuple[str, str], str] = {}
        self.node_owner: dict[str, str | None] | None = None
        self.graph_children: bool | None = None  # whether any span sets `graph.node.parent_id`
        self.called_by_id: tuple[dict[str, str], dict[str, str]] | None = None  # `_called_by_id`
        self.tool_call_ids: set[str] | None = None  # `_handoff_recorded`

    def build(self) -> Trace:
        for span in self.order:
            sid = span.sid
            if self.invocation[sid] == sid:
                self._invoke(span)
            elif self.owner[sid] is None and sid in self.message:
                self._broadcast(span)
            self._span_events(span)
        self._turn_events()
        edges = self._edges()
        root = self._root()
        labels, scores = self._labels_and_scores()
        trace = Trace(
            source_format=self.source_format,
            source_id=self.trace_id,
            name=self._name(root),
            system=root.service or "",
            agents=self._agents(),
            events=self.events,
            edges=edges,
            costs=self._costs(),
            attributes=self._attributes(),
            labels=labels,
        )
        if scores:  # evaluation scores are no reward unless one is chosen (scores.select_reward)
            trace.attributes[SCORE_VALUES] = scores
        return trace

    # -- events

    def _t(self, ns: int) -> float:
        """Seconds from the time origin `t0` to `ns` (0 before it): `round(max(ns - t0, 0) / 1e9, 6)`,
        made from the whole microseconds where that is the same float (away from a tie at half a
        microsecond, and within 10^6 s, where the quotient's error is far below a nanosecond)."""
        delta = ns - self.t0
        if delta <= 0:
            return 0.0
        micros, rest = divmod(delta, 1000)
        if rest == 500 or delta >= 10**15:
            return round(delta / 1e9, 6)
        return (micros + (rest > 500)) / 1e6

    def _event(
        self,
        span: Span,
        agent: str,
        type_: str,
        event_id: str,
        *,
        t_ns: int | None = None,
        end_ns: int | None = None,
        attributes: dict[str, Any] | None = None,
        **fields: Any,
    ) -> Event:
        """Add an event made from `span` (its ids go to the attributes); tokens estimated if absent."""
        sid = span.sid
        t = self._t(span.start_ns if t_ns is None else t_ns)
        event_attributes: dict[str, Any] = {
            "span_id": sid,
            "parent_span_id": self.parent[sid],
            "trace_id": span.trace_id,
            "span_name": span.name,
        }
        if span.missing:
            event_attributes["span_missing"] = True
        if step := self.graph.steps.get(sid):  # the LangGraph node, within its agent, it ran in
            event_attributes["graph_node"] = step
        if attributes:
            event_attributes.update(attributes)
        event = estimate_missing_tokens(
            Event(
                id=event_id,
                t=t,
                t_end=None if end_ns is None else max(self._t(end_ns), t),
                type=type_,
                agent=agent,
                attributes=event_attributes,
                **fields,
            )
        )
        kind, index = 0 if type_ == "spawn" else 1, len(self.events)
        self.rank[event_id] = (kind, index)
        self.sort_keys.append((t, kind, index))
        self.events.append(event)
        self.event_span[event_id] = span
        self.event_inv[event_id] = self.invocation[sid] if self.owner[sid] == agent else None
        if agent not in self.appeared:
            self.appeared[agent] = t
        return event

    def _span_events(self, span: Span) -> None:
        """The events of one span by its role (docs/otel-mapping.md, "Events")."""
        agent, role = self.owner[span.sid], self.role[span.sid]
        if agent is None or span.missing:
            return
        transfer = (genai.transfer(span) or self._argument_handoff(span)) if role == TOOL else None
        if role == LLM and not self._has_llm_below(span):
            self._message_event(span, agent)
            self._unrecorded_handoffs(span, agent)
        elif role == PLAN:
            self._message_event(span, agent, type_="orchestrator_decision")
        elif role == CREATE:
            self._create_event(span, agent)
        elif transfer is not None and (transfer.pass_control or not self._runs_other_agent(span)):
            receiver = self.agents_by_canonical.get(canonical_name(transfer.target), transfer.target)
            self._handoff_event(span, agent, receiver, transfer)
        elif role == TOOL and not self._runs_other_agent(span) and not self._repeats_parent_tool(span):
            named = next(iter(self._command_targets(span, agent)), None) or self._handoff_tool_target(span)
            coworker = self.delegated.get(span.sid)
            if named:
                self._handoff_event(span, agent, named)
            elif coworker is not None and coworker != agent:
                self._delegation_seen_from_outside(span, agent, coworker)
            elif self._is_unaddressed_handoff(span):
                self._handoff_event(span, agent, None)
            else:
                self._tool_events(span, agent)
        elif role == HANDOFF:
            target = next((e["to_agent"] for e in entities(span) if e.get("to_agent")), None)
            if target:
                self._handoff_event(span, agent, str(target))
        elif span.sid in self.graph.node_runs:
            for index, target in enumerate(self._command_targets(span, agent)):
                self._handoff_event(span, agent, target, GOTO, event_id=f"{span.sid}:goto:{index}")

    def _has_llm_below(self, span: Span) -> bool:
        """Whether an LLM span of the same agent nests inside this one (keep the innermost call)."""
        if span.sid not in self.children:
            return False
        owner = self.owner[span.sid]
        return any(self.role[kid.sid] == LLM and self.owner[kid.sid] == owner for kid in self._descendants(span))

    def _argument_handoff(self, span: Span) -> Transfer | None:
        """A hand-off tool whose arguments name a known agent in `to_agent`
        (`keys.HANDOFF_TARGET_ARGUMENTS`; LlamaIndex AgentWorkflow's `handoff`): a transfer that
        passes control (the workflow runs that agent next, nothing returns). Else None (an agent
        the workflow does not have: the tool answered an error)."""
        value = argument_text(self._text(span)[0], keys.HANDOFF_TARGET_ARGUMENTS)
        named = self.agents_by_canonical.get(canonical_name(value)) if value else None
        if named is None:
            return None
        return Transfer(target=named, pass_control=True, target_type="agent", mode=keys.PASS_CONTROL)

    def _runs_other_agent(self, span: Span) -> bool:
        """Whether another agent acts inside this tool span (an agent called as a tool)."""
        if span.sid not in self.children:
            return False
        owners = (None, self.owner[span.sid])
        return any(self.owner[kid.sid] not in owners for kid in self._descendants(span))

    def _repeats_parent_tool(self, span: Span) -> bool:
        parent = self._parent_span(span)
        return (
            parent is not None
            and self.role[parent.sid] == TOOL
            and self.owner[parent.sid] == self.owner[span.sid]
            and tool_name(parent) == tool_name(span)
        )

    def _command_targets(self, span: Span, agent: str) -> list[str]:
        """The agents a LangGraph `Command(goto=...)` returned by `span` goes to: the known agents
        its nodes name, other than `agent`; a node task's Command that a tool inside it returned is
        that tool's hand-off, not a second one."""
        goto = langgraph.command_goto(span)
        if not goto:
            return []
        if self.role[span.sid] != TOOL:
            tools = [kid for kid in self._descendants(span) if self.role[kid.sid] == TOOL]
            below = {name for kid in tools for name in langgraph.command_goto(kid)}
            goto = tuple(name for name in goto if name not in below)
        found = [self.agents_by_canonical.get(canonical_name(name)) for name in goto]
        return [name for name in dict.fromkeys(found) if name and name != agent]

    def _handoff_tool_target(self, span: Span) -> str | None:
        """The agent a hand-off tool names: an OpenAI Agents `handoff to <agent>` span's target, else
        for a `transfer_to_…` / `handoff_to_…` tool the known agent that one of its arguments names
        (Google ADK's `transfer_to_agent(agent_name=…)`), else `transfer_to_<agent>` /
        `handoff_to_<agent>` matched against the known agents."""
        target = handoff_span_target(span)
        if target is not None:
            return self.agents_by_canonical.get(canonical_name(target), target)
        name = tool_name(span)
        prefix = next((p for p in HANDOFF_TOOL_PREFIXES if name.startswith(p)), None)
        if prefix is None:
            return None
        arguments: Any = self._text(span)[0]  # as rendered: also arguments a tool-message event holds (Strands)
        if isinstance(arguments, str) and arguments.startswith("{"):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = None
        if isinstance(arguments, dict):
            for value in arguments.values():
                if isinstance(value, str) and (named := self.agents_by_canonical.get(canonical_name(value))):
                    return named
        return self.agents_by_canonical.get(canonical_name(name[len(prefix) :]))

    def _unrecorded_handoffs(self, span: Span, agent: str) -> None:
        """The hand-off tool calls (`transfer_to_…` / `handoff_to_…` naming a known agent, by an
        argument or the name's suffix) in a model call's output that no tool or hand-off span
        records: the framework ran the hand-off without executing a tool (Microsoft Agent
        Framework's handoff workflow ends the agent's run at the `handoff_to_<agent>` call, in
        middleware, with no `execute_tool` span). Each is a hand-off at the model call's end, like
        the tool span would be. Recorded: a tool span with the call's `gen_ai.tool.call.id`, or a
        tool or hand-off span of the same invocation after the call with the tool's name or target."""
        for index, call_id, name, prefix, arguments, decoded in handoff_calls(span):
            named = [self.agents_by_canonical.get(canonical_name(v)) for v in decoded.values() if isinstance(v, str)]
            target = next(filter(None, named), None) or self.agents_by_canonical.get(
                canonical_name(name[len(prefix) :])
            )
            if target is None or target == agent or self._handoff_recorded(span, call_id, name, target):
                continue
            event = self._event(
                span,
                agent,
                "delegate",
                f"{span.sid}:handoff:{index}",
                t_ns=span.end_ns,
                end_ns=span.end_ns,
                from_=agent,
                to=target,
                tool=name,
                content=arguments if decoded else None,
            )
            self.pending_handoffs.append(Delivery(event=event, sender=agent, receiver=target))

    def _handoff_recorded(self, llm: Span, call_id: str | None, name: str, target: str) -> bool:
        """Whether a tool or hand-off span records the hand-off call `name` (to `target`) that the model
        call `llm` made (see `_unrecorded_handoffs`)."""
        if call_id is not None:
            if self.tool_call_ids is None:
                self.tool_call_ids = {
                    str(s.attributes.get(keys.GEN_AI_TOOL_CALL_ID))
                    for s in self.real
                    if self.role[s.sid] in (TOOL, HANDOFF) and s.attributes.get(keys.GEN_AI_TOOL_CALL_ID)
                }
            if call_id in self.tool_call_ids:
                return True
        invocation = self.invocation.get(llm.sid)
        for other in self.members.get(invocation, ()) if invocation else ():
            if self.role[other.sid] not in (TOOL, HANDOFF) or other.start_ns < llm.start_ns:
                continue
            if (
                tool_name(other) == name
                or (handoff_span_target(other) or "")
                and canonical_name(handoff_span_target(other) or "") == canonical_name(target)
            ):
                return True
        return False

    def _is_unaddressed_handoff(self, span: Span) -> bool:
        """Whether `span` is a hand-off tool (`transfer_to_…` / `handoff_to_…`) that records no
        arguments and whose name names no known agent: Google ADK's `transfer_to_agent` with
        content capture off (its default). It hands off to the next agent that starts acting
        without an invoker."""
        return tool_name(span).startswith(HANDOFF_TOOL_PREFIXES) and span_io(span)[0] is None

    @staticmethod
    def _usage_fields(span: Span) -> tuple[int | None, dict[str, Any]]:
        """(tokens, attributes) from usage: tokens = the reported total, else input + output. A
        total is the source's own count (Langfuse takes it as is), with the reasoning / thinking
        tokens that some providers leave out of the output count (Gemini's `thoughts`)."""
        n_in, n_out, n_total = usage(span)
        attributes: dict[str, Any] = {
            key: n for key, n in (("input_tokens", n_in), ("output_tokens", n_out)) if n is not None
        }
        tokens = n_total if n_total is not None else (n_in or 0) + (n_out or 0) if attributes else None
        return tokens, {**attributes, **genai.token_details(span)}

    @staticmethod
    def _status(span: Span) -> dict[str, Any]:
        return {} if span.error is None else {"status": "error", "error": span.error or True}

    def _message_event(
        self,
        span: Span,
        agent: str,
        *,
        t_ns: int | None = None,
        end_ns: int | None = None,
        type_: str = "message",
    ) -> None:
        """A `message` event (or `type_`: a `plan` span's `orchestrator_decision`) of `span` (t,
        t_end: the span's unless given): content its output, else its input flagged `content_from:
        "input"` (an input beside an output is kept as `input`); model, token usage (with cache and
        reasoning token details) and error status kept. An LLM span nested in an LLM span of its
        agent records the same call (Google ADK's legacy `call_llm` → `generate_content`; agno's
        `OpenAIChat.invoke` → `chat gpt-4o-mini`): where it has no content, the enclosing one's
        content (and input) are the call's; where it has no output, the enclosing one's output (its
        own input kept as `input`)."""
        content, tokens, attributes = self._message_fields(span)
        outer = self._parent_span(span)
        while (content is None or CONTENT_FROM in attributes) and outer is not None and self.role[outer.sid] == LLM:
            if self.owner[outer.sid] == agent:
                outer_content, _, outer_attributes = self._message_fields(outer)
                if content is None:
                    content = outer_content
                    kept = {k: v for k, v in outer_attributes.items() if k in ("input", CONTENT_FROM)}
                    attributes = {**attributes, **kept}
                elif outer_content is not None and CONTENT_FROM not in outer_attributes:
                    attributes = {k: v for k, v in attributes.items() if k != CONTENT_FROM}
                    content, attributes["input"] = outer_content, content
            outer = self._parent_span(outer)
        self._event(
            span,
            agent,
            type_,
            span.sid,
            t_ns=t_ns,
            end_ns=span.end_ns if end_ns is None else end_ns,
            content=content,
            tokens=tokens,
            attributes=attributes,
        )

    def _message_fields(self, span: Span) -> tuple[str | None, int | None, dict[str, Any]]:
        """(content, tokens, attributes) of a message event made from `span`: of the span alone,
        kept in `span.memo` where it has one (the attributes are read, never changed)."""
        memo = span.memo
        found = memo.get(MESSAGE_FIELDS) if memo is not None else None
        if found is None:
            text_in, text_out = self._text(span)
            tokens, attributes = self._usage_fields(span)
            model = model_name(span)
            if model:
                attributes["model"] = model
            if text_out is None and text_in is not None:
                attributes[CONTENT_FROM] = "input"
            elif text_in is not None:
                attributes["input"] = text_in
            attributes.update(self._status(span))
            found = (text_out if text_out is not None else text_in, tokens, attributes)
            if memo is not None:
                memo[MESSAGE_FIELDS] = found
        return found

    def _tool_events(self, span: Span, agent: str) -> None:
        text_in, text_out = self._text(span)
        if text_in is None or (text_out is None and span.error is None):
            text_in, text_out = self._called_by_id(span, text_in, text_out)
        tool = tool_name(span)
        call = self._event(span, agent, "tool_call", span.sid, end_ns=span.end_ns, content=text_in, tool=tool)
        if text_out is not None or span.error is not None:
            result = self._event(
                span,
                agent,
                "tool_result",
                f"{span.sid}:result",
                t_ns=span.end_ns,
                content=text_out,
                tool=tool,
                attributes=self._status(span),
            )
            self.tool_results.append((call, result))

    def _called_by_id(self, span: Span, text_in: str | None, text_out: str | None) -> tuple[str | None, str | None]:
        """(arguments, result) of a tool span that lacks them, from the model calls that asked for
        and answered its `gen_ai.tool.call.id` (`toolcalls`); what the span has is kept."""
        call_id = span.attributes.get(keys.GEN_AI_TOOL_CALL_ID)
        if not isinstance(call_id, str) or not call_id:
            return text_in, text_out
        if self.called_by_id is None:
            self.called_by_id = toolcalls.index(s for s in self.order if self.role[s.sid] == LLM)
        arguments, results = self.called_by_id
        return (text_in if text_in is not None else arguments.get(call_id)), (
            text_out if text_out is not None else results.get(call_id)
        )

    def _handoff_event(
        self,
        span: Span,
        agent: str,
        target: str | None,
        transfer: Transfer | None = None,
        *,
        event_id: str | None = None,
    ) -> None:
        """A hand-off span or tool (or a GenAI transfer): a delegate event waiting for the target's
        next invocation, its content the span's input (none for an OpenAI Agents `handoff to` span,
        whose input is the source agent's name); a transfer keeps `transfer_mode` and `target_type`.
        Without a `target` it waits, like a broadcast, for the next agent that starts acting without
        an invoker. A LangGraph node's `Command(goto=...)` (`event_id` given) hands off as the node
        ends, with no content (the node's input is not what it sends)."""
        extra: dict[str, Any] = {}
        if transfer is not None:
            extra = {"transfer_mode": transfer.mode}
            if transfer.target_type:
                extra["target_type"] = transfer.target_type
        event = self._event(
            span,
            agent,
            "delegate",
            event_id or span.sid,
            t_ns=span.end_ns if event_id else None,
            end_ns=span.end_ns,
            from_=agent,
            to=target,
            tool=tool_name(span) if self.role[span.sid] == TOOL else None,
            attributes=extra,
            content=None if event_id or handoff_span_target(span) else self._text(span)[0],
        )
        returns = transfer is None or not transfer.pass_control
        delivery = Delivery(event=event, sender=agent, receiver=target, returns=returns)
        if target is None:
            self.pending_broadcasts[(agent, span.sid)] = delivery
        else:
            self.pending_handoffs.append(delivery)

    def _delegation_seen_from_outside(self, span: Span, sender: str, receiver: str) -> None:
        """A delegation tool span (its arguments name the receiver: `SpanTree.delegated`) with
        nothing of the receiver's inside (only the delegating side instrumented): a delegate event
        (content: the tool's arguments) and the receiver's turn as the sender saw it, spanning the
        tool span (content: the tool's result), which returns to the sender."""
        text_in, text_out = self._text(span)
        self._spawn(sender, receiver, span, span.start_ns)
        event = self._event(
            span,
            sender,
            "delegate",
            f"{span.sid}:delegate",
            content=text_in,
            from_=sender,
            to=receiver,
            tool=tool_name(span),
        )
        self.deliveries.append(Delivery(event=event, sender=sender, receiver=receiver, root=span))
        if text_out is not None or span.error is not None:
            turn = self._event(
                span,
                receiver,
                "message",
                f"{span.sid}:turn",
                end_ns=span.end_ns,
                content=text_out,
                attributes=self._status(span),
            )
            self.event_inv[turn.id] = span.sid  # the receiver's turn at this span (its return)

    def _create_event(self, span: Span, agent: str) -> None:
        """A GenAI `create_agent` span: its agent (the creator) spawns the agent it names, where the
        creator acts or is named (not a bare service)."""
        created = span.attributes.get(keys.AGENT_NAME)
        if not isinstance(created, str) or not created or created == agent:
            return
        if agent in self.acting or self.named_by.get(agent) not in WEAK_NAMES:
            self.named_by.setdefault(created, keys.AGENT_NAME)
            self._spawn(agent, created, span, span.start_ns)

    def _turn_events(self) -> None:
        """An invocation without LLM or tool events is one turn: a `message` event spanning it, made
        from its outermost span (not LLM or tool) with an output, else from its outermost agent span
        that names its agent (`_names_owner`; content: that span's input). Agents instrumented only
        at agent level (`invoke_agent` spans without chat or tool children) act by these turns."""
        acted = set(filter(None, self.event_inv.values()))
        for root in self.order:
            root_id = root.sid
            if root_id not in self.productive or root_id in acted:
                continue
            spans = [s for s in self.members[root_id] if not s.missing and self.role[s.sid] in (AGENT, None)]
            turn = next((s for s in spans if self._text(s)[1] is not None), None) or next(
                (s for s in spans if self._names_owner(s)), None
            )
            if turn is not None:
                owner = cast(str, self.owner[root_id])  # an invocation's root has an owner
                self._message_event(turn, owner, t_ns=root.start_ns, end_ns=root.end_ns)

    # -- delegations

    def _invoke(self, root: Span) -> None:
        """Find who invoked the invocation rooted at `root` (docs/otel-mapping.md,
        "Invocations and invokers")."""
        agent = cast(str, self.owner[root.sid])  # `build` invokes only invocation roots, which have owners
        sender = self._sender(root)
        if root.sid not in self.productive and not sender:
            return
        start = self._t(root.start_ns)
        parent = self._parent_span(root)
        enclosing = self.owner[parent.sid] if parent is not None else None
        handoffs = [d for d in self.pending_handoffs if d.receiver == agent and d.event.t <= start]
        if sender:  # a message that a pending hand-off of the same sender made is that hand-off
            handoffs = [d for d in handoffs if d.sender == sender]
        if sender and not handoffs:
            self._delegate(sender, agent, root)
        elif handoffs:
            for delivery in handoffs:
                self.pending_handoffs.remove(delivery)
                self._deliver(delivery, agent, root)
        elif graph_parent := self._graph_parent(root, agent):
            self._delegate(graph_parent, agent, root)
        elif enclosing not in (None, agent) and (
            enclosing in self.acting or self.named_by[enclosing] not in WEAK_NAMES
        ):
            self._delegate(enclosing, agent, root)
        else:
            delivered = False
            for key, delivery in list(self.pending_broadcasts.items()):
                if delivery.sender != agent and delivery.event.t <= start:
                    del self.pending_broadcasts[key]
                    delivery.event.to = agent
                    self._deliver(delivery, agent, root)
                    delivered = True
            if not delivered:
                self.uninvoked[self._tree_root(root)].append(root)
        self.appeared.setdefault(agent, start)

    def _graph_parent(self, root: Span, agent: str) -> str | None:
        """The agent OpenInference's `graph.node.parent_id` names on the invocation's spans (the node
        that handed over to this one: a node id of another span's agent, or an agent's name)."""
        if self.graph_children is None:
            self.graph_children = any(keys.GRAPH_NODE_PARENT_ID in span.attributes for span in self.real)
        if not self.graph_children:
            return None
        parent_id = next(
            (value for span in self.members[root.sid] if (value := graph_node_parent_id(span))),
            None,
        )
        if parent_id is None:
            return None
        if self.node_owner is None:  # the first owner of each `graph.node.id`, in span order
            self.node_owner = {}
            for span in self.order:
                node_id = span.attributes.get(keys.GRAPH_NODE_ID)
                if isinstance(node_id, str) and node_id not in self.node_owner:
                    self.node_owner[node_id] = self.owner[span.sid]
        found = self.node_owner.get(parent_id) or self.agents_by_canonical.get(canonical_name(parent_id))
        return found if found and found != agent else None

    def _delegate(self, sender: str, receiver: str, root: Span) -> None:
        """A delegate event of `sender` at the start of `receiver`'s invocation; its content is the
        first input of the invocation's agent (not LLM or tool) spans, else the input of the span
        that called it: the nearest enclosing span with an input, up to the sender's first agent,
        LLM or tool span (an agent-as-tool's tool span above the sub-run's content-free wrappers:
        OpenAI Agents' `Agent workflow`, Google ADK's nested `invoke_workflow`); where that span is a
        tool call with arguments, its arguments (before the input of a wrapper between: Google
        ADK's runner `invocation [app]`). See `_message_content` for Agent Framework messages."""
        content, attributes = self._message_content(root)
        if content is None and not attributes:
            content = next(
                (
                    text
                    for span in self.members[root.sid]
                    if self.role[span.sid] in (AGENT, None) and (text := self._input_sent(span))
                ),
                None,
            )
        caller, nearest = self._parent_span(root), None
        while content is None and not attributes and caller is not None:
            text = self._text(caller)[0]
            if self.owner[caller.sid] == sender and self.role[caller.sid] not in (None, WORKFLOW):
                content = text if self.role[caller.sid] == TOOL and text is not None else nearest or text
                break
            nearest = nearest or text
            caller = self._parent_span(caller)
        if content is None and not attributes:
            content = nearest
        self.appeared.setdefault(sender, self._t(root.start_ns))
        self._spawn(sender, receiver, root, root.start_ns)
        event = self._event(
            root,
            sender,
            "delegate",
            f"{root.sid}:delegate",
            content=content,
            from_=sender,
            to=receiver,
            attributes=attributes,
        )
        self.deliveries.append(Delivery(event=event, sender=sender, receiver=receiver, root=root))

    def _input_sent(self, span: Span) -> str | None:
        """The input of an invoked agent's span as its invoker sent it: where it is chat messages, those
        but the system / developer ones (the agent's own instructions, which its spans record beside
        the task: Strands' `invoke_agent` events); none where it is the bound arguments of a
        framework method that hold the framework's objects as reprs (`{"run_response":
        "RunResponse(content=None, …)", …}`: openinference-instrumentation-agno 0.1 records `Agent._run`
        so; the caller's tool arguments are then the content); else the span's input as text."""
        memo = span.memo
        if memo is not None and INPUT_SENT in memo:
            return memo[INPUT_SENT]
        sent = self._text(span)[0]
        raw = span_io(span)[0]
        if isinstance(raw, str) and raw.startswith(("[", "{")):
            try:
                raw = json.loads(raw)
            except ValueError:
                raw = None
        if isinstance(raw, dict) and any(isinstance(v, str) and OBJECT_FIELDS_REPR.match(v) for v in raw.values()):
            sent = None  # a framework method's bound arguments holding its own objects: nothing sent
        elif isinstance(raw, list) and any(isinstance(m, dict) and m.get("role") in INSTRUCTION_ROLES for m in raw):
            sent = render([m for m in raw if not (isinstance(m, dict) and m.get("role") in INSTRUCTION_ROLES)])
        if memo is not None:
            memo[INPUT_SENT] = sent
        return sent

    def _deliver(self, delivery: Delivery, receiver: str, root: Span) -> None:
        """A waiting hand-off or broadcast reaches `receiver`'s invocation at `root`."""
        delivery.receiver, delivery.root = receiver, root
        self._spawn(delivery.sender, receiver, root, self.event_span[delivery.event.id].start_ns)
        self.deliveries.append(delivery)

    def _broadcast(self, span: Span) -> None:
        """A message to an executor that no name identifies: one waiting delegate per send."""
        message = self.message[span.sid]
        key = (message.sender or "", message.key or span.sid)
        if not message.sender or key in self.broadcast_keys:
            return
        self.broadcast_keys.add(key)
        content, attributes = self._message_content(span)
        event = self._event(
            span,
            message.sender,
            "delegate",
            f"{span.sid}:delegate",
            content=content,
            from_=message.sender,
            attributes=attributes,
        )
        self.pending_broadcasts[key] = Delivery(event=event, sender=message.sender, receiver=None)

    def _message_content(self, span: Span) -> tuple[str | None, dict[str, Any]]:
        """(content, attributes) of the message `span` received. An Agent Framework
        `WorkflowMessage` is a Python repr naming objects, not their text: it is kept as the
        attribute `message`, with no content."""
        message = self.message.get(span.sid)
        if message is not None and message.workflow:
            return None, {"message": self._text(span)[0]}
        return None, {}

    def _spawn(self, sender: str, receiver: str, root: Span, t_ns: int) -> None:
        """The first invocation of `receiver` by another agent spawns it: a spawn event, a parent."""
        if receiver in self.appeared or receiver == sender:
            return
        self.parents[receiver] = sender
        event = self._event(root, sender, "spawn", f"{root.sid}:spawn", t_ns=t_ns, from_=sender, to=receiver)
        self.appeared[receiver] = event.t
        self.spawns.append((event, receiver))

    # -- edges

    def _edges(self) -> list[Edge]:
        """Sort the events, then add spawn, message, return, tool_dependency and causal edges
        (the first type given to a pair wins); only edges pointing forward in that order are kept."""
        events, keys_ = self.events, self.sort_keys  # (t, *rank) of each event, in creation order
        self.events[:] = [events[i] for i in sorted(range(len(events)), key=keys_.__getitem__)]
        position, end_rank, rank, event_inv = self.position, self.end_rank, self.rank, self.event_inv
        for index, event in enumerate(self.events):
            event_id = event.id
            position[event_id] = index
            end_rank[event_id] = (event.t if event.t_end is None else event.t_end, *rank[event_id])
            self.lanes[event.agent].append(event)
            if inv := event_inv[event_id]:
                self.inv_events[(event.agent, inv)].append(event)
        self.lane_starts = {agent: [e.t for e in lane] for agent, lane in self.lanes.items()}
        for spawn, agent in self.spawns:
            self._add(spawn, self._next_of(agent, spawn, spawn.t), "spawn")
        returns: dict[str, set[str]] = defaultdict(set)
        for delivery in self.deliveries:
            root = cast(Span, delivery.root)  # `_delegate` and `_deliver` set the root of each delivery
            root_id = root.sid
            own = self.inv_events.get((delivery.receiver or "", root_id), [])
            first = own[0] if own else self._next_of(delivery.receiver, delivery.event, delivery.event.t)
            self._add(delivery.event, first, "message")
            if own:
                self._return(delivery, root, own, returns)
        for event in self.events:
            if event.type == "message" and len(returns.get(event.id, ())) >= 2:
                event.type = "aggregate"
        for call, result in self.tool_results:
            self._add(call, result, "tool_dependency")
        self._chained_turns()
        self._linked_spans()
        self._group_chat_turns()
        for delivery in self.pending_broadcasts.values():
            delivery.event.type = "message"
        return [Edge(src, dst, type_) for (src, dst), type_ in self.edge_types.items()]

    def _add(self, src: Event, dst: Event | None, type_: str) -> None:
        if dst is not None and self.position[src.id] < self.position[dst.id]:
            self.edge_types.setdefault((src.id, dst.id), type_)

    def _next_of(self, agent: str | None, after: Event, t: float) -> Event | None:
        """The first event of `agent` starting at or after `t` that comes after `after`."""
        if not agent:
            return None
        lane = self.lanes.get(agent)
        if not lane:
            return None
        position, after_position = self.position, self.position[after.id]
        for index in range(bisect_left(self.lane_starts[agent], t), len(lane)):
            if position[lane[index].id] > after_position:
                return lane[index]
        return None

    def _last(self, events: list[Event]) -> Event:
        """The event of `events` that ends last (ties: the last in rank)."""
        end_rank = self.end_rank
        return max(events, key=lambda e: end_rank[e.id])

    def _return(self, delivery: Delivery, root: Span, own: list[Event], returns: dict[str, set[str]]) -> None:
        """The last event of the invocation at `root` (`delivery.root`) returns to the sender's next
        event after it ends, else to the next event of the agent whose span encloses it; a `message`
        becomes a `return` event.
        `returns` collects, per receiving event, the agents that returned to it."""
        last = self._last(own)
        end = self._t(root.end_ns)
        parent = self._parent_span(root)
        enclosing = self.owner[parent.sid] if parent is not None else None
        target = self._next_of(delivery.sender, last, end)
        if target is None and enclosing not in (None, delivery.receiver):
            target = self._next_of(enclosing, last, end)
        if target is None or not delivery.returns:
            return
        self._add(last, target, "return")
        returns[target.id].add(last.agent)
        if last.type == "message":
            last.type, last.from_, last.to = "return", last.agent, target.agent

    def _chained_turns(self) -> None:
        """`causal` edges along `from_agent_span_id`: the last event of the turn run at that span ->
        the delegate delivered at the span that names it, else that span's first event."""
        turns: dict[str, list[Event]] = defaultdict(list)
        delivered: dict[str, Event] = {}
        for event in self.events:
            if inv := self.event_inv[event.id]:
                turns[inv].append(event)
            elif event.type == "delegate":
                delivered.setdefault(self.event_span[event.id].sid, event)
        for sid, message in self.message.items():
            before = turns.get(message.from_span or "")
            after = delivered.get(sid) or (turns[sid][0] if turns.get(sid) else None)
            if before and after is not None:
                self._add(self._last(before), after, "causal")

    def _linked_spans(self) -> None:
        """Span links within the trace: a `causal` edge from the last event made from the linked
        span (or below it) to the first event of the linking span's agent made from it (or below
        it; else its first event)."""
        linking = {s.sid: k.span_id for s in self.linking for k in s.links if k.trace_id == self.trace_id}
        wanted = set(linking) | set(linking.values())
        if not linking:
            return
        below: dict[str, list[Event]] = defaultdict(list)
        for event in self.events:
            sid: str | None = self.event_span[event.id].sid
            while sid is not None:
                if sid in wanted:
                    below[sid].append(event)
                sid = self.parent.get(sid)
        for source, target in linking.items():
            before, after = below.get(target), below.get(source)
            if before and after:
                own = [e for e in after if e.agent == self.owner[source]] or after
                last = self._last(before)
                self._add(last, min(own, key=lambda e: self.position[e.id]), "causal")

    def _group_chat_turns(self) -> None:
        """Invocations in one span tree that nobody invoked (under a team, workflow or runtime
        span that is no agent) are the turns of a group chat when two or more agents take them
        one after another: the next speaker receives each turn (AutoGen's round robin). The last
        event of a turn gets a `message` edge to the next turn's first event, and a `message`
        event its receiver in `to`; a turn that starts before the previous one ends is no reply."""
        for roots in self.uninvoked.values():
            if len({self.owner[r.sid] for r in roots}) < 2:
                continue
            for before, after in zip(roots, roots[1:]):
                sender, receiver = self.owner[before.sid], self.owner[after.sid]
                if sender == receiver or after.start_ns < before.end_ns:
                    continue
                before_id, after_id = before.sid, after.sid
                said = self.inv_events.get((sender or "", before_id), [])
                heard = self.inv_events.get((receiver or "", after_id), [])
                if not said or not heard:
                    continue
                last = self._last(said)
                self._add(last, heard[0], "message")
                if last.type == "message" and last.to is None:
                    last.to = receiver
