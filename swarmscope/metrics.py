"""Metrics of an orchestration trace (docs/metrics.md; docs/architecture.md "Metrics"; survey arXiv
2605.02801, §9; Kimi K2.5 PARL for critical steps).

Every metric is a pure function of a `Trace`, or of a `TraceGraph` already built from one
(`compute_metrics` builds it once: sorting the events, O(V log V)). Structural terms (causal DAG,
time order, orchestrator, sub-agent, spawn tree, final answer, execution steps) are defined in
`swarmscope.graph`. Ratios are plain floats, None where they cannot be computed; times are
seconds; counts are ints. `compute_metrics` says why a metric is None (its `unavailable` dict:
metric -> reason) instead of showing a number. Each metric runs in O(V log V + E + A log A) on the
built graphs, error amplification aside.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Mapping
from typing import Any, cast

from swarmscope.graph import DISPATCH_EVENT_TYPES, TraceGraph, event_end, longest_path, spawn_roots
from swarmscope.model import Event, Trace, estimate_tokens
from swarmscope.tokens import is_estimated, trace_usage

#: Event attribute an importer sets to "input" where a message's content is the prompt its agent
#: received, the source having recorded no output (docs/otel-mapping.md "Events").
CONTENT_FROM = "content_from"
#: Event types that are coordination by themselves (protocol overhead, survey §9): delegation
#: prompts, spawning and despawning, routing decisions and the stop. A `message` is coordination
#: when it is addressed to another agent (a hand-off); `return` and `aggregate` carry the work
#: that sub-agents did, and never count.
COORDINATION_EVENT_TYPES = frozenset({"spawn", "delegate", "despawn", "orchestrator_decision", "stop"})
#: Label keys that mark their `event_id` as corrupted (Who&When's `mistake_step` and kin).
CORRUPTION_LABEL_KEYS = frozenset({"mistake_step", "mistake", "error", "corrupted"})
#: Serial collapse: critical steps at least this share of all steps (DESIGN.md "Metrics").
SERIAL_COLLAPSE_SHARE = 0.9
#: Free-riding: only agents with at least this share of the trace's events (DESIGN.md "Metrics").
FREE_RIDER_EVENT_SHARE = 0.05
#: Why free-riding is not computed without attributions.
NEEDS_ATTRIBUTION = (
    "needs attribution: free-riding is decided by each agent's removal effect and its 95 % interval "
    "(a counterfactual job over agents); this trace has none"
)

#: Agent name -> (estimate, ci_low, ci_high) of Δ = E[R | h] - E[R | do(remove the agent)].
AgentAttributions = Mapping[str, tuple[float, float, float]]


# --- per-event quantities -------------------------------------------------------------------


def event_duration(event: Event) -> float:
    """`t_end - t` in seconds; 0.0 when `t_end` is missing."""
    return event.t_end - event.t if event.t_end is not None else 0.0


def has_durations(trace: Trace) -> bool:
    """Whether any event has a positive duration (else duration metrics fall back to counts)."""
    return any(event.t_end is not None and event.t_end > event.t for event in trace.events)


def event_tokens(event: Event) -> int:
    """The event's `tokens` (measured, or an importer's flagged estimate), else its content estimated
    at characters / 4 (docs/metrics.md "Tokens"): the basis of protocol overhead, never a total."""
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
    """Critical steps (Kimi K2.5 PARL): CS = Σ_t (S_main(t) + max_i S_sub,i(t)), over execution stages.

    Read on a trace as the number of execution steps (`swarmscope.graph` "Execution steps": agent
    actions, an LLM turn with the tool calls it issues; steps that are no action weigh 0) on the
    longest chain of steps that ran one after another. Step a precedes step b when the causal DAG
    has an arc from an event of a to an event of b (lanes included), and:

    - where the trace has durations (`has_durations`), when a ended before b started (a.end <=
      b.start, a first in time order): sub-agents that overlap in time ran in parallel, those
      that ran one after another add up, whatever the orchestrator did in between;
    - where it has none, by PARL's stages: an orchestrator step follows every step before it in
      time order and precedes every step after it (the main agent waits for its sub-agents), so
      a stage adds 1 + the longest causal chain among the sub-agents' steps in it (the busiest
      lane when they are independent, their sum when they depend on each other).

    Units: steps. A single-agent trace (no orchestrator: `swarmscope.graph`) is all main agent:
    its CS is the chain of its own steps. None when the trace has no main agent (a peer group
    without an orchestrator: PARL's stages are the steps of a main agent) or no events. One
    sweep in step order (a heap of end times where timed): O(V log V + E).
    """
    graph = TraceGraph.of(source)
    if not graph.main_agents or not graph.order:
        return None
    if "critical_steps" not in graph.memo:
        graph.memo["critical_steps"] = _longest_step_chain(graph)
    return cast(int, graph.memo["critical_steps"])


def total_steps(source: Trace | TraceGraph) -> int:
    """The agent actions of the trace: its execution steps that count (`swarmscope.graph` "Execution
    steps"), CS's units, so CS = `total_steps` means fully serial. `total_events` is the event count."""
    return sum(step.counts for step in TraceGraph.of(source).steps)


def _longest_step_chain(graph: TraceGraph) -> int:
    """Steps on the longest chain of `graph.steps` (`critical_steps` says which steps precede which)."""
    steps = graph.steps
    step_of = {event_id: index for index, step in enumerate(steps) for event_id in step.events}
    timed = has_durations(graph.trace)
    pred = graph.dag.pred
    best = [0] * len(steps)
    ended: list[tuple[float, int]] = []  # timed: (end, step) of the steps seen
    released = 0  # timed: the longest chain ending in a step that ended before this one starts
    barrier = stage = 0  # untimed: the last orchestrator step's chain; the longest since it
    for index, step in enumerate(steps):
        main = step.agent in graph.main_agents
        if timed:
            while ended and ended[0][0] <= step.start:
                released = max(released, best[heapq.heappop(ended)[1]])
            before = released
        else:
            before = max(barrier, stage) if main else barrier
        for event_id in step.events:
            for source in pred[event_id]:
                other = step_of[source]
                if other != index:
                    before = max(before, best[other])
        best[index] = before + step.counts
        if timed:
            heapq.heappush(ended, (step.end, index))
        elif main:
            barrier, stage = best[index], 0
        else:
            stage = max(stage, best[index])
    return max(best, default=0)


def critical_path(source: Trace | TraceGraph) -> tuple[float, list[str]]:
    """The critical path (survey arXiv 2605.02801, §9): the longest path through the causal DAG,
    weighing events by duration; what the dependencies allow (`parallel_time` is the schedule run).

    Returns its length in seconds and its event ids in time order; events without `t_end` weigh 0.
    """
    graph = TraceGraph.of(source)
    return longest_path(graph.dag, graph.order, event_duration)


def parallel_time(source: Trace | TraceGraph) -> float:
    """T_parallel as run (survey arXiv 2605.02801, §9): the heaviest chain of events, weighing each by
    its `work_durations`, where event a precedes b when a ended at or before b started (a.end <= b.start),
    in seconds.

    This is the schedule observed: events that overlap ran in parallel (sub-agents, or the
    concurrent tool calls of one agent), those that ran one after another add up. A causal arc
    adds nothing to it: between events that do not overlap the time order already says so, and
    between overlapping ones (a delegation spanning its sub-agent's run) counting both would count
    the overlap twice. So the chain's events are disjoint in time and T_parallel never exceeds
    the wall clock. `critical_path` is the longest chain of causal arcs alone (what the
    dependencies would allow; the timeline draws it). One sweep in time order with a heap of end
    times: O(V log V).
    """
    graph = TraceGraph.of(source)
    work = work_durations(graph)
    best: dict[str, float] = {}
    ended: list[tuple[float, int, str]] = []
    released = 0.0
    for index, event in enumerate(graph.order):
        while ended and ended[0][0] <= event.t:
            released = max(released, best[heapq.heappop(ended)[2]])
        best[event.id] = released + work[event.id]
        heapq.heappush(ended, (event.t_end if event.t_end is not None else event.t, index, event.id))
    return max(best.values(), default=0.0)


def work_durations(source: Trace | TraceGraph) -> dict[str, float]:
    """Event id -> the seconds of work it stands for: its duration, except that a dispatch (`spawn`
    / `delegate`) lasting while the agent it names (`to`) acts counts only the time outside that
    agent's first start and last end within it: that span is the target's work, already in its
    events, and the dispatcher's wait (Claude Code's `Task` call spans its subagent's run).
    O(V log V).
    """
    graph = TraceGraph.of(source)
    if "work_durations" in graph.memo:
        return cast(dict[str, float], graph.memo["work_durations"])
    starts: dict[str, list[float]] = {}
    agent_events: dict[str, list[Event]] = {}
    for event in graph.order:
        starts.setdefault(event.agent, []).append(event.t)
        agent_events.setdefault(event.agent, []).append(event)
    work: dict[str, float] = {}
    for event in graph.order:
        duration = event_duration(event)
        if duration > 0 and event.type in DISPATCH_EVENT_TYPES and event.to in starts and event.to != event.agent:
            end = event.t + duration
            times = starts[event.to]
            inside = agent_events[event.to][bisect_left(times, event.t) : bisect_right(times, end)]
            if inside:
                duration -= max(min(max(event_end(e) for e in inside), end) - inside[0].t, 0.0)
        work[event.id] = duration
    graph.memo["work_durations"] = work
    return work


def serial_time(source: Trace | TraceGraph) -> float:
    """T_serial (survey arXiv 2605.02801, §9): the events' summed `work_durations`, in seconds."""
    return sum(work_durations(source).values())


def parallelism_efficiency(source: Trace | TraceGraph) -> float | None:
    """T_serial / T_parallel (survey arXiv 2605.02801, §9): `serial_time` over `parallel_time`; >= 1.

    A trace without durations (`has_durations` false; flagged `durations_missing`) uses the same
    ratio in steps instead: all execution steps over `critical_steps` (the PARL speed-up). None
    when the denominator is 0 or undefined (no durations and no orchestrator).
    """
    graph = TraceGraph.of(source)
    serial: float
    parallel: float | None
    if has_durations(graph.trace):
        serial = serial_time(graph)
        parallel = parallel_time(graph)
    else:
        serial, parallel = total_steps(graph), critical_steps(graph)
    return float(serial / parallel) if parallel else None


def useful_agent_utilisation(source: Trace | TraceGraph) -> float | None:
    """Sub-agent actions with a causal path to the final answer / all sub-agent actions (survey arXiv
    2605.02801, §9), in the units of critical steps: a sub-agent's execution step that counts
    (`swarmscope.graph` "Execution steps") is useful when one of its events reaches the answer.

    In [0, 1]; None without sub-agent actions (a single agent has none; humans, users and harness
    routines are no sub-agents). A peer group without an orchestrator counts every agent.
    """
    graph = TraceGraph.of(source)
    steps = [step for step in graph.steps if step.counts and step.agent in graph.sub_agents]
    if not steps:
        return None
    useful = graph.useful_events
    return sum(any(event_id in useful for event_id in step.events) for step in steps) / len(steps)


def is_coordination(event: Event, agents: frozenset[str] | set[str]) -> bool:
    """Whether `event` is coordination (protocol overhead): a COORDINATION_EVENT_TYPES event, or a
    `message` addressed (`to`) to another agent of `agents` (a hand-off or an inter-agent note)."""
    if event.type in COORDINATION_EVENT_TYPES:
        return True
    return event.type == "message" and event.to is not None and event.to != event.agent and event.to in agents


def _protocol_tokens(graph: TraceGraph) -> tuple[int, int, int, int]:
    """(coordination tokens, all tokens, coordination events, those of them with tokens or content).

    Only between agents of the system (declared or acting, humans, users and harness routines
    aside): their events and what is addressed to them (a prompt to a compaction) are no protocol,
    and a trace with fewer than two
    agents of the system has none at all (a lone agent's end-of-turn `stop` coordinates nobody)."""
    agents = frozenset(graph.tree.nodes) - graph.non_agents
    protocol_exists = len(agents) >= 2
    total = protocol = events = known = 0
    for event in graph.order:
        tokens = event_tokens(event)
        total += tokens
        to_agent = event.to is None or event.to not in graph.non_agents
        if protocol_exists and event.agent in agents and to_agent and is_coordination(event, agents):
            protocol += tokens
            events += 1
            known += event.tokens is not None or bool(event.content)
    return protocol, total, events, known


def protocol_overhead(source: Trace | TraceGraph) -> float | None:
    """Coordination tokens / all tokens (survey arXiv 2605.02801, §9 "protocol overhead").

    Coordination (`is_coordination`): delegation prompts (`delegate`), `spawn` / `despawn`,
    routing (`orchestrator_decision`), `stop`, and messages addressed to another agent (hand-offs).
    The work that comes back is not coordination: `return` and `aggregate` events carry the
    sub-agents' outputs, and messages addressed to nobody are an agent's own turn. Humans, users
    and harness routines take no part in the protocol (`_protocol_tokens`): a single-agent trace
    has no inter-agent protocol, so its overhead is 0.0 (measured: no token went to coordination).
    Tokens per `event_tokens` (estimated where absent: flagged `tokens_estimated`). In [0, 1];
    None when the trace has no tokens at all, or when it has coordination events none of which
    carries tokens or content (their cost is unknown, not zero: `compute_metrics` says so).
    """
    protocol, total, events, known = _protocol_tokens(TraceGraph.of(source))
    if not total or (events and not known):
        return None
    return protocol / total


def message_redundancy(source: Trace | TraceGraph) -> float | None:
    """Messages repeating an earlier message to the same receiver / all messages (survey arXiv 2605.02801, §9).

    Messages are `message` events in time order; their receiver is `to` (messages without one
    share a receiver), their content `content` casefolded with whitespace collapsed, else
    `content_ref` as given; a message with neither never repeats. A message whose content is its
    input (`content_from: "input"`: the source recorded no output) shows the prompt its agent
    received, not what it said: it is left out. In [0, 1]; None without (other) messages.
    """
    graph = TraceGraph.of(source)
    seen: set[tuple[str | None, bool, str]] = set()
    messages = repeats = 0
    for event in graph.order:
        if event.type != "message":
            continue
        if event.attributes.get(CONTENT_FROM) == "input":
            continue  # what its agent said is unknown
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
    """Mean, over initially corrupted events, of their causal descendants also corrupted (survey arXiv
    2605.02801, §9 "error amplification").

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
    """(max, mean) children per spawning agent in the spawn tree (survey arXiv 2605.02801, §4, §9); (0, 0.0)
    when nobody spawns.

    The mean is over agents that spawned at least one agent (leaves would pull it towards 1).
    """
    tree = TraceGraph.of(source).tree
    children = [count for _, count in tree.out_degree() if count]
    return (max(children), sum(children) / len(children)) if children else (0, 0.0)


def spawn_depth(source: Trace | TraceGraph) -> int:
    """Levels of spawning below the roots (survey arXiv 2605.02801, §4): 0 without spawns, 1 for
    orchestrator + sub-agents.

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
    """Agents alive over time as steps `(t, count)` (survey arXiv 2605.02801, §4: the agent set changes over
    time): from `t` (seconds) on, `count` agents live.

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
    """Failure mode pseudo-parallelism (survey arXiv 2605.02801, §9; DESIGN.md "Metrics"): spawned agents
    none of whose events has a causal path to the final answer (`swarmscope.graph`: the answering
    agent's last output), also those that never act; sorted by name."""
    graph = TraceGraph.of(source)
    if graph.final_answer is None:
        return []
    useful_agents = {event.agent for event in graph.order if event.id in graph.useful_events}
    return sorted(graph.spawned_agents - useful_agents)


def serial_collapse(source: Trace | TraceGraph) -> bool | None:
    """Failure mode serial collapse (DESIGN.md "Metrics"; Kimi K2.5 PARL): an orchestrator with at least
    two sub-agents (humans, users and harness routines are none) ran independent subtasks one after
    another, and the trace as a whole ran serially.

    Independent subtasks one after another (`serialised_pairs`): sub-agents A and B where A's last
    event ended at or before B's first started (untimed: came first in time order) and no event
    of A has a causal path to B's first event. A serial-by-design pipeline is no collapse: in a
    hand-off chain, a group chat whose manager routes each speaker after reading the previous
    one, or a sub-agent fed the previous one's output, B depends on A by a causal arc. Ran
    serially: critical steps >= 0.9 x all steps and, where the trace has durations, parallelism
    efficiency <= 1 / 0.9, so the flag never contradicts the efficiency. False without an
    orchestrator in a trace with a main agent (a single agent); None without a main agent.
    """
    graph = TraceGraph.of(source)
    steps = critical_steps(graph)
    if steps is None:
        return None
    if not graph.orchestrators or len(graph.sub_agents) < 2 or steps < SERIAL_COLLAPSE_SHARE * total_steps(graph):
        return False
    if has_durations(graph.trace):
        efficiency = parallelism_efficiency(graph)
        if efficiency is None or efficiency > 1 / SERIAL_COLLAPSE_SHARE:
            return False
    return bool(serialised_pairs(graph))


def serialised_pairs(source: Trace | TraceGraph) -> list[tuple[str, str]]:
    """Pairs (A, B) of sub-agents that ran one after another without B depending on A: A's last event
    ended at or before B's first started (untimed traces: A's last event comes before B's first
    in time order) and no event of A has a causal path to B's first event; sorted.

    One sweep in time order carries per event the bit set of sub-agents with an event upstream of
    it: O((V + E) · k / 64) for k sub-agents, then O(k^2) pairs.
    """
    graph = TraceGraph.of(source)
    agents = sorted(graph.sub_agents)
    bit = {agent: 1 << index for index, agent in enumerate(agents)}
    timed = has_durations(graph.trace)
    pred = graph.dag.pred
    upstream: dict[str, int] = {}
    first: dict[str, tuple[int, Event, int]] = {}  # agent -> (position, first event, its upstream agents)
    last: dict[str, tuple[int, float]] = {}  # agent -> (position, latest end) of its events
    for position, event in enumerate(graph.order):
        before = 0
        for source_id in pred[event.id]:
            before |= upstream[source_id]
        upstream[event.id] = before | bit.get(event.agent, 0)
        if event.agent in bit:
            first.setdefault(event.agent, (position, event, before))
            end = max(last.get(event.agent, (0, event_end(event)))[1], event_end(event))
            last[event.agent] = (position, end)
    pairs = []
    for b in agents:
        if b not in first:
            continue
        position, start, depends = first[b]
        for a in agents:
            if a == b or a not in last or depends & bit[a]:
                continue
            a_position, a_end = last[a]
            if (a_end <= start.t and a_position < position) if timed else a_position < position:
                pairs.append((a, b))
    return sorted(pairs)


def free_riders(source: Trace | TraceGraph, attributions: AgentAttributions) -> list[str]:
    """Failure mode free-riding (DESIGN.md "Metrics"; survey arXiv 2605.02801, credit assignment):
    agents with at least 5 % of the trace's events whose removal changes the reward by less than
    its interval, i.e. whose removal effect Δ = E[R | h] - E[R | do(remove agent)] has a 95 %
    interval [ci_low, ci_high] that contains 0. An agent whose removal lowers the reward beyond
    its interval (a verifier that others rely on) is no free rider, however few decisions name it;
    one whose removal raises it is harmful, not free-riding. `attributions`: agent -> (estimate,
    ci_low, ci_high); agents without one are not judged. Sorted by name."""
    graph = TraceGraph.of(source)
    counts = Counter(event.agent for event in graph.order)
    floor = FREE_RIDER_EVENT_SHARE * len(graph.order)
    return sorted(
        agent
        for agent, (_, low, high) in attributions.items()
        if counts[agent] and counts[agent] >= floor and low <= 0.0 <= high and agent not in graph.non_agents
    )


def _unavailable(graph: TraceGraph, metrics: dict[str, Any]) -> dict[str, str]:
    """Metric -> why it is None on this trace, for every None metric of `metrics`."""
    reasons: dict[str, str] = {}
    if not graph.order:
        for name in (
            "critical_steps",
            "parallelism_efficiency",
            "useful_agent_utilisation",
            "protocol_overhead",
            "message_redundancy",
            "error_amplification",
            "serial_collapse",
        ):
            reasons[name] = "the trace has no events"
        return reasons
    no_orchestrator = (
        "no main agent: critical steps count the steps of a main agent and its sub-agents (Kimi K2.5 PARL), "
        "and no root agent here spawns, delegates or decides while several agents act (a peer group)"
    )
    if metrics["critical_steps"] is None:
        reasons["critical_steps"] = no_orchestrator
        reasons["serial_collapse"] = no_orchestrator
    if metrics["parallelism_efficiency"] is None:
        reasons["parallelism_efficiency"] = (
            "the critical path has zero duration"
            if has_durations(graph.trace)
            else "no durations to measure time, and no critical steps to count instead (no main agent)"
        )
    if metrics["useful_agent_utilisation"] is None:
        reasons["useful_agent_utilisation"] = (
            "a single agent: no sub-agents (humans, users and harness routines are none)"
            if len(graph.agents) == 1
            else "no sub-agent actions"
        )
    if metrics["protocol_overhead"] is None:
        _, total, events, _ = _protocol_tokens(graph)
        reasons["protocol_overhead"] = (
            "no event carries token counts or content"
            if not total
            else f"the trace's {events} coordination events (spawn, delegate, routing, hand-off messages) carry "
            "neither token counts nor content, so the coordination tokens are unknown"
        )
    if metrics["message_redundancy"] is None:
        reasons["message_redundancy"] = (
            "no message events"
            if not any(event.type == "message" for event in graph.order)
            else "no message recorded what its agent said (their content is the prompt they received)"
        )
    if metrics["error_amplification"] is None:
        reasons["error_amplification"] = "no corrupted events: no mistake labels and no failed tool results"
    return reasons


def compute_metrics(trace: Trace, attributions: AgentAttributions | None = None) -> dict[str, Any]:
    """All metrics of `trace` as a JSON-serialisable dict of plain ints, floats, lists and None.

    Keys: the metrics above; `total_steps` (agent actions: the execution steps that count, the
    units of critical steps) and `total_events` (the event count); `orchestrators` (names) and
    `final_answer` (event id); a `failure_modes` dict (pseudo-parallelism, serial collapse,
    free-riding: `free_riding` None and `free_riders` [] without `attributions`, agent ->
    (estimate, ci_low, ci_high) of its removal effect; with them, `free_riding_unjudged` lists the
    agents with >= 5 % of events that have none); `unavailable`:
    metric -> why it is None (every None metric and failure mode has one); `flags` saying where a
    figure rests on estimates or fallbacks (`tokens_estimated`: some event has no measured tokens,
    `durations_missing`: parallelism from steps, `durations_partial`, `no_orchestrator`,
    `final_answer_fallback`: the last event, `backward_edges`: edges dropped from the causal DAG);
    `agents_alive` as [t, count] pairs; `tokens`, the measured token usage (`swarmscope.tokens`:
    the source's reported total, else its events' measured tokens; None when nothing was measured)
    and `estimated_tokens`, the characters / 4 estimate of the events without measured tokens,
    apart from it (docs/metrics.md "Tokens").
    """
    graph = TraceGraph.of(trace)
    fan_out_max, fan_out_mean = fan_out(graph)
    durations = has_durations(trace)
    pseudo = pseudo_parallel_agents(graph)
    metrics: dict[str, Any] = {
        "total_steps": total_steps(graph),
        "total_events": len(graph.order),
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
    }
    usage = trace_usage(trace)
    metrics["tokens"] = usage.measured
    metrics["estimated_tokens"] = usage.estimated
    collapse = serial_collapse(graph)
    failure_modes: dict[str, Any] = {
        "pseudo_parallelism": bool(pseudo),
        "pseudo_parallel_agents": pseudo,
        "serial_collapse": collapse,
        "free_riding": None,
        "free_riders": [],
    }
    unavailable = _unavailable(graph, metrics)
    if usage.measured is None:
        unavailable["tokens"] = (
            f"no measured token usage: the source reports none (~{usage.estimated} estimated from content "
            "at characters / 4 is `estimated_tokens`, shown apart)"
        )
    if collapse is not None:
        unavailable.pop("serial_collapse", None)
    if attributions is None:
        unavailable["free_riding"] = NEEDS_ATTRIBUTION
    else:
        riders = free_riders(graph, attributions)
        counts = Counter(event.agent for event in graph.order)
        floor = FREE_RIDER_EVENT_SHARE * len(graph.order)
        failure_modes["free_riding"] = bool(riders)
        failure_modes["free_riders"] = riders
        failure_modes["free_riding_unjudged"] = sorted(
            agent
            for agent, count in counts.items()
            if count >= floor and agent not in attributions and agent not in graph.non_agents
        )
    metrics["failure_modes"] = failure_modes
    metrics["unavailable"] = unavailable
    metrics["flags"] = {
        "tokens_estimated": any(event.tokens is None or is_estimated(event) for event in trace.events),
        "durations_missing": not durations,
        "durations_partial": durations and any(event.t_end is None for event in trace.events),
        "no_orchestrator": not graph.orchestrators,
        "final_answer_fallback": graph.final_answer_fallback,
        "backward_edges": graph.backward_edges,
    }
    metrics["agents_alive"] = [[t, count] for t, count in agents_alive(graph)]
    return metrics
