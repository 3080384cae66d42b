"""Tool calls named by id in the model's messages: a tool span that records no arguments or result
takes them from the model calls of its trace (docs/otel-mapping.md, "Content": tool calls by id).

A GenAI `execute_tool` span names the call it runs by `gen_ai.tool.call.id`; the model call that
asked for it holds the same id in its output (GenAI `tool_call` part `id`; OpenAI `tool_calls[].id`,
as `gen_ai.choice` / `gen_ai.assistant.message` events and OpenInference messages carry it), and the
next model call's input holds the tool's answer to it (GenAI `tool_call_response` part `id`; OpenAI
`role: tool` message `tool_call_id`, or `id` in the `gen_ai.tool.message` event body). AutoGen's
tool spans record only the id; the OpenAI instrumentor's model spans record the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .semconv import render, span_io
from .span import Span


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _messages(value: Any) -> list[dict[str, Any]]:
    """The chat messages of an input or output value (a message, a list of them, a choice body)."""
    value = _decoded(value)
    items = value if isinstance(value, list) else [value]
    found = []
    for item in items:
        item = _decoded(item)
        if isinstance(item, dict) and isinstance(item.get("message"), dict) and "role" not in item:
            item = item["message"]  # a `gen_ai.choice` body
        if isinstance(item, dict):
            found.append(item)
    return found


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def requested(value: Any) -> dict[str, str]:
    """Call id -> the arguments (JSON text) of each tool call in a model output value."""
    calls: dict[str, str] = {}
    for message in _messages(value):
        for part in [*_list(message.get("parts")), *_list(message.get("tool_calls"))]:
            if not isinstance(part, dict) or not isinstance(part.get("id"), str) or not part["id"]:
                continue
            function = part["function"] if isinstance(part.get("function"), dict) else part
            if part.get("type", "tool_call") in ("tool_call", "function", "function_call") and "arguments" in function:
                arguments = _text(function.get("arguments"))
                if arguments is not None:
                    calls[part["id"]] = arguments
    return calls


def requested_calls(value: Any) -> list[tuple[str | None, str, str | None]]:
    """(call id, tool name, arguments as JSON text) of each tool call in a model output value, in order
    (GenAI `tool_call` parts, OpenAI `tool_calls`)."""
    calls: list[tuple[str | None, str, str | None]] = []
    for message in _messages(value):
        for part in [*_list(message.get("parts")), *_list(message.get("tool_calls"))]:
            if not isinstance(part, dict):
                continue
            function = part["function"] if isinstance(part.get("function"), dict) else part
            name = function.get("name")
            if part.get("type", "tool_call") in ("tool_call", "function", "function_call") and isinstance(name, str):
                call_id = part.get("id") if isinstance(part.get("id"), str) and part.get("id") else None
                calls.append((call_id, name, _text(function.get("arguments"))))
    return calls


def answered(value: Any) -> dict[str, str]:
    """Call id -> the tool's result (text) of each tool answer in a model input value."""
    results: dict[str, str] = {}
    for message in _messages(value):
        for part in _list(message.get("parts")):
            if isinstance(part, dict) and part.get("type") == "tool_call_response" and isinstance(part.get("id"), str):
                result = render(part.get("result", part.get("response")))
                if result is not None:
                    results[part["id"]] = result
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id", message.get("id"))
            result = render(message.get("content"))
            if isinstance(call_id, str) and call_id and result is not None:
                results[call_id] = result
    return results


def index(llm_spans: Iterable[Span]) -> tuple[dict[str, str], dict[str, str]]:
    """(call id -> arguments, call id -> result) over the model calls `llm_spans`."""
    arguments: dict[str, str] = {}
    results: dict[str, str] = {}
    for span in llm_spans:
        raw_in, raw_out = span_io(span)
        for call_id, text in requested(raw_out).items():
            arguments.setdefault(call_id, text)
        for call_id, text in answered(raw_in).items():
            results.setdefault(call_id, text)
    return arguments, results
