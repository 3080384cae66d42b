"""The graphs behind the metrics: the causal DAG of events and the spawn tree of agents.

Causal DAG (survey arXiv 2605.02801, §4: G = (V, E) read as a dependency graph): nodes are event
ids; arcs are the trace's edges of every type, kept only when they point forward in *time order*,
plus the implicit order of each agent's lane (an agent acts sequentially: each of its events
precedes its next one). Time order sorts events by `t`, ties kept in list order; an arc is kept
when its source comes strictly before its destination there, so the DAG is acyclic by
construction and time order is one of its topological orders.

Spawn tree: agent -> the agents it spawned (`Agent.parent`, else the first `spawn` event naming
the agent in `to`).

Orchestrator rule (used by critical steps and every "sub-agent" metric): an orchestrator is a
root of the spawn tree (an agent without a parent) that spawned an agent or emitted an
orchestrator event (`orchestrator_decision`, `delegate`, `spawn`, `stop`). A tool that the trace
models as its own agent is a root too, but neither spawns nor decides, so it is a sub-agent.
A trace can have none (a peer group chat) or several. Sub-agents are the other acting agents.

Final answer: the last event, in time order, that is an `aggregate` or `stop` of a root agent or a
`return` addressed (`to`) to a root agent; else the trace's last event (`final_answer_fallback`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter

import networkx as nx

from swarmscope.model import Event, Trace

#: Event types by which an agent acts as an orchestrator (survey sub-decisions O1, O2, O5).
ORCHESTRATOR_EVENT_TYPES = frozenset({"orchestrator_decision", "delegate", "spawn", "stop"})
#: Arc type of the implicit order within an agent's lane.
LANE = "lane"


def time_order(trace: Trace) -> list[Event]:
    """Events sorted by `t` (seconds); ties keep their order in `trace.events` (stable sort)."""
    return sorted(trace.events, key=attrgetter("t"))


def causal_dag(trace: Trace, order: list[Event] | None = None) -> tuple[nx.DiGraph, int]:
    """The causal DAG of `trace` and the number of its edges dropped as backward in time.

    Nodes: event ids, inserted in time order. Arcs carry `type`: an edge type of the trace, or
    `"lane"` for consecutive events of one agent. Self-loops, edges pointing backwards in time
    order and edges naming unknown events are dropped (counted in the second value).
    `order` is `time_order(trace)` where the caller already has it. O(V + E).
    """
    order = time_order(trace) if order is None else order
    position = {event.id: index for index, event in enumerate(order)}
    dag = nx.DiGraph()
    dag.add_nodes_from(position)
    previous: dict[str, str] = {}
    lane_arcs = []
    for event in order:
        before = previous.get(event.agent)
        if before is not None:
            lane_arcs.append((before, event.id))
        previous[event.agent] = event.id
    dag.add_edges_from(lane_arcs, type=LANE)
    dropped = 0
    for edge in trace.edges:
        src, dst = position.get(edge.src), position.get(edge.dst)
        if src is None or dst is None or src >= dst:
            dropped += 1
            continue
        dag.add_edge(edge.src, edge.dst, type=edge.type)
    return dag, dropped


def spawn_tree(trace: Trace, order: list[Event] | None = None) -> nx.DiGraph:
    """Agents (nodes) and who spawned whom (arc parent -> child).

    Every declared agent and every agent acting in an event is a node. A child's parent is its
    `Agent.parent`, else the agent of the earliest `spawn` event whose `to` names it. `order` is
    `time_order(trace)` where the caller already has it. O(A + V).
    """
    tree = nx.DiGraph()
    tree.add_nodes_from(agent.name for agent in trace.agents)
    tree.add_nodes_from(event.agent for event in trace.events)
    parents = {agent.name: agent.parent for agent in trace.agents if agent.parent}
    for event in time_order(trace) if order is None else order:
        if event.type == "spawn" and event.to and event.to != event.agent:
            parents.setdefault(event.to, event.agent)
    tree.add_edges_from((parent, child) for child, parent in parents.items())
    return tree


def spawn_roots(tree: nx.DiGraph) -> list[str]:
    """Agents of the spawn tree without a parent, in node order."""
    return [agent for agent, parents in tree.in_degree() if parents == 0]


def orchestrators(trace: Trace, tree: nx.DiGraph | None = None) -> frozenset[str]:
    """The orchestrator agents: spawn-tree roots that spawn or emit an orchestrator event."""
    tree = spawn_tree(trace) if tree is None else tree
    deciding = {event.agent for event in trace.events if event.type in ORCHESTRATOR_EVENT_TYPES}
    return frozenset(root for root in spawn_roots(tree) if tree.out_degree(root) or root in deciding)


def final_answer(order: list[Event], roots: Iterable[str]) -> tuple[Event | None, bool]:
    """The final-answer event of events in time `order`, and whether the last-event fallback chose it.

    See the module docstring for the rule; `(None, True)` for a trace without events.
    """
    roots = set(roots)
    for event in reversed(order):
        if (event.type in ("aggregate", "stop") and event.agent in roots) or (
            event.type == "return" and event.to in roots
        ):
            return event, False
    return (order[-1] if order else None), True


def upstream(dag: nx.DiGraph, event_id: str) -> set[str]:
    """`event_id` and every event with a causal path to it: one reverse BFS, O(V + E)."""
    return nx.ancestors(dag, event_id) | {event_id}


def longest_path(dag: nx.DiGraph, order: list[Event], weight: Callable[[Event], float]) -> tuple[float, list[str]]:
    """The heaviest path through `dag`, weighing each event by `weight(event)` (>= 0).

    `order` must be a topological order of `dag` (time order is). Returns the path's total weight
    and its event ids from first to last; `(0.0, [])` without events. O(V + E).
    """
    best: dict[str, float] = {}
    via: dict[str, str | None] = {}
    pred = dag.pred
    for event in order:
        before = pred[event.id]
        start = max(before, key=best.__getitem__) if before else None
        best[event.id] = (best[start] if start is not None else 0.0) + weight(event)
        via[event.id] = start
    if not best:
        return 0.0, []
    last = max(best, key=best.__getitem__)
    total = best[last]
    end: str | None = last
    path = []
    while end is not None:
        path.append(end)
        end = via[end]
    return total, path[::-1]


@dataclass
class TraceGraph:
    """A trace with its causal DAG, spawn tree, orchestrators and final answer, built once.

    Metric functions accept a `Trace` or a `TraceGraph`; `compute_metrics` builds this once and
    hands it to each. Build with `TraceGraph.of(trace)`.
    """

    trace: Trace
    order: list[Event]
    dag: nx.DiGraph
    backward_edges: int
    tree: nx.DiGraph
    orchestrators: frozenset[str]
    final_answer: Event | None
    final_answer_fallback: bool

    @classmethod
    def of(cls, source: Trace | TraceGraph) -> TraceGraph:
        """`source` itself when it is a TraceGraph, else the graphs of the trace `source`."""
        if isinstance(source, TraceGraph):
            return source
        order = time_order(source)
        dag, dropped = causal_dag(source, order)
        tree = spawn_tree(source, order)
        answer, fallback = final_answer(order, spawn_roots(tree))
        return cls(
            trace=source,
            order=order,
            dag=dag,
            backward_edges=dropped,
            tree=tree,
            orchestrators=orchestrators(source, tree),
            final_answer=answer,
            final_answer_fallback=fallback,
        )

    @cached_property
    def sub_agents(self) -> frozenset[str]:
        """Agents that emit at least one event and are not orchestrators."""
        return frozenset(event.agent for event in self.order) - self.orchestrators

    @cached_property
    def spawned_agents(self) -> frozenset[str]:
        """Agents with a parent in the spawn tree."""
        return frozenset(agent for agent, parents in self.tree.in_degree() if parents)

    @cached_property
    def useful_events(self) -> frozenset[str]:
        """Ids of the final answer and every event with a causal path to it (empty without events)."""
        if self.final_answer is None:
            return frozenset()
        return frozenset(upstream(self.dag, self.final_answer.id))
