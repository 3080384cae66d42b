"""LangChain values as the LangChain instrumentations export them, unwrapped to chat messages.

The shapes (langchain_core's `dumpd` / `message_to_dict` / a message's `model_dump`, LangSmith's
OTel exporter `langsmith/_internal/otel/_otel_exporter.py`, OpenInference's LangChain tracer):

- a serialized message `{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs":
  {content, tool_calls, name}}` (LangSmith's `gen_ai.prompt` of a chat model, every generation's
  `message`);
- `{"type": "ai", "data": {content, tool_calls, ...}}` (`message_to_dict`: OpenInference's
  `input.value` / `output.value`);
- `{"content": ..., "type": "ai", ...}` (a message's fields: LangSmith's chain inputs and outputs);
- an LLM result `{"generations": [[{"text", "message"}]]}` (LangSmith's `gen_ai.completion`);
- LangSmith's wrapper of an output that is no dict, `{"output": value}`;
- a graph state or chat-model input `{"messages": [...]}` (a list, or LangChain's list of lists).

`unwrap` gives `{"role", "content", "tool_calls": [{"name", "arguments"}]}` messages, the shape
`semconv.render` reads; anything else is left alone (None).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

#: LangChain message `type` -> chat role.
TYPE_ROLES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
    "chat": "user",
}
#: LangChain message class (the last item of a serialized message's `id`) -> chat role.
CLASS_ROLES = {
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "FunctionMessage": "tool",
    "ChatMessage": "user",
}


#: A LangChain message's `str()` (pydantic's field listing, no class name): `content='…'` first, then
#: other `field=value` pairs (`name='search' tool_call_id='call_1'`, `additional_kwargs={}`, ...).
MESSAGE_STR = re.compile(r"""^content=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")(?:\s+[a-z_]+=.*)?$""", re.DOTALL)


def _json_or_literal(text: str) -> Any:
    """`text` as JSON, else as a Python literal (`python_literal`), else None."""
    try:
        return json.loads(text)
    except ValueError:
        return python_literal(text)


def message_str(text: str) -> str | None:
    """The content of a LangChain message written as its `str()` (`content='…' name='search'
    tool_call_id='…'`: OpenInference's LangChain tracer before 0.1.5x records a tool's
    `ToolMessage` output so), else None."""
    match = MESSAGE_STR.match(text) if text.startswith("content=") else None
    if match is None:
        return None
    try:
        content = ast.literal_eval(match.group(1))
    except (ValueError, SyntaxError):
        return None
    return content if isinstance(content, str) else None


#: Longest Python repr read as a literal (`python_literal`).
MAX_LITERAL = 100_000


def python_literal(text: str) -> dict | list | None:
    """`text` read as a Python literal dict or list where it is one (`{'query': 'x'}`: the `str()` of a
    value an instrumentor could not write as JSON; OpenInference's LangChain tracer before 0.1.5x
    records a tool's input so), else None. Only literals are read (`ast.literal_eval`), up to
    `MAX_LITERAL` characters."""
    if len(text) > MAX_LITERAL or text[:2] not in ("{'", "['", '{"', "[{", "[["):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


def message(value: Any) -> dict[str, Any] | None:
    """One LangChain message (any of the three shapes above) as a chat message, else None."""
    if not isinstance(value, dict):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        ids = value.get("id")
        role = CLASS_ROLES.get(str(ids[-1])) if isinstance(ids, list) and ids else None
        body = value["kwargs"]
    elif isinstance(value.get("data"), dict) and "content" in value["data"] and set(value) == {"type", "data"}:
        role, body = TYPE_ROLES.get(str(value.get("type"))), value["data"]
    elif "content" in value and isinstance(value.get("type"), str) and "role" not in value:
        role, body = TYPE_ROLES.get(value["type"]), value
    else:
        return None
    if role is None:
        return None
    content = body.get("content")
    found: dict[str, Any] = {"role": role, "content": content if content not in ("", []) else None}
    calls = body.get("tool_calls")
    if isinstance(calls, list) and calls:
        found["tool_calls"] = [
            {"name": call.get("name"), "arguments": _arguments(call.get("args", call.get("arguments", {})))}
            for call in calls
            if isinstance(call, dict) and isinstance(call.get("name"), str)
        ]
    return found


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _messages(value: Any) -> list[dict[str, Any]] | None:
    """A list of LangChain messages (or LangChain's batch, a list holding one list), else None."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    if not isinstance(value, list) or not value:
        return None
    found = [message(item) for item in value]
    return None if any(m is None for m in found) else found  # type: ignore[return-value]


def unwrap(value: Any) -> Any | None:
    """`value` (decoded JSON) as chat messages where it is a LangChain value (see the module), the
    inner value of LangSmith's `{"output": value}` wrapper, else None."""
    if isinstance(value, list):
        return _messages(value)
    if not isinstance(value, dict):
        return None
    generations = value.get("generations")
    if isinstance(generations, list) and generations:
        found = []
        for generation in (g for gs in generations for g in (gs if isinstance(gs, list) else [gs])):
            if not isinstance(generation, dict):
                return None
            said = message(generation.get("message"))
            if said is None and isinstance(generation.get("text"), str):
                said = {"role": "assistant", "content": generation["text"]}
            if said is not None:
                found.append(said)
        return found or None
    if set(value) == {"output"}:
        inner = value["output"]
        return unwrap(inner) or inner
    if set(value) == {"input"} and isinstance(value["input"], str):
        # LangSmith's wrapper of a tool's input string, the `str()` of its arguments (langsmith 0.3)
        inner = value["input"]
        arguments = _json_or_literal(inner)
        return json.dumps(arguments, ensure_ascii=False, default=str) if isinstance(arguments, dict) else None
    if "messages" in value and (chat := _messages(value["messages"])) is not None:
        return chat
    said = message(value)
    return [said] if said is not None else None
