"""`/ws/projects/<id>/traces/`: a project's trace list, live (new traces, event counts, the live
badge), on the shared protocol of webapp.web.sockets.

On connect the client gets `{"type": "snapshot", "seq": N, "project": id, "traces": [row, ...]}`
(the live traces; the list itself is the HTML page), or with `?seq=N` (the seq the page was
rendered at) one delta with what changed since. Then each saved trace as
`{"type": "delta", "seq": N, "project": id, "traces": [row]}` (webapp.traces.services.list_row).
The seq is the microsecond of the last trace save (`services.list_seq`): it increases, with holes.
A row is an upsert: a client keeps, per trace, the row with the highest `seq` (the trace's own).
"""

from __future__ import annotations

from dataclasses import dataclass

from webapp.accounts.services import check_token
from webapp.web.broadcast import trace_list_group
from webapp.web.sockets import SequencedConsumer

from . import access, services


@dataclass
class TraceList:
    """The object a list socket watches: a project and its current list seq."""

    pk: int
    seq: int


class TraceListConsumer(SequencedConsumer):
    """One connection per viewer of a project's trace list.

    Authorised on connect (session user or `?token=`) and again on every client message: a
    non-member, an unknown project or a revoked token closes with code 4404. A trace's rows arrive
    as often as its batches: each is forwarded as it comes (no database read per viewer); a row is
    an idempotent upsert, so one arriving out of seq order is still sent.
    """

    url_kwarg = "project_id"
    snapshot_path = "/?project={pk}"

    def get_authorised(self, pk: int):
        raw = self._query("token")
        token = check_token(raw) if raw else None
        if raw and token is None:
            return None
        if pk not in access.project_ids_for(self.scope.get("user"), token):
            return None
        return TraceList(pk=pk, seq=services.list_seq(pk))

    def get_snapshot(self, target) -> dict:
        return services.list_snapshot(target.pk)

    def get_delta_since(self, target, seq: int) -> dict:
        return services.list_delta_since(target.pk, seq)

    def group_for(self, target) -> str:
        return trace_list_group(target.pk)

    async def trace_list_delta(self, message):
        """A group message from webapp.web.broadcast.broadcast_trace_list."""
        text = message.get("text")
        if text is None:
            await self._send_since(self.last_seq)
            return
        self.last_seq = max(self.last_seq, message["seq"])
        await self.send(text_data=text)
