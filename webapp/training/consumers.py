"""`/ws/runs/<id>/`: a training run's snapshot, then numbered deltas; `resume` fills gaps
(swarmscope.protocol), on the shared protocol of webapp.web.sockets."""

from __future__ import annotations

import json

from webapp.accounts.services import check_token, project_ids_for
from webapp.web.broadcast import run_group
from webapp.web.sockets import SequencedConsumer

from . import services

#: Snapshots and catch-up deltas bigger than this (bytes of JSON) exceed a websocket message
#: (Daphne's limit is 1 MiB): the client loads them from GET /api/runs/<id>/snapshot/ and connects
#: with `?seq=N`, as for traces.
MAX_SOCKET_BYTES = 800_000


class RunConsumer(SequencedConsumer):
    """One connection per viewer of one run; authorised like the trace socket (session or `?token=`)."""

    url_kwarg = "run_id"

    async def _send_or_refer(self, message: dict):
        text = json.dumps(message)
        if len(text) <= MAX_SOCKET_BYTES:
            await self.send(text_data=text)
            return
        await self.send_json({"type": "error", "code": "snapshot_too_large", "seq": message["seq"],
                              "message": f"GET /api/runs/{self.target.pk}/snapshot/, then connect with ?seq=N"})

    def get_authorised(self, pk: int):
        raw = self._query("token")
        token = check_token(raw) if raw else None
        return services.get_run_for(pk, project_ids_for(self.scope.get("user"), token))

    def get_snapshot(self, target) -> dict:
        return services.get_snapshot(target)

    def get_delta_since(self, target, seq: int) -> dict:
        return services.get_delta_since(target, seq)

    def group_for(self, target) -> str:
        return run_group(target.pk)

    async def run_delta(self, message):
        await self.forward_delta(message)
