"""`/ws/traces/<id>/`: a snapshot, then numbered deltas; `resume` fills gaps (webapp.core.live)."""

from __future__ import annotations

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from webapp.traces import access, services

from .broadcast import trace_group

#: Bigger snapshots and catch-up deltas exceed a websocket message (Daphne's limit is 1 MiB): clients fetch them over
#: HTTP and connect with `?seq=N`.
MAX_SOCKET_EVENTS = 3000


class TraceConsumer(AsyncJsonWebsocketConsumer):
    """One connection per viewer of one trace.

    Authorised on connect (session user or `?token=`) and again on every message; unknown or
    foreign traces close with code 4404. Bad client messages get an `error` message, never a crash.
    """

    trace = None
    last_seq = -1

    async def connect(self):
        trace_id = self.scope["url_route"]["kwargs"]["trace_id"]
        self.trace = await database_sync_to_async(self._authorised_trace)(trace_id)
        if self.trace is None:
            await self.accept()  # accept first, so the client sees close code 4404 rather than a bare 403
            await self.close(code=4404)
            return
        self.group = trace_group(self.trace.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        seq = self._query("seq")
        if seq is not None and seq.isdigit() and int(seq) <= self.trace.seq:
            # The client loaded the snapshot over HTTP (large traces exceed a websocket frame):
            # it needs only what came after.
            self.last_seq = int(seq)
            await self._send_since(self.last_seq)
        else:
            await self._send_snapshot()

    def _query(self, name: str) -> str | None:
        return parse_qs(self.scope.get("query_string", b"").decode()).get(name, [None])[0]

    def _authorised_trace(self, trace_id: int):
        return access.get_trace_for(trace_id, user=self.scope.get("user"), raw_token=self._query("token"))

    async def disconnect(self, code):
        if self.trace is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def _send_snapshot(self):
        snapshot = await database_sync_to_async(services.get_snapshot)(self.trace)
        self.last_seq = snapshot["seq"]
        await self._send_or_refer(snapshot)

    async def _send_since(self, seq: int):
        delta = await database_sync_to_async(services.get_delta_since)(self.trace, seq)
        if delta["type"] == "snapshot" or delta["seq"] > seq:
            self.last_seq = max(self.last_seq, delta["seq"])
            await self._send_or_refer(delta)

    async def _send_or_refer(self, message: dict):
        """Send a snapshot or catch-up delta, or, when it would exceed a websocket message, tell the
        client to load the snapshot over HTTP (it then continues from that snapshot's seq)."""
        if len(message["events"]) <= MAX_SOCKET_EVENTS:
            await self.send_json(message)
            return
        await self.send_json({"type": "error", "code": "snapshot_too_large", "seq": message["seq"],
                              "message": f"GET /api/traces/{self.trace.pk}/snapshot/, then connect with ?seq=N"})

    async def receive_json(self, content, **kwargs):
        if await database_sync_to_async(self._authorised_trace)(self.trace.pk) is None:
            await self.close(code=4404)
            return
        if not isinstance(content, dict) or content.get("type") != "resume":
            await self.send_json({"type": "error", "message": "expected {\"type\": \"resume\", \"seq\": N}"})
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

    async def trace_delta(self, message):
        seq = message["seq"]
        if seq <= self.last_seq:
            return
        delta = message.get("delta")
        if delta is not None and seq == self.last_seq + 1:
            self.last_seq = seq
            await self.send_json(delta)
        else:
            await self._send_since(self.last_seq)

    async def job_progress(self, message):
        """Forward a counterfactual job's progress as `{"type": "job", "job": {...}}` (no seq: jobs
        are not part of the trace's delta stream; their state is re-read over HTTP)."""
        await self.send_json({"type": "job", "job": message["job"]})

    async def trace_reset(self, message):
        if message["seq"] > self.last_seq:
            await self._send_snapshot()
