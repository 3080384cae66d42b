"""The threads of one trace (a root rollout and its descendants): their lanes, names and events.

`Threads` dedupes the rollouts (a later copy of a file extends it), names each thread's agent and
reads every record into events (messages, reasoning, tool calls and results, collab calls, stops,
token counts); `build.py` extends it with the multi-agent structure. Event `t`: seconds from the
earliest record.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from swarmscope.graph import RESPONSE_ID
from swarmscope.model import Agent, Event

from .records import TOOL_CALLS, TOOL_OUTPUTS, USAGE_KEYS, Rollout, arguments, input_text, targets, text_of

ROOT_AGENT = "codex"
USER = "user"
SPAWN, SEND, WAIT, CLOSE = "spawn_agent", "send_input", frozenset({"wait", "wait_agent"}), "close_agent"
SUFFIX_RANK = {":spawn": 0, ":delegate": 1}
#: Harness-written user messages: `<tag>...</tag>` blocks and AGENTS.md instructions.
_CONTEXT = re.compile(r"^\s*(?:<(?P<tag>[a-z_][\w -]*)>.*</(?P=tag)>\s*$|# AGENTS\.md instructions)", re.S | re.I)


@dataclass
class Collab:
    """A multi-agent tool call: its kind, thread, events, arguments, output time (once seen) and child."""

    kind: str
    thread: Thread
    event: Event
    args: dict[str, Any]
    delegate: Event | None = None
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
    responses: int = 0  # model responses completed (token counts seen): the next one's number


class Threads:
    """The threads of one root being read: lanes, their events, the calls by id, the collab calls."""

    def __init__(self, root: str, rollouts: list[Rollout], sources: list[str]):
        self.root_id, self.sources = root, sources
        by_id: dict[str, Rollout] = {}
        for rollout in rollouts:
            known = by_id.get(rollout.thread_id)
            if known is None or rollout.extends(known):
                by_id[rollout.thread_id] = rollout
            elif not known.extends(rollout):
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
                system_prompt=text_of(instructions) if isinstance(instructions, dict) else None,
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
        event.attributes[RESPONSE_ID] = f"{thread.rollout.thread_id}:{thread.responses}"
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
            summary = text_of(item.get("summary"))
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
        role, text = item["role"], text_of(item["content"])
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
        args = arguments(text) if item["type"] == "function_call" else {}
        attributes: dict[str, Any] = {"call_id": call_id}
        if item.get("namespace"):
            attributes["namespace"] = item["namespace"]
        if short == SPAWN and args:
            content = input_text(args)
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
                attributes={"call_id": call_id, RESPONSE_ID: f"{thread.rollout.thread_id}:{thread.responses}"},
            )
        elif short in (SEND, CLOSE) and targets(args) or short in WAIT:
            type_ = {SEND: "delegate", CLOSE: "despawn"}.get(short, "aggregate")
            content = input_text(args) if short == SEND else None
            attributes["targets"] = targets(args)
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
        text = text_of(item.get("output"))
        if isinstance(call, Collab):
            call.output_t = self._t(t_ns)
            call.event.attributes["output"] = text
            if call.kind == "wait":
                call.event.attributes["called_at"] = call.event.t
                call.event.t = call.output_t
                call.event.content = text
            else:
                call.event.t_end = max(call.output_t, call.event.t)
            if call.kind == "spawn":
                spawned = arguments(text)
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
            thread.responses += 1
        elif ptype == "task_started" and msg.get("turn_id"):
            thread.turns.add(str(msg["turn_id"]))
        elif ptype in ("task_complete", "turn_complete", "turn_aborted"):
            attributes = {k: msg[k] for k in ("turn_id", "duration_ms", "reason") if msg.get(k) is not None}
            attributes["harness"] = True  # the harness ends the turn; the model's answer is its message
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
