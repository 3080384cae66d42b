"""`/ws/projects/<id>/`: a project's review activity, live (comments, votes, status, labels).

On connect the client gets `{"type": "hello", "project": id, "last_activity": N}`; then each new
activity as `{"type": "activity", "activity": {...}}` (webapp.review.feed.activity_wire). A
client that reconnects sends `{"type": "resume", "after": N}` (or connects with `?after=N`) and
gets the activities it missed, oldest first. `{"type": "ping"}` answers `pong`.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from webapp.accounts.services import check_token
from webapp.traces import access
from webapp.web.broadcast import project_group

from . import feed
from .models import Activity

#: At most this many missed activities are sent on resume; older ones are read over HTTP.
MAX_RESUME = 200


class ProjectConsumer(AsyncJsonWebsocketConsumer):
    """One connection per member watching a project's review.

    Authorised on connect (session user or `?token=`) and again on every client message: a
    non-member, an unknown project or a revoked token closes with code 4404. Bad client messages
    get an `error` message, never a crash.
    """

    project_id = None

    def _query(self, name: str) -> str | None:
        return parse_qs(self.scope.get("query_string", b"").decode()).get(name, [None])[0]

    def _may_read(self, project_id: int) -> bool:
        raw = self._query("token")
        token = check_token(raw) if raw else None
        if raw and token is None:
            return False
        return project_id in access.project_ids_for(self.scope.get("user"), token)

    def _last_activity(self) -> int:
        return Activity.objects.filter(project_id=self.project_id).order_by("-id").values_list(
            "id", flat=True).first() or 0

    def _since(self, after: int) -> list[dict]:
        return [feed.activity_wire(a) for a in feed.list_activity(self.project_id, after=after,
                                                                           limit=MAX_RESUME)]

    async def connect(self):
        project_id = self.scope["url_route"]["kwargs"]["project_id"]
        if not await database_sync_to_async(self._may_read)(project_id):
            await self.accept()  # accept first, so the client sees close code 4404 rather than a bare 403
            await self.close(code=4404)
            return
        self.project_id = project_id
        await self.channel_layer.group_add(project_group(project_id), self.channel_name)
        await self.accept()
        last = await database_sync_to_async(self._last_activity)()
        await self.send_json({"type": "hello", "project": project_id, "last_activity": last})
        after = self._query("after")
        if after is not None and after.isdigit():
            await self._resume(int(after))

    async def disconnect(self, code):
        if self.project_id is not None:
            await self.channel_layer.group_discard(project_group(self.project_id), self.channel_name)

    async def _resume(self, after: int):
        for activity in await database_sync_to_async(self._since)(after):
            await self.send_json({"type": "activity", "activity": activity})

    async def receive_json(self, content, **kwargs):
        if not await database_sync_to_async(self._may_read)(self.project_id):
            await self.close(code=4404)
            return
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "ping":
            await self.send_json({"type": "pong"})
        elif kind == "resume" and isinstance(content.get("after"), int) and not isinstance(content["after"], bool):
            await self._resume(max(content["after"], 0))
        else:
            await self.send_json({"type": "error",
                                  "message": "expected {\"type\": \"resume\", \"after\": N} or {\"type\": \"ping\"}"})

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        try:
            await super().receive(text_data=text_data, bytes_data=bytes_data, **kwargs)
        except (ValueError, RecursionError):
            await self.send_json({"type": "error", "message": "messages must be JSON (not nested too deeply)"})

    async def review_activity(self, message):
        """A group message from webapp.web.broadcast.broadcast_project_activity."""
        await self.send_json({"type": "activity", "activity": message["activity"]})
