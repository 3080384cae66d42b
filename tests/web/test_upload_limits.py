"""Request bodies over the limit are refused before the app holds them (webapp.web.body_limits).

Against a real Daphne serving webapp.config.asgi as `manage.py up` does, with a 1 MB limit: a
declared length over it is answered 413 with only the headers sent (Daphne on its own waits for
the whole body before the app runs), a chunked body is answered as soon as it passes the limit
while the client is still sending, a client that sends everything before reading gets the same
answer, and bodies under the limit still work. Nothing of a refused request is stored. The ASGI
middleware alone (any ASGI server) is checked in process at the end."""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import re
import select
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.servers import app_env, free_port, manage, start, stop, wait_http
from webapp.web.body_limits import BodyLimitMiddleware

LIMIT = 1_000_000
REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "native" / "release-notes-swarm.json"


class Server:
    def __init__(self, port: int, token: str):
        self.port, self.token = port, token
        self.base = f"http://127.0.0.1:{port}"

    def api(self, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(
            self.base + path,
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def event_count(self, trace_id: int) -> int:
        return self.api("GET", f"/api/traces/{trace_id}/")[1]["event_count"]

    def trace_count(self) -> int:
        return self.api("GET", "/api/traces/")[1]["count"]

    def new_trace(self) -> int:
        status, doc = self.api("POST", "/api/traces/", json.dumps({"name": "limits"}).encode())
        assert status == 201, doc
        return doc["trace"]["id"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("limits")
    env = app_env(tmp / "data", SWARMSCOPE_MAX_UPLOAD_BYTES=str(LIMIT), DJANGO_SUPERUSER_PASSWORD="limits-password")
    for command in (
        ("migrate", "--verbosity", "0"),
        ("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@localhost"),
        ("create_token", "admin", "--project", "Limits"),
    ):
        done = manage(*command, env=env)
        assert done.returncode == 0, done.stderr
    token = done.stdout.strip().splitlines()[-1]
    port, log = free_port(), tmp / "daphne.log"
    daphne = start(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.config.asgi:application"],
        env,
        log,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", daphne, log)
        yield Server(port, token)
    finally:
        stop(daphne)


def raw_request(port: int, head: str, body_pieces=(), *, chunked: bool = False, timeout: float = 60) -> dict:
    """Send `head`, then the pieces (as HTTP/1.1 chunks when `chunked`) only while no answer has
    come; {"status", "headers", "text", "sent": body bytes sent, "finished": every piece sent}."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(head.encode("latin-1"))
    pieces, pending, sent, finished = iter(body_pieces), b"", 0, False
    sock.setblocking(False)
    answer = b""
    while True:
        readable, writable, _ = select.select([sock], [] if finished else [sock], [], timeout)
        if not readable and not writable:
            raise TimeoutError(f"no answer within {timeout} s ({sent} body bytes sent)")
        if readable:
            break
        if not pending:
            piece = next(pieces, None)
            if piece is None:
                finished, pending = True, b"0\r\n\r\n" if chunked else b""
            else:
                pending = f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece
                sent += len(piece)
        try:
            pending = pending[sock.send(pending) :]
        except BlockingIOError:
            pass
    sock.setblocking(True)
    while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < _length(answer):
        data = sock.recv(65536)
        if not data:
            break
        answer += data
    sock.close()
    head_bytes, _, text = answer.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return {
        "status": int(lines[0].split()[1]),
        "headers": headers,
        "text": text.decode("utf-8", "replace"),
        "sent": sent,
        "finished": finished,
    }


def _length(answer: bytes) -> int:
    match = re.search(rb"(?im)^content-length:\s*(\d+)", answer.partition(b"\r\n\r\n")[0])
    return int(match.group(1)) if match else 0


def events_head(server: Server, trace_id: int, framing: str) -> str:
    return (
        f"POST /api/traces/{trace_id}/events/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {server.token}\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
    )


def events_body(n: int) -> bytes:
    events = [{"id": f"e{i}", "t": i * 0.01, "type": "message", "agent": f"a{i % 7}"} for i in range(n)]
    return json.dumps(events).encode()


@pytest.mark.processes
def test_a_declared_length_over_the_limit_is_answered_413_before_the_body_is_sent(server):
    trace_id = server.new_trace()
    # only the headers: without the limit Daphne would wait for the 5 MB it was promised
    answer = raw_request(server.port, events_head(server, trace_id, f"Content-Length: {5 * LIMIT}"))
    assert answer["status"] == 413 and answer["sent"] == 0
    assert answer["headers"]["content-type"] == "application/json"
    doc = json.loads(answer["text"])
    assert doc["limit_bytes"] == LIMIT and "SWARMSCOPE_MAX_UPLOAD_BYTES" in doc["error"]
    assert server.event_count(trace_id) == 0

    traces = server.trace_count()
    page = raw_request(
        server.port,
        "POST /upload/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        f"Content-Length: {2 * LIMIT}\r\n\r\n",
    )
    assert page["status"] == 413 and page["sent"] == 0
    assert page["headers"]["content-type"].startswith("text/html")
    assert 'data-testid="error-reason"' in page["text"] and "Upload refused: over 1,000,000 bytes" in page["text"]
    assert server.trace_count() == traces


@pytest.mark.processes
def test_a_chunked_body_is_answered_413_once_it_passes_the_limit_while_the_client_still_sends(server):
    trace_id = server.new_trace()
    piece = b" " * 65536
    planned = 100 * LIMIT
    answer = raw_request(
        server.port,
        events_head(server, trace_id, "Transfer-Encoding: chunked"),
        (piece for _ in range(planned // len(piece))),
        chunked=True,
    )
    assert answer["status"] == 413 and json.loads(answer["text"])["limit_bytes"] == LIMIT
    # the answer came while the client was sending: what it sent is the limit plus socket buffers
    assert not answer["finished"] and LIMIT < answer["sent"] < planned / 4
    assert server.event_count(trace_id) == 0


@pytest.mark.processes
def test_a_client_that_sends_the_whole_body_before_reading_gets_the_413(server):
    trace_id = server.new_trace()
    status, doc = server.api("POST", f"/api/traces/{trace_id}/events/", events_body(30_000))
    assert status == 413 and doc["limit_bytes"] == LIMIT
    assert server.event_count(trace_id) == 0


@pytest.mark.processes
def test_bodies_under_the_limit_still_work(server):
    trace_id = server.new_trace()
    body = events_body(200)
    assert len(body) < LIMIT
    status, doc = server.api("POST", f"/api/traces/{trace_id}/events/", body)
    assert status == 200 and doc["events_added"] == 200
    more = events_body(300)[1:-1].replace(b'"e', b'"f')  # 300 other events, sent in chunks
    pieces = [b"[" + more[i : i + 4096] if i == 0 else more[i : i + 4096] for i in range(0, len(more), 4096)]
    answer = raw_request(
        server.port,
        events_head(server, trace_id, "Transfer-Encoding: chunked\r\nConnection: close"),
        [*pieces, b"]"],
        chunked=True,
    )
    assert answer["status"] == 200, answer["text"][:500]
    assert server.event_count(trace_id) == 500

    # the Upload page, logged in, with a real trace file
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = browser.open(server.base + "/accounts/login/", timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    login = urllib.parse.urlencode({"username": "admin", "password": "limits-password", "csrfmiddlewaretoken": csrf})
    browser.open(urllib.request.Request(server.base + "/accounts/login/", data=login.encode()), timeout=30).read()
    page = browser.open(server.base + "/upload/", timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    traces = server.trace_count()
    form = (
        (
            f'--b7\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{csrf}\r\n'
            f'--b7\r\nContent-Disposition: form-data; name="file"; filename="{SAMPLE.name}"\r\n'
            "Content-Type: application/json\r\n\r\n"
        ).encode()
        + SAMPLE.read_bytes()
        + b"\r\n--b7--\r\n"
    )
    upload = urllib.request.Request(
        server.base + "/upload/",
        data=form,
        headers={"Content-Type": "multipart/form-data; boundary=b7", "Referer": server.base + "/upload/"},
    )
    with browser.open(upload, timeout=60) as response:
        assert response.status == 200
    assert server.trace_count() == traces + 1


# --- the ASGI middleware alone (any ASGI server), in process ------------------------------------


def run_app(scope: dict, messages: list[dict]) -> tuple[list[dict], list[dict]]:
    """Call BodyLimitMiddleware around an app that reads the whole body and answers 200 with its
    length; (what the client was sent, the body messages the app was given)."""
    given: list[dict] = []
    sent: list[dict] = []

    async def app(scope, receive, send):
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # as Django's handler: no answer to a client that went away
            given.append(message)
            size += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(size).encode()})

    queue = list(messages)

    async def receive():
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(BodyLimitMiddleware(app)(scope, receive, send))
    return sent, given


def http_scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict:
    return {"type": "http", "method": "POST", "path": path, "headers": headers, "query_string": b""}


def test_the_middleware_answers_a_declared_length_over_the_limit_without_calling_the_app(settings):
    settings.SWARMSCOPE_MAX_UPLOAD_BYTES = 100
    body = [{"type": "http.request", "body": b"x" * 101, "more_body": False}]
    sent, given = run_app(http_scope("/v1/traces", [(b"content-length", b"101")]), body)
    assert given == [] and sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["limit_bytes"] == 100


def test_the_middleware_stops_a_body_without_length_at_the_limit(settings):
    settings.SWARMSCOPE_MAX_UPLOAD_BYTES = 100
    pieces = [{"type": "http.request", "body": b"x" * 40, "more_body": True} for _ in range(10)]
    sent, given = run_app(http_scope("/api/traces/1/events/", []), pieces)
    assert len(given) == 2  # 80 bytes; the third piece passes the limit and is never given
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [413]
    # under the limit the app reads it and answers
    sent, given = run_app(http_scope("/api/traces/1/events/", []), pieces[:2] + [{"type": "http.request", "body": b""}])
    assert sent[0]["status"] == 200 and sent[1]["body"] == b"80"
