"""`/ws/traces/<id>/`: the live view of one trace (swarmscope.protocol messages)."""

from __future__ import annotations

from webapp.web.broadcast import trace_group
from webapp.web.sockets import SequencedConsumer

from . import access, services


class TraceConsumer(SequencedConsumer):
    """One connection per viewer of one trace (`/ws/traces/<id>/`, swarmscope.protocol messages)."""

    url_kwarg = "trace_id"
    snapshot_path = "/api/traces/{pk}/snapshot/"

    @property
    def trace(self):
        return self.target

    def get_authorised(self, pk: int):
        return access.get_trace_for(pk, user=self.user, token=self.token)

    def get_snapshot(self, target) -> dict:
        return services.get_snapshot(target)

    def get_delta_since(self, target, seq: int) -> dict:
        return services.get_delta_since(target, seq)

    def group_for(self, target) -> str:
        return trace_group(target.pk)

    async def trace_delta(self, message):
        await self.forward_delta(message)

    async def job_progress(self, message):
        """Forward a counterfactual job's progress as `{"type": "job", "job": {...}}` (no seq: jobs
        are not part of the trace's delta stream; their state is re-read over HTTP)."""
        await self.send_json({"type": "job", "job": message["job"]})

    async def trace_reset(self, message):
        if message["seq"] > self.last_seq:
            await self._send_snapshot()
