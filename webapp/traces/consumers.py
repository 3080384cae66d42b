"""`/ws/traces/<id>/`: the live view of one trace (swarmscope.protocol messages)."""

from __future__ import annotations

from channels.db import database_sync_to_async

from webapp.web.broadcast import trace_group
from webapp.web.sockets import SequencedConsumer

from . import access, lod, services


class TraceConsumer(SequencedConsumer):
    """One connection per viewer of one trace (`/ws/traces/<id>/`, swarmscope.protocol messages)."""

    url_kwarg = "trace_id"
    snapshot_path = "/api/traces/{pk}/snapshot/"
    #: The seq of the newest metrics this socket has sent (a snapshot carries its own).
    metrics_seq = -1
    #: A trace's snapshot and catch-ups are the same for every reader allowed to see it: N viewers
    #: joining or lagging at once read and encode them once per process (webapp.web.sockets.SharedReads).
    share_reads = True

    @property
    def trace(self):
        return self.target

    def get_authorised(self, pk: int):
        return access.get_trace_for(pk, user=self.user, token=self.token)

    def get_snapshot(self, target) -> dict:
        """The full snapshot, or for a huge trace (webapp.traces.lod.is_huge, as of now) the
        overview snapshot without events (`lod` set): the client fetches windows over HTTP."""
        target.refresh_from_db(fields=["event_count"])
        snapshot = lod.get_lod_snapshot(target) if lod.is_huge(target) else services.get_snapshot(target)
        self.metrics_seq = max(self.metrics_seq, snapshot["seq"])
        return snapshot

    async def _send_snapshot(self):
        """A snapshot (perhaps read for another socket, SharedReads) carries the metrics of its seq."""
        await super()._send_snapshot()
        self.metrics_seq = max(self.metrics_seq, self.last_seq)

    def get_delta_since(self, target, seq: int) -> dict:
        return services.get_delta_since(target, seq)

    def group_for(self, target) -> str:
        return trace_group(target.pk)

    async def trace_delta(self, message):
        await self.forward_delta(message)

    async def trace_metrics(self, message):
        """Forward recomputed metrics (`{"type": "metrics", "seq": N, "computed_metrics": {...}}`,
        webapp.traces.services.do_publish_metrics) as they come; older ones than sent are dropped."""
        if message["seq"] < self.metrics_seq:
            return
        self.metrics_seq = message["seq"]
        await self.send(text_data=message["text"])

    async def _send_since(self, seq: int, at_least: int | None = None):
        """A catch-up delta (a resume, a reconnect with `?seq=`, a gap), then the cached metrics when
        they are newer than this socket sent: a publish missed while away is not lost."""
        await super()._send_since(seq, at_least)
        message = await database_sync_to_async(services.get_cached_metrics_message)(self.target.pk, self.metrics_seq)
        if message is not None:
            self.metrics_seq = message["seq"]
            await self.send_json(message)

    async def job_progress(self, message):
        """Forward a counterfactual job's progress as `{"type": "job", "job": {...}}` (no seq: jobs
        are not part of the trace's delta stream; their state is re-read over HTTP)."""
        await self.send_json({"type": "job", "job": message["job"]})

    async def trace_reset(self, message):
        if message["seq"] > self.last_seq:
            await self._send_snapshot()
