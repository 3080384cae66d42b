"""A Python viewer of `/ws/traces/<id>/` that resumes as the browser does (static/js/lib/live_connection.js
and the trace page): it keeps the last sequence number it applied and, when the socket drops,
reconnects with `?seq=N` (backoff 0.1 s doubling to 2 s) and gets what it missed
(webapp/web/sockets.py); when the server answers `snapshot_too_large` (what it missed exceeds a
websocket message), it loads the snapshot over HTTP before reading on, as static/js/pages/trace_page.js
does. Used by the deployment tests and bench/bench_fanout.py.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request

import websockets


class ResumingViewer:
    """Watches one trace until stopped. `received` maps event id -> (seq, monotonic time first
    received); `duplicates` lists ids that arrived again in a later delta that was not an update
    of them; `reconnects` counts the sockets opened after the first; `closes` the close codes seen;
    `http_snapshots` the snapshots loaded over HTTP; `errors` every other `error` message."""

    def __init__(self, ws_base: str, trace_id: int, token: str):
        self.url = f"{ws_base}/ws/traces/{trace_id}/?token={token}"
        self.snapshot_url = f"{ws_base.replace('ws', 'http', 1)}/api/traces/{trace_id}/snapshot/"
        self.token = token
        self.http_snapshots = 0
        self.last_seq = -1
        self.received: dict[str, tuple[int, float]] = {}
        self.duplicates: list[str] = []
        self.reconnects = 0
        self.closes: list[int | None] = []
        self.errors: list[dict] = []
        self.stopped = asyncio.Event()
        self.open = asyncio.Event()

    def _fetch_snapshot(self) -> dict:
        request = urllib.request.Request(self.snapshot_url, headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return {"type": "snapshot", **json.loads(response.read())}

    #: Parses one websocket text message; a subclass may share parses between viewers.
    decode = staticmethod(json.loads)

    def _apply(self, message: dict, now: float | None = None) -> None:
        """Apply one snapshot or delta (`now`: the time.monotonic() it arrived, default now)."""
        now = time.monotonic() if now is None else now
        kind = message.get("type")
        if kind == "error":
            self.errors.append(message)
            return
        if kind not in ("snapshot", "delta") or message["seq"] <= self.last_seq:
            return
        for event in message.get("events", ()):
            if event["id"] in self.received and kind == "delta" and event["seq"] <= self.received[event["id"]][0]:
                self.duplicates.append(event["id"])
            self.received.setdefault(event["id"], (event["seq"], now))
        self.last_seq = message["seq"]

    async def run(self) -> None:
        """Connect, apply messages, reconnect with `?seq=N` after a drop; returns once `stop()` is called."""
        delay = 0.1
        first = True
        while not self.stopped.is_set():
            url = self.url if self.last_seq < 0 else f"{self.url}&seq={self.last_seq}"
            try:
                # No client pings, as in a browser: the server's pings and the drop are what count.
                async with websockets.connect(url, open_timeout=10, max_size=2**24, ping_interval=None) as ws:
                    if not first:
                        self.reconnects += 1
                    first, delay = False, 0.1
                    self.open.set()
                    closer = asyncio.ensure_future(self._close_when_stopped(ws))
                    try:
                        async for raw in ws:
                            message = self.decode(raw)
                            if message.get("type") == "error" and message.get("code") == "snapshot_too_large":
                                message = await asyncio.to_thread(self._fetch_snapshot)
                                self.http_snapshots += 1
                            self._apply(message)
                    finally:
                        closer.cancel()
                    if self.stopped.is_set():
                        return
                    self.closes.append(ws.close_code)  # a normal close by the server (1000, 1001)
            except websockets.ConnectionClosed as exc:
                self.closes.append(exc.rcvd.code if exc.rcvd else None)
            except (TimeoutError, OSError, websockets.InvalidHandshake) as exc:
                self.closes.append(type(exc).__name__)
            self.open.clear()
            try:
                await asyncio.wait_for(self.stopped.wait(), delay)
            except TimeoutError:
                pass
            delay = min(delay * 2, 2.0)

    async def _close_when_stopped(self, ws) -> None:
        await self.stopped.wait()
        await ws.close()

    def stop(self) -> None:
        self.stopped.set()
