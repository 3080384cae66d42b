"""The graphs behind the metrics: the causal DAG of events and the spawn tree of agents.

Causal DAG (survey arXiv 2605.02801, §4: G = (V, E) read as a dependency graph): nodes are event
ids; arcs are the trace's edges of every type, kept only when they point forward in *time order*,
plus the implicit order of each agent's lane: an event of an agent precedes its later event when
it ended at or before that one started (`lane_arcs`, transitively reduced). Events an agent emits
concurrently (the parallel tool calls of one LLM turn) overlap in time and stay unordered; events
without `t_end` are instants, so a lane of them is chained in time order. Time order sorts events
by `t`, ties kept in list order; an arc is kept when its source comes strictly before its
destination there, so the DAG is acyclic by construction and time order is one of its
topological orders.

Spawn tree: agent -> the agents it spawned (`Agent.parent`, else the first `spawn` event naming
the agent in `to`).

Roles: humans, users and harness routines are not agents of the system (`non_agents`): an agent
declared with role `human`, `user`, `compaction`, `harness` or `summariser` (or the attribute
`compaction` / `harness`: Claude Code's context-compaction "agent"), or whose every event is a
`human_intervention` or has `role` `human` / `user` (Magentic-One's human, Claude Code's and
Codex's user). Their events stay in the DAG (a question causes the answer) but
they orchestrate nothing, are no sub-agents and take no steps (`swarmscope.metrics`).

Orchestrator rule (used by critical steps and every "sub-agent" metric): an orchestrator is a
root of the spawn tree (an agent without a parent) that is an agent of the system, spawned an
agent of the system or emitted an orchestrator event (`orchestrator_decision`, `delegate`,
`spawn`, `stop`), in a trace with another agent of the system (declared or acting): a single agent is not its
own orchestrator (Codex's end-of-turn `stop`), nor is an agent whose only spawns are harness
routines. A tool that the trace models as its own agent is a root too, but neither spawns nor
decides, so it is a sub-agent. A trace can have none (a peer group chat, a single agent) or
several. Main agents: the orchestrators, else the one agent of a single-agent trace. Sub-agents:
the other acting agents of the system.

Final answer (the answering agent's last output): the last event, in time order, that is an
`aggregate` or `stop` of a root agent, a `return` addressed (`to`) to a root agent, or a `message`
addressed to no other agent of the trace (`to` empty, the sender, or no agent's name: the answer
to the user) whose sender is not a pure source (a root that neither orchestrates nor receives
anything, such as the human who asks). So a group chat that ends with its reviewer's message, or
a supervisor that writes the answer after its sub-agent returned, answers with that message, not
with an earlier return. Without any such event: the trace's last event (`final_answer_fallback`).

Execution steps (the units of critical steps, Kimi K2.5 PARL): a step is an agent action, an LLM
turn together with the tool calls it issues (run concurrently where their times overlap). Each
agent's events, in time order, join its latest step or start a new one:

- the events of one model response (same `response_id`, GenAI's `gen_ai.response.id`: Claude
  Code's thinking, text and tool_use blocks, Codex's message and calls) are one step, and an
  event of another response starts a new one, a response of tool calls alone too;
- a `tool_result` joins the step before it (the turn whose call it answers), a `tool_call` too
  unless another agent's event ended in between (OpenTelemetry records the LLM call, then the
  tool spans it issued);
- a dispatch or stop (`spawn`, `delegate`, `despawn`, `stop`) joins the step before it when taken
  at once: at the same `t` as that step's last event or, in a trace with durations, instantaneous
  with no other agent's event ending in between (the supervisor's LLM call whose output is the
  delegation; "spawn and delegate to A, B, C, D" stays one dispatch turn, as before); dispatch
  decisions that each take time (SwarmSim's) are one step each, and without durations, where `t`
  may be a log position (Who&When), two dispatch lines are two steps;
- nothing joins across an arc from another agent (a reply is a new action); every other event
  (a `message`, `return`, `aggregate`, `orchestrator_decision`: an LLM turn) starts a step.

A step `counts` as an action unless none of its events is one (`is_action`): events of humans,
users and harness routines, harness bookkeeping (Codex's context and end-of-turn `stop`, Claude
Code's notifications) and, in a trace whose events record content, content-free framework spans
(Monocle's workflow dispatches) are no actions. Such steps stay in the step graph, weighing 0, so
that chains through them hold.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter

import networkx as nx

from swarmscope.model import Event, Trace

#: Event types by which an agent acts as an orchestrator (survey sub-decisions O1, O2, O5).
ORCHESTRATOR_EVENT_TYPES = frozenset({"orchestrator_decision", "delegate", "spawn", "stop"})
#: Arc type of the implicit order within an agent's lane.
LANE = "lane"
#: Declared agent roles (casefolded) of humans, users and harness routines: not agents of the system.
NON_AGENT_ROLES = frozenset({"human", "user", "compaction", "harness", "summariser", "summarizer"})
#: Agent attributes that mark a harness routine (Claude Code's compaction lanes).
NON_AGENT_ATTRIBUTES = ("compaction", "harness")
#: Event types that hand work to another agent; consecutive instantaneous ones form one dispatch turn.
DISPATCH_EVENT_TYPES = frozenset({"spawn", "delegate"})
#: Tool events: they join the step of the LLM turn that issued them.
TOOL_EVENT_TYPES = frozenset({"tool_call", "tool_result"})
#: Events that act out a turn's decision (dispatch, despawn, stop): they join that turn when taken
#: at once (`execution_steps`).
ATTACHED_EVENT_TYPES = DISPATCH_EVENT_TYPES | {"despawn", "stop"}
#: Event attribute naming the model response (GenAI `gen_ai.response.id`) an event came from, where
#: a source splits one response into several events (Claude Code's content blocks, Codex's items).
RESPONSE_ID = "response_id"
#: Event attributes (True) that mark harness bookkeeping, not an agent's action.
HARNESS_ATTRIBUTES = ("context", "harness")


def time_order(trace: Trace) -> list[Event]:
    """Events sorted by `t` (seconds); ties keep their order in `trace.events` (stable sort)."""
    return sorted(trace.events, key=attrgetter("t"))


def causal_dag(trace: Trace, order: list[Event] | None = None) -> tuple[nx.DiGraph, int]:
    """The causal DAG of `trace` and the number of its edges dropped as backward in time.

    Nodes: event ids, inserted in time order. Arcs carry `type`: an edge type of the trace, or
    `"lane"` within an agent's lane (`lane_arcs`). Self-loops, edges pointing backwards in time
    order and edges naming unknown events are dropped (counted in the second value).
    `order` is `time_order(trace)` where the caller already has it. O(V log V + E_lane + E).
    """
    order = time_order(trace) if order is None else order
    position = {event.id: index for index, event in enumerate(order)}
    dag = nx.DiGraph()
    dag.add_nodes_from(position)
    dag.add_edges_from(lane_arcs(order), type=LANE)
    dropped = 0
    for edge in trace.edges:
        src, dst = position.get(edge.src), position.get(edge.dst)
        if src is None or dst is None or src >= dst:
            dropped += 1
            continue
        dag.add_edge(edge.src, edge.dst, type=edge.type)
    return dag, dropped


def lane_arcs(order: list[Event]) -> list[tuple[str, str]]:
    """The arcs of each agent's lane, for events in time `order`: a -> b when a ended at or before b
    started (`event_end(a) <= b.t`, a first in time order), transitively reduced.

    Events an agent emits concurrently (parallel tool calls: intervals that overlap) get no arc
    between them; events without `t_end` are instants, so a lane of instants is chained in time
    order as before. Per agent, a *frontier* holds the ended events that no later ended event
    started after (pairwise overlapping, so at most the agent's peak concurrency k); each event
    gets an arc from every frontier member. O(V log V) time, O(V k) arcs.
    """
    arcs: list[tuple[str, str]] = []
    running: dict[str, list[tuple[float, int, Event]]] = {}  # agent -> heap of (end, position, event)
    frontier: dict[str, list[tuple[float, int, Event]]] = {}  # agent -> heap of (end, position, event)
    for index, event in enumerate(order):
        pending = running.setdefault(event.agent, [])
        ended = frontier.setdefault(event.agent, [])
        while pending and pending[0][0] <= event.t:
            done = heapq.heappop(pending)
            while ended and ended[0][0] <= done[2].t:  # done started after they ended: it covers them
                heapq.heappop(ended)
            heapq.heappush(ended, done)
        arcs.extend((before.id, event.id) for _, _, before in ended)
        heapq.heappush(pending, (event_end(event), index, event))
    return arcs


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


def non_agents(trace: Trace) -> frozenset[str]:
    """Humans, users and harness routines (module docstring "Roles"): not agents of the system."""
    declared = {
        agent.name
        for agent in trace.agents
        if (agent.role or "").casefold() in NON_AGENT_ROLES
        or any(agent.attributes.get(key) is True for key in NON_AGENT_ATTRIBUTES)
    }
    human: dict[str, bool] = {}
    for event in trace.events:
        said = event.type == "human_intervention" or (event.role or "").casefold() in ("human", "user")
        human[event.agent] = human.get(event.agent, True) and said
    return frozenset(declared | {agent for agent, only in human.items() if only})


def orchestrators(trace: Trace, tree: nx.DiGraph | None = None) -> frozenset[str]:
    """The orchestrator agents: spawn-tree roots of the system that spawn an agent of the system or
    emit an orchestrator event, where another agent of the system acts (module docstring)."""
    tree = spawn_tree(trace) if tree is None else tree
    others = non_agents(trace)
    system = set(tree.nodes) - others
    deciding = {event.agent for event in trace.events if event.type in ORCHESTRATOR_EVENT_TYPES}
    return frozenset(
        root
        for root in spawn_roots(tree)
        if root in system
        and system - {root}
        and (root in deciding or any(child not in others for child in tree.succ[root]))
    )


def final_answer(
    order: list[Event],
    roots: Iterable[str],
    *,
    dag: nx.DiGraph | None = None,
    deciding: Iterable[str] = (),
    agents: Iterable[str] = (),
) -> tuple[Event | None, bool]:
    """The final-answer event of events in time `order`, and whether the last-event fallback chose it.

    See the module docstring for the rule. `roots`: the spawn tree's roots; `agents`: every agent
    name of the trace besides those acting in `order`; `deciding`: the orchestrators; `dag`: the
    causal DAG, to tell a pure source (a root that is no orchestrator and has no arc from another
    agent) whose messages are questions, not answers; without it every agent may answer.
    `(None, True)` for a trace without events.
    """
    roots, deciding = set(roots), set(deciding)
    names = {event.agent for event in order} | roots | set(agents)
    receiving: set[str] = set()
    if dag is not None:
        agent_of = {event.id: event.agent for event in order}
        receiving = {agent_of[dst] for src, dst in dag.edges if agent_of[src] != agent_of[dst]}
    sources = roots - deciding - receiving if dag is not None else set()
    for event in reversed(order):
        if event.type in ("aggregate", "stop") and event.agent in roots:
            return event, False
        if event.type == "return" and event.to in roots:
            return event, False
        undirected = event.to is None or event.to == event.agent or event.to not in names
        if event.type == "message" and undirected and event.agent not in sources:
            return event, False
    return (order[-1] if order else None), True


@dataclass(frozen=True)
class Step:
    """One execution step: the ids of its events, its agent, its interval [start, end] in seconds
    (end: the latest `t_end`, else `t`, of its events), and whether it `counts` as an agent action
    (False where none of its events is one: `is_action`)."""

    events: tuple[str, ...]
    agent: str
    start: float
    end: float
    counts: bool = True


def event_end(event: Event) -> float:
    """`t_end`, else `t` (an event without a duration is an instant)."""
    return event.t_end if event.t_end is not None else event.t


def _instant(event: Event) -> bool:
    """Whether `event` has no duration (no `t_end`, or `t_end == t`)."""
    return event.t_end is None or event.t_end == event.t


def has_content(event: Event) -> bool:
    """Whether `event` recorded anything said: content, a content reference or tokens."""
    return bool(event.content) or event.content_ref is not None or event.tokens is not None


def is_action(event: Event, passive: frozenset[str] | set[str] = frozenset(), contentful: bool = False) -> bool:
    """Whether `event` is (part of) an agent action: not an event of a human, user or harness routine
    (`passive`: `non_agents`), not harness bookkeeping (an attribute in HARNESS_ATTRIBUTES, or a
    `speaker` that is the user or the harness: Codex's context, its end-of-turn `stop`, Claude
    Code's notifications), and, in a trace whose events record content (`contentful`), not a
    content-free framework span (`has_content` false: Monocle's workflow dispatches, Claude Code's
    inserted aggregates), tool calls and results aside (a call is an action whatever it
    recorded). In a trace where nothing records content, emptiness says nothing."""
    if event.agent in passive or any(event.attributes.get(key) is True for key in HARNESS_ATTRIBUTES):
        return False
    if event.attributes.get("speaker") in ("user", "harness"):
        return False
    return event.type in TOOL_EVENT_TYPES or not contentful or has_content(event)


def execution_steps(
    order: list[Event], dag: nx.DiGraph, passive: frozenset[str] | set[str] = frozenset()
) -> list[Step]:
    """The execution steps of events in time `order` (module docstring), ordered by their first event.

    `passive`: the agents whose events are no actions (`non_agents`). Instantaneous dispatch
    events at different times join one turn only in a trace with durations (some event with
    `t_end > t`): without any, `t` may be a mere position (Who&When's message index) and two
    dispatch messages are two turns.

    O(V log V + E): a join is refused by counting, with a binary search over sorted end times,
    the other agents' events that end after the step's last event ended and before the joining
    one starts.
    """
    ends = sorted(event_end(event) for event in order)
    ends_of: dict[str, list[float]] = {}
    for event in order:
        ends_of.setdefault(event.agent, []).append(event_end(event))
    for values in ends_of.values():
        values.sort()
    agent_of = {event.id: event.agent for event in order}
    timed = any(event.t_end is not None and event.t_end > event.t for event in order)
    contentful = any(has_content(event) for event in order)

    def others_end_between(agent: str, after: float, until: float) -> bool:
        own = ends_of[agent]
        total = bisect_right(ends, until) - bisect_right(ends, after)
        return total - (bisect_right(own, until) - bisect_right(own, after)) > 0

    members: list[list[Event]] = []
    response: list[str | None] = []  # the model response each step is, where the source says
    open_step: dict[str, int] = {}  # agent -> index of its latest step
    for event in order:
        index = open_step.get(event.agent)
        said = event.attributes.get(RESPONSE_ID)
        said = said if isinstance(said, str) and said else None
        if index is not None and _joins(event, members[index], response[index], said, timed, agent_of, dag):
            previous = members[index][-1]
            attached = event.type == "tool_result" or (said is not None and said == response[index])
            if attached or not others_end_between(event.agent, event_end(previous), event.t):
                members[index].append(event)
                response[index] = response[index] or said
                continue
        members.append([event])
        response.append(said)
        open_step[event.agent] = len(members) - 1
    return [
        Step(
            events=tuple(event.id for event in events),
            agent=events[0].agent,
            start=events[0].t,
            end=max(event_end(event) for event in events),
            counts=any(is_action(event, passive, contentful) for event in events),
        )
        for events in members
    ]


def _joins(
    event: Event,
    step: list[Event],
    response: str | None,
    said: str | None,
    timed: bool,
    agent_of: dict[str, str],
    dag: nx.DiGraph,
) -> bool:
    """Whether `event` may join its agent's latest `step` (module docstring "Execution steps"); the
    caller still refuses a tool call, dispatch or stop when another agent's event ended in between."""
    if said is not None and response is not None:
        return said == response  # the parts of one model response, and only they
    if any(agent_of[src] != event.agent for src in dag.pred[event.id]):
        return False  # it answers another agent: a new action
    if event.type in TOOL_EVENT_TYPES:
        return True  # issued by the turn before it
    if event.type not in ATTACHED_EVENT_TYPES:
        return False  # an LLM turn of its own
    previous = step[-1]
    return event.t == previous.t or (timed and _instant(event))


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
    #: Figures the metric functions computed on this graph (name -> value), so that one that others
    #: reuse (critical steps, work durations) is computed once per `compute_metrics`.
    memo: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, source: Trace | TraceGraph) -> TraceGraph:
        """`source` itself when it is a TraceGraph, else the graphs of the trace `source`."""
        if isinstance(source, TraceGraph):
            return source
        order = time_order(source)
        dag, dropped = causal_dag(source, order)
        tree = spawn_tree(source, order)
        deciding = orchestrators(source, tree)
        answer, fallback = final_answer(order, spawn_roots(tree), dag=dag, deciding=deciding, agents=tree.nodes)
        return cls(
            trace=source,
            order=order,
            dag=dag,
            backward_edges=dropped,
            tree=tree,
            orchestrators=deciding,
            final_answer=answer,
            final_answer_fallback=fallback,
        )

    @cached_property
    def non_agents(self) -> frozenset[str]:
        """Humans, users and harness routines (`non_agents`)."""
        return non_agents(self.trace)

    @cached_property
    def agents(self) -> frozenset[str]:
        """The acting agents of the system: agents with an event, humans and harness routines aside."""
        return frozenset(event.agent for event in self.order) - self.non_agents

    @cached_property
    def main_agents(self) -> frozenset[str]:
        """The orchestrators, else the one agent of a single-agent trace (else none: a peer group)."""
        if self.orchestrators:
            return self.orchestrators
        return self.agents if len(self.agents) == 1 else frozenset()

    @cached_property
    def sub_agents(self) -> frozenset[str]:
        """The acting agents of the system that are not main agents (orchestrators, a lone agent)."""
        return self.agents - self.main_agents

    @cached_property
    def spawned_agents(self) -> frozenset[str]:
        """Agents of the system with a parent in the spawn tree (harness routines aside)."""
        return frozenset(agent for agent, parents in self.tree.in_degree() if parents) - self.non_agents

    @cached_property
    def useful_events(self) -> frozenset[str]:
        """Ids of the final answer and every event with a causal path to it (empty without events)."""
        if self.final_answer is None:
            return frozenset()
        return frozenset(upstream(self.dag, self.final_answer.id))

    @cached_property
    def steps(self) -> list[Step]:
        """The execution steps (`execution_steps`), ordered by their first event."""
        return execution_steps(self.order, self.dag, self.non_agents)
