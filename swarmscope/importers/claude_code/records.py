"""Claude Code transcript records: the checks `split` runs on every line, times, and content readers.

Errors are TraceValidationError of kind "line": the line (1-based, among non-blank lines), the
field (dotted, e.g. `message.content[1].id`) and what is wrong.
"""

from __future__ import annotations

import re
from typing import Any

from swarmscope.model import TraceValidationError

from ..otel_sdk import iso_ns

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
MESSAGE_TYPES = ("user", "assistant")

Item = tuple[int, dict]  # (line, record)


def is_message_record(record: Any) -> bool:
    """A user/assistant record with a `message` object and string `sessionId` and `uuid`."""
    return (
        isinstance(record, dict)
        and record.get("type") in MESSAGE_TYPES
        and isinstance(record.get("message"), dict)
        and isinstance(record.get("sessionId"), str)
        and isinstance(record.get("uuid"), str)
    )


def parse_time(value: Any) -> int:
    """Nanoseconds since the Unix epoch of an ISO 8601 time ("2026-02-12T15:36:39.372Z"; no zone
    means UTC). Raises ValueError for anything else."""
    if not isinstance(value, str):
        raise ValueError(f"not an ISO 8601 time: {value!r}")
    return iso_ns(value)


def _fail(line: int, name: str, message: str) -> TraceValidationError:
    return TraceValidationError(message, index=line, field=name, kind="line")


def _check_time(value: Any, line: int, name: str) -> None:
    try:
        parse_time(value)
    except ValueError as exc:
        raise _fail(line, name, str(exc)) from None


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


def check(record: Any, line: int) -> None:
    """Raise naming the line and field where `record` lacks what the mapping reads."""
    if not isinstance(record, dict):
        raise _fail(line, "record", f"must be a JSON object, got {type(record).__name__}")
    if not isinstance(record.get("type"), str):
        raise _fail(line, "type", f"must be a string, got {record.get('type')!r}")
    if "sessionId" in record and not isinstance(record["sessionId"], str):
        raise _fail(line, "sessionId", f"must be a string, got {record['sessionId']!r}")
    if record.get("timestamp") is not None:
        _check_time(record["timestamp"], line, "timestamp")
    if record["type"] in MESSAGE_TYPES:
        _check_message(record, line)
    data = record.get("data")
    if record["type"] == "progress" and isinstance(data, dict) and data.get("type") == "agent_progress":
        inner = data.get("message")
        if isinstance(inner, dict) and inner.get("type") in MESSAGE_TYPES:
            _check_message(inner, line, "data.message.")
            _check_time(inner["timestamp"], line, "data.message.timestamp")


def mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parts(record: dict) -> list[dict]:
    """The content parts of a checked user/assistant record (a string content: one text part)."""
    content = record["message"].get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def text_of(content: Any) -> str:
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
            out.append(text_of(part.get("content")))
    return "\n".join(out)


#: Claude Code's markup in a user message: a slash command as it records one (`<command-name>/mcp</command-name>`,
#: `<command-message>mcp</command-message>`, `<command-args>`, in either order), a command's output
#: (`<local-command-stdout>`), the shell mode (`<bash-input>`, `<bash-stdout>`), and harness notes
#: whose text is not the user's (`<local-command-caveat>`, `<system-reminder>`).
_COMMAND_PART = re.compile(r"<command-(name|message|args)>(.*?)</command-\1>", re.S)
_HARNESS_NOTE = re.compile(r"<(local-command-caveat|system-reminder)>.*?</\1>", re.S)
_MARKUP_TAG = re.compile(r"</?(?:command|local-command|bash)-[a-z-]+>")


def readable_prompt(text: str) -> str:
    """A user message as a person reads it (a trace's name): a slash command as typed, `/name args`
    (`<command-name>`, else `/` and `<command-message>`; then `<command-args>`); otherwise the text
    without the markup tags (their text kept) and without harness notes."""
    found = {kind: value.strip() for kind, value in _COMMAND_PART.findall(text)}
    if found:
        command = found.get("name") or (f"/{found['message']}" if found.get("message") else "")
        return " ".join(part for part in (command, found.get("args", "")) if part)
    return _MARKUP_TAG.sub("", _HARNESS_NOTE.sub("", text)).strip()
