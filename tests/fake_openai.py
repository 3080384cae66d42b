"""FakeOpenAIServer: a scripted stand-in for an OpenAI-compatible chat endpoint, started by a test.

A `http.server` in a thread on a free loopback port. `answer(body) -> str | list[str]` gives the
completions of one request (a str is repeated `n` times); `status`, `raw` and `delay` make it fail
(an HTTP status, a body that is not JSON, a slow answer). Every request body is kept in `requests`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAIServer:
    def __init__(self, answer=lambda body: "FINAL ANSWER: 42"):
        self.answer = answer
        self.requests: list[dict] = []
        self.status: int | None = None
        self.raw: bytes | None = None
        self.delay = 0.0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                body["_path"], body["_authorization"] = self.path, self.headers.get("Authorization")
                fake.requests.append(body)
                if fake.delay:
                    time.sleep(fake.delay)
                if fake.status:
                    return self._send(fake.status, b'{"error": "scripted failure"}')
                if fake.raw is not None:
                    return self._send(200, fake.raw)
                texts = fake.answer(body)
                if isinstance(texts, str):
                    texts = [texts] * body.get("n", 1)
                choices = [
                    {"index": k, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                    for k, t in enumerate(texts)
                ]
                self._send(
                    200,
                    json.dumps(
                        {"id": "fake", "object": "chat.completion", "model": body["model"], "choices": choices}
                    ).encode(),
                )

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

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
