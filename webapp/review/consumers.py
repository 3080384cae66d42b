"""`/ws/projects/<id>/`: a project's review activity, live (comments, votes, status, labels), on the
shared protocol of webapp.web.sockets (swarmscope.protocol_schema "review").

On connect the client gets `{"type": "snapshot", "seq": N, "project": id, "activities": [...]}`
(the recent activity, oldest first; webapp.review.feed), then each new activity as
`{"type": "delta", "seq": N, "project": id, "activities": [{...}]}`, `seq` being the activity's
id. A client that reconnects connects with `?seq=N` or sends `{"type": "resume", "seq": N}` and
gets one delta with the activities it missed (a snapshot when it missed too many).

`/ws/users/<id>/notifications/` (NotificationConsumer): the caller's own @mentions, for the header's
bell on every page (static/js/lib/notification_bell.js): `{"type": "snapshot", "seq": N, "user":
id, "unread": n}`, then a delta `{..., "unread": n, "notifications": [...]}` when someone mentions
them (webapp.review.feed.get_notification_delta_since); same resume by seq.
"""

from __future__ import annotations

from webapp.traces import access
from webapp.web.broadcast import notification_group, project_group
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


class NotificationConsumer(SequencedConsumer):
    """One connection per open page of a signed-in user: their unread @mentions, live.

    Only the user themself may connect (another user's id closes with 4404, like an unknown
    object); a token socket reads the notifications of the token's project. The seq is the id of
    the user's latest notification; a broadcast carries only that seq and each socket reads its
    count from the database (one indexed COUNT per open page and mention: human-paced).
    """

    url_kwarg = "user_id"
    snapshot_path = "/api/review/notifications/?unread=1"

    def get_authorised(self, pk: int):
        if pk != self.user.pk:
            return None
        return feed.notification_feed(pk, access.project_ids_for(self.user, self.token))

    def get_snapshot(self, target) -> dict:
        return feed.get_notification_snapshot(target)

    def get_delta_since(self, target, seq: int) -> dict:
        return feed.get_notification_delta_since(target, seq)

    def group_for(self, target) -> str:
        return notification_group(target.pk)

    async def notification_created(self, message):
        """A group message from webapp.web.broadcast.broadcast_notification (a seq, no text)."""
        await self.forward_delta(message)

    async def notification_read(self, message):
        """Some of the user's notifications were marked read (another page): a fresh snapshot."""
        await self._send_snapshot()
