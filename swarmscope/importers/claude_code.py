"""Claude Code session transcripts: `~/.claude/projects/<project>/<session>.jsonl` with the subagent
transcripts in `<session>/subagents/agent-<agentId>.jsonl` (`agent-acompact-*`: context compaction).

The format is undocumented by Anthropic; this follows the files themselves (../shared/data/README.md,
"Claude Code transcripts"; github.com/marot/spotter `test/fixtures/transcripts/`). One JSON record
a line: `{type: user | assistant | system | progress | summary | ..., uuid, parentUuid, sessionId,
timestamp (ISO 8601), isSidechain, agentId?, message: {role, content: str | [part], id?, model?,
usage?}}`; parts are `text`, `thinking`, `tool_use {id, name, input}`, `tool_result {tool_use_id,
content, is_error}`. An assistant reply is streamed as one record per part sharing `message.id`,
each with the usage so far: the last record's `usage` is the call's.

Every record carries the session's `sessionId` (subagent files too): `split` keys records by it,
so a session file and its subagent files, in any order, become one trace (`read_files` merges).
The mapping (times in seconds from the session's first record):

- lanes: `main` (the lead), `user` (the human: the first prompt a `message`, later ones
  `human_intervention`), one per subagent named `<name or subagent_type>:<agentId>`;
- `Task` / `Agent` tool_use: `spawn` + `delegate` (content: the prompt; `subagent_type`,
  `description` in attributes); the subagent's records in its lane, from its file, else from
  the inline sidechain (`isSidechain: true` in the session file, older versions), else from the
  parent's `agent_progress` records; its answer (the `tool_result`) a `return` at the result's
  time. Several delegations in one assistant message are parallel: the lead's next event is an
  `aggregate` (a separate one when that event is no `message`);
- compaction subagents: role `compaction`, a `spawn` (attribute `compaction`), no delegation, the
  summary a `return` (with the `compact_boundary` metadata);
- `SendMessage` (agent teams): a `message` from its sender to the named peer (name, agentId or
  `team-lead`); a teammate's spawn (`team_name` in the input) is answered by a `tool_result`, not
  a `return`, and `<teammate-message>` user texts are not human turns;
- other tool_use / tool_result: `tool_call` / `tool_result` with a `tool_dependency` edge;
- `text` and `thinking` parts: `message` events (attribute `part`); one event per API call holds
  its tokens = input + output + cache read + cache creation (each kept as an attribute).

Edges: `spawn` and `message` into the receiver's next event, `return` to the delegator's next
event, `aggregate` from each parallel return, `tool_dependency`. Costs: `tokens` and the four usage
counts, `llm_calls`, `tool_calls`, `wall_clock_s`. Attributes: `session_id`, `question` (the
first prompt), `sources`, `cwd`, `version`, `models`. Bad input raises TraceValidationError
naming the line (counting non-blank lines) and the field; the file then imports nothing.
(Over 500 lines: the record checks and one builder whose passes share the lanes' state.)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from swarmscope.model import Agent, Edge, Event, Trace, TraceValidationError

FORMAT = "claude_code"
LEAD = "main"
USER = "user"
DELEGATION_TOOLS = ("Task", "Agent")
MESSAGE_TOOL = "SendMessage"
COMPACTION = "compaction"
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
#: User texts the harness writes, not the human: teammate messages (shown by their `SendMessage`)
#: and background-task notifications.
TEAMMATE_PREFIX = "<teammate-message"
NOTIFICATION_PREFIX = "<task-notification>"
#: Names by which teammates address the lead.
LEAD_ALIASES = ("team-lead", "lead", "main", "leader")
_AGENT_ID_TEXT = re.compile(r"\bagent_?[iI]d:\s*([\w@.-]+)")

Item = tuple[int, dict]  # (line, record)


def _is_message_record(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and record.get("type") in ("user", "assistant")
        and isinstance(record.get("message"), dict)
        and isinstance(record.get("sessionId"), str)
        and isinstance(record.get("uuid"), str)
    )


def sniff(doc: Any) -> bool:
    """A JSON Lines file (or one record) holding at least one Claude Code user/assistant record."""
    records = doc if isinstance(doc, list) else [doc]
    return any(_is_message_record(record) for record in records)


def parse_time(text: Any) -> float:
    """Seconds since the Unix epoch of an ISO 8601 time ("2026-02-12T15:36:39.372Z"). Raises
    ValueError for anything else."""
    if not isinstance(text, str):
        raise ValueError(f"not an ISO 8601 time: {text!r}")
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an ISO 8601 time: {text!r}") from None
    if moment.tzinfo is None:
        raise ValueError(f"ISO 8601 time without a zone: {text!r}")
    return moment.timestamp()


def _fail(line: int, name: str, message: str) -> TraceValidationError:
    return TraceValidationError(message, index=line, field=name, kind="line")


def _check_message(record: dict, line: int, prefix: str = "") -> None:
    """Check the fields the mapping reads of a user/assistant record (`prefix`: where it is nested)."""
    for name in ("uuid", "timestamp"):
        if not isinstance(record.get(name), str) or not record[name]:
            raise _fail(line, prefix + name, f"must be a non-empty string, got {record.get(name)!r}")
    message = record.get("message")
    if not isinstance(message, dict):
        raise _fail(line, prefix + "message", f"must be an object, got {type(message).__name__}")
    content = message.get("content")
    if not isinstance(content, (str, list)):
        raise _fail(line, prefix + "message.content", f"must be a string or a list, got {content!r}")
    for k, part in enumerate(content if isinstance(content, list) else []):
        where = f"{prefix}message.content[{k}]"
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise _fail(line, where, "must be an object with a string 'type'")
        required = {"tool_use": ("id", "name"), "tool_result": ("tool_use_id",)}.get(part["type"], ())
        for name in required:
            if not isinstance(part.get(name), str) or not part[name]:
                raise _fail(line, f"{where}.{name}", f"must be a non-empty string, got {part.get(name)!r}")
    usage = message.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise _fail(line, prefix + "message.usage", "must be an object")
    for name in USAGE_KEYS:
        value = (usage or {}).get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise _fail(line, f"{prefix}message.usage.{name}", f"must be a non-negative integer, got {value!r}")


def _check(record: Any, line: int) -> None:
    if not isinstance(record, dict):
        raise _fail(line, "record", f"must be a JSON object, got {type(record).__name__}")
    if not isinstance(record.get("type"), str):
        raise _fail(line, "type", f"must be a string, got {record.get('type')!r}")
    if "sessionId" in record and not isinstance(record["sessionId"], str):
        raise _fail(line, "sessionId", f"must be a string, got {record['sessionId']!r}")
    if record.get("timestamp") is not None:
        try:
            parse_time(record["timestamp"])
        except ValueError as exc:
            raise _fail(line, "timestamp", str(exc)) from None
    if record["type"] in ("user", "assistant"):
        _check_message(record, line)
    data = record.get("data")
    if record["type"] == "progress" and isinstance(data, dict) and data.get("type") == "agent_progress":
        inner = data.get("message")
        if isinstance(inner, dict) and inner.get("type") in ("user", "assistant"):
            _check_message(inner, line, "data.message.")
            try:
                parse_time(inner["timestamp"])
            except ValueError as exc:
                raise _fail(line, "data.message.timestamp", str(exc)) from None


def split(doc: Any) -> dict[str, list[Item]]:
    """sessionId -> the file's `(line, record)` items of that session; records without a
    sessionId (file-history snapshots, summaries) go to the file's first session. Raises
    TraceValidationError naming the line (1-based, among non-blank lines) and field."""
    records = doc if isinstance(doc, list) else [doc]
    for line, record in enumerate(records, start=1):
        _check(record, line)
    first = next(r["sessionId"] for r in records if isinstance(r.get("sessionId"), str))
    chunks: dict[str, list[Item]] = {}
    for line, record in enumerate(records, start=1):
        chunks.setdefault(record.get("sessionId") or first, []).append((line, record))
    return chunks


def build(session_id: str, items: list[Item], sources: list[str]) -> Trace:
    """One trace of a session from the `split` items of its files (any order, chunks merged)."""
    return _Builder(session_id, [record for _, record in items], sources).build()


# -- the builder


@dataclass
class _Lane:
    """The records of one agent: `kind` is `lead`, `worker`, `compaction` or `subagent` (no Task
    found); `agent_id` the Claude Code agentId (None for inline sidechains)."""

    key: str
    records: list[dict]
    kind: str = "subagent"
    agent_id: str | None = None
    name: str = ""
    delegation: _Delegation | None = None

    def start(self) -> float:
        return min(parse_time(r["timestamp"]) for r in self.records) if self.records else float("inf")

    def prompt(self) -> str | None:
        """The text of the lane's first user record before any assistant record (its task)."""
        for record in self.records:
            if record.get("type") == "assistant":
                return None
            if record.get("type") == "user" and not record.get("isMeta"):
                text = _text(record["message"].get("content"))
                if text:
                    return text
        return None


@dataclass
class _Delegation:
    """A `Task` / `Agent` tool_use of `lane` in the API call `message_id`."""

    tool_use_id: str
    lane: str
    input: dict
    t: float
    message_id: str | None
    target: _Lane | None = None
    events: list[Event] = field(default_factory=list)  # delegate, then return


def _result_agent_id(record: dict, part: dict) -> str | None:
    """The agentId a Task tool_result names: `toolUseResult.agentId`, else "agentId: <id>" in its text."""
    agent_id = _mapping(record.get("toolUseResult")).get("agentId")
    if isinstance(agent_id, str):
        return agent_id
    match = _AGENT_ID_TEXT.search(_text(part.get("content")))
    return match[1] if match else None


def _text(content: Any) -> str:
    """The text of a content string or part list (text parts, tool_result contents; images as
    `[image]`)."""
    if isinstance(content, str):
        return content
    out = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            out.append(part["text"])
        elif part.get("type") == "image":
            out.append("[image]")
        elif part.get("type") == "tool_result":
            out.append(_text(part.get("content")))
    return "\n".join(out)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _parts(record: dict) -> list[dict]:
    content = record["message"].get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


class _Builder:
    def __init__(self, session_id: str, records: list[dict], sources: list[str]):
        self.session_id, self.sources = session_id, sources
        self.records = records
        self.events: list[Event] = []
        self.edges: dict[tuple[str, str], str] = {}
        self.ids: set[str] = set()
        self.seq: dict[str, float] = {}
        self.tool_calls: dict[str, Event] = {}
        self.results: list[tuple[str, Event]] = []
        self.sends: list[tuple[Event, list[str]]] = []
        self.prompts: list[Event] = []
        self.calls: dict[tuple[str, str], dict] = {}  # (lane, message id) -> usage
        self.call_events: dict[tuple[str, str], Event] = {}
        self.models: list[str] = []

    # -- lanes and delegations

    def _lanes(self) -> tuple[_Lane, list[_Lane]]:
        lead = _Lane("main", [], kind="lead", name=LEAD)
        files: dict[str, _Lane] = {}
        progress: dict[str, list[dict]] = {}
        inline: list[dict] = []
        seen: set[tuple[str | None, str]] = set()
        for record in self.records:
            kind = record["type"]
            agent_id = record.get("agentId") if isinstance(record.get("agentId"), str) else None
            data = _mapping(record.get("data"))
            if kind == "progress" and data.get("type") == "agent_progress" and isinstance(data.get("agentId"), str):
                inner = _mapping(data.get("message"))
                if _is_message_record({**inner, "sessionId": ""}):
                    progress.setdefault(data["agentId"], []).append(inner)
                continue
            if kind not in ("user", "assistant", "system"):
                continue
            key = (agent_id, str(record.get("uuid")))
            if key in seen:  # a record written twice
                continue
            seen.add(key)
            if agent_id and isinstance(record.get("timestamp"), str):
                files.setdefault(agent_id, _Lane(agent_id, [], agent_id=agent_id)).records.append(record)
            elif not isinstance(record.get("timestamp"), str):
                continue
            elif record.get("isSidechain") is True and kind != "system":
                inline.append(record)
            else:
                lead.records.append(record)
        lanes = list(files.values())
        for agent_id, relayed in progress.items():
            if agent_id not in files:
                unique = list({r["uuid"]: r for r in relayed}.values())
                lanes.append(_Lane(agent_id, unique, agent_id=agent_id))
        lanes.extend(self._inline_chains(inline))
        for lane in [lead, *lanes]:
            lane.records.sort(key=lambda r: parse_time(r["timestamp"]))
        return lead, lanes

    @staticmethod
    def _inline_chains(records: list[dict]) -> list[_Lane]:
        """Inline sidechain records grouped by the root of their `parentUuid` chain."""
        parent = {r["uuid"]: r.get("parentUuid") for r in records}
        roots: dict[str, _Lane] = {}
        for record in records:
            root, hops = record["uuid"], 0
            while parent.get(root) in parent and hops < len(parent):
                root, hops = parent[root], hops + 1
            roots.setdefault(root, _Lane(f"sidechain:{root}", [])).records.append(record)
        return list(roots.values())

    def _delegations(self, lead: _Lane, lanes: list[_Lane]) -> list[_Delegation]:
        """Every Task/Agent call, each matched to its subagent's lane: by agentId (tool result,
        `agent_progress`), else by prompt, else (inline sidechains) the next unmatched one."""
        found: list[_Delegation] = []
        agent_of: dict[str, str] = {}
        for lane in [lead, *lanes]:
            for record in lane.records:
                if record["type"] == "progress":
                    continue
                for part in _parts(record) if record["type"] in ("user", "assistant") else []:
                    if record["type"] == "assistant" and part["type"] == "tool_use":
                        if part["name"] in DELEGATION_TOOLS and isinstance(part.get("input"), dict):
                            found.append(
                                _Delegation(
                                    part["id"],
                                    lane.key,
                                    part["input"],
                                    parse_time(record["timestamp"]),
                                    record["message"].get("id"),
                                )
                            )
                    elif part["type"] == "tool_result":
                        agent_id = _result_agent_id(record, part)
                        if agent_id:
                            agent_of[part["tool_use_id"]] = agent_id
        for record in self.records:
            data = _mapping(record.get("data"))
            if data.get("type") == "agent_progress" and isinstance(record.get("parentToolUseID"), str):
                agent_of.setdefault(record["parentToolUseID"], str(data.get("agentId")))
        self._match(found, lanes, agent_of)
        return found

    @staticmethod
    def _match(found: list[_Delegation], lanes: list[_Lane], agent_of: dict[str, str]) -> None:
        by_id = {lane.agent_id: lane for lane in lanes if lane.agent_id}
        free = [lane for lane in lanes]
        for delegation in found:
            lane = by_id.get(agent_of.get(delegation.tool_use_id) or "")
            if lane is None:
                lane = next((x for x in free if x.prompt() == delegation.input.get("prompt")), None)
            if lane is None:
                lane = next((x for x in free if x.agent_id is None and x.start() >= delegation.t), None)
            if lane is None or lane not in free:
                lane = _Lane(f"task:{delegation.tool_use_id}", [], agent_id=agent_of.get(delegation.tool_use_id))
                lanes.append(lane)
            else:
                free.remove(lane)
            lane.kind, lane.delegation, delegation.target = "worker", delegation, lane
        for lane in free:
            if (lane.agent_id or "").startswith("acompact"):
                lane.kind = COMPACTION

    def _name(self, lane: _Lane, taken: set[str]) -> str:
        suffix = lane.agent_id or (
            lane.delegation.tool_use_id[-8:] if lane.delegation else lane.key.rsplit(":", 1)[-1][:8]
        )
        if lane.delegation is not None:
            given = lane.delegation.input
            base = str(given.get("name") or given.get("subagent_type") or "general-purpose")
        else:
            base = COMPACTION if lane.kind == COMPACTION else "subagent"
        name, n = f"{base}:{suffix}", 2
        while name in taken:
            name, n = f"{base}:{suffix}#{n}", n + 1
        taken.add(name)
        return name

    # -- events

    def _t(self, value: Any) -> float:
        return round(max(parse_time(value) - self.t0, 0.0), 6)

    def _event(self, event_id: str, t: float, type_: str, agent: str, **fields: Any) -> Event:
        base, n = event_id, 2
        while event_id in self.ids:
            event_id, n = f"{base}#{n}", n + 1
        self.ids.add(event_id)
        event = Event(id=event_id, t=t, type=type_, agent=agent, **fields)
        self.seq[event_id] = len(self.events)
        self.events.append(event)
        return event

    def _edge(self, src: Event | None, dst: Event | None, type_: str) -> None:
        if src is not None and dst is not None and src.id != dst.id:
            self.edges.setdefault((src.id, dst.id), type_)

    def _lane_events(self, lane: _Lane, delegations: dict[str, _Delegation]) -> None:
        agent = lane.name
        prompt_skipped = lane.kind == "lead"
        for record in lane.records:
            t = self._t(record["timestamp"])
            if record["type"] == "assistant":
                prompt_skipped = True
                self._assistant(lane, record, t, delegations)
            elif record["type"] == "user" and not (record.get("isMeta") or record.get("isCompactSummary")):
                parts = _parts(record)
                results = [p for p in parts if p["type"] == "tool_result"]
                for part in results:
                    self._result(lane, record, part, t, delegations)
                text = _text([p for p in parts if p["type"] in ("text", "image")])
                if results or not text.strip():
                    continue
                if not prompt_skipped:  # a subagent's task: its delegate or spawn event holds it
                    prompt_skipped = True
                    continue
                if lane.kind == "lead":
                    self._user_text(record, text, t)
                elif not text.startswith(TEAMMATE_PREFIX):
                    self._event(record["uuid"], t, "message", agent, content=text, attributes={"speaker": "user"})

    def _user_text(self, record: dict, text: str, t: float) -> None:
        if text.startswith(TEAMMATE_PREFIX):
            return
        if text.startswith(NOTIFICATION_PREFIX):
            self._event(record["uuid"], t, "message", LEAD, content=text, attributes={"speaker": "harness"})
            return
        type_ = "human_intervention" if self.prompts else "message"
        event = self._event(record["uuid"], t, type_, USER, role="human", from_=USER, to=LEAD, content=text)
        self.prompts.append(event)

    def _assistant(self, lane: _Lane, record: dict, t: float, delegations: dict[str, _Delegation]) -> None:
        message, agent = record["message"], lane.name
        model = message.get("model")
        if isinstance(model, str) and model not in self.models and not model.startswith("<"):
            self.models.append(model)
        made: list[Event] = []
        for k, part in enumerate(_parts(record)):
            event_id = record["uuid"] if k == 0 else f"{record['uuid']}:{k}"
            if part["type"] in ("text", "thinking"):
                text = part.get("text") if part["type"] == "text" else part.get("thinking")
                if isinstance(text, str) and text.strip():
                    made.append(
                        self._event(
                            event_id, t, "message", agent, from_=agent, content=text, attributes={"part": part["type"]}
                        )
                    )
            elif part["type"] == "tool_use":
                made.append(self._tool_use(lane, part, t, delegations))
        call = message.get("id") or record["uuid"]
        usage = message.get("usage")
        if isinstance(usage, dict):
            self.calls[(lane.key, call)] = {key: usage.get(key) or 0 for key in USAGE_KEYS} | {"model": model}
        if made:
            self.call_events[(lane.key, call)] = made[-1]
        elif (lane.key, call) not in self.call_events and isinstance(usage, dict):
            self.call_events[(lane.key, call)] = self._event(
                record["uuid"], t, "message", agent, attributes={"empty": True}
            )

    def _tool_use(self, lane: _Lane, part: dict, t: float, delegations: dict[str, _Delegation]) -> Event:
        agent, given = lane.name, _mapping(part.get("input"))
        delegation = delegations.get(part["id"])
        if delegation is not None and delegation.target is not None:
            target = delegation.target.name
            facts: dict[str, Any] = {
                k: given[k]
                for k in ("subagent_type", "description", "name", "team_name", "run_in_background")
                if k in given
            }
            attributes: dict[str, Any] = {"tool_use_id": part["id"], **facts}
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
            self.tool_calls[part["id"]] = event
            return event
        event = self._event(
            part["id"],
            t,
            "tool_call",
            agent,
            tool=part["name"],
            content=json.dumps(given, ensure_ascii=False),
            attributes={"tool_use_id": part["id"]},
        )
        self.tool_calls[part["id"]] = event
        return event

    def _result(self, lane: _Lane, record: dict, part: dict, t: float, delegations: dict[str, _Delegation]) -> None:
        use_id = part["tool_use_id"]
        status = {"status": "error", "error": True} if part.get("is_error") else {}
        delegation = delegations.get(use_id)
        if (
            delegation is not None
            and delegation.target is not None
            and delegation.events
            and "team_name" not in delegation.input
        ):
            result = _mapping(record.get("toolUseResult"))
            facts = {
                k: result[k] for k in ("status", "totalDurationMs", "totalTokens", "totalToolUseCount") if k in result
            }
            sub = delegation.target.name
            event = self._event(
                f"{use_id}:return",
                t,
                "return",
                sub,
                from_=sub,
                to=lane.name,
                content=_text(part.get("content")),
                attributes={"tool_use_id": use_id, **facts, **status},
            )
            delegation.events.append(event)
            delegation.events[1].t_end = t
            return
        call = self.tool_calls.get(use_id)
        event = self._event(
            f"{use_id}:result",
            t,
            "tool_result",
            lane.name,
            tool=call.tool if call else None,
            content=_text(part.get("content")),
            attributes={"tool_use_id": use_id, **status},
        )
        if call is not None:
            call.t_end = max(t, call.t)
            self.results.append((use_id, event))

    def _compaction(self, lane: _Lane, lead: _Lane) -> None:
        """A compaction lane: spawned by the lead at its first record (content: its prompt), its
        summary (its last text) a `return` with the lead's next `compact_boundary` metadata."""
        own = [e for e in self.events if e.agent == lane.name]
        start = self._t(lane.records[0]["timestamp"])
        spawn = self._event(
            f"{lane.key}:spawn",
            start,
            "spawn",
            LEAD,
            from_=LEAD,
            to=lane.name,
            content=lane.prompt(),
            attributes={COMPACTION: True, "agent_id": lane.agent_id},
        )
        self.lane_spawns[lane.name] = spawn
        texts = [e for e in own if e.type == "message" and e.attributes.get("part") == "text"]
        if not texts:
            return
        last = texts[-1]
        boundary = next(
            (
                r
                for r in lead.records
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

    # -- build

    def build(self) -> Trace:
        lead, lanes = self._lanes()
        times = [parse_time(r["timestamp"]) for lane in [lead, *lanes] for r in lane.records]
        if not times:
            raise ValueError(f"session {self.session_id} has no timed user or assistant records")
        self.t0 = min(times)
        delegation_list = self._delegations(lead, lanes)
        delegations = {d.tool_use_id: d for d in delegation_list}
        taken = {LEAD, USER}
        for lane in lanes:
            lane.name = self._name(lane, taken)
        self.compaction_spawns: list[tuple[Event, str, Event]] = []
        self.lane_spawns: dict[str, Event] = {}
        for lane in [lead, *lanes]:
            self._lane_events(lane, delegations)
        for lane in lanes:
            if lane.kind == COMPACTION and lane.records:
                self._compaction(lane, lead)
        orphans = [lane for lane in lanes if lane.kind == "subagent" and lane.records]
        for lane in orphans:
            self.lane_spawns[lane.name] = self._event(
                f"{lane.key}:spawn",
                self._t(lane.records[0]["timestamp"]),
                "spawn",
                LEAD,
                from_=LEAD,
                to=lane.name,
                content=lane.prompt(),
                attributes={"agent_id": lane.agent_id, "unmatched": True},
            )
        for key, event in self.call_events.items():
            usage = self.calls.get(key)
            if usage:
                event.tokens = sum(usage[k] for k in USAGE_KEYS)
                event.attributes.update({k: usage[k] for k in USAGE_KEYS}, message_id=key[1])
                if usage.get("model"):
                    event.attributes["model"] = usage["model"]
        self.events.sort(key=lambda e: (e.t, self.seq[e.id]))
        self._edges(lanes, delegation_list)
        return self._trace(lead, lanes, delegation_list)

    def _next(self, agent: str, after: Event) -> Event | None:
        """The first event of `agent` after `after` in time order."""
        return next((e for e in self.index.get(agent, []) if self.position[e.id] > self.position[after.id]), None)

    def _edges(self, lanes: list[_Lane], delegation_list: list[_Delegation]) -> None:
        self.position = {e.id: i for i, e in enumerate(self.events)}
        self.index: dict[str, list[Event]] = {}
        for event in self.events:
            self.index.setdefault(event.agent, []).append(event)
        for use_id, result in self.results:
            self._edge(self.tool_calls[use_id], result, "tool_dependency")
        for prompt in self.prompts:
            self._edge(prompt, self._next(LEAD, prompt), "message")
        groups: dict[tuple[str, str], list[_Delegation]] = {}
        for delegation in delegation_list:
            if delegation.events and delegation.target is not None:
                key = (delegation.lane, delegation.message_id or delegation.tool_use_id)
                groups.setdefault(key, []).append(delegation)
        inserted = [aggregate for group in groups.values() if (aggregate := self._group_edges(group))]
        for spawn, name, summary in self.compaction_spawns:
            self._edge(spawn, self._next(name, spawn), "spawn")
            self._edge(summary, self._next(LEAD, summary), "return")
        for lane in lanes:
            if lane.kind == "subagent" and lane.name in self.lane_spawns:
                spawn = self.lane_spawns[lane.name]
                self._edge(spawn, self._next(lane.name, spawn), "spawn")
        aliases = self._aliases(lanes)
        for event, recipients in self.sends:
            names = [aliases.get(r, r) for r in recipients] or [n for n in self.index if n not in (event.agent, USER)]
            if recipients and names[0] != recipients[0]:
                event.to = names[0]
            for name in names:
                self._edge(event, self._next(name, event), "message")
        if inserted:
            self.events.sort(key=lambda e: (e.t, self.seq[e.id]))

    def _group_edges(self, group: list[_Delegation]) -> Event | None:
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

    @staticmethod
    def _aliases(lanes: list[_Lane]) -> dict[str, str]:
        aliases = {alias: LEAD for alias in LEAD_ALIASES}
        for lane in lanes:
            keys = [lane.name, lane.agent_id]
            if lane.delegation is not None:
                given = lane.delegation.input
                keys += [given.get("name"), f"{given.get('name')}@{given.get('team_name')}"]
            aliases.update({str(k): lane.name for k in keys if k})
        return aliases

    def _trace(self, lead: _Lane, lanes: list[_Lane], delegation_list: list[_Delegation]) -> Trace:
        first = lead.records[0] if lead.records else (lanes[0].records[0] if lanes and lanes[0].records else {})
        agents = [Agent(name=LEAD, role="orchestrator" if delegation_list else "agent", spawned_at=0.0)]
        if self.prompts:
            agents.append(Agent(name=USER, role="human"))
        for lane in lanes:
            own = [e for e in self.events if e.agent == lane.name]
            facts: dict[str, Any] = {"agent_id": lane.agent_id} if lane.agent_id else {}
            spawned = despawned = None
            if lane.delegation is not None:
                given = lane.delegation.input
                facts.update({k: given[k] for k in ("subagent_type", "description", "name", "team_name") if k in given})
                spawned = lane.delegation.events[0].t if lane.delegation.events else None
                despawned = lane.delegation.events[2].t if len(lane.delegation.events) > 2 else None
            elif own:
                spawned, despawned = (
                    self.lane_spawns[lane.name].t if lane.name in self.lane_spawns else own[0].t,
                    own[-1].t,
                )
            if lane.key.startswith("sidechain:"):
                facts["inline_sidechain"] = True
            if lane.kind == COMPACTION:
                facts[COMPACTION] = True
            role = {"worker": "subagent", COMPACTION: COMPACTION}.get(lane.kind, "subagent")
            agents.append(
                Agent(
                    name=lane.name,
                    role=role,
                    parent=LEAD,
                    spawned_at=spawned,
                    despawned_at=despawned,
                    attributes=facts,
                )
            )
        usage = list(self.calls.values())
        costs: dict[str, float] = {key: sum(u[key] for u in usage) for key in USAGE_KEYS}
        costs["tokens"] = sum(costs[key] for key in USAGE_KEYS)
        costs["llm_calls"] = len(usage)
        costs["tool_calls"] = sum(e.type == "tool_call" for e in self.events)
        costs["wall_clock_s"] = max((max(e.t, e.t_end or 0.0) for e in self.events), default=0.0)
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
            "start_time": datetime.fromtimestamp(self.t0, tz=UTC).isoformat(),
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
        edges = [Edge(src, dst, type_) for (src, dst), type_ in self.edges.items()]
        return Trace(
            source_format=FORMAT,
            source_id=self.session_id,
            name=title or (question or "").strip().split("\n", 1)[0][:120] or self.session_id,
            system="Claude Code",
            topology="harness",
            task_id=self.session_id,
            agents=agents,
            events=self.events,
            edges=edges,
            costs=costs,
            attributes=attributes,
        )
