"""`/ws/runs/<id>/`: a training run's snapshot, then numbered deltas; `resume` fills gaps
(swarmscope.protocol), on the shared protocol of webapp.web.sockets. `/ws/projects/<id>/runs/`: the
runs created in a project, for the runs list."""

from __future__ import annotations

from dataclasses import dataclass

from webapp.accounts.services import project_ids_for
from webapp.web.broadcast import run_group, run_list_group
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


@dataclass(frozen=True)
class RunList:
    """The object of a `/ws/projects/<id>/runs/` connection: the project and its newest run's id."""

    pk: int
    seq: int


class RunListConsumer(SequencedConsumer):
    """One connection per viewer of the runs list, per project of theirs (the page opens one each).

    On connect `{"type": "snapshot", "seq": N, "project": id, "runs": [run, ...]}` (the newest
    runs, services.get_run_list_snapshot), or with `?seq=N` (the newest run id the page was
    rendered with) one delta with the runs created since; then each new run as
    `{"type": "delta", "seq": <its id>, "project": id, "runs": [run]}` (services.run_summary).
    A run's later changes are on its own socket, `/ws/runs/<id>/`. Ids of other projects' runs
    leave holes in the seqs, so a new run is sent after reading what came after the last seq sent
    (one indexed query per viewer; runs are created at human pace). Authorised as every socket
    (webapp.web.sockets): a non-member or an unknown project closes with 4404.
    """

    url_kwarg = "project_id"
    snapshot_path = "/runs/"

    def get_authorised(self, pk: int):
        if pk not in project_ids_for(self.user, self.token):
            return None
        return RunList(pk=pk, seq=services.last_run_id(pk))

    def get_snapshot(self, target) -> dict:
        return services.get_run_list_snapshot(target.pk)

    def get_delta_since(self, target, seq: int) -> dict:
        return services.get_run_list_delta_since(target.pk, seq)

    def group_for(self, target) -> str:
        return run_list_group(target.pk)

    async def run_list_delta(self, message):
        """A group message from webapp.web.broadcast.broadcast_run_list."""
        await self.forward_delta(message)
