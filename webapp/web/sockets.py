"""The consumer base of every live socket: snapshot + numbered deltas + resume (docs/architecture.md
"Live protocol"; message schemas in swarmscope.protocol_schema)."""

from __future__ import annotations

import time
from importlib import import_module
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib.auth import SESSION_KEY

from webapp.accounts.revocation import ACCESS_CHANGED, token_access_group, user_access_group
from webapp.accounts.services import (
    AuthenticationRefused,
    authenticate_token,
    recheck_token,
    recheck_user,
)
from webapp.web.validation import InputError, query_int

#: The largest snapshot or catch-up delta a socket sends, in bytes of its JSON text (below Daphne's
#: 1 MiB message limit). Bigger ones are answered with a `snapshot_too_large` referral: the client
#: loads the state over HTTP (`SequencedConsumer.snapshot_path`) and connects with `?seq=N`.
MAX_SOCKET_BYTES = 800_000


class SequencedConsumer(AsyncJsonWebsocketConsumer):
    """The snapshot + numbered deltas + resume protocol for one object (`/ws/traces/`, `/ws/runs/`,
    `/ws/projects/`).

    Subclasses name the URL keyword (`url_kwarg`), the HTTP path of the state (`snapshot_path`,
    formatted with `pk`), and implement `get_authorised(pk)` (the object, with `pk` and its current
    `seq`, if the caller, `self.user` / `self.token`, may read it, else None; sync),
    `get_snapshot(obj)` and `get_delta_since(obj, seq)` (sync; a delta, or a snapshot when `seq`
    cannot be answered with one), and `group_for(obj)`. A group message `{"seq": N, "text": "<delta
    as JSON>"}` handled by `forward_delta` is sent as is when it is the next one; a gap (or a
    message without text) is filled from the database. Snapshots and catch-up deltas over
    MAX_SOCKET_BYTES are answered with `{"type": "error", "code": "snapshot_too_large", "seq": N,
    "message": ...}`. Bad client messages get an `error` message, never a crash.

    Authentication (docs/architecture.md "Security"): the caller is the `?token=` alone when the
    URL has one, else the session user (webapp.web.middleware.SocketAuthentication, which has
    checked the Origin of a session handshake); an unknown or revoked token, a deactivated user or
    no session closes with 4401, an unknown or unreadable object with 4404. Rights are re-read
    from the database on connect (after joining the caller's access groups, so no revocation can
    slip in between), on every client message, on an `access.changed` group message (sent after
    a revocation commits, webapp.accounts.revocation), and before delivering a group message when
    the last check is over RECHECK_S old. A socket that lost access is sent `{"type": "error",
    "message": <reason>}`, leaves its groups (so nothing more reaches it) and is closed with 4401
    or 4404 and the reason.
    """

    url_kwarg = "pk"
    snapshot_path = ""
    target = None
    last_seq = -1
    #: The caller: the token's user for a token socket, else the session's user.
    user = None
    #: The ApiToken of a `?token=` socket (None for a session socket).
    token = None
    #: Seconds a rights check stays good for deliveries (access.changed messages close at once).
    RECHECK_S = 1.0
    checked_at = 0.0
    closing = False
    joined: tuple[str, ...] = ()
    #: The session key of a session socket (its logout ends the socket too).
    session_key: str | None = None

    def get_authorised(self, pk: int):
        raise NotImplementedError

    def get_snapshot(self, target) -> dict:
        raise NotImplementedError

    def get_delta_since(self, target, seq: int) -> dict:
        raise NotImplementedError

    def group_for(self, target) -> str:
        raise NotImplementedError

    async def connect(self):
        refusal = await database_sync_to_async(self._authenticate)()
        if refusal is not None:
            await self.accept()  # accept first, so the client sees the close code and reason
            await self._refuse(4401, refusal)
            return
        access = [user_access_group(self.user.pk)] + ([token_access_group(self.token.pk)] if self.token else [])
        await self._join(access)
        pk = self.scope["url_route"]["kwargs"][self.url_kwarg]
        refusal = await database_sync_to_async(self._check)(pk)
        if refusal is not None:
            await self.accept()
            if refusal[0] == 4404:
                self.closing = True
                await self._leave()
                await self.close(code=4404)  # unknown and foreign objects look the same
            else:
                await self._refuse(*refusal)
            return
        self.group = self.group_for(self.target)
        await self._join([self.group])
        await self.accept()
        try:  # ASCII digits only (`?seq=²` passes str.isdigit but not int()); anything else: a snapshot
            seq = query_int({"seq": self._query("seq")}, "seq")
        except InputError:
            seq = None
        if seq is not None and seq <= self.target.seq:
            # The client loaded the snapshot over HTTP (large states exceed a websocket message):
            # it needs only what came after.
            self.last_seq = seq
            await self._send_since(self.last_seq)
        else:
            await self._send_snapshot()

    # --- who is calling, and may they still --------------------------------------------------

    def _authenticate(self) -> str | None:
        """Set `self.user` / `self.token` from the scope (sync); the reason for a 4401, else None."""
        if self.scope.get("auth") == "token":
            try:
                self.token = authenticate_token(self.scope.get("raw_token", ""))
            except AuthenticationRefused as exc:
                return str(exc)
            self.user = self.token.user
            return None
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_active:
            return "authentication required: log in, or connect with ?token=<API token>"
        self.user = user
        self.session_key = getattr(self.scope.get("session"), "session_key", None)
        return None

    def _session_ended(self) -> bool:
        """Whether the session this socket was opened with is gone (logged out, expired, flushed)
        or now belongs to someone else."""
        if self.session_key is None:
            return False
        store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=self.session_key)
        return str(store.get(SESSION_KEY)) != str(self.user.pk)

    def _check(self, pk=None) -> tuple[int, str] | None:
        """Re-read the caller and their right to the object from the database (sync); sets
        `self.target` on connect (`pk`). `(close code, reason)` when access is gone, else None."""
        try:
            if self.token is not None:
                self.token = recheck_token(self.token.pk)
                self.user = self.token.user
            else:
                self.user = recheck_user(self.user.pk)
        except AuthenticationRefused as exc:
            return 4401, str(exc)
        if self.token is None and self._session_ended():
            return 4401, "session ended: log in again"
        target = self.get_authorised(self.target.pk if pk is None else pk)
        if target is None:
            return 4404, "access revoked: you may no longer read this"
        if pk is not None:
            self.target = target
        self.checked_at = time.monotonic()
        return None

    async def _still_authorised(self) -> bool:
        """Re-check now; on refusal close the socket (False)."""
        if self.closing:
            return False
        refusal = await database_sync_to_async(self._check)()
        if refusal is not None:
            await self._refuse(*refusal)
            return False
        return True

    async def _refuse(self, code: int, reason: str) -> None:
        """Leave every group (nothing more is delivered), say why, close with `code` and `reason`."""
        self.closing = True
        await self._leave()
        await self.send_json({"type": "error", "message": reason})
        await self.close(code=code, reason=reason)

    async def _join(self, groups: list[str]) -> None:
        for group in groups:
            await self.channel_layer.group_add(group, self.channel_name)
        self.joined = (*self.joined, *groups)

    async def _leave(self) -> None:
        joined, self.joined = self.joined, ()
        for group in joined:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def dispatch(self, message):
        """Drop everything but the disconnect once closing; before a group message (a delta, a job)
        re-check the caller's rights when the last check is over RECHECK_S old."""
        kind = message.get("type", "")
        if self.closing and kind != "websocket.disconnect":
            return
        if (
            self.target is not None
            and not kind.startswith("websocket.")
            and kind != ACCESS_CHANGED
            and time.monotonic() - self.checked_at >= self.RECHECK_S
            and not await self._still_authorised()
        ):
            return
        await super().dispatch(message)

    async def access_changed(self, message):
        """A revocation committed for this socket's user or token (webapp.accounts.revocation)."""
        await self._still_authorised()

    def _query(self, name: str) -> str | None:
        return parse_qs(self.scope.get("query_string", b"").decode()).get(name, [None])[0]

    async def disconnect(self, code):
        await self._leave()

    async def _send_snapshot(self):
        snapshot = await database_sync_to_async(self.get_snapshot)(self.target)
        self.last_seq = snapshot["seq"]
        await self._send_or_refer(snapshot)

    async def _send_since(self, seq: int):
        delta = await database_sync_to_async(self.get_delta_since)(self.target, seq)
        if delta["type"] == "snapshot" or delta["seq"] > seq:
            self.last_seq = max(self.last_seq, delta["seq"])
            await self._send_or_refer(delta)

    async def _send_or_refer(self, message: dict):
        """Send a snapshot or catch-up delta, or, when its JSON exceeds MAX_SOCKET_BYTES, the
        referral to load the state over HTTP (the client then continues from the referral's seq)."""
        text = await self.encode_json(message)
        # json.dumps escapes non-ASCII characters (ensure_ascii), so characters are bytes here.
        if len(text) <= MAX_SOCKET_BYTES:
            await self.send(text_data=text)
            return
        await self.send_json(
            {
                "type": "error",
                "code": "snapshot_too_large",
                "seq": message["seq"],
                "message": f"GET {self.snapshot_path.format(pk=self.target.pk)}, then connect with ?seq=N",
            }
        )

    async def receive_json(self, content, **kwargs):
        if not await self._still_authorised():
            return
        if not isinstance(content, dict) or content.get("type") != "resume":
            await self.send_json({"type": "error", "message": 'expected {"type": "resume", "seq": N}'})
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

    async def forward_delta(self, message):
        """Send the group message `{"seq": N, "text": ...}` (webapp.web.broadcast) when it is the
        next delta; otherwise (a gap, a seq space with holes, no text) send what the database has
        after the last seq sent."""
        seq = message["seq"]
        if seq <= self.last_seq:
            return
        text = message.get("text")
        if text is not None and seq == self.last_seq + 1:
            self.last_seq = seq
            await self.send(text_data=text)
        else:
            await self._send_since(self.last_seq)
