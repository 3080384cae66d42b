"""ScriptedOpenAI: the one stand-in of the framework tests, an OpenAI-compatible model server whose
answers a test writes by hand, for frameworks whose model client speaks HTTP.

A `http.server` in a thread on a free loopback port, at `url` (".../v1"). `script(request) ->
Reply` answers each model call; `request` is a `ModelRequest` read from either API:

- Chat Completions, `POST /v1/chat/completions`, plain or streamed (SSE chunks; a last chunk with
  `usage` when `stream_options.include_usage`);
- Responses, `POST /v1/responses` (the OpenAI Agents SDK's default), plain or streamed (the
  `response.*` events the openai client reads, ending with `response.completed`).

Usage is reported as scripted (`Reply.usage`), with reasoning and cached-token details, so a test
can assert the totals a framework reports. `requests` keeps every `ModelRequest` in arrival order.
A script that raises answers HTTP 500 with the error text (the test sees it in `errors`).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Call:
    """A function call the model makes: tool `name` with JSON `arguments`."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Usage:
    """Tokens of one model call as the API reports them: `reasoning` is part of `output`, `cached`
    part of `input` (OpenAI's usage details)."""

    input: int
    output: int
    reasoning: int = 0
    cached: int = 0


@dataclass(frozen=True)
class Reply:
    """One answer: text and/or function calls, with its usage."""

    text: str | None = None
    calls: tuple[Call, ...] = ()
    usage: Usage = Usage(10, 5)


@dataclass
class ModelRequest:
    """A model call, read the same from both APIs.

    `system`: the instructions / system messages joined; `messages`: `(role, text)` in order, with
    function calls as `("assistant", "call name(arguments)")` and their outputs as `("tool", output)`;
    `tools`: the names of the tools offered; `body` the raw JSON.
    """

    api: str
    model: str
    system: str
    messages: list[tuple[str, str]]
    tools: list[str]
    body: dict[str, Any]

    @property
    def tool_outputs(self) -> list[str]:
        return [text for role, text in self.messages if role == "tool"]

    @property
    def last(self) -> tuple[str, str]:
        return self.messages[-1] if self.messages else ("", "")

    def says(self, text: str) -> bool:
        """Whether `text` occurs in the system prompt or any message."""
        return text in self.system or any(text in m for _, m in self.messages)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            _text(part.get("text", part.get("content")) if isinstance(part, dict) else part) for part in content
        )
    return json.dumps(content)


def _chat_request(body: dict[str, Any]) -> ModelRequest:
    system, messages = [], []
    for message in body.get("messages", []):
        role = message.get("role", "")
        text = _text(message.get("content"))
        if role in ("system", "developer"):
            system.append(text)
            continue
        messages.append((role, text))
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            messages.append(("assistant", f"call {function.get('name')}({function.get('arguments', '')})"))
    tools = [t.get("function", {}).get("name", t.get("name", "")) for t in body.get("tools") or []]
    return ModelRequest("chat", body.get("model", ""), "\n".join(system), messages, tools, body)


def _responses_request(body: dict[str, Any]) -> ModelRequest:
    system = [body["instructions"]] if body.get("instructions") else []
    messages: list[tuple[str, str]] = []
    items = body.get("input", [])
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items:
        kind = item.get("type", "message")
        if kind == "function_call":
            messages.append(("assistant", f"call {item.get('name')}({item.get('arguments', '')})"))
        elif kind == "function_call_output":
            messages.append(("tool", _text(item.get("output"))))
        elif item.get("role") in ("system", "developer"):
            system.append(_text(item.get("content")))
        elif "role" in item:
            messages.append((item["role"], _text(item.get("content"))))
    tools = [t.get("name", t.get("function", {}).get("name", "")) for t in body.get("tools") or []]
    return ModelRequest("responses", body.get("model", ""), "\n".join(system), messages, tools, body)


class ScriptedOpenAI:
    def __init__(self, script: Callable[[ModelRequest], Reply]):
        self.script = script
        self.requests: list[ModelRequest] = []
        self.errors: list[str] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[ModelRequest, Reply]:
        request = _chat_request(body) if path.endswith("/chat/completions") else _responses_request(body)
        with self._lock:
            self.requests.append(request)
        return request, self.script(request)

    # -- Chat Completions -------------------------------------------------------------------------

    def chat_completion(self, request: ModelRequest, reply: Reply) -> dict[str, Any]:
        n = self._next_id()
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{n}_{i}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for i, c in enumerate(reply.calls)
            ]
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model or "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.calls else "stop"}],
            "usage": _chat_usage(reply.usage),
        }

    def chat_chunks(self, request: ModelRequest, reply: Reply) -> list[dict[str, Any]]:
        whole = self.chat_completion(request, reply)
        base = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
        message = whole["choices"][0]["message"]
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        if reply.text:
            deltas.append({"content": reply.text})
        for i, call in enumerate(message.get("tool_calls", [])):
            deltas.append({"tool_calls": [{"index": i, **call}]})
        chunks = [base | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        chunks.append(
            base | {"choices": [{"index": 0, "delta": {}, "finish_reason": whole["choices"][0]["finish_reason"]}]}
        )
        if (request.body.get("stream_options") or {}).get("include_usage"):
            chunks.append(base | {"choices": [], "usage": whole["usage"]})
        return chunks

    # -- Responses --------------------------------------------------------------------------------

    def response(self, request: ModelRequest, reply: Reply) -> dict[str, Any]:
        n = self._next_id()
        output: list[dict[str, Any]] = []
        if reply.text is not None:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        for i, call in enumerate(reply.calls):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{n}_{i}",
                    "call_id": f"call_{n}_{i}",
                    "name": call.name,
                    "arguments": json.dumps(call.arguments),
                    "status": "completed",
                }
            )
        usage = reply.usage
        return {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": time.time(),
            "status": "completed",
            "model": request.model or "scripted",
            "output": output,
            "instructions": request.body.get("instructions"),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "temperature": None,
            "top_p": None,
            "metadata": {},
            "error": None,
            "incomplete_details": None,
            "usage": {
                "input_tokens": usage.input,
                "output_tokens": usage.output,
                "total_tokens": usage.input + usage.output,
                "input_tokens_details": {"cached_tokens": usage.cached},
                "output_tokens_details": {"reasoning_tokens": usage.reasoning},
            },
        }

    def response_events(self, request: ModelRequest, reply: Reply) -> list[dict[str, Any]]:
        whole = self.response(request, reply)
        started = whole | {"status": "in_progress", "output": [], "usage": None}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": started},
            {"type": "response.in_progress", "response": started},
        ]
        for index, item in enumerate(whole["output"]):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                empty = {"type": "output_text", "text": "", "annotations": []}
                events.append(
                    {
                        "type": "response.output_item.added",
                        "output_index": index,
                        "item": item | {"content": [], "status": "in_progress"},
                    }
                )
                events.append(
                    {
                        "type": "response.content_part.added",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "part": empty,
                    }
                )
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": text,
                    }
                )
                events.append(
                    {
                        "type": "response.output_text.done",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "text": text,
                    }
                )
                events.append(
                    {
                        "type": "response.content_part.done",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "part": item["content"][0],
                    }
                )
            else:
                events.append(
                    {
                        "type": "response.output_item.added",
                        "output_index": index,
                        "item": item | {"arguments": "", "status": "in_progress"},
                    }
                )
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "delta": item["arguments"],
                    }
                )
                events.append(
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": item["id"],
                        "output_index": index,
                        "arguments": item["arguments"],
                    }
                )
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        events.append({"type": "response.completed", "response": whole})
        return [e | {"sequence_number": i} for i, e in enumerate(events)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    data = {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "tests"}]}
                    return self._send(200, json.dumps(data).encode())
                self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                path = self.path.split("?")[0].rstrip("/")
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not (path.endswith("/chat/completions") or path.endswith("/responses")):
                    return self._send(404, json.dumps({"error": {"message": f"no {path} here"}}).encode())
                try:
                    request, reply = server.answer(path, body)
                except Exception as error:  # the script's own mistake: tell the test, answer 500
                    server.errors.append(traceback.format_exc())
                    return self._send(500, json.dumps({"error": {"message": repr(error)}}).encode())
                chat = path.endswith("/chat/completions")
                if not body.get("stream"):
                    whole = server.chat_completion(request, reply) if chat else server.response(request, reply)
                    return self._send(200, json.dumps(whole).encode())
                if chat:
                    lines = [f"data: {json.dumps(c)}\n\n" for c in server.chat_chunks(request, reply)]
                    lines.append("data: [DONE]\n\n")
                else:
                    lines = [
                        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in server.response_events(request, reply)
                    ]
                self._send(200, "".join(lines).encode(), "text/event-stream")

        return Handler


def _chat_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cached},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    }
