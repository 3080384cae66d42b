"""`/ws/projects/<id>/`: a project's review activity, live (comments, votes, status, labels), on the
shared protocol of webapp.web.sockets (swarmscope.protocol_schema "review").

On connect the client gets `{"type": "snapshot", "seq": N, "project": id, "activities": [...]}`
(the recent activity, oldest first; webapp.review.feed), then each new activity as
`{"type": "delta", "seq": N, "project": id, "activities": [{...}]}`, `seq` being the activity's
id. A client that reconnects connects with `?seq=N` or sends `{"type": "resume", "seq": N}` and
gets one delta with the activities it missed (a snapshot when it missed too many).
"""

from __future__ import annotations

from webapp.traces import access
from webapp.web.broadcast import project_group
from webapp.web.sockets import SequencedConsumer

from . import feed


class ProjectConsumer(SequencedConsumer):
    """One connection per member watching a project's review.

    Authorised on connect (session user or `?token=`) and re-checked as every socket is
    (webapp.web.sockets): a non-member or an unknown project closes with code 4404, a revoked
    token with 4401. Activity ids of other
    projects leave holes in a project's seqs, so a live activity is sent after reading what came
    after the last seq sent (one indexed query per viewer; review activity is human-paced).
    """

    url_kwarg = "project_id"
    snapshot_path = "/api/review/projects/{pk}/activity/"

    def get_authorised(self, pk: int):
        if pk not in access.project_ids_for(self.user, self.token):
            return None
        return feed.ProjectFeed(pk=pk, seq=feed.last_activity_id(pk))

    def get_snapshot(self, target) -> dict:
        return feed.get_snapshot(target.pk)

    def get_delta_since(self, target, seq: int) -> dict:
        return feed.get_delta_since(target.pk, seq)

    def group_for(self, target) -> str:
        return project_group(target.pk)

    async def review_activity(self, message):
        """A group message from webapp.web.broadcast.broadcast_project_activity."""
        await self.forward_delta(message)
