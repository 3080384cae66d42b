"""The event/edge builder: `build_trace` turns one session's records into an orchestration trace.

On the lanes and delegations of `lanes.py`, it makes each lane's events (messages, tool calls and
results, spawns, delegations, returns, compactions), then the spawn, message, return, aggregate
and tool_dependency edges, then the agents, costs and attributes. The rules: the package docstring.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from swarmscope.graph import RESPONSE_ID
from swarmscope.model import Agent, Edge, Event, Trace

from ..otel_sdk import EPOCH
from . import lanes as lanes_
from .lanes import COMPACTION, LEAD, USER, Delegation, Lane
from .records import USAGE_KEYS, mapping, parse_time, parts, readable_prompt, text_of

MESSAGE_TOOL = "SendMessage"
#: User texts the harness writes, not the human: teammate messages (shown by their `SendMessage`)
#: and background-task notifications.
TEAMMATE_PREFIX = "<teammate-message"
NOTIFICATION_PREFIX = "<task-notification>"
#: Names by which teammates address the lead.
LEAD_ALIASES = ("team-lead", "lead", "main", "leader")


def build_trace(format_: str, session_id: str, records: list[dict], sources: list[str]) -> Trace:
    """The trace of one session from its checked records (session and subagent files, any order).
    Raises ValueError when no user or assistant record has a time."""
    return _Builder(session_id, records, sources).build(format_)


class _Builder:
    def __init__(self, session_id: str, records: list[dict], sources: list[str]):
        self.session_id, self.sources, self.records = session_id, sources, records
        self.lead, self.lanes = lanes_.collect(records)
        times = [parse_time(r["timestamp"]) for lane in [self.lead, *self.lanes] for r in lane.records]
        if not times:
            raise ValueError(f"session {session_id} has no timed user or assistant records")
        self.t0 = min(times)
        self.delegation_list = lanes_.delegations(records, self.lead, self.lanes)
        self.delegations = {d.tool_use_id: d for d in self.delegation_list}
        taken = {LEAD, USER}
        for lane in self.lanes:
            lane.name = lanes_.name(lane, taken)
        self.events: list[Event] = []
        self.seq: dict[str, float] = {}  # event id -> order of creation (ties of `t`)
        self.edges: dict[tuple[str, str], str] = {}
        self.tool_calls: dict[str, Event] = {}
        self.results: list[tuple[str, Event]] = []
        self.sends: list[tuple[Event, list[str]]] = []
        self.prompts: list[Event] = []
        self.calls: dict[tuple[str, str], dict] = {}  # (lane, message id) -> usage
        self.call_events: dict[tuple[str, str], Event] = {}
        self.models: list[str] = []
        self.compaction_spawns: list[tuple[Event, str, Event]] = []
        self.lane_spawns: dict[str, Event] = {}
        self.position: dict[str, int] = {}
        self.index: dict[str, list[Event]] = {}
        self.answers: list[tuple[str, Event]] = []  # (subagent, its return)

    # -- events

    def _t(self, value: Any) -> float:
        return round(max((parse_time(value) - self.t0) / 1e9, 0.0), 6)

    def _event(self, event_id: str, t: float, type_: str, agent: str, **fields: Any) -> Event:
        base, n = event_id, 2
        while event_id in self.seq:
            event_id, n = f"{base}#{n}", n + 1
        event = Event(id=event_id, t=t, type=type_, agent=agent, **fields)
        self.seq[event_id] = len(self.events)
        self.events.append(event)
        return event

    def _edge(self, src: Event | None, dst: Event | None, type_: str) -> None:
        if src is not None and dst is not None and src.id != dst.id:
            self.edges.setdefault((src.id, dst.id), type_)

    def _spawn(self, lane: Lane, attributes: dict[str, Any]) -> Event:
        """A spawn of `lane` by the lead at its first record (content: its prompt)."""
        start = self._t(lane.records[0]["timestamp"])
        spawn = self._event(
            f"{lane.key}:spawn",
            start,
            "spawn",
            LEAD,
            from_=LEAD,
            to=lane.name,
            content=lane.prompt(),
            attributes=attributes,
        )
        self.lane_spawns[lane.name] = spawn
        return spawn

    def _lane_events(self, lane: Lane) -> None:
        agent = lane.name
        prompt_skipped = lane.kind == "lead"
        for record in lane.records:
            t = self._t(record["timestamp"])
            if record["type"] == "assistant":
                prompt_skipped = True
                self._assistant(lane, record, t)
            elif record["type"] == "user" and not (record.get("isMeta") or record.get("isCompactSummary")):
                content = parts(record)
                results = [p for p in content if p["type"] == "tool_result"]
                for part in results:
                    self._result(lane, record, part, t)
                said = text_of([p for p in content if p["type"] in ("text", "image")])
                if results or not said.strip():
                    continue
                if not prompt_skipped:  # a subagent's task: its delegate or spawn event holds it
                    prompt_skipped = True
                    continue
                if lane.kind == "lead":
                    self._user_text(record, said, t)
                elif not said.startswith(TEAMMATE_PREFIX):
                    self._event(record["uuid"], t, "message", agent, content=said, attributes={"speaker": "user"})

    def _user_text(self, record: dict, said: str, t: float) -> None:
        if said.startswith(TEAMMATE_PREFIX):
            return
        if said.startswith(NOTIFICATION_PREFIX):
            self._event(record["uuid"], t, "message", LEAD, content=said, attributes={"speaker": "harness"})
            return
        type_ = "human_intervention" if self.prompts else "message"
        event = self._event(record["uuid"], t, type_, USER, role="human", from_=USER, to=LEAD, content=said)
        self.prompts.append(event)

    def _assistant(self, lane: Lane, record: dict, t: float) -> None:
        message, agent = record["message"], lane.name
        model = message.get("model")
        if isinstance(model, str) and model not in self.models and not model.startswith("<"):
            self.models.append(model)
        first = len(self.events)
        made: list[Event] = []
        for k, part in enumerate(parts(record)):
            event_id = record["uuid"] if k == 0 else f"{record['uuid']}:{k}"
            if part["type"] in ("text", "thinking"):
                said = part.get("text") if part["type"] == "text" else part.get("thinking")
                if isinstance(said, str) and said.strip():
                    attributes = {"part": part["type"]}
                    made.append(
                        self._event(event_id, t, "message", agent, from_=agent, content=said, attributes=attributes)
                    )
            elif part["type"] == "tool_use":
                made.append(self._tool_use(lane, part, t))
        call = message.get("id") or record["uuid"]
        for event in self.events[first:]:  # its blocks, spawns and delegations: one model response
            event.attributes[RESPONSE_ID] = call
        usage = message.get("usage")
        if isinstance(usage, dict):
            self.calls[(lane.key, call)] = {key: usage.get(key) or 0 for key in USAGE_KEYS} | {"model": model}
        if made:
            self.call_events[(lane.key, call)] = made[-1]
        elif (lane.key, call) not in self.call_events and isinstance(usage, dict):
            self.call_events[(lane.key, call)] = self._event(
                record["uuid"], t, "message", agent, attributes={"empty": True}
            )

    def _tool_use(self, lane: Lane, part: dict, t: float) -> Event:
        agent, given = lane.name, mapping(part.get("input"))
        delegation = self.delegations.get(part["id"])
        if delegation is not None and delegation.target is not None:
            target = delegation.target.name
            keys = ("subagent_type", "description", "name", "team_name", "run_in_background")
            attributes: dict[str, Any] = {"tool_use_id": part["id"], **{k: given[k] for k in keys if k in given}}
            if "model" in given:
                attributes["subagent_model"] = given["model"]
            spawn = self._event(
                f"{part['id']}:spawn", t, "spawn", agent, from_=agent, to=target, attributes=dict(attributes)
            )
            event = self._event(
                f"{part['id']}:delegate",
                t,
                "delegate",
                agent,
                from_=agent,
                to=target,
                tool=part["name"],
                content=given.get("prompt") if isinstance(given.get("prompt"), str) else None,
                attributes=attributes,
            )
            delegation.events = [spawn, event]
            if "team_name" in given:  # a teammate: the result acknowledges the spawn, answers come by SendMessage
                self.tool_calls[part["id"]] = event
            return event
        if part["name"] == MESSAGE_TOOL:
            body = given.get("message", given.get("content"))
            if isinstance(body, dict):
                body = body.get("content", json.dumps(body))
            recipient = given.get("to", given.get("recipient"))
            broadcast = given.get("type") == "broadcast" or recipient in ("*", None)
            attributes = {"tool_use_id": part["id"], **{k: given[k] for k in ("summary", "type") if k in given}}
            if broadcast:
                attributes["broadcast"] = True
            event = self._event(
                part["id"],
                t,
                "message",
                agent,
                from_=agent,
                to=None if broadcast else str(recipient),
                tool=MESSAGE_TOOL,
                content=body if isinstance(body, str) else None,
                attributes=attributes,
            )
            self.sends.append((event, [] if broadcast else [str(recipient)]))
        else:
            content = json.dumps(given, ensure_ascii=False)
            attributes = {"tool_use_id": part["id"]}
            event = self._event(
                part["id"], t, "tool_call", agent, tool=part["name"], content=content, attributes=attributes
            )
        self.tool_calls[part["id"]] = event
        return event

    def _result(self, lane: Lane, record: dict, part: dict, t: float) -> None:
        use_id = part["tool_use_id"]
        status = {"status": "error", "error": True} if part.get("is_error") else {}
        delegation = self.delegations.get(use_id)
        if (
            delegation is not None
            and delegation.target is not None
            and delegation.events
            and "team_name" not in delegation.input
        ):
            result = mapping(record.get("toolUseResult"))
            keys = ("status", "totalDurationMs", "totalTokens", "totalToolUseCount")
            sub = delegation.target.name
            event = self._event(
                f"{use_id}:return",
                t,
                "return",
                sub,
                from_=sub,
                to=lane.name,
                content=text_of(part.get("content")),
                attributes={"tool_use_id": use_id, **{k: result[k] for k in keys if k in result}, **status},
            )
            delegation.events.append(event)
            delegation.events[1].t_end = t
            self.answers.append((sub, event))
            return
        call = self.tool_calls.get(use_id)
        event = self._event(
            f"{use_id}:result",
            t,
            "tool_result",
            lane.name,
            tool=call.tool if call else None,
            content=text_of(part.get("content")),
            attributes={"tool_use_id": use_id, **status},
        )
        if call is not None:
            call.t_end = max(t, call.t)
            self.results.append((use_id, event))

    def _compaction(self, lane: Lane) -> None:
        """A compaction lane: spawned by the lead, its summary (its last text) a `return` with the
        lead's next `compact_boundary` metadata."""
        own = [e for e in self.events if e.agent == lane.name]
        spawn = self._spawn(lane, {COMPACTION: True, "agent_id": lane.agent_id})
        texts = [e for e in own if e.type == "message" and e.attributes.get("part") == "text"]
        if not texts:
            return
        last = texts[-1]
        boundary = next(
            (
                r
                for r in self.lead.records
                if r["type"] == "system"
                and r.get("subtype") == "compact_boundary"
                and self._t(r["timestamp"]) >= last.t
            ),
            None,
        )
        last.type, last.to = "return", LEAD
        last.attributes[COMPACTION] = True
        if boundary is not None and isinstance(boundary.get("compactMetadata"), dict):
            last.attributes["compact_metadata"] = boundary["compactMetadata"]
        self.compaction_spawns.append((spawn, lane.name, last))

    def _answers(self) -> None:
        """A subagent's `return` (its answer, as the delegator's tool_result shows it) belongs to the
        model response that wrote the answer: its last response before the return."""
        for sub, event in self.answers:
            said = [e for e in self.events if e.agent == sub and e.t <= event.t and RESPONSE_ID in e.attributes]
            if said:
                event.attributes[RESPONSE_ID] = max(said, key=lambda e: (e.t, self.seq[e.id])).attributes[RESPONSE_ID]

    # -- build

    def build(self, format_: str) -> Trace:
        for lane in [self.lead, *self.lanes]:
            self._lane_events(lane)
        for lane in self.lanes:
            if lane.kind == COMPACTION and lane.records:
                self._compaction(lane)
        for lane in self.lanes:
            if lane.kind == "subagent" and lane.records:
                self._spawn(lane, {"agent_id": lane.agent_id, "unmatched": True})
        self._answers()
        for key, event in self.call_events.items():
            usage = self.calls.get(key)
            if usage:
                event.tokens = sum(usage[k] for k in USAGE_KEYS)
                event.attributes.update({k: usage[k] for k in USAGE_KEYS}, message_id=key[1])
                if usage.get("model"):
                    event.attributes["model"] = usage["model"]
        self.events.sort(key=lambda e: (e.t, self.seq[e.id]))
        self._edges()
        return self._trace(format_)

    # -- edges

    def _next(self, agent: str, after: Event) -> Event | None:
        """The first event of `agent` after `after` in time order."""
        return next((e for e in self.index.get(agent, []) if self.position[e.id] > self.position[after.id]), None)

    def _edges(self) -> None:
        self.position = {e.id: i for i, e in enumerate(self.events)}
        for event in self.events:
            self.index.setdefault(event.agent, []).append(event)
        for use_id, result in self.results:
            self._edge(self.tool_calls[use_id], result, "tool_dependency")
        for prompt in self.prompts:
            self._edge(prompt, self._next(LEAD, prompt), "message")
        groups: dict[tuple[str, str], list[Delegation]] = {}
        for delegation in self.delegation_list:
            if delegation.events and delegation.target is not None:
                key = (delegation.lane, delegation.message_id or delegation.tool_use_id)
                groups.setdefault(key, []).append(delegation)
        inserted = [aggregate for group in groups.values() if (aggregate := self._group_edges(group))]
        for spawn, name, summary in self.compaction_spawns:
            self._edge(spawn, self._next(name, spawn), "spawn")
            self._edge(summary, self._next(LEAD, summary), "return")
        for lane in self.lanes:
            if lane.kind == "subagent" and lane.name in self.lane_spawns:
                spawn = self.lane_spawns[lane.name]
                self._edge(spawn, self._next(lane.name, spawn), "spawn")
        aliases = self._aliases()
        for event, recipients in self.sends:
            names = [aliases.get(r, r) for r in recipients] or [n for n in self.index if n not in (event.agent, USER)]
            if recipients and names[0] != recipients[0]:
                event.to = names[0]
            for name in names:
                self._edge(event, self._next(name, event), "message")
        if inserted:
            self.events.sort(key=lambda e: (e.t, self.seq[e.id]))

    def _group_edges(self, group: list[Delegation]) -> Event | None:
        """Edges of the delegations of one assistant message; returns the `aggregate` event it
        adds (placed right before the lead's next event, else after the last return), if any."""
        for delegation in group:
            spawn, delegate = delegation.events[:2]
            first = self._next(delegation.target.name, delegate) if delegation.target else None
            self._edge(spawn, first, "spawn")
            self._edge(delegate, first, "message")
            if len(group) > 1:
                delegate.attributes["parallel"] = len(group)
        returns = [d.events[2] for d in group if len(d.events) > 2]
        delegator = group[0].events[1].agent
        if len(group) < 2 or len(returns) < 2:
            for event in returns:
                self._edge(event, self._next(delegator, event), "return")
            return None
        latest = max(returns, key=lambda e: self.position[e.id])
        target = self._next(delegator, latest)
        added = None
        if target is not None and target.type == "message":
            target.type = "aggregate"
            target.attributes["parallel"] = len(group)
        else:
            anchor = target or latest
            added = self._event(
                f"{group[0].tool_use_id}:aggregate",
                anchor.t,
                "aggregate",
                delegator,
                attributes={"parallel": len(group)},
            )
            self.seq[added.id] = self.seq[anchor.id] + (-0.5 if target is not None else 0.5)
            target = added
        for event in returns:
            self._edge(event, target, "aggregate")
        return added

    def _aliases(self) -> dict[str, str]:
        aliases = {alias: LEAD for alias in LEAD_ALIASES}
        for lane in self.lanes:
            keys = [lane.name, lane.agent_id]
            if lane.delegation is not None:
                given = lane.delegation.input
                keys += [given.get("name"), f"{given.get('name')}@{given.get('team_name')}"]
            aliases.update({str(k): lane.name for k in keys if k})
        return aliases

    # -- the trace

    def _agents(self) -> list[Agent]:
        agents = [Agent(name=LEAD, role="orchestrator" if self.delegation_list else "agent", spawned_at=0.0)]
        if self.prompts:
            agents.append(Agent(name=USER, role="human"))
        for lane in self.lanes:
            own = [e for e in self.events if e.agent == lane.name]
            facts: dict[str, Any] = {"agent_id": lane.agent_id} if lane.agent_id else {}
            spawned = despawned = None
            if lane.delegation is not None:
                given = lane.delegation.input
                facts.update({k: given[k] for k in ("subagent_type", "description", "name", "team_name") if k in given})
                spawned = lane.delegation.events[0].t if lane.delegation.events else None
                despawned = lane.delegation.events[2].t if len(lane.delegation.events) > 2 else None
            elif own:
                spawn = self.lane_spawns.get(lane.name)
                spawned, despawned = spawn.t if spawn else own[0].t, own[-1].t
            if lane.key.startswith("sidechain:"):
                facts["inline_sidechain"] = True
            if lane.kind == COMPACTION:
                facts[COMPACTION] = True
            role = COMPACTION if lane.kind == COMPACTION else "subagent"
            agents.append(
                Agent(lane.name, role=role, parent=LEAD, spawned_at=spawned, despawned_at=despawned, attributes=facts)
            )
        return agents

    def _costs(self) -> dict[str, float]:
        usage = list(self.calls.values())
        costs: dict[str, float] = {key: sum(u[key] for u in usage) for key in USAGE_KEYS}
        costs["tokens"] = sum(costs[key] for key in USAGE_KEYS)
        costs["llm_calls"] = len(usage)
        costs["tool_calls"] = sum(e.type == "tool_call" for e in self.events)
        costs["wall_clock_s"] = max((max(e.t, e.t_end or 0.0) for e in self.events), default=0.0)
        return costs

    def _trace(self, format_: str) -> Trace:
        lead, lanes = self.lead, self.lanes
        first = lead.records[0] if lead.records else (lanes[0].records[0] if lanes and lanes[0].records else {})
        question = self.prompts[0].content if self.prompts else None
        uuids = {r.get("uuid") for lane in [lead, *lanes] for r in lane.records}
        title = next(
            (
                r["summary"]
                for r in self.records
                if r["type"] == "summary" and r.get("leafUuid") in uuids and isinstance(r.get("summary"), str)
            ),
            None,
        )
        attributes: dict[str, Any] = {
            "session_id": self.session_id,
            "sources": self.sources,
            "start_time": (EPOCH + timedelta(microseconds=self.t0 // 1000)).isoformat(),
            "models": self.models,
            "subagents": sum(lane.kind == "worker" for lane in lanes),
        }
        for key, name in (("cwd", "cwd"), ("version", "version"), ("gitBranch", "git_branch"), ("slug", "slug")):
            if isinstance(first.get(key), str) and first[key]:
                attributes[name] = first[key]
        if question is not None:
            attributes["question"] = question
        if title:
            attributes["summary"] = title
        return Trace(
            source_format=format_,
            source_id=self.session_id,
            name=title or readable_prompt(question or "").split("\n", 1)[0][:120] or self.session_id,
            system="Claude Code",
            topology="harness",
            task_id=self.session_id,
            agents=self._agents(),
            events=self.events,
            edges=[Edge(src, dst, type_) for (src, dst), type_ in self.edges.items()],
            costs=self._costs(),
            attributes=attributes,
        )
