"""Deterministic synthetic orchestration traces for benchmarks and demos.

`synthetic_trace(n_agents, n_events, seed)` builds a hierarchical swarm: an `orchestrator`
spawns and delegates to leads and workers (spawn tree at most 3 levels deep), which call tools,
message their parent and siblings, spawn their own workers, aggregate what those return and
return in turn; the orchestrator aggregates and stops. Events carry durations, content (a
made-up vocabulary of research chatter) and mostly tokens; about 3 % of tool results fail, about
5 % of messages repeat an earlier one to the same receiver, and about 2 % of workers are
abandoned (their parent never waits for their return: pseudo-parallelism). The same arguments
always give an equal trace (one `random.Random(seed)`, no other source of randomness).
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field

from swarmscope.model import Agent, Edge, Event, Label, Trace, estimate_tokens

ROLES = ("researcher", "coder", "analyst", "critic", "verifier", "writer")
TOOLS = ("web.search", "web.fetch", "python.exec", "sql.query", "fs.read", "vector.search")
WORDS = (
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "for",
    "with",
    "on",
    "from",
    "by",
    "is",
    "are",
    "we",
    "result",
    "source",
    "claim",
    "evidence",
    "table",
    "figure",
    "dataset",
    "query",
    "answer",
    "estimate",
    "baseline",
    "model",
    "agent",
    "plan",
    "step",
    "check",
    "verify",
    "compare",
    "summarise",
    "search",
    "found",
    "missing",
    "conflicting",
    "consistent",
    "likely",
    "unclear",
    "revenue",
    "growth",
    "latency",
    "accuracy",
    "benchmark",
    "paper",
    "section",
    "appendix",
    "2023",
    "2024",
    "percent",
    "median",
    "outlier",
    "error",
    "retry",
    "timeout",
    "cached",
    "function",
    "test",
    "passes",
    "fails",
    "patch",
    "diff",
    "log",
    "trace",
    "token",
    "cost",
    "next",
    "because",
    "however",
    "therefore",
    "confirmed",
    "rejected",
    "pending",
    "draft",
)
#: Shares of the random choices described in the module docstring.
FAILED_TOOL_SHARE = 0.03
REPEATED_MESSAGE_SHARE = 0.05
ABANDONED_WORKER_SHARE = 0.02
MAX_DEPTH = 3


@dataclass
class _Node:
    """One agent of the spawn tree while the trace is generated."""

    name: str
    role: str
    parent: int | None
    depth: int
    children: list[int] = field(default_factory=list)
    work: int = 0
    abandoned: bool = False


class _Builder:
    """Accumulates events (in generation order) and edges between them, then numbers them."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.events: list[Event] = []
        self.edges: list[tuple[int, int, str]] = []
        self.last_to: dict[str, str] = {}

    def text(self, low: int, high: int) -> str:
        """A sentence of `low` to `high` words."""
        words = self.rng.choices(WORDS, k=self.rng.randint(low, high))
        return " ".join(words).capitalize() + "."

    def llm_time(self) -> float:
        """Seconds an LLM turn takes: log-normal, median about 1.3 s."""
        return round(self.rng.lognormvariate(0.3, 0.6), 3)

    def emit(
        self, t: float, duration: float, type_: str, agent: str, *, tokens: bool = True, **fields
    ) -> tuple[int, float]:
        """Add an event starting at `t`; returns its index and the time the agent is free again."""
        t_end = round(t + duration, 3)
        event = Event(id="", t=round(t, 3), t_end=t_end, type=type_, agent=agent, **fields)
        if tokens and event.content:
            event.tokens = estimate_tokens(event.content) + self.rng.randint(0, 12)
        self.events.append(event)
        return len(self.events) - 1, t_end + round(self.rng.uniform(0.01, 0.2), 3)

    def message(self, t: float, sender: _Node, receiver: str) -> float:
        """A message to `receiver`, now and then repeating (recased, re-spaced) its last one."""
        repeat = self.last_to.get(receiver)
        if repeat is not None and self.rng.random() < REPEATED_MESSAGE_SHARE:
            content = "  " + repeat.upper() if self.rng.random() < 0.5 else repeat + "\n"
        else:
            content = self.text(15, 80)
            self.last_to[receiver] = content
        _, t = self.emit(
            t,
            self.llm_time(),
            "message",
            sender.name,
            role=sender.role,
            from_=sender.name,
            to=receiver,
            content=content,
        )
        return t

    def tool_call(self, t: float, agent: _Node, answered: bool = True) -> float:
        """A tool call and its result (1 or 2 events: an unanswered call has no result)."""
        tool = self.rng.choice(TOOLS)
        call, t = self.emit(
            t,
            round(self.rng.lognormvariate(0.0, 0.8), 3),
            "tool_call",
            agent.name,
            role=agent.role,
            tool=tool,
            content=f"{tool}({self.text(3, 12)!r})",
        )
        if not answered:
            return t
        failed = self.rng.random() < FAILED_TOOL_SHARE
        attributes = {"status": "error", "error": "TimeoutError: tool did not answer"} if failed else {"status": "ok"}
        result, t = self.emit(
            t,
            0.02,
            "tool_result",
            agent.name,
            role=agent.role,
            tool=tool,
            content=self.text(5, 15) if failed else self.text(30, 200),
            attributes=attributes,
        )
        self.edges.append((call, result, "tool_dependency"))
        return t


def _spawn_tree(rng: random.Random, n_agents: int) -> list[_Node]:
    """The orchestrator (index 0) and n_agents - 1 agents below it, at most MAX_DEPTH deep.

    The orchestrator gets about sqrt(n_agents) direct children; each later agent picks a parent
    uniformly among the earlier agents that may still have children.
    """
    nodes = [_Node("orchestrator", "orchestrator", None, 0)]
    direct = min(n_agents - 1, max(2, round(n_agents**0.5)))
    eligible: list[int] = []
    for index in range(1, n_agents):
        parent = 0 if index <= direct else rng.choice(eligible)
        nodes.append(_Node("", "", parent, nodes[parent].depth + 1))
        nodes[parent].children.append(index)
        if nodes[index].depth < MAX_DEPTH:
            eligible.append(index)
    for index, node in enumerate(nodes[1:], start=1):
        node.role = "lead" if node.children else rng.choice(ROLES)
        node.name = f"{node.role}-{index:04d}"
        node.abandoned = not node.children and rng.random() < ABANDONED_WORKER_SHARE
    return nodes


def _structural_events(nodes: list[_Node]) -> int:
    """Events every run has: the orchestrator's first decision, aggregate and stop; per other
    agent a spawn, a delegate and a return; per other spawning agent an aggregate."""
    return 3 + 3 * (len(nodes) - 1) + sum(1 for node in nodes[1:] if node.children)


def _share_work(rng: random.Random, nodes: list[_Node], work: int) -> None:
    """Spread `work` free events over the agents, the orchestrator weighted three times."""
    weights = [rng.uniform(0.5, 1.5) * (3 if index == 0 else 1) for index in range(len(nodes))]
    total = sum(weights)
    for node, weight in zip(nodes, weights):
        node.work = int(work * weight / total)
    for index in range(work - sum(node.work for node in nodes)):
        nodes[index % len(nodes)].work += 1


def _run(builder: _Builder, nodes: list[_Node], index: int, t: float) -> tuple[int, int, float]:
    """Generate agent `index`'s events from time `t` (and recursively its children's).

    Returns the index of its first event, of its last (return, or stop) and the time it ends.
    Its free work is split: a third before it spawns, the rest while its children run.
    """
    rng, node = builder.rng, nodes[index]
    if node.abandoned:
        receivers: list[str] = []
    elif node.parent is None:
        receivers = [nodes[i].name for i in node.children]
    else:
        siblings = nodes[node.parent].children
        receivers = [nodes[i].name for i in siblings[: siblings.index(index)]]  # already spawned
        receivers.append(nodes[node.parent].name)
    first = len(builder.events)
    if node.parent is None:
        _, t = builder.emit(
            t,
            builder.llm_time(),
            "orchestrator_decision",
            node.name,
            role=node.role,
            content="Plan: " + builder.text(20, 60),
        )

    def do_work(count: int, t: float, receivers: list[str]) -> float:
        while count > 0:
            draw = rng.random()
            if count >= 2 and draw < 0.55:
                t, count = builder.tool_call(t, node), count - 2
                continue
            if receivers and (draw < 0.8 or not node.children):
                t = builder.message(t, node, rng.choice(receivers))
            elif node.children or node.parent is None:
                _, t = builder.emit(
                    t,
                    builder.llm_time(),
                    "orchestrator_decision",
                    node.name,
                    role=node.role,
                    content="Decide: " + builder.text(10, 40),
                )
            else:
                t = builder.tool_call(t, node, answered=False)
            count -= 1
        return t

    before = node.work // 3
    t = do_work(before, t, receivers if node.parent is not None else [])  # children not yet spawned
    returns, busy_until = [], t
    for child in node.children:
        spawn, t = builder.emit(
            t,
            round(rng.uniform(0.05, 0.5), 3),
            "spawn",
            node.name,
            role=node.role,
            to=nodes[child].name,
            tokens=False,
            content=f"spawn {nodes[child].role}",
        )
        delegate, t = builder.emit(
            t,
            builder.llm_time(),
            "delegate",
            node.name,
            role=node.role,
            from_=node.name,
            to=nodes[child].name,
            content="Task: " + builder.text(20, 80),
        )
        child_first, child_last, child_end = _run(builder, nodes, child, t)
        builder.edges += [(spawn, child_first, "spawn"), (delegate, child_first, "message")]
        if not nodes[child].abandoned:
            returns.append(child_last)
            busy_until = max(busy_until, child_end)
    t = max(do_work(node.work - before, t, receivers), busy_until)
    if node.children or node.parent is None:
        aggregate, t = builder.emit(
            t, builder.llm_time(), "aggregate", node.name, role=node.role, content="Combined: " + builder.text(30, 120)
        )
        builder.edges += [(ret, aggregate, "return") for ret in returns]
    if node.parent is None:
        last, t = builder.emit(t, 0.01, "stop", node.name, role=node.role, tokens=False, content="stop: answer ready")
    else:
        last, t = builder.emit(
            t,
            builder.llm_time(),
            "return",
            node.name,
            role=node.role,
            from_=node.name,
            to=nodes[node.parent].name,
            content="Findings: " + builder.text(20, 100),
        )
    return first, last, t


def _link_messages(events: list[Event], edges: list[Edge]) -> None:
    """Add a `message` edge from each message to its receiver's first event after it ends."""
    starts: dict[str, list[float]] = {}
    lanes: dict[str, list[Event]] = {}
    for event in events:
        starts.setdefault(event.agent, []).append(event.t)
        lanes.setdefault(event.agent, []).append(event)
    for event in events:
        if event.type != "message" or event.to not in lanes:
            continue
        at = bisect.bisect_right(starts[event.to], event.t_end)
        if at < len(lanes[event.to]):
            edges.append(Edge(event.id, lanes[event.to][at].id, "message"))


def synthetic_trace(n_agents: int, n_events: int, seed: int = 0) -> Trace:
    """A deterministic synthetic orchestration trace with exactly `n_agents` agents and
    `n_events` events (see the module docstring); times in seconds from 0, ids `e000000`... in
    time order. Raises ValueError when `n_agents` < 1 or `n_events` is below the events the
    spawn tree needs (about 3 per agent plus one per spawning agent).
    """
    if n_agents < 1:
        raise ValueError(f"n_agents must be >= 1, got {n_agents}")
    rng = random.Random(seed)
    nodes = _spawn_tree(rng, n_agents)
    needed = _structural_events(nodes)
    if n_events < needed:
        raise ValueError(f"{n_agents} agents need at least {needed} events, got {n_events}")
    _share_work(rng, nodes, n_events - needed)
    builder = _Builder(rng)
    _, _, t_end = _run(builder, nodes, 0, 0.0)
    ranks = sorted(range(len(builder.events)), key=lambda i: builder.events[i].t)
    events = [builder.events[i] for i in ranks]
    for rank, event in enumerate(events):
        event.id = f"e{rank:06d}"
    edges = [Edge(builder.events[src].id, builder.events[dst].id, type_) for src, dst, type_ in builder.edges]
    _link_messages(events, edges)
    spans: dict[str, tuple[float, float]] = {}
    for event in events:
        start, end = spans.get(event.agent, (event.t, event.t_end))
        spans[event.agent] = (min(start, event.t), max(end, event.t_end))
    spawned_at = {event.to: event.t for event in events if event.type == "spawn"}
    agents = [
        Agent(
            name=node.name,
            role=node.role,
            parent=nodes[node.parent].name if node.parent is not None else None,
            spawned_at=spawned_at.get(node.name, 0.0),
            despawned_at=spans[node.name][1],
            system_prompt=f"You are the {node.role} of a research swarm.",
        )
        for node in nodes
    ]
    failed = [step for step, event in enumerate(events) if event.attributes.get("status") == "error"]
    tool_calls = sum(event.type == "tool_call" for event in events)
    return Trace(
        source_format="synthetic",
        source_id=f"synthetic-a{n_agents}-e{n_events}-s{seed}",
        name=f"Synthetic swarm: {n_agents} agents, {n_events} events (seed {seed})",
        system="swarmscope-synthetic",
        topology="hierarchical",
        task_id=f"synthetic-task-{seed}",
        agents=agents,
        events=events,
        edges=edges,
        rewards={"team": round(1.0 - len(failed) / max(1, tool_calls), 3)},
        costs={
            "tokens": float(sum(event.tokens or 0 for event in events)),
            "wall_clock_s": float(t_end),
            "tool_calls": float(tool_calls),
            "messages": float(sum(event.type == "message" for event in events)),
        },
        labels=[
            Label(
                key="mistake_step",
                value=str(failed[0]),
                event_id=events[failed[0]].id,
                agent=events[failed[0]].agent,
                source="synthetic",
            )
        ]
        if failed
        else [],
        attributes={
            "generator": "tests.synthetic",
            "seed": seed,
            "question": "Synthetic research task: " + builder.text(8, 20),
        },
    )
