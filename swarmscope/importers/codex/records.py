"""Codex rollout records: the checks `split` runs on every line, the `Rollout` of a file, and readers
of message content and collab-call arguments.

Errors are TraceValidationError of kind "line": the line (1-based, among non-blank lines), the
dotted field (e.g. `payload.info.total_token_usage.output_tokens`) and what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from swarmscope.model import TraceValidationError

from ..otel_sdk import iso_ns

ROLLOUT_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")
TOOL_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output")


@dataclass
class Rollout:
    """One rollout file: its thread, parent thread (None for a root) and `(line, t_ns, record)`s
    (`t_ns`: nanoseconds since the Unix epoch)."""

    thread_id: str
    parent_id: str | None
    meta: dict[str, Any]
    spawn: dict[str, Any]
    records: list[tuple[int, int, dict[str, Any]]]

    def extends(self, shorter: Rollout) -> bool:
        """Whether this rollout holds all of `shorter`'s records first (a later copy, or the same file)."""
        n = len(shorter.records)
        return len(self.records) >= n and [r for _, _, r in self.records[:n]] == [r for _, _, r in shorter.records]


def _error(line: int, name: str, problem: str) -> TraceValidationError:
    return TraceValidationError(problem, index=line, field=name, kind="line")


def records_of(doc: Any) -> list[Any]:
    return doc if isinstance(doc, list) else [doc]


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


def read_rollout(doc: Any) -> Rollout:
    """The rollout of a decoded file, every line checked. Raises TraceValidationError naming the
    line and field of the first record that is not a rollout record."""
    rollout: Rollout | None = None
    for line, record in enumerate(records_of(doc), start=1):
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
    return rollout


def text_of(content: Any) -> str:
    """The text of message content parts (or of tool output content items), joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        inner = content.get("content", content.get("text"))
        return text_of(inner) if inner is not None else json.dumps(content, ensure_ascii=False)
    parts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") in ("input_image", "image"):
            parts.append("[image]")
    return "\n".join(parts)


def arguments(raw: str) -> dict[str, Any]:
    """A function call's JSON `arguments` as an object ({} when they are not one)."""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def input_text(args: dict[str, Any]) -> str | None:
    """The input of a `spawn_agent` / `send_input` call: `message`, else its `items` rendered."""
    if isinstance(args.get("message"), str):
        return args["message"]
    return text_of(args["items"]) if isinstance(args.get("items"), list) else None


def targets(args: dict[str, Any]) -> list[str]:
    """Agents named by a collab call: `ids` / `targets` (wait) or `id` / `target` (send, close)."""
    for key in ("ids", "targets"):
        if isinstance(args.get(key), list):
            return [str(v) for v in args[key]]
    return [str(args[key]) for key in ("id", "target") if isinstance(args.get(key), str)][:1]
