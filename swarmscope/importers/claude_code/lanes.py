"""The lanes of a session (one per agent) and its delegations, each matched to its subagent's lane.

A subagent's records come from its file (`agentId`), else from the inline sidechain
(`isSidechain: true`, grouped by the root of their `parentUuid` chain), else from the parent's
`agent_progress` records. Times are nanoseconds since the Unix epoch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from swarmscope.model import Event

from .records import is_message_record, mapping, parse_time, parts, text_of

LEAD = "main"
USER = "user"
COMPACTION = "compaction"
DELEGATION_TOOLS = ("Task", "Agent")
_AGENT_ID_TEXT = re.compile(r"\bagent_?[iI]d:\s*([\w@.-]+)")


@dataclass
class Lane:
    """The records of one agent: `kind` is `lead`, `worker`, `compaction` or `subagent` (no Task
    found); `agent_id` the Claude Code agentId (None for inline sidechains)."""

    key: str
    records: list[dict]
    kind: str = "subagent"
    agent_id: str | None = None
    name: str = ""
    delegation: Delegation | None = None

    def start(self) -> float:
        return min(parse_time(r["timestamp"]) for r in self.records) if self.records else float("inf")

    def prompt(self) -> str | None:
        """The text of the lane's first user record before any assistant record (its task)."""
        for record in self.records:
            if record.get("type") == "assistant":
                return None
            if record.get("type") == "user" and not record.get("isMeta"):
                found = text_of(record["message"].get("content"))
                if found:
                    return found
        return None


@dataclass
class Delegation:
    """A `Task` / `Agent` tool_use of the lane keyed `lane` in the API call `message_id`."""

    tool_use_id: str
    lane: str
    input: dict
    t: int
    message_id: str | None
    target: Lane | None = None
    events: list[Event] = field(default_factory=list)  # spawn, delegate, then return


def collect(records: list[dict]) -> tuple[Lane, list[Lane]]:
    """The lead's lane and the other lanes (file lanes, relayed lanes, inline chains), each sorted
    by time; records written twice are kept once."""
    lead = Lane(LEAD, [], kind="lead", name=LEAD)
    files: dict[str, Lane] = {}
    progress: dict[str, list[dict]] = {}
    inline: list[dict] = []
    seen: set[tuple[str | None, str]] = set()
    for record in records:
        kind = record["type"]
        agent_id = record.get("agentId") if isinstance(record.get("agentId"), str) else None
        data = mapping(record.get("data"))
        if kind == "progress" and data.get("type") == "agent_progress" and isinstance(data.get("agentId"), str):
            inner = mapping(data.get("message"))
            if is_message_record({**inner, "sessionId": ""}):
                progress.setdefault(data["agentId"], []).append(inner)
            continue
        if kind not in ("user", "assistant", "system"):
            continue
        key = (agent_id, str(record.get("uuid")))
        if key in seen:
            continue
        seen.add(key)
        if agent_id and isinstance(record.get("timestamp"), str):
            files.setdefault(agent_id, Lane(agent_id, [], agent_id=agent_id)).records.append(record)
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
            lanes.append(Lane(agent_id, unique, agent_id=agent_id))
    lanes.extend(_inline_chains(inline))
    for lane in [lead, *lanes]:
        lane.records.sort(key=lambda r: parse_time(r["timestamp"]))
    return lead, lanes


def _inline_chains(records: list[dict]) -> list[Lane]:
    """Inline sidechain records grouped by the root of their `parentUuid` chain."""
    parent = {r["uuid"]: r.get("parentUuid") for r in records}
    roots: dict[str, Lane] = {}
    for record in records:
        root, hops = record["uuid"], 0
        while parent.get(root) in parent and hops < len(parent):
            root, hops = parent[root], hops + 1
        roots.setdefault(root, Lane(f"sidechain:{root}", [])).records.append(record)
    return list(roots.values())


def _result_agent_id(record: dict, part: dict) -> str | None:
    """The agentId a Task tool_result names: `toolUseResult.agentId`, else "agentId: <id>" in its text."""
    agent_id = mapping(record.get("toolUseResult")).get("agentId")
    if isinstance(agent_id, str):
        return agent_id
    match = _AGENT_ID_TEXT.search(text_of(part.get("content")))
    return match[1] if match else None


def delegations(records: list[dict], lead: Lane, lanes: list[Lane]) -> list[Delegation]:
    """Every Task/Agent call, each matched to its subagent's lane: by agentId (tool result,
    `agent_progress`), else by prompt, else (inline sidechains) the next unmatched one. A call
    matching no lane gets a new empty lane (appended to `lanes`); unmatched `acompact` lanes
    become compactions."""
    found: list[Delegation] = []
    agent_of: dict[str, str] = {}
    for lane in [lead, *lanes]:
        for record in lane.records:
            for part in parts(record) if record["type"] in ("user", "assistant") else []:
                if record["type"] == "assistant" and part["type"] == "tool_use":
                    if part["name"] in DELEGATION_TOOLS and isinstance(part.get("input"), dict):
                        t = parse_time(record["timestamp"])
                        found.append(Delegation(part["id"], lane.key, part["input"], t, record["message"].get("id")))
                elif part["type"] == "tool_result":
                    agent_id = _result_agent_id(record, part)
                    if agent_id:
                        agent_of[part["tool_use_id"]] = agent_id
    for record in records:
        data = mapping(record.get("data"))
        if data.get("type") == "agent_progress" and isinstance(record.get("parentToolUseID"), str):
            agent_of.setdefault(record["parentToolUseID"], str(data.get("agentId")))
    _match(found, lanes, agent_of)
    return found


def _match(found: list[Delegation], lanes: list[Lane], agent_of: dict[str, str]) -> None:
    by_id = {lane.agent_id: lane for lane in lanes if lane.agent_id}
    free = list(lanes)
    for delegation in found:
        lane = by_id.get(agent_of.get(delegation.tool_use_id) or "")
        if lane is None:
            lane = next((x for x in free if x.prompt() == delegation.input.get("prompt")), None)
        if lane is None:
            lane = next((x for x in free if x.agent_id is None and x.start() >= delegation.t), None)
        if lane is None or lane not in free:
            lane = Lane(f"task:{delegation.tool_use_id}", [], agent_id=agent_of.get(delegation.tool_use_id))
            lanes.append(lane)
        else:
            free.remove(lane)
        lane.kind, lane.delegation, delegation.target = "worker", delegation, lane
    for lane in free:
        if (lane.agent_id or "").startswith("acompact"):
            lane.kind = COMPACTION


def name(lane: Lane, taken: set[str]) -> str:
    """`<name or subagent_type>:<agentId>` (else a short id), `#2`... where taken; adds it to `taken`."""
    suffix = lane.agent_id or (lane.delegation.tool_use_id[-8:] if lane.delegation else lane.key.rsplit(":", 1)[-1][:8])
    if lane.delegation is not None:
        given: dict[str, Any] = lane.delegation.input
        base = str(given.get("name") or given.get("subagent_type") or "general-purpose")
    else:
        base = COMPACTION if lane.kind == COMPACTION else "subagent"
    found, n = f"{base}:{suffix}", 2
    while found in taken:
        found, n = f"{base}:{suffix}#{n}", n + 1
    taken.add(found)
    return found
