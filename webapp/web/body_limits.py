"""Request body limits, enforced before the app holds a body: 413 at the headers when the
Content-Length is over the path's limit, 413 as soon as a body without one (chunked) passes it.

`limit_for(path)` is the one table of limits. Two places enforce it, with the same answer
(`too_large_answer`: JSON `{"error", "limit_bytes"}` under /api/ and /v1/, else the 413 page):

- `BodyLimitMiddleware`, the ASGI middleware in front of Django (webapp.config.asgi), for any ASGI
  server: a declared length over the limit is answered without calling Django; the body messages of
  any other request are counted as Django reads them, and past the limit Django is told the client
  went away (it stops reading and answers nothing) and the middleware answers 413.
- `LimitedWebRequest`, Daphne's request class with the same checks made by Twisted while the body
  arrives (`install_daphne_limits`, called by webapp.config.asgi inside a Daphne process). Daphne
  calls the ASGI app only once Twisted has the whole body (in a temporary file past 100 kB) and then
  queues all of it in memory for the app at once, so without this a refused 1 GB body would cost a
  GB of disk and of memory before any middleware ran. It also turns off Twisted's own parsing of
  POST forms into `request.args` (a multipart upload read into memory and parsed by the `email`
  package, about 9x its size; Daphne never reads `args`).

What stays: a body under the limit is still queued whole in Daphne's memory (at most the limit per
request), and a refused one is still received up to the limit; a reverse proxy's cap (README
"Deploy") stops bodies before they reach the server at all.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

from daphne import http_protocol
from django.conf import settings
from django.template import loader

#: Paths answered with JSON (as webapp.web.errors.API_PREFIXES).
API_PREFIXES = ("/api/", "/v1/")

#: (path pattern, setting): the first match names the setting that holds the limit in bytes. Trace
#: files, event batches and OTLP exports (the API and the Upload page) take SWARMSCOPE_MAX_UPLOAD_BYTES,
#: what `api_view` checks; other pages Django's own cap on a body (the settings set it to the same).
LIMITS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^/(api/|v1/|upload/)"), "SWARMSCOPE_MAX_UPLOAD_BYTES"),
    (re.compile(r""), "DATA_UPLOAD_MAX_MEMORY_SIZE"),
)


def limit_for(path: str) -> tuple[int, str]:
    """(limit in bytes, the setting's name) for a request to `path` (decoded, without the query)."""
    for pattern, name in LIMITS:
        if pattern.match(path):
            return int(getattr(settings, name)), name
    raise AssertionError("LIMITS ends with a pattern that matches every path")


def declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """The Content-Length of ASGI `headers`; None when absent or not a number (the app answers that)."""
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def too_large_answer(path: str, limit: int, setting: str) -> tuple[str, bytes]:
    """(content type, body) of the 413 answer: JSON naming the limit under /api/ and /v1/, else the
    page (templates/413.html, rendered without a request: no user, no database)."""
    if path.startswith(API_PREFIXES):
        error = f"request body over {limit} bytes ({setting}); send smaller batches"
        return "application/json", json.dumps({"error": error, "limit_bytes": limit}).encode()
    size = f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit:,} bytes"
    if path.startswith("/upload/"):
        reason = f"Upload refused: over {size} ({setting}). Upload fewer files at a time."
    else:
        reason = f"Request refused: its body is over {size} ({setting})."
    return "text/html; charset=utf-8", loader.render_to_string("413.html", {"reason": reason}).encode()


async def send_too_large(send, path: str, limit: int, setting: str) -> None:
    content_type, body = too_large_answer(path, limit, setting)
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """ASGI middleware: 413 for an HTTP request whose body is over `limit_for(path)`, as the module
    docstring says. Websockets and lifespan pass through."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        limit, setting = limit_for(path)
        length = declared_length(scope.get("headers", []))
        if length is not None and length > limit:
            return await send_too_large(send, path, limit, setting)
        received, over, started = 0, False, False

        async def counted_receive():
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    over = True  # the app stops reading: Django's handler returns without an answer
                    return {"type": "http.disconnect"}
            return message

        async def watched_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, counted_receive, watched_send)
        if over and not started:
            await send_too_large(send, path, limit, setting)


# --- Daphne: the same limits while Twisted receives the body ------------------------------------


class _Discard:
    """A body sink that keeps nothing (the body of a refused request)."""

    closed = False

    def write(self, data: bytes) -> None:
        pass

    def read(self, size: int = -1) -> bytes:
        return b""

    def seek(self, offset: int, whence: int = 0) -> int:
        return 0

    def tell(self) -> int:
        return 0

    def close(self) -> None:
        pass


class LimitedWebRequest(http_protocol.WebRequest):
    """Daphne's request with `limit_for` applied by Twisted: at the headers (`gotLength`, the
    declared length) and for each piece of body (`handleContentChunk`, the running count). Over
    the limit it writes the 413 answer at once (`Connection: close`), keeps nothing more of the
    body, and closes once the client has sent it all or after LINGER_S (closing under a client
    that is still sending resets the connection, and a client that reads its answer only after
    sending everything would lose it). Twisted's parsing of POST forms into `args` is off
    (`parsePOSTFormSubmission`)."""

    #: Seconds a refused request's connection stays open for the rest of its body (as nginx's
    #: lingering close).
    LINGER_S = 30.0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)
        self.refused = False
        self.body_received = 0
        self.body_limit: tuple[int, str] | None = None
        self._linger = None

    def _target_path(self) -> str:
        target = getattr(self.channel, "_path", b"") or b""  # the request line's target (Twisted)
        return unquote(target.split(b"?", 1)[0].decode("latin-1"))

    def gotLength(self, length):
        self.body_limit = limit_for(self._target_path())
        if length is not None and length > self.body_limit[0]:
            self._refuse()
            return
        super().gotLength(length)

    def handleContentChunk(self, data):
        if self.refused:
            return
        self.body_received += len(data)
        if self.body_limit is not None and self.body_received > self.body_limit[0]:
            self.content.close()  # the temporary file: what was kept so far goes
            self._refuse()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command, path, version):
        if self.refused:  # the whole body came: close now
            self.channel.loseConnection()
            return
        super().requestReceived(command, path, version)

    def connectionLost(self, reason):
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        super().connectionLost(reason)

    def _refuse(self):
        # the reactor Daphne installed (asyncio); importing it earlier would install the default one
        from twisted.internet import reactor  # noqa: PLC0415

        self.refused = True
        self.content = _Discard()
        # no "100 Continue" after the answer (Twisted sends one after gotLength when asked)
        self.requestHeaders.removeHeader(b"Expect")
        assert self.body_limit is not None
        content_type, body = too_large_answer(self._target_path(), *self.body_limit)
        head = (
            "HTTP/1.1 413 Content Too Large\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        self.channel.transport.write(head.encode("latin-1") + body)
        self._linger = reactor.callLater(self.LINGER_S, self.channel.loseConnection)


def install_daphne_limits() -> None:
    """Make Daphne build its HTTP requests as LimitedWebRequest: its HTTPFactory takes the module's
    `WebRequest` each time it builds a connection's protocol. Idempotent."""
    http_protocol.WebRequest = LimitedWebRequest
