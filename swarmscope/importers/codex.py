"""OpenAI Codex CLI session rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Source: the rollout line and protocol types of github.com/openai/codex, read at
`codex-rs/protocol/src/protocol.rs` (`RolloutLine`, `RolloutItem`, `SessionMeta`, `SessionSource`,
`SubAgentSource::ThreadSpawn`, `TokenCountEvent`, `TaskCompleteEvent`; commit edb4efee49ae),
`codex-rs/protocol/src/models.rs` (`ResponseItem`), and the multi-agent tool handlers
`codex-rs/core/src/tools/handlers/multi_agents/{spawn,send_input,wait,close_agent}.rs`
(commits 04a51a35429, 015297c50df, 1f1bd303eeb, 0ae308399d7). One JSON record per line:

    {timestamp: ISO 8601, type: session_meta | turn_context | response_item | event_msg | compacted,
     payload: {...}}

- `session_meta` (first line): `id` (the thread id), `timestamp`, `cwd`, `originator`,
  `cli_version`, `model_provider`, `base_instructions.text`, and `source`: "cli", "exec", ... or,
  for a sub-agent, `{"subagent": {"thread_spawn": {parent_thread_id, depth, agent_nickname?,
  agent_role?, agent_path?}}}`;
- `turn_context`: the turn's `model`, `cwd`, policies; `event_msg` `task_started` /
  `task_complete` (`last_agent_message`, `duration_ms`) / `turn_aborted` bound a turn;
- `response_item`: `message` (role, content parts with `text`), `reasoning` (`summary`),
  `function_call` (name, `arguments` as JSON text, call_id) and `function_call_output` (call_id,
  output: text, content items or `{content, success}`), `custom_tool_call(_output)`,
  `local_shell_call`, `web_search_call`;
- `event_msg` `token_count`: `info.total_token_usage` (cumulative per thread) and
  `info.last_token_usage`, each `{input_tokens, cached_input_tokens, output_tokens,
  reasoning_output_tokens, total_tokens}` (input includes cached input).

Mapping, one trace per ROOT thread: `split` keys a file by its thread id, `group` maps every thread
to the root it descends from through `parent_thread_id` (children, grandchildren, in any date
folder), `build` makes one trace of a root and its descendants. A thread is a lane: the root agent
is "codex", a child is named by its nickname, else its role, else its thread id ("#2" added where
two would share a name). Events, `t` in seconds from the earliest record:

- `message`: assistant turns (`role` "assistant"); the user's prompts as agent "user" (a
  `human_intervention` once the thread's agent has answered); developer/system messages and
  harness context (`<environment_context>`, `<user_instructions>`, AGENTS.md ...) in the thread's
  lane with `role` and `attributes.context`;
- `spawn_agent` → `spawn` + `delegate` (the `message` as content) to the child; `send_input` →
  `delegate` to a child, else `message`; `wait` / `wait_agent` → `aggregate` at the time its output
  came back, with a `return` edge from each waited-on agent's last answer before it (that answer
  becomes a `return` event); `close_agent` → `despawn` and the child's `Agent.despawned_at`;
- other function, custom and shell calls → `tool_call` / `tool_result` with a `tool_dependency`
  edge; reasoning summaries go to the next model output's `attributes.reasoning`;
- `task_complete` / `turn_aborted` → `stop`; `token_count` → the increase of the thread's
  `total_token_usage` on the last model output before it (`tokens` = input + output, the four
  counts in attributes; repeated counts add nothing); trace `costs` sum each thread's last total.

Edges: `spawn` to the child's first event, `message` from a delegate to the child's event after the
delivered input (the n-th non-context user message of a child is the n-th delegation to it) and
from a user prompt to the agent's next event, `return`, `tool_dependency`; only forward edges are
kept. A child's inputs beyond the delegations to it are messages from the user (typed into its
thread). `user_message` / `agent_message` events repeat response items and are not read twice;
`collab_agent_spawn_end` events (kept by the extended persistence mode) name a child when the
spawn output does not, else unclaimed children match a parent's spawns in order of start.

A child whose parent rollout is not imported becomes its own trace, its inputs as messages from an
agent named by the parent's thread id, with a `notes` attribute saying so; `session_id` is then the
parent's id at depth 1 (the root) and its own id deeper. Identity: `codex:<root thread id>`;
`attributes.session_id` is the root thread id. Errors name the line (non-blank lines counted, as
the decoder gives them) and field; a file with any bad line imports nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from swarmscope.model import Agent, Edge, Event, Trace

from .otel_sdk import iso_ns

FORMAT = "codex"
ROOT_AGENT = "codex"
USER = "user"
ROLLOUT_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
SPAWN, SEND, WAIT, CLOSE = "spawn_agent", "send_input", frozenset({"wait", "wait_agent"}), "close_agent"
USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")
TOOL_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output")
SUFFIX_RANK = {":spawn": 0, ":delegate": 1}
#: Harness-written user messages: `<tag>...</tag>` blocks and AGENTS.md instructions.
_CONTEXT = re.compile(r"^\s*(?:<(?P<tag>[a-z_][\w -]*)>.*</(?P=tag)>\s*$|# AGENTS\.md instructions)", re.S | re.I)


def _error(line: int, name: str, problem: str) -> Exception:
    from . import TraceFormatError  # noqa: PLC0415 (the package imports this module)

    return TraceFormatError(FORMAT, f"line {line}, field {name!r}: {problem}")


@dataclass
class Rollout:
    """One rollout file: its thread, parent thread (None for a root) and `(line, t_ns, record)`s."""

    thread_id: str
    parent_id: str | None
    meta: dict[str, Any]
    spawn: dict[str, Any]
    records: list[tuple[int, int, dict[str, Any]]]


def _records(doc: Any) -> list[Any]:
    return doc if isinstance(doc, list) else [doc]


def sniff(doc: Any) -> bool:
    """A rollout: its first record is a `session_meta` whose payload has a string `id`."""
    records = _records(doc)
    first = records[0] if records else None
    return (
        isinstance(first, dict)
        and first.get("type") == "session_meta"
        and isinstance(first.get("payload"), dict)
        and isinstance(first["payload"].get("id"), str)
    )


def _thread_spawn(meta: dict[str, Any]) -> dict[str, Any]:
    source = meta.get("source")
    sub = source.get("subagent") if isinstance(source, dict) else None
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    return spawn if isinstance(spawn, dict) else {}


def _check(line: int, payload: dict[str, Any], kind: str) -> None:
    """Raise naming the field where a record the mapping reads lacks it or has the wrong type."""
    ptype = payload.get("type")
    if kind in ("response_item", "event_msg") and not isinstance(ptype, str):
        raise _error(line, "payload.type", f"must be a string, got {ptype!r}")
    required: tuple[str, ...] = ()
    if kind == "response_item" and ptype in TOOL_CALLS:
        required = ("name", "call_id", TOOL_CALLS[ptype])
    elif kind == "response_item" and ptype in TOOL_OUTPUTS:
        required = ("call_id",)
    elif kind == "response_item" and ptype == "message":
        required = ("role",)
        if not isinstance(payload.get("content"), list):
            raise _error(line, "payload.content", "must be a list of content parts")
    for name in required:
        if not isinstance(payload.get(name), str):
            raise _error(line, f"payload.{name}", f"must be a string, got {payload.get(name)!r}")
    if kind == "event_msg" and ptype == "token_count" and payload.get("info") is not None:
        info = payload["info"]
        usage = info.get("total_token_usage") if isinstance(info, dict) else None
        if not isinstance(usage, dict):
            raise _error(line, "payload.info.total_token_usage", "must be an object")
        for key in USAGE_KEYS:
            value = usage.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _error(line, f"payload.info.total_token_usage.{key}", f"must be a count, got {value!r}")


def split(doc: Any) -> dict[str, list[Rollout]]:
    """Thread id -> [the file's `Rollout`], every line checked. Raises TraceFormatError naming the
    line and field of the first record that is not a rollout record."""
    rollout: Rollout | None = None
    for line, record in enumerate(_records(doc), start=1):
        if not isinstance(record, dict):
            raise _error(line, "(record)", f"must be a JSON object, got {type(record).__name__}")
        if record.get("type") not in ROLLOUT_TYPES:
            raise _error(line, "type", f"must be one of {', '.join(sorted(ROLLOUT_TYPES))}; got {record.get('type')!r}")
        payload = record.get("payload")
        if not isinstance(payload, dict):
            raise _error(line, "payload", "must be an object")
        try:
            t_ns = iso_ns(record.get("timestamp") or "")
        except (TypeError, AttributeError, ValueError):
            raise _error(line, "timestamp", f"must be an ISO 8601 time, got {record.get('timestamp')!r}") from None
        _check(line, payload, record["type"])
        if rollout is None:
            if record["type"] != "session_meta" or not isinstance(payload.get("id"), str) or not payload["id"]:
                raise _error(line, "payload.id", "the first record must be a session_meta with the thread id")
            spawn = _thread_spawn(payload)
            parent = spawn.get("parent_thread_id")
            if parent is not None and not isinstance(parent, str):
                raise _error(line, "payload.source.subagent.thread_spawn.parent_thread_id", "must be a string")
            rollout = Rollout(payload["id"], parent or None, payload, spawn, [])
        rollout.records.append((line, t_ns, record))
    if rollout is None:
        raise _error(1, "(file)", "no records")
    return {rollout.thread_id: [rollout]}


def group(chunks: dict[str, list[Rollout]]) -> dict[str, str]:
    """Thread id -> the id of the root thread it descends from among `chunks` (a thread whose parent
    is absent is its own root). Cycles (malformed parents) stop at the first repeated thread."""
    parents = {key: next((r.parent_id for r in rollouts if r.parent_id), None) for key, rollouts in chunks.items()}
    roots: dict[str, str] = {}
    for key in chunks:
        seen, node = {key}, key
        while (parent := parents.get(node)) in chunks and parent not in seen:
            seen.add(parent)
            node = parent
        roots[key] = node
    return roots


def _text(content: Any) -> str:
    """The text of message content parts (or of tool output content items), joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        inner = content.get("content", content.get("text"))
        return _text(inner) if inner is not None else json.dumps(content, ensure_ascii=False)
    parts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") in ("input_image", "image"):
            parts.append("[image]")
    return "\n".join(parts)


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _input_text(args: dict[str, Any]) -> str | None:
    """The input of a `spawn_agent` / `send_input` call: `message`, else its `items` rendered."""
    if isinstance(args.get("message"), str):
        return args["message"]
    return _text(args["items"]) if isinstance(args.get("items"), list) else None


def _targets(args: dict[str, Any]) -> list[str]:
    """Agents named by a collab call: `ids` / `targets` (wait) or `id` / `target` (send, close)."""
    for key in ("ids", "targets"):
        if isinstance(args.get(key), list):
            return [str(v) for v in args[key]]
    return [str(args[key]) for key in ("id", "target") if isinstance(args.get(key), str)][:1]


@dataclass
class Collab:
    """A multi-agent tool call: its kind, thread, events, arguments and (once seen) output."""

    kind: str
    thread: Thread
    event: Event
    args: dict[str, Any]
    delegate: Event | None = None
    output: str | None = None
    output_t: float | None = None
    child: str | None = None


@dataclass
class Thread:
    """The events of one rollout being built: lane, inputs delivered to it, token counters."""

    rollout: Rollout
    index: int
    agent: str = ""
    events: list[Event] = field(default_factory=list)
    deliveries: list[tuple[int, str, float]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    unbilled: list[Event] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    turns: set[str] = field(default_factory=set)
    answered: bool = False
    joined: bool = False


class _Builder:
    def __init__(self, root: str, rollouts: list[Rollout], sources: list[str]):
        self.root_id, self.sources = root, sources
        by_id: dict[str, Rollout] = {}
        for rollout in rollouts:
            known = by_id.get(rollout.thread_id)
            if known is None or _extends(rollout, known):
                by_id[rollout.thread_id] = rollout
            elif not _extends(known, rollout):
                raise ValueError(f"thread {rollout.thread_id} is in two files with different records")
        if root not in by_id:
            raise ValueError(f"no rollout of thread {root}")
        rest = sorted((r for r in by_id.values() if r.thread_id != root), key=lambda r: (r.records[0][1], r.thread_id))
        self.threads = {r.thread_id: Thread(r, i) for i, r in enumerate([by_id[root], *rest])}
        self.t0 = min(t for r in by_id.values() for _, t, _ in r.records)
        self.events: list[Event] = []
        self.edges: list[tuple[Event, Event, str]] = []
        self.calls: dict[tuple[str, str], tuple[Event | Collab, str]] = {}
        self.collabs: list[Collab] = []
        self.hints: dict[str, dict[str, Any]] = {}
        self.agents: dict[str, Agent] = {}
        self.notes: list[str] = []
        self.rank: dict[str, tuple[int, int, int]] = {}
        self.inputs: list[tuple[Event, Thread]] = []
        self.orphan_parent: str | None = None

    # -- names

    def _unique(self, name: str) -> str:
        taken = set(self.agents) | {USER}
        if name not in taken:
            return name
        n = 2
        while f"{name}#{n}" in taken:
            n += 1
        return f"{name}#{n}"

    def _name_threads(self) -> None:
        root = self.threads[self.root_id]
        for thread in self.threads.values():
            rollout, spawn = thread.rollout, thread.rollout.spawn
            meta = rollout.meta
            nickname = spawn.get("agent_nickname") or meta.get("agent_nickname")
            role = spawn.get("agent_role") or spawn.get("agent_type") or meta.get("agent_role")
            lead = thread is root and not rollout.parent_id
            base = ROOT_AGENT if lead and not nickname else nickname or role or rollout.thread_id
            thread.agent = self._unique(str(base))
            thread.joined = thread is not root
            attributes = {"thread_id": rollout.thread_id}
            attributes.update(
                {k: meta[k] for k in ("cwd", "cli_version", "originator", "model_provider") if meta.get(k)}
            )
            attributes.update(
                {k: spawn[k] for k in ("depth", "agent_nickname", "agent_role", "agent_path") if spawn.get(k)}
            )
            instructions = meta.get("base_instructions")
            self.agents[thread.agent] = Agent(
                name=thread.agent,
                role=str(role) if role else ("root" if lead else "subagent"),
                system_prompt=_text(instructions) if isinstance(instructions, dict) else None,
                attributes=attributes,
            )
        if root.rollout.parent_id:
            parent = root.rollout.parent_id
            name = self._unique(parent)
            self.agents[name] = Agent(name=name, role="parent (rollout not imported)", attributes={"thread_id": parent})
            self.agents[root.agent].parent = name
            self.orphan_parent = name
            self.notes.append(
                f"parent thread {parent} of {root.rollout.thread_id} is not among the imported rollouts: "
                "imported as its own trace"
            )

    # -- events

    def _t(self, t_ns: int) -> float:
        return round((t_ns - self.t0) / 1e9, 6)

    def _event(self, thread: Thread, line: int, t_ns: int, type_: str, suffix: str = "", **fields: Any) -> Event:
        event = Event(
            id=f"{thread.rollout.thread_id}:{line}{suffix}",
            t=self._t(t_ns),
            type=type_,
            agent=fields.pop("agent", thread.agent),
            **fields,
        )
        event.attributes.setdefault("line", line)
        self.rank[event.id] = (thread.index, line, SUFFIX_RANK.get(suffix, 0))
        self.events.append(event)
        thread.events.append(event)
        return event

    def _output(self, thread: Thread, event: Event) -> Event:
        """A model output: takes pending reasoning summaries, waits for the next token count."""
        if thread.reasoning:
            event.attributes["reasoning"] = "\n".join(thread.reasoning)
            thread.reasoning.clear()
        thread.unbilled.append(event)
        thread.answered = True
        return event

    def _read(self, thread: Thread) -> None:
        for line, t_ns, record in thread.rollout.records:
            payload, kind = record["payload"], record["type"]
            if kind == "turn_context":
                if isinstance(payload.get("model"), str) and payload["model"] not in thread.models:
                    thread.models.append(payload["model"])
                if payload.get("turn_id"):
                    thread.turns.add(str(payload["turn_id"]))
            elif kind == "response_item":
                self._item(thread, line, t_ns, payload)
            elif kind == "event_msg":
                self._event_msg(thread, line, t_ns, payload)

    def _item(self, thread: Thread, line: int, t_ns: int, item: dict[str, Any]) -> None:
        ptype = item["type"]
        if ptype == "message":
            self._message(thread, line, t_ns, item)
        elif ptype == "reasoning":
            summary = _text(item.get("summary"))
            if summary:
                thread.reasoning.append(summary)
        elif ptype in TOOL_CALLS:
            self._call(thread, line, t_ns, item["name"], item[TOOL_CALLS[ptype]], item["call_id"], item)
        elif ptype in ("local_shell_call", "web_search_call"):
            tool = "local_shell" if ptype == "local_shell_call" else "web_search"
            call_id = item.get("call_id") or item.get("id") or f"line {line}"
            content = json.dumps(item.get("action"), ensure_ascii=False)
            self._call(thread, line, t_ns, tool, content, str(call_id), item)
        elif ptype in TOOL_OUTPUTS:
            self._result(thread, line, t_ns, item)

    def _message(self, thread: Thread, line: int, t_ns: int, item: dict[str, Any]) -> None:
        role, text = item["role"], _text(item["content"])
        attributes = {k: item[k] for k in ("phase",) if item.get(k)}
        if role == "assistant":
            self._output(
                thread, self._event(thread, line, t_ns, "message", role=role, content=text, attributes=attributes)
            )
        elif role != "user" or _CONTEXT.match(text):
            attributes["context"] = True
            self._event(thread, line, t_ns, "message", role=role, content=text, attributes=attributes)
        elif thread.joined:
            thread.deliveries.append((line, text, self._t(t_ns)))
        else:
            sender = self.orphan_parent or USER
            type_ = "human_intervention" if thread.answered and sender == USER else "message"
            event = self._event(
                thread, line, t_ns, type_, agent=sender, role=role, to=thread.agent, content=text, attributes=attributes
            )
            event.from_ = sender
            self.inputs.append((event, thread))

    def _call(self, thread: Thread, line: int, t_ns: int, name: str, text: str, call_id: str, item: dict) -> None:
        short = name.rsplit(".", 1)[-1]
        args = _arguments(text) if item["type"] == "function_call" else {}
        attributes: dict[str, Any] = {"call_id": call_id}
        if item.get("namespace"):
            attributes["namespace"] = item["namespace"]
        if short == SPAWN and args:
            content = _input_text(args)
            attributes.update({k: args[k] for k in ("agent_type", "model", "fork_context") if args.get(k)})
            spawn = self._event(thread, line, t_ns, "spawn", ":spawn", tool=name, attributes=attributes)
            collab = Collab("spawn", thread, spawn, args)
            collab.delegate = self._event(
                thread,
                line,
                t_ns,
                "delegate",
                ":delegate",
                from_=thread.agent,
                content=content,
                tool=name,
                attributes={"call_id": call_id},
            )
        elif short in (SEND, CLOSE) and _targets(args) or short in WAIT:
            type_ = {SEND: "delegate", CLOSE: "despawn"}.get(short, "aggregate")
            content = _input_text(args) if short == SEND else None
            attributes["targets"] = _targets(args)
            event = self._event(thread, line, t_ns, type_, tool=name, from_=thread.agent, content=content)
            event.attributes.update(attributes)
            collab = Collab(short if short in (SEND, CLOSE) else "wait", thread, event, args)
        else:
            event = self._event(thread, line, t_ns, "tool_call", tool=name, content=text, attributes=attributes)
            self.calls[(thread.rollout.thread_id, call_id)] = (self._output(thread, event), name)
            return
        self._output(thread, collab.event)
        self.collabs.append(collab)
        self.calls[(thread.rollout.thread_id, call_id)] = (collab, name)

    def _result(self, thread: Thread, line: int, t_ns: int, item: dict[str, Any]) -> None:
        call, name = self.calls.get((thread.rollout.thread_id, item["call_id"]), (None, None))
        text = _text(item.get("output"))
        if isinstance(call, Collab):
            call.output, call.output_t = text, self._t(t_ns)
            call.event.attributes["output"] = text
            if call.kind == "wait":
                call.event.attributes["called_at"] = call.event.t
                call.event.t = call.output_t
                call.event.content = text
            else:
                call.event.t_end = max(call.output_t, call.event.t)
            if call.kind == "spawn":
                spawned = _arguments(text)
                call.child = spawned.get("agent_id") if isinstance(spawned.get("agent_id"), str) else None
                if spawned.get("nickname"):
                    call.event.attributes["nickname"] = spawned["nickname"]
            return
        attributes: dict[str, Any] = {"call_id": item["call_id"]}
        if isinstance(item.get("output"), dict) and "success" in item["output"]:
            attributes["success"] = item["output"]["success"]
        result = self._event(thread, line, t_ns, "tool_result", tool=name, content=text, attributes=attributes)
        if call is not None:
            self.edges.append((call, result, "tool_dependency"))

    def _event_msg(self, thread: Thread, line: int, t_ns: int, msg: dict[str, Any]) -> None:
        ptype = msg["type"]
        if ptype == "token_count" and isinstance(msg.get("info"), dict):
            self._tokens(thread, msg["info"]["total_token_usage"])
        elif ptype == "task_started" and msg.get("turn_id"):
            thread.turns.add(str(msg["turn_id"]))
        elif ptype in ("task_complete", "turn_complete", "turn_aborted"):
            attributes = {k: msg[k] for k in ("turn_id", "duration_ms", "reason") if msg.get(k) is not None}
            if ptype == "turn_aborted":
                attributes["aborted"] = True
            content = msg.get("last_agent_message")
            self._event(
                thread, line, t_ns, "stop", content=content if isinstance(content, str) else None, attributes=attributes
            )
        elif ptype == "collab_agent_spawn_end" and isinstance(msg.get("call_id"), str):
            self.hints[msg["call_id"]] = msg

    def _tokens(self, thread: Thread, total: dict[str, Any]) -> None:
        """The increase of the thread's cumulative usage goes on its last model output since the
        previous count (none: the counts still reach `costs`)."""
        delta = {key: max(int(total.get(key, 0)) - thread.usage.get(key, 0), 0) for key in USAGE_KEYS}
        thread.usage = {key: int(total.get(key, 0)) for key in USAGE_KEYS}
        if not any(delta.values()) or not thread.unbilled:
            return
        event = thread.unbilled[-1]
        event.attributes.update({key: n for key, n in delta.items() if key != "total_tokens"})
        event.tokens = delta["input_tokens"] + delta["output_tokens"]
        thread.unbilled.clear()

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

    def build(self) -> Trace:
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
            source_format=FORMAT,
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


def _extends(longer: Rollout, shorter: Rollout) -> bool:
    """Whether `longer` holds all of `shorter`'s records first (a copy taken later, or the same file)."""
    n = len(shorter.records)
    return len(longer.records) >= n and [r for _, _, r in longer.records[:n]] == [r for _, _, r in shorter.records]


def build(root: str, rollouts: list[Rollout], sources: list[str]) -> Trace:
    """One trace from the rollouts `group` put under the root thread `root` (from several files).
    Raises ValueError when one thread comes in two files that disagree."""
    return _Builder(root, rollouts, list(dict.fromkeys(sources))).build()
