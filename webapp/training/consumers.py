"""`/ws/runs/<id>/`: a training run's snapshot, then numbered deltas; `resume` fills gaps
(swarmscope.protocol), on the shared protocol of webapp.web.sockets."""

from __future__ import annotations

from webapp.accounts.services import project_ids_for
from webapp.web.broadcast import run_group
from webapp.web.sockets import SequencedConsumer

from . import services


class RunConsumer(SequencedConsumer):
    """One connection per viewer of one run; authorised like the trace socket (session or `?token=`)."""

    url_kwarg = "run_id"
    snapshot_path = "/api/runs/{pk}/snapshot/"

    def get_authorised(self, pk: int):
        return services.get_run_for(pk, project_ids_for(self.user, self.token))

    def get_snapshot(self, target) -> dict:
        return services.get_snapshot(target)

    def get_delta_since(self, target, seq: int) -> dict:
        return services.get_delta_since(target, seq)

    def group_for(self, target) -> str:
        return run_group(target.pk)

    async def run_delta(self, message):
        await self.forward_delta(message)
