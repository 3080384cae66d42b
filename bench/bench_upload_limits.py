"""Benchmark: what a body over the upload limit costs the server before it is refused.

Serves the app with Daphne as `manage.py up` does (`python -m daphne webapp.config.asgi:application`,
SQLite in a temporary data folder, the in-memory channel layer), one fresh Daphne per case so that
its peak resident set (VmHWM of /proc/<pid>/status, which only grows) belongs to that case alone.
Each case sends one request from a raw socket, 64 KiB at a time, watching for an answer between
sends (a server that answers early is not sent the rest):

- `api-length`: `POST /api/traces/<id>/events/` with a token, Content-Length 250 MB, a JSON array
  of message events (about 90 bytes each);
- `api-chunked`: the same path, `Transfer-Encoding: chunked` (no Content-Length), 250 MB of
  whitespace and then `[]` (the cheapest body to parse: a body of events costs far more);
- `upload-length`: the Upload page (`POST /upload/`, logged in, with the CSRF token), a
  multipart body holding one 250 MB file of JSON lines;
- `api-under`: the control, 150 MB (under the 200 MiB limit) of whitespace and `[]`, answered 200;
- `upload-under`: the Upload page with a 150 MB file of lines in no trace format (the importer
  refuses it: the page answers 200 with the file's error).

`--app` serves another ASGI application (`module:attribute`, importable from the repository root
or PYTHONPATH), e.g. a copy of webapp/config/asgi.py from before the limits, for a comparison.

Prints per case: the status, seconds from the first byte sent to the answer's status line, MiB
actually sent, Daphne's peak RSS before and after the request.

    .venv/bin/python bench/bench_upload_limits.py [--cases api-length,...] [--app module:attribute]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import select
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.servers import app_env, free_port, manage, start, stop, wait_http  # noqa: E402

MB = 1_000_000
PIECE = 64 * 1024


def events_json(size: int) -> Iterator[bytes]:
    """About `size` bytes: one JSON array of message events, in pieces of about PIECE bytes."""
    yield b"["
    sent, i = 1, 0
    while sent < size - 1:
        parts = []
        for _ in range(600):
            parts.append(
                json.dumps({"id": f"e{i:08d}", "t": i * 0.001, "type": "message", "agent": f"a{i % 100}"}).encode()
            )
            i += 1
        piece = (b"," if i > 600 else b"") + b",".join(parts)
        sent += len(piece)
        yield piece
    yield b"]"


def blank_then_empty_array(size: int) -> Iterator[bytes]:
    """`size` bytes: whitespace, then `[]`."""
    left = size - 2
    while left > 0:
        n = min(PIECE, left)
        left -= n
        yield b" " * n
    yield b"[]"


def json_lines_file(
    size: int, line: bytes = b'{"role": "assistant", "content": "' + b"x" * 200 + b'"}\n'
) -> Iterator[bytes]:
    """About `size` bytes of `line` repeated (by default JSON lines, one object a line)."""
    left = size
    while left > 0:
        piece = line * max(1, PIECE // len(line))
        left -= len(piece)
        yield piece


def send(port: int, head: str, pieces: Iterator[bytes], *, chunked: bool, timeout: float = 600) -> dict:
    """Send the request head, then the body pieces (as HTTP/1.1 chunks when `chunked`) while the
    server has not answered; the status, answer text, seconds to the status line, bytes sent."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    start_s = time.perf_counter()
    sock.sendall(head.encode("latin-1"))
    sock.setblocking(False)
    pending, sent, answer = b"", 0, b""
    body_done = False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        want_write = [sock] if not body_done else []
        readable, writable, _ = select.select([sock], want_write, [], 1.0)
        if readable:
            try:
                data = sock.recv(1 << 16)
            except (ConnectionResetError, BlockingIOError):
                data = b""
            answer += data
            if not data or b"\r\n\r\n" in answer:
                break
            continue
        if writable:
            if not pending:
                piece = next(pieces, None)
                if piece is None:
                    pending, body_done = (b"0\r\n\r\n" if chunked else b""), True
                else:
                    pending = (f"{len(piece):x}\r\n".encode() + piece + b"\r\n") if chunked else piece
                    sent += len(piece)
            try:
                n = sock.send(pending)
                pending = pending[n:]
            except (BrokenPipeError, ConnectionResetError):
                body_done = True
    seconds = time.perf_counter() - start_s
    sock.setblocking(True)
    sock.settimeout(30)
    try:
        while True:  # the rest of the answer
            data = sock.recv(1 << 16)
            if not data:
                break
            answer += data
            if len(answer) > 200_000:
                break
    except OSError:
        pass
    sock.close()
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    text = answer.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")
    return {"status": status, "seconds": seconds, "sent_mib": sent / 2**20, "text": text}


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def session_and_csrf(port: int) -> tuple[str, str]:
    """Log in as `admin` through the login form: the Cookie header value and a CSRF token."""
    import http.cookiejar
    import urllib.request

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    base = f"http://127.0.0.1:{port}"
    page = opener.open(base + "/accounts/login/", timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": "admin", "password": "bench-password", "csrfmiddlewaretoken": csrf})
    opener.open(urllib.request.Request(base + "/accounts/login/", data=form.encode()), timeout=30).read()
    page = opener.open(base + "/upload/", timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    cookie = "; ".join(f"{c.name}={c.value}" for c in jar)
    return cookie, csrf


def run_case(case: str, env: dict[str, str], token: str, tmp: Path, app: str) -> dict:
    port = free_port()
    log = tmp / f"daphne-{case}.log"
    process = start(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), app],
        env,
        log,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", process, log)
        auth = f"Authorization: Bearer {token}\r\n"
        create = json.dumps({"name": f"bench {case}"})
        r = send(
            port,
            f"POST /api/traces/ HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\n"
            f"Content-Length: {len(create)}\r\nConnection: close\r\n\r\n",
            iter([create.encode()]),
            chunked=False,
        )
        trace_id = json.loads(r["text"])["trace"]["id"]
        events = f"/api/traces/{trace_id}/events/"
        before = peak_rss_mib(process.pid)
        if case == "api-length":
            size = 250 * MB
            pieces = list(events_json(size))  # built before the clock starts; its length is the header's
            length = sum(len(p) for p in pieces)
            head = (
                f"POST {events} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\n"
                f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
            )
            result = send(port, head, iter(pieces), chunked=False)
        elif case in ("api-chunked", "api-under"):
            size = 250 * MB if case == "api-chunked" else 150 * MB
            if case == "api-chunked":
                framing = "Transfer-Encoding: chunked"
            else:
                framing = f"Content-Length: {size}"
            head = (
                f"POST {events} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\n"
                f"{framing}\r\nConnection: close\r\n\r\n"
            )
            result = send(port, head, blank_then_empty_array(size), chunked=case == "api-chunked")
        elif case in ("upload-length", "upload-under"):
            cookie, csrf = session_and_csrf(port)
            before = peak_rss_mib(process.pid)
            boundary = "benchboundary7d1f"
            preamble = (
                f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{csrf}\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n"
            ).encode()
            closing = f"\r\n--{boundary}--\r\n".encode()
            if case == "upload-length":
                file_pieces = list(json_lines_file(250 * MB))
            else:
                file_pieces = list(json_lines_file(150 * MB, b"this is no trace format, line " + b"y" * 200 + b"\n"))
            pieces = [preamble, *file_pieces, closing]
            length = sum(len(p) for p in pieces)
            head = (
                f"POST /upload/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n"
                f"Origin: http://127.0.0.1:{port}\r\nReferer: http://127.0.0.1:{port}/upload/\r\n"
                f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
            )
            result = send(port, head, iter(pieces), chunked=False)
        else:
            raise SystemExit(f"unknown case {case}")
        time.sleep(1.0)  # let the server finish whatever it does after answering
        result.update(case=case, rss_before=before, rss_after=peak_rss_mib(process.pid), alive=process.poll() is None)
        return result
    finally:
        stop(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="api-length,api-chunked,upload-length,api-under,upload-under")
    parser.add_argument("--app", default="webapp.config.asgi:application", help="the ASGI app Daphne serves")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = Path("/proc/loadavg").read_text().strip()
    print(f"app {args.app}; python {platform.python_version()}, {os.cpu_count()} CPUs; load {load}")
    with tempfile.TemporaryDirectory(prefix="swarmscope-bench-upload-") as tmp:
        env = app_env(
            Path(tmp),
            SWARMSCOPE_LOG_LEVEL="WARNING",
            DJANGO_SUPERUSER_PASSWORD="bench-password",
            SWARMSCOPE_INGEST_RATE="1000000",
        )
        for command in (
            ("migrate", "--verbosity", "0"),
            ("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@localhost"),
            ("create_token", "admin", "--project", "Bench"),
        ):
            done = manage(*command, env=env)
            if done.returncode != 0:
                raise RuntimeError(f"manage.py {' '.join(command)}: {done.stderr[-2000:]}")
        token = done.stdout.strip().splitlines()[-1]
        print(
            f"{'case':>14s} {'status':>6s} {'s to answer':>11s} {'MiB sent':>8s} {'RSS before':>10s} {'peak RSS':>8s}"
        )
        for case in args.cases.split(","):
            r = run_case(case, env, token, Path(tmp), args.app)
            text = re.sub(r"\s+", " ", r["text"])[:160]
            print(
                f"{case:>14s} {r['status']:6d} {r['seconds']:11.2f} {r['sent_mib']:8.1f} {r['rss_before']:10.0f} "
                f"{r['rss_after']:8.0f}  {text}",
                flush=True,
            )


if __name__ == "__main__":
    main()
