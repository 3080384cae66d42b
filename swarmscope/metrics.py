"""Metrics of an orchestration trace (docs/architecture.md "Metrics"; survey arXiv 2605.02801, §9).

Every metric is a pure function of a `Trace`, or of a `TraceGraph` already built from one
(`compute_metrics` builds it once: sorting the events, O(V log V)). Structural terms (causal DAG,
time order, orchestrator, sub-agent, spawn tree, final answer) are defined in `swarmscope.graph`.
Ratios are plain floats, None where their denominator is empty; times are seconds; counts are
ints. Each metric runs in O(V + E + A log A) on the built graphs, error amplification aside.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from swarmscope.graph import TraceGraph, longest_path, spawn_roots
from swarmscope.model import Event, Trace, estimate_tokens

#: Event types whose tokens count as protocol overhead (survey §9).
PROTOCOL_EVENT_TYPES = frozenset({"message", "delegate", "return", "aggregate"})
#: Label keys that mark their `event_id` as corrupted (Who&When's `mistake_step` and kin).
CORRUPTION_LABEL_KEYS = frozenset({"mistake_step", "mistake", "error", "corrupted"})
#: Serial collapse: critical steps at least this share of all steps (docs/architecture.md "Metrics").
SERIAL_COLLAPSE_SHARE = 0.9


# --- per-event quantities -------------------------------------------------------------------


def event_duration(event: Event) -> float:
    """`t_end - t` in seconds; 0.0 when `t_end` is missing."""
    return event.t_end - event.t if event.t_end is not None else 0.0


def has_durations(trace: Trace) -> bool:
    """Whether any event has a positive duration (else duration metrics fall back to counts)."""
    return any(event.t_end is not None and event.t_end > event.t for event in trace.events)


def event_tokens(event: Event) -> int:
    """The event's `tokens`, else its content estimated at characters / 4 (docs/architecture.md "Metrics")."""
    return event.tokens if event.tokens is not None else estimate_tokens(event.content)


def is_failed_tool_result(event: Event) -> bool:
    """A `tool_result` whose attributes carry a truthy `error` or `status` "error" (any case)."""
    if event.type != "tool_result":
        return False
    status = event.attributes.get("status")
    return bool(event.attributes.get("error")) or (isinstance(status, str) and status.casefold() == "error")


def corrupted_events(trace: Trace) -> set[str]:
    """Ids of corrupted events: labelled (a key of CORRUPTION_LABEL_KEYS with an `event_id`, any
    value but False) or failed tool results (`is_failed_tool_result`)."""
    labelled = {
        label.event_id
        for label in trace.labels
        if label.event_id is not None and label.key in CORRUPTION_LABEL_KEYS and label.value is not False
    }
    return labelled | {event.id for event in trace.events if is_failed_tool_result(event)}


# --- metrics ----------------------------------------------------------------------------------


def critical_steps(source: Trace | TraceGraph) -> int | None:
    """Critical steps (Kimi K2.5, PARL): CS = Σ_t (S_main(t) + max_i S_sub,i(t)).

    Stage t runs from one orchestrator event to the next (time order; events before the first
    form stage 0, with S_main = 0), so S_main(t) = 1 otherwise; S_sub,i(t) counts the events of
    sub-agent i starting in stage t. Each event counts in its own agent's lane (a grandchild is
    a lane of its own). Units: events. None when the trace has no orchestrator: without one
    there are no stages.
    """
    graph = TraceGraph.of(source)
    if not graph.orchestrators:
        return None
    total, main = 0, 0
    lanes: Counter[str] = Counter()
    for event in graph.order:
        if event.agent in graph.orchestrators:
            total += main + max(lanes.values(), default=0)
            main, lanes = 1, Counter()
        else:
            lanes[event.agent] += 1
    return total + main + max(lanes.values(), default=0)


def critical_path(source: Trace | TraceGraph) -> tuple[float, list[str]]:
    """T_parallel (survey §9): the longest path through the causal DAG, weighing events by duration.

    Returns its length in seconds and its event ids in time order; events without `t_end` weigh 0.
    """
    graph = TraceGraph.of(source)
    return longest_path(graph.dag, graph.order, event_duration)


def parallelism_efficiency(source: Trace | TraceGraph) -> float | None:
    """T_serial / T_parallel (survey §9): Σ event durations over `critical_path` length; >= 1.

    A trace without durations (`has_durations` false; flagged `durations_missing`) uses event
    counts over critical steps instead. None when the denominator is 0 or undefined.
    """
    graph = TraceGraph.of(source)
    serial: float
    parallel: float | None
    if has_durations(graph.trace):
        serial = sum(event_duration(event) for event in graph.order)
        parallel = critical_path(graph)[0]
    else:
        serial, parallel = len(graph.order), critical_steps(graph)
    return float(serial / parallel) if parallel else None


def useful_agent_utilisation(source: Trace | TraceGraph) -> float | None:
    """Sub-agent events with a causal path to the final answer / all sub-agent events (survey §9).

    In [0, 1]; None without sub-agent events. A trace without an orchestrator counts every agent.
    """
    graph = TraceGraph.of(source)
    events = [event for event in graph.order if event.agent in graph.sub_agents]
    if not events:
        return None
    return sum(event.id in graph.useful_events for event in events) / len(events)


def protocol_overhead(source: Trace | TraceGraph) -> float | None:
    """Tokens of message, delegate, return and aggregate events / all tokens (survey §9).

    In [0, 1]; tokens per `event_tokens` (estimated where absent: flagged `tokens_estimated`).
    None when the trace has no tokens at all.
    """
    trace = TraceGraph.of(source).trace
    total = protocol = 0
    for event in trace.events:
        tokens = event_tokens(event)
        total += tokens
        if event.type in PROTOCOL_EVENT_TYPES:
            protocol += tokens
    return protocol / total if total else None


def message_redundancy(source: Trace | TraceGraph) -> float | None:
    """Messages repeating an earlier message to the same receiver / all messages (survey §9).

    Messages are `message` events in time order; their receiver is `to` (messages without one
    share a receiver), their content `content` casefolded with whitespace collapsed, else
    `content_ref` as given; a message with neither never repeats. In [0, 1]; None without messages.
    """
    graph = TraceGraph.of(source)
    seen: set[tuple[str | None, bool, str]] = set()
    messages = repeats = 0
    for event in graph.order:
        if event.type != "message":
            continue
        messages += 1
        if event.content is not None:
            key = (event.to, True, " ".join(event.content.split()).casefold())
        elif event.content_ref is not None:
            key = (event.to, False, event.content_ref)
        else:
            continue
        if key in seen:
            repeats += 1
        seen.add(key)
    return repeats / messages if messages else None


def error_amplification(source: Trace | TraceGraph) -> float | None:
    """Mean, over initially corrupted events, of their causal descendants also corrupted (survey §9).

    Corrupted: `corrupted_events`; initially corrupted: without a corrupted causal ancestor.
    Units: events per initial error; 0.0 when errors stay isolated; None without any. One sweep
    in time order carries, per event, a bit set of its initially corrupted ancestors:
    O((V + E) · k / 64) word operations for k initial errors.
    """
    graph = TraceGraph.of(source)
    corrupted = corrupted_events(graph.trace)
    if not corrupted:
        return None
    pred = graph.dag.pred
    origins: dict[str, int] = {}
    initial = amplified = 0
    for event in graph.order:
        inherited = 0
        for before in pred[event.id]:
            inherited |= origins.get(before, 0)
        if event.id in corrupted:
            if inherited:
                amplified += inherited.bit_count()
            else:
                inherited = 1 << initial
                initial += 1
        if inherited:
            origins[event.id] = inherited
    return amplified / initial if initial else None


def fan_out(source: Trace | TraceGraph) -> tuple[int, float]:
    """(max, mean) children per spawning agent in the spawn tree; (0, 0.0) when nobody spawns.

    The mean is over agents that spawned at least one agent (leaves would pull it towards 1).
    """
    tree = TraceGraph.of(source).tree
    children = [count for _, count in tree.out_degree() if count]
    return (max(children), sum(children) / len(children)) if children else (0, 0.0)


def spawn_depth(source: Trace | TraceGraph) -> int:
    """Levels of spawning below the roots: 0 without spawns, 1 for orchestrator + sub-agents.

    Agents on a parent cycle (malformed traces) are unreachable from a root and not counted.
    """
    tree = TraceGraph.of(source).tree
    depth, level = 0, spawn_roots(tree)
    seen = set(level)
    while True:
        level = [child for agent in level for child in tree.succ[agent] if child not in seen]
        if not level:
            return depth
        seen.update(level)
        depth += 1


def agents_alive(source: Trace | TraceGraph) -> list[tuple[float, int]]:
    """Agents alive over time as steps `(t, count)`: from `t` (seconds) on, `count` agents live.

    An agent lives over [spawned_at, despawned_at), each bound falling back to the start of its
    first / end of its last event; agents with neither bound, or a zero-length life, do not
    show. Steps are listed where the count changes; the last one returns to 0.
    """
    graph = TraceGraph.of(source)
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for event in graph.order:
        first.setdefault(event.agent, event.t)
        end = event.t_end if event.t_end is not None else event.t
        last[event.agent] = max(last.get(event.agent, end), end)
    declared = {agent.name: agent for agent in graph.trace.agents}
    changes: Counter[float] = Counter()
    for name in declared.keys() | first.keys():
        agent = declared.get(name)
        start = agent.spawned_at if agent and agent.spawned_at is not None else first.get(name)
        stop = agent.despawned_at if agent and agent.despawned_at is not None else last.get(name)
        if start is None or stop is None or stop <= start:
            continue
        changes[float(start)] += 1
        changes[float(stop)] -= 1
    steps, alive = [], 0
    for t in sorted(changes):
        if changes[t]:
            alive += changes[t]
            steps.append((t, alive))
    return steps


def pseudo_parallel_agents(source: Trace | TraceGraph) -> list[str]:
    """Failure mode pseudo-parallelism (docs/architecture.md "Metrics"): spawned agents none of whose events has a
    causal path to the final answer (also those that never act), sorted by name."""
    graph = TraceGraph.of(source)
    if graph.final_answer is None:
        return []
    useful_agents = {event.agent for event in graph.order if event.id in graph.useful_events}
    return sorted(graph.spawned_agents - useful_agents)


def serial_collapse(source: Trace | TraceGraph) -> bool:
    """Failure mode serial collapse (docs/architecture.md "Metrics"): critical steps >= 0.9 x all steps while at least
    two sub-agents act. False when critical steps are undefined (no orchestrator)."""
    graph = TraceGraph.of(source)
    steps = critical_steps(graph)
    return steps is not None and len(graph.sub_agents) >= 2 and steps >= SERIAL_COLLAPSE_SHARE * len(graph.order)


def compute_metrics(trace: Trace) -> dict[str, Any]:
    """All metrics of `trace` as a JSON-serialisable dict of plain ints, floats, lists and None.

    Keys: the metrics above; `orchestrators` (names) and `final_answer` (event id); a
    `failure_modes` dict; `flags` saying where a figure rests on estimates or fallbacks
    (`tokens_estimated`, `durations_missing`: parallelism from counts, `durations_partial`,
    `no_orchestrator`, `final_answer_fallback`: the last event, `backward_edges`: edges dropped
    from the causal DAG); `agents_alive` as [t, count] pairs.
    """
    graph = TraceGraph.of(trace)
    fan_out_max, fan_out_mean = fan_out(graph)
    durations = has_durations(trace)
    pseudo = pseudo_parallel_agents(graph)
    return {
        "total_steps": len(graph.order),
        "critical_steps": critical_steps(graph),
        "parallelism_efficiency": parallelism_efficiency(graph),
        "useful_agent_utilisation": useful_agent_utilisation(graph),
        "protocol_overhead": protocol_overhead(graph),
        "message_redundancy": message_redundancy(graph),
        "error_amplification": error_amplification(graph),
        "fan_out_max": fan_out_max,
        "fan_out_mean": float(fan_out_mean),
        "spawn_depth": spawn_depth(graph),
        "sub_agents": len(graph.sub_agents),
        "orchestrators": sorted(graph.orchestrators),
        "final_answer": graph.final_answer.id if graph.final_answer else None,
        "failure_modes": {
            "pseudo_parallelism": bool(pseudo),
            "pseudo_parallel_agents": pseudo,
            "serial_collapse": serial_collapse(graph),
        },
        "flags": {
            "tokens_estimated": any(event.tokens is None for event in trace.events),
            "durations_missing": not durations,
            "durations_partial": durations and any(event.t_end is None for event in trace.events),
            "no_orchestrator": not graph.orchestrators,
            "final_answer_fallback": graph.final_answer_fallback,
            "backward_edges": graph.backward_edges,
        },
        "agents_alive": [[t, count] for t, count in agents_alive(graph)],
    }
