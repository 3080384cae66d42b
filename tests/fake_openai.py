"""FakeOpenAIServer: a scripted stand-in for an OpenAI-compatible chat endpoint, started by a test.

A `http.server` (HTTP/1.1 keep-alive) in a thread on a free loopback port. `answer(body) -> str |
list[str]` gives the completions of one request (a str is repeated `n` times). Fault injection:
`status` (every request answers that HTTP status), `statuses` (the next requests answer these
statuses, one each, then normally), `drops` (the next `drops` requests are read, then their
connection is closed with no answer), `raw` (a body that is not JSON), `delay` (a slow answer).

It refuses what vLLM refuses, with HTTP 400: an empty `messages`, a prompt over `max_model_len`
(prompt tokens + max_tokens, tokens counted as ceil(characters / 4) of each message's content;
None: no limit), and (unless `vllm`) an unknown top-level parameter. With `vllm` it says so in
`/v1/models` (`owned_by: "vllm"`, `max_model_len`) and `/version`, and accepts `structured_outputs`
(or older vLLM's `guided_choice` / `guided_regex`): with `choice` it answers one of
them (the scripted answer where it is one, else the first); with `regex` the scripted answer where
it matches the whole pattern (Python's `re.fullmatch`), else HTTP 400 (the fake cannot make up a
match: a test scripts answers in the format and checks what was sent). Answers
report `usage` (prompt, completion and `prompt_tokens_details.cached_tokens`: the tokens of the
leading messages an earlier request had too) and are cut at `max_tokens` (finish_reason "length").
POST bodies are kept in `requests` (`/tokenize` bodies in `tokenized`), GET paths in `gets`;
`connections` counts TCP connections.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: Top-level parameters of an OpenAI chat-completions request that the fake accepts off vLLM.
OPENAI_PARAMETERS = {
    "model",
    "messages",
    "n",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "seed",
    "top_p",
    "stop",
    "stream",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "user",
    "response_format",
    "tools",
    "tool_choice",
}


def fake_tokens(text: str) -> int:
    """The fake's token count: ceil(characters / 4)."""
    return -(-len(text) // 4)


class FakeOpenAIServer:
    def __init__(self, answer=lambda body: "FINAL ANSWER: 42", vllm=False, max_model_len=None, version="0.32.0"):
        self.answer = answer
        self.vllm, self.max_model_len, self.version = vllm, max_model_len, version
        self.requests: list[dict] = []
        self.tokenized: list[dict] = []
        self.gets: list[str] = []
        self.connections = 0
        self.status: int | None = None
        self.statuses: list[int] = []
        self.drops = 0
        self.raw: bytes | None = None
        self.delay = 0.0
        self.seen_prefixes: set[str] = set()
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

            def setup(self):
                super().setup()
                with fake.lock:
                    fake.connections += 1

            def log_message(self, *args):
                pass

            def do_GET(self):
                fake.gets.append(self.path)
                if self.path == "/v1/models":
                    entry = {"id": "fake-model", "object": "model", "owned_by": "vllm" if fake.vllm else "fake"}
                    if fake.vllm and fake.max_model_len:
                        entry["max_model_len"] = fake.max_model_len
                    return self._send(200, json.dumps({"object": "list", "data": [entry]}).encode())
                if self.path == "/version" and fake.vllm:
                    return self._send(200, json.dumps({"version": fake.version}).encode())
                self._send(404, b'{"error": "not found"}')

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/tokenize" and fake.vllm:  # vLLM's tokenizer endpoint: counts, never generates
                    fake.tokenized.append(body)
                    return self._send(200, json.dumps({"count": fake.prompt_tokens(body)}).encode())
                body["_path"], body["_authorization"] = self.path, self.headers.get("Authorization")
                fake.requests.append(body)
                if fake.delay:
                    time.sleep(fake.delay)
                fault = fake.fault()
                if fault == "drop":
                    self.close_connection = True  # no answer: the client sees the connection closed
                    return
                if fault:
                    return self._send(fault, b'{"error": "scripted failure"}')
                if fake.raw is not None:
                    return self._send(200, fake.raw)
                self._send(*fake.respond(body))

            def _send(self, status, data):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def fault(self) -> int | str | None:
        """The scripted fault of the next request: "drop", an HTTP status, or None."""
        with self.lock:
            if self.drops > 0:
                self.drops -= 1
                return "drop"
            scripted = self.statuses.pop(0) if self.statuses else None
        return self.status or scripted

    def prompt_tokens(self, body) -> int:
        return sum(fake_tokens(m.get("content") or "") for m in body.get("messages", []))

    def respond(self, body) -> tuple[int, bytes]:
        """The status and JSON body of the answer to a chat-completions request."""
        refusal = self.refusal(body)
        if not refusal:
            try:
                return 200, json.dumps(self.completion(body)).encode()
            except ValueError as exc:  # a scripted answer outside the requested regex
                refusal = str(exc)
        return 400, json.dumps({"object": "error", "message": refusal}).encode()

    def refusal(self, body) -> str | None:
        """vLLM's reason to answer `body` with HTTP 400, or None."""
        unknown = sorted(set(body) - OPENAI_PARAMETERS - {"_path", "_authorization"})
        if unknown and not self.vllm:
            return f"Unrecognized request argument supplied: {unknown[0]}"
        if not body.get("messages"):
            return "messages: the conversation is empty"
        if self.max_model_len:
            prompt, completion = self.prompt_tokens(body), body.get("max_tokens") or 0
            if prompt + completion > self.max_model_len:
                return (
                    f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                    f"requested {prompt + completion} tokens ({prompt} in the messages, "
                    f"{completion} in the completion)."
                )
        return None

    def structured(self, body) -> dict:
        """The request's constraint on vLLM ({"choice": [...]}, {"regex": ...}), {} elsewhere."""
        if not self.vllm:
            return {}
        guided = {k.removeprefix("guided_"): v for k, v in body.items() if k in ("guided_choice", "guided_regex")}
        return body.get("structured_outputs") or guided

    def completion(self, body) -> dict:
        """The answer to an accepted request. Raises ValueError for a scripted answer outside its regex."""
        texts = self.answer(body)
        n = body.get("n", 1)
        if isinstance(texts, str):
            texts = [texts] * n
        structured = self.structured(body)
        choice, regex = structured.get("choice"), structured.get("regex")
        if choice:
            texts = [t if t in choice else choice[0] for t in texts]
        outside = [t for t in texts if regex is not None and not re.fullmatch(regex, t)]
        if outside:
            raise ValueError(f"fake: the scripted answer {outside[0][:100]!r} does not match the regex {regex!r}")
        limit = body.get("max_tokens")
        choices: list[dict] = []
        for k, text in enumerate(texts):
            cut = limit is not None and fake_tokens(text) > limit
            text = text[: 4 * limit] if cut else text
            choices.append(
                {
                    "index": k,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "length" if cut else "stop",
                }
            )
        cached, key = 0, ""
        with self.lock:
            for message in body["messages"]:
                key += json.dumps(message) + "\n"
                if key not in self.seen_prefixes:
                    break
                cached += fake_tokens(message.get("content") or "")
            key = ""
            for message in body["messages"]:
                key += json.dumps(message) + "\n"
                self.seen_prefixes.add(key)
        prompt = self.prompt_tokens(body)
        completion = sum(fake_tokens(c["message"]["content"]) for c in choices)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        return {"id": "fake", "object": "chat.completion", "model": body["model"], "choices": choices, "usage": usage}

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
