"""The consumer base of every live socket: snapshot + numbered deltas + resume (docs/architecture.md
"Live protocol"; message schemas in swarmscope.protocol_schema)."""

from __future__ import annotations

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

#: The largest snapshot or catch-up delta a socket sends, in bytes of its JSON text (below Daphne's
#: 1 MiB message limit). Bigger ones are answered with a `snapshot_too_large` referral: the client
#: loads the state over HTTP (`SequencedConsumer.snapshot_path`) and connects with `?seq=N`.
MAX_SOCKET_BYTES = 800_000


class SequencedConsumer(AsyncJsonWebsocketConsumer):
    """The snapshot + numbered deltas + resume protocol for one object (`/ws/traces/`, `/ws/runs/`,
    `/ws/projects/`).

    Subclasses name the URL keyword (`url_kwarg`), the HTTP path of the state (`snapshot_path`,
    formatted with `pk`), and implement `get_authorised(pk)` (the object, with `pk` and its current
    `seq`, if the session user or `?token=` may read it, else None; sync), `get_snapshot(obj)` and
    `get_delta_since(obj, seq)` (sync; a delta, or a snapshot when `seq` cannot be answered with
    one), and `group_for(obj)`. Authorised on connect and again on every message; unknown or
    foreign objects close with code 4404. A group message `{"seq": N, "text": "<delta as JSON>"}`
    handled by `forward_delta` is sent as is when it is the next one; a gap (or a message without
    text) is filled from the database. Snapshots and catch-up deltas over MAX_SOCKET_BYTES are
    answered with `{"type": "error", "code": "snapshot_too_large", "seq": N, "message": ...}`.
    Bad client messages get an `error` message, never a crash.
    """

    url_kwarg = "pk"
    snapshot_path = ""
    target = None
    last_seq = -1

    def get_authorised(self, pk: int):
        raise NotImplementedError

    def get_snapshot(self, target) -> dict:
        raise NotImplementedError

    def get_delta_since(self, target, seq: int) -> dict:
        raise NotImplementedError

    def group_for(self, target) -> str:
        raise NotImplementedError

    async def connect(self):
        pk = self.scope["url_route"]["kwargs"][self.url_kwarg]
        self.target = await database_sync_to_async(self.get_authorised)(pk)
        if self.target is None:
            await self.accept()  # accept first, so the client sees close code 4404 rather than a bare 403
            await self.close(code=4404)
            return
        self.group = self.group_for(self.target)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        seq = self._query("seq")
        if seq is not None and seq.isdigit() and int(seq) <= self.target.seq:
            # The client loaded the snapshot over HTTP (large states exceed a websocket message):
            # it needs only what came after.
            self.last_seq = int(seq)
            await self._send_since(self.last_seq)
        else:
            await self._send_snapshot()

    def _query(self, name: str) -> str | None:
        return parse_qs(self.scope.get("query_string", b"").decode()).get(name, [None])[0]

    async def disconnect(self, code):
        if self.target is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def _send_snapshot(self):
        snapshot = await database_sync_to_async(self.get_snapshot)(self.target)
        self.last_seq = snapshot["seq"]
        await self._send_or_refer(snapshot)

    async def _send_since(self, seq: int):
        delta = await database_sync_to_async(self.get_delta_since)(self.target, seq)
        if delta["type"] == "snapshot" or delta["seq"] > seq:
            self.last_seq = max(self.last_seq, delta["seq"])
            await self._send_or_refer(delta)

    async def _send_or_refer(self, message: dict):
        """Send a snapshot or catch-up delta, or, when its JSON exceeds MAX_SOCKET_BYTES, the
        referral to load the state over HTTP (the client then continues from the referral's seq)."""
        text = await self.encode_json(message)
        # json.dumps escapes non-ASCII characters (ensure_ascii), so characters are bytes here.
        if len(text) <= MAX_SOCKET_BYTES:
            await self.send(text_data=text)
            return
        await self.send_json(
            {
                "type": "error",
                "code": "snapshot_too_large",
                "seq": message["seq"],
                "message": f"GET {self.snapshot_path.format(pk=self.target.pk)}, then connect with ?seq=N",
            }
        )

    async def receive_json(self, content, **kwargs):
        if await database_sync_to_async(self.get_authorised)(self.target.pk) is None:
            await self.close(code=4404)
            return
        if not isinstance(content, dict) or content.get("type") != "resume":
            await self.send_json({"type": "error", "message": 'expected {"type": "resume", "seq": N}'})
            return
        seq = content.get("seq")
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0 or seq > self.last_seq:
            await self._send_snapshot()
            return
        await self._send_since(seq)

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        try:
            await super().receive(text_data=text_data, bytes_data=bytes_data, **kwargs)
        except (ValueError, RecursionError):
            await self.send_json({"type": "error", "message": "messages must be JSON (not nested too deeply)"})

    async def forward_delta(self, message):
        """Send the group message `{"seq": N, "text": ...}` (webapp.web.broadcast) when it is the
        next delta; otherwise (a gap, a seq space with holes, no text) send what the database has
        after the last seq sent."""
        seq = message["seq"]
        if seq <= self.last_seq:
            return
        text = message.get("text")
        if text is not None and seq == self.last_seq + 1:
            self.last_seq = seq
            await self.send(text_data=text)
        else:
            await self._send_since(self.last_seq)
