"""The multi-agent structure and the trace: `build_trace` makes one trace of a root thread.

On the events `Threads` (threads.py) read, it resolves spawned children, turns collab calls into
spawn, delegation, return and despawn structure with their edges (only forward edges kept), then
the agents, costs and attributes. The rules: the package docstring.
"""

from __future__ import annotations

from typing import Any

from swarmscope.model import Agent, Edge, Event, Trace

from .records import USAGE_KEYS, Rollout
from .threads import CLOSE, SEND, USER, Collab, Thread, Threads


def build_trace(format_: str, root: str, rollouts: list[Rollout], sources: list[str]) -> Trace:
    """One trace of the root thread `root` from its and its descendants' rollouts. Raises
    ValueError when one thread comes in two files that disagree, or the root has no rollout."""
    return _Builder(root, rollouts, sources).build(format_)


class _Builder(Threads):
    """`Threads` with the multi-agent structure, the edges and the trace-level fields."""

    # -- multi-agent structure

    def _resolve(self) -> dict[str, str]:
        """Thread id -> agent name for every thread imported or spawned; sets spawn targets."""
        names = {t.rollout.thread_id: t.agent for t in self.threads.values()}
        claimed: set[str] = set()
        spawns = [c for c in self.collabs if c.kind == "spawn"]
        for collab in spawns:
            hint = self.hints.get(collab.event.attributes["call_id"], {})
            collab.child = collab.child or hint.get("new_thread_id")
            if collab.child:
                claimed.add(collab.child)
        for collab in spawns:  # children whose spawn output gave no id: in order of start, per parent
            if collab.child is None:
                parent = collab.thread.rollout.thread_id
                collab.child = next(
                    (
                        t.rollout.thread_id
                        for t in self.threads.values()
                        if t.rollout.parent_id == parent and t.rollout.thread_id not in claimed
                    ),
                    None,
                )
                if collab.child:
                    claimed.add(collab.child)
        for collab in spawns:
            if collab.child is None:
                collab.event.attributes["spawn_failed"] = True
                continue
            if collab.child not in names:
                hint = self.hints.get(collab.event.attributes["call_id"], {})
                base = (
                    collab.event.attributes.get("nickname")
                    or hint.get("new_agent_nickname")
                    or collab.args.get("agent_type")
                    or collab.child
                )
                names[collab.child] = self._unique(str(base))
                self.agents[names[collab.child]] = Agent(
                    name=names[collab.child],
                    role=str(collab.args.get("agent_type") or "subagent"),
                    attributes={"thread_id": collab.child, "rollout_imported": False},
                )
            agent = self.agents[names[collab.child]]
            agent.parent = collab.thread.agent
            agent.spawned_at = collab.event.t
            collab.event.to = names[collab.child]
            if collab.delegate is not None:
                collab.delegate.to = names[collab.child]
        for thread in self.threads.values():
            if thread.joined and self.agents[thread.agent].parent is None:
                spawner = self.threads.get(thread.rollout.parent_id or "")
                self.agents[thread.agent].parent = spawner.agent if spawner else None
        for collab in spawns:
            if collab.child is None and collab.delegate is not None:
                collab.event.content = collab.delegate.content
                self.events.remove(collab.delegate)
                collab.thread.events.remove(collab.delegate)
                collab.delegate = None
        return names

    def _target(self, names: dict[str, str], target: str) -> str | None:
        if target in names:
            return names[target]
        for agent in self.agents.values():
            attrs = agent.attributes
            if target in (agent.name, attrs.get("agent_nickname"), attrs.get("agent_path")):
                return agent.name
        return None

    def _structure(self, names: dict[str, str]) -> None:
        """Spawn, delegation, return and despawn structure of the collab calls, in time order."""
        by_agent = {t.agent: t for t in self.threads.values()}
        delegations: dict[str, list[Event]] = {}
        returned: set[str] = set()
        for collab in sorted(self.collabs, key=lambda c: self._key(c.event)):
            event = collab.event
            if collab.kind == "spawn":
                child = by_agent.get(event.to or "")
                if collab.delegate is not None and event.to is not None:
                    delegations.setdefault(event.to, []).append(collab.delegate)
                if child is not None and child.events:
                    self.edges.append((event, min(child.events, key=self._key), "spawn"))
                continue
            targets = [name for raw in event.attributes["targets"] if (name := self._target(names, raw))]
            if collab.kind == "wait":
                self._wait(collab, targets, by_agent, returned)
                continue
            event.to = targets[0] if targets else event.attributes["targets"][0]
            receiver = self.agents.get(event.to)
            if collab.kind == CLOSE and receiver is not None:
                receiver.despawned_at = collab.output_t if collab.output_t is not None else event.t
            elif collab.kind == SEND and receiver is not None and receiver.parent == collab.thread.agent:
                delegations.setdefault(event.to, []).append(event)
            elif collab.kind == SEND:
                event.type = "message"
                if event.to in by_agent:
                    self._link(event, by_agent[event.to], event.t)
        for name, sent in delegations.items():
            if name in by_agent:
                self._deliver(by_agent[name], sorted(sent, key=self._key))
        for event, thread in self.inputs:
            self._link(event, thread, event.t, event.attributes["line"])

    def _wait(self, collab: Collab, targets: list[str], by_agent: dict[str, Thread], returned: set[str]) -> None:
        """Each waited-on agent's last answer before the wait came back (not returned before) returns to it."""
        event = collab.event
        event.attributes["waited_on"] = targets
        for name in targets:
            lane = by_agent[name].events if name in by_agent else []
            answers = [e for e in lane if e.role == "assistant" and e.type in ("message", "return") and e.t <= event.t]
            last = max(answers, key=self._key, default=None)
            if last is None or last.id in returned:
                continue
            returned.add(last.id)
            last.type, last.from_, last.to = "return", last.agent, collab.thread.agent
            self.edges.append((last, event, "return"))

    def _deliver(self, child: Thread, sent: list[Event]) -> None:
        """The n-th delegation reaches the child after its n-th input; inputs beyond the delegations
        become messages from the user."""
        for i, delegate in enumerate(sent):
            if i < len(child.deliveries):
                line, _, t = child.deliveries[i]
                self._link(delegate, child, t, line)
            else:
                self._link(delegate, child, delegate.t)
        for line, text, t in child.deliveries[len(sent) :]:
            event = Event(
                id=f"{child.rollout.thread_id}:{line}",
                t=t,
                type="message",
                agent=USER,
                from_=USER,
                to=child.agent,
                role="user",
                content=text,
                attributes={"line": line, "undelegated": True},
            )
            self.events.append(event)
            self.rank[event.id] = (child.index, line, 0)
            self._link(event, child, t, line)

    def _key(self, event: Event) -> tuple[float, int, int, int]:
        """Time order; ties by thread (root first), line, and spawn before its delegate."""
        return (event.t, *self.rank[event.id])

    def _link(self, src: Event, thread: Thread, t: float, after_line: int | None = None) -> None:
        """A `message` edge from `src` to the thread's first event after `after_line` (else at or after `t`)."""
        lane = [e for e in thread.events if e.agent == thread.agent and e is not src]
        if after_line is not None:
            later = [e for e in lane if e.attributes.get("line", 0) > after_line]
        else:
            later = [e for e in lane if e.t >= t]
        target = min(later, key=self._key, default=None)
        if target is not None:
            self.edges.append((src, target, "message"))

    def build(self, format_: str) -> Trace:
        self._name_threads()
        for thread in self.threads.values():
            self._read(thread)
        names = self._resolve()
        self._structure(names)
        self.events.sort(key=self._key)
        position = {e.id: i for i, e in enumerate(self.events)}
        edges: dict[tuple[str, str], str] = {}
        for src, dst, type_ in self.edges:
            if src.id in position and dst.id in position and position[src.id] < position[dst.id]:
                edges.setdefault((src.id, dst.id), type_)
        if any(e.agent == USER for e in self.events):
            self.agents.setdefault(USER, Agent(name=USER, role="human"))
        root = self.threads[self.root_id]
        for thread in self.threads.values():
            agent = self.agents[thread.agent]
            agent.attributes["turns"] = len(thread.turns)
            if thread.models:
                agent.attributes["model"] = thread.models[-1]
        return Trace(
            source_format=format_,
            source_id=self.root_id,
            name=self._name(),
            system="OpenAI Codex CLI",
            topology="harness",
            agents=list(self.agents.values()),
            events=self.events,
            edges=[Edge(src, dst, type_) for (src, dst), type_ in edges.items()],
            costs=self._costs(),
            attributes=self._attributes(root),
        )

    def _name(self) -> str:
        first = next((e.content for e in self.events if e.type == "message" and e.agent == USER and e.content), None)
        line = (first or "").strip().splitlines()[0] if (first or "").strip() else ""
        return line[:120] or f"Codex session {self.root_id}"

    def _costs(self) -> dict[str, float]:
        totals = {key: sum(t.usage.get(key, 0) for t in self.threads.values()) for key in USAGE_KEYS}
        ends = [e.t_end if e.t_end is not None else e.t for e in self.events]
        return {
            "tokens": totals["total_tokens"] or totals["input_tokens"] + totals["output_tokens"],
            **{key: totals[key] for key in USAGE_KEYS if key != "total_tokens"},
            "wall_clock_s": max(ends, default=0.0),
            "tool_calls": sum(e.type == "tool_call" for e in self.events),
        }

    def _attributes(self, root: Thread) -> dict[str, Any]:
        meta, spawn = root.rollout.meta, root.rollout.spawn
        orphan_depth = spawn.get("depth") if root.rollout.parent_id else None
        session = root.rollout.parent_id if orphan_depth == 1 else self.root_id
        attributes: dict[str, Any] = {
            "session_id": session,
            "thread_id": self.root_id,
            "sources": self.sources,
            "start_time": meta.get("timestamp"),
            "threads": len(self.threads),
            "turns": sum(len(t.turns) for t in self.threads.values()),
        }
        attributes.update({k: meta[k] for k in ("cwd", "cli_version", "originator", "model_provider") if meta.get(k)})
        if isinstance(meta.get("source"), str):
            attributes["source"] = meta["source"]
        if root.models:
            attributes["model"] = root.models[0]
        models = list(dict.fromkeys(m for t in self.threads.values() for m in t.models))
        if models:
            attributes["models"] = models
        first = next((e.content for e in self.events if e.type == "message" and e.agent == USER), None)
        if first is not None:
            attributes["input"] = first
        if self.notes:
            attributes["notes"] = self.notes
        return attributes
