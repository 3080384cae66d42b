"""The consumer base of every live socket: snapshot + numbered deltas + resume (docs/architecture.md
"Live protocol"; message schemas in swarmscope.protocol_schema)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any, TypeVar
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
log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class EncodedState:
    """A snapshot or catch-up delta as sent: its `type` ("snapshot" or "delta"), `seq` and JSON `text`."""

    type: str
    seq: int
    text: str


class SharedReads:
    """Reads of one Daphne process done once for all its sockets that ask for the same one at about
    the same time: snapshots and catch-up deltas (N viewers joining at once, N viewers filling the
    same gap), rights re-checks (N sockets of one caller on one object). A read in flight is awaited
    by the others ("single flight"), and a finished one is reused for `max_age` seconds by a
    caller for whom it is `usable`.

    Keys name the socket class, the object and the read (`("TraceConsumer", 7, <created_at>,
    "snapshot")`, `(..., "since", 12)`, `(..., "rights", <token>, <user>, <session>)`). A state is
    usable when its seq is at least the one the caller must get (current when asked, or a group
    message's), so a reused state is never older than what a fresh read would have had to
    include. Rights are each socket's own: a state is read only after the socket's check, and a
    check is shared only between sockets of the same caller. One event loop per process, so no
    locking.
    """

    def __init__(self) -> None:
        self._done: dict[tuple, tuple[float, Any]] = {}
        self._pending: dict[tuple, asyncio.Future[Any]] = {}

    async def get(
        self,
        key: tuple,
        read: Callable[[], Awaitable[T]],
        *,
        max_age: float,
        usable: Callable[[T], bool] = lambda _: True,
    ) -> T:
        """The value under `key`: reused, awaited from a read in flight, or `await read()` (whose
        exception, if any, every waiter gets; a cancelled read's waiters read for themselves)."""
        now = time.monotonic()
        done = self._done.get(key)
        if done is not None and now - done[0] <= max_age and usable(done[1]):
            return done[1]
        pending = self._pending.get(key)
        if pending is not None:
            try:
                shared = await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this caller was cancelled, not the read it waited for
            else:
                if usable(shared):
                    return shared
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            value = await read()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waited
            raise
        finally:
            if self._pending.get(key) is future:
                del self._pending[key]
        future.set_result(value)
        self._done = {k: v for k, v in self._done.items() if now - v[0] <= SHARED_MAX_AGE_S}
        self._done[key] = (time.monotonic(), value)
        return value

    def forget(self, key: tuple) -> None:
        """Drop a finished read (a fresh rights check refused: no other socket may reuse the old one)."""
        self._done.pop(key, None)


#: The longest any read stays in SharedReads (entries older are pruned).
SHARED_MAX_AGE_S = 10.0
#: Seconds a finished snapshot or catch-up read stays reusable (a herd of joins or gap fills
#: arrives within this).
SHARED_STATE_S = 1.0
#: The process's SharedReads (Daphne runs one event loop per process).
SHARED_READS = SharedReads()


#: Close code of a socket refused for a cap on open sockets (per user, per project).
TOO_MANY_SOCKETS = 4429


def _cap_refusal(users: int, projects: int) -> str | None:
    """Why `users` open sockets of one user and `projects` on one project (the new one included)
    are over a cap, else None."""
    per_user, per_project = settings.SWARMSCOPE_SOCKETS_PER_USER, settings.SWARMSCOPE_SOCKETS_PER_PROJECT
    if users > per_user:
        return (
            f"too many open sockets: {per_user} for one user (SWARMSCOPE_SOCKETS_PER_USER); close other tabs or clients"
        )
    if projects > per_project:
        return f"too many open sockets: {per_project} on one project (SWARMSCOPE_SOCKETS_PER_PROJECT)"
    return None


class SocketCounts:
    """The open sockets of this Daphne process by user and by project (one event loop: no locks),
    for the caps SWARMSCOPE_SOCKETS_PER_USER and SWARMSCOPE_SOCKETS_PER_PROJECT where the channel
    layer is in memory (one process); with a Redis channel layer, `RedisSocketCounts`."""

    def __init__(self) -> None:
        self.by_user: Counter[int] = Counter()
        self.by_project: Counter[int] = Counter()

    async def claim(self, user_pk: int, project_pk: int, socket_id: str) -> str | None:
        """Count one more socket of this user on this project, or say why that is over a cap."""
        refused = _cap_refusal(self.by_user[user_pk] + 1, self.by_project[project_pk] + 1)
        if refused is None:
            self.by_user[user_pk] += 1
            self.by_project[project_pk] += 1
        return refused

    async def renew(self, user_pk: int, project_pk: int, socket_id: str) -> None:
        """Nothing to renew: the counts die with the process."""

    async def count(self, user_pk: int, project_pk: int) -> tuple[int, int]:
        """(open sockets of the user, on the project)."""
        return self.by_user[user_pk], self.by_project[project_pk]

    async def release(self, user_pk: int, project_pk: int, socket_id: str) -> None:
        for counts, key in ((self.by_user, user_pk), (self.by_project, project_pk)):
            counts[key] -= 1
            if counts[key] <= 0:
                del counts[key]


#: Seconds a socket's entry in RedisSocketCounts lives unless renewed (every third of it, while open):
#: a crashed Daphne's sockets stop counting this long after it died.
SOCKET_COUNT_TTL_S = 60.0


class RedisSocketCounts:
    """The open sockets of every Daphne process of the deployment by user and by project, in the
    channel layer's Redis: a sorted set per user and per project (`<prefix>:user:<pk>`) of socket
    ids scored by when each entry expires (now + SOCKET_COUNT_TTL_S), renewed by the open socket.
    A claim drops expired entries, adds its own and reads both counts in one transaction (MULTI),
    and takes its entries back when over a cap: concurrent claims may both be refused at the cap,
    never both let past it. `prefix` names the deployment (its database), so deployments or test
    workers sharing a Redis do not count each other's sockets."""

    def __init__(self, url: str, prefix: str):
        self.url, self.prefix = url, prefix
        self._clients: dict[int, Any] = {}

    def _client(self):
        """A client of this event loop (redis-py's asyncio clients belong to one loop)."""
        import redis.asyncio  # noqa: PLC0415 - only with a Redis channel layer

        loop = id(asyncio.get_running_loop())
        if loop not in self._clients:
            self._clients = {loop: redis.asyncio.Redis.from_url(self.url)}
        return self._clients[loop]

    def _keys(self, user_pk: int, project_pk: int) -> tuple[str, str]:
        return f"{self.prefix}:user:{user_pk}", f"{self.prefix}:project:{project_pk}"

    async def claim(self, user_pk: int, project_pk: int, socket_id: str) -> str | None:
        keys, now = self._keys(user_pk, project_pk), time.time()
        async with self._client().pipeline(transaction=True) as pipe:
            for key in keys:
                pipe.zremrangebyscore(key, "-inf", now)
                pipe.zadd(key, {socket_id: now + SOCKET_COUNT_TTL_S})
                pipe.zcard(key)
                pipe.expire(key, int(SOCKET_COUNT_TTL_S) + 1)
            answers = await pipe.execute()
        refused = _cap_refusal(answers[2], answers[6])
        if refused is not None:
            await self.release(user_pk, project_pk, socket_id)
        return refused

    async def renew(self, user_pk: int, project_pk: int, socket_id: str) -> None:
        until = time.time() + SOCKET_COUNT_TTL_S
        async with self._client().pipeline(transaction=True) as pipe:
            for key in self._keys(user_pk, project_pk):
                pipe.zadd(key, {socket_id: until}, xx=True)
                pipe.expire(key, int(SOCKET_COUNT_TTL_S) + 1)
            await pipe.execute()

    async def release(self, user_pk: int, project_pk: int, socket_id: str) -> None:
        async with self._client().pipeline(transaction=True) as pipe:
            for key in self._keys(user_pk, project_pk):
                pipe.zrem(key, socket_id)
            await pipe.execute()

    async def count(self, user_pk: int, project_pk: int) -> tuple[int, int]:
        """(open sockets of the user, on the project), unexpired."""
        now = time.time()
        client = self._client()
        return tuple([await client.zcount(key, now, "+inf") for key in self._keys(user_pk, project_pk)])


#: The process's open socket counts (an in-memory channel layer: one process).
SOCKET_COUNTS = SocketCounts()
_REDIS_COUNTS: dict[tuple[str, str], RedisSocketCounts] = {}


def socket_counts() -> SocketCounts | RedisSocketCounts:
    """Where open sockets are counted: in the channel layer's Redis (every process of the
    deployment), else in this process."""
    from django.db import connection  # noqa: PLC0415

    layer = settings.CHANNEL_LAYERS["default"]
    if not layer["BACKEND"].startswith("channels_redis"):
        return SOCKET_COUNTS
    host = layer["CONFIG"]["hosts"][0]
    url = host["address"] if isinstance(host, dict) else host
    key = (str(url), f"swarmscope:sockets:{connection.settings_dict['NAME']}")
    if key not in _REDIS_COUNTS:
        _REDIS_COUNTS[key] = RedisSocketCounts(*key)
    return _REDIS_COUNTS[key]


def _reaches(seq: int) -> Callable[[EncodedState], bool]:
    return lambda state: state.seq >= seq


class SequencedConsumer(AsyncJsonWebsocketConsumer):
    """The snapshot + numbered deltas + resume protocol for one object (`/ws/traces/`, `/ws/runs/`,
    `/ws/projects/`).

    Subclasses name the URL keyword (`url_kwarg`), the HTTP path of the state (`snapshot_path`,
    formatted with `pk`), and implement `get_authorised(pk)` (the object, with `pk` and its current
    `seq`, if the caller, `self.user` / `self.token`, may read it, else None; sync),
    `get_snapshot(obj)` and `get_delta_since(obj, seq)` (sync; a delta, or a snapshot when `seq`
    cannot be answered with one), and `group_for(obj)`. A group message `{"seq": N, "text": "<delta
    as JSON>"}` handled by `forward_delta` is sent as is when it is the next one; a gap (or a
    message without text) is filled from the database. A subclass with `share_reads` reads its
    snapshots and gap fills once for the process's sockets asking at once (SharedReads), and a
    socket of it that lags over COALESCE_AFTER_S behind the broadcasts catches up in one delta
    from the database instead of forwarding each. Snapshots and catch-up deltas over
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
    #: Whether snapshots and gap fills go through SHARED_READS (a subclass whose state is the same
    #: for every reader allowed to see it, and whose `get_authorised` returns the current `seq`).
    share_reads = False
    #: With `share_reads`: seconds a delta may have waited since its broadcast (the group
    #: message's `at`) before this socket counts as lagging and catches up from the database in
    #: one delta (coalescing what it has not sent yet) instead of forwarding each.
    COALESCE_AFTER_S = 0.5
    #: Until when (monotonic) coalescing is off after a catch-up was too big for one message.
    coalesce_paused_until = 0.0
    #: (user pk, project pk) this socket counts as in SOCKET_COUNTS while open, else None.
    counted: tuple[int, int, str] | None = None
    #: Resume requests this socket may still make now (a bucket of RESUME_BURST, refilled at
    #: SWARMSCOPE_SOCKET_RESUMES_PER_MINUTE), and when it was last refilled (monotonic).
    RESUME_BURST = 5
    resume_allowance: float | None = None
    resume_refilled_at = 0.0

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
        counted = (self.user.pk, getattr(self.target, "project_id", self.target.pk), self.channel_name)
        counts = socket_counts()
        refused = await counts.claim(*counted)
        if refused is not None:
            await self.accept()
            await self._refuse(TOO_MANY_SOCKETS, refused)
            return
        self.counted, self.counts = counted, counts
        self._renewal = asyncio.ensure_future(self._renew_count())
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

    def _rights_key(self) -> tuple:
        """What `_check`'s answer depends on: the object, the token or the user, the session."""
        token = None if self.token is None else self.token.pk
        return self._read_key("rights", token, self.user.pk, self.session_key)

    def _timed_check(self) -> tuple[float, tuple[int, str] | None]:
        return time.monotonic(), self._check()

    async def _still_authorised(self, shared: bool = False) -> bool:
        """Re-check now; on refusal close the socket (False). `shared` (the periodic check before a
        delivery): a check of the same caller on the same object by another socket of this process
        under RECHECK_S old counts as this socket's (SharedReads); a refusal is never reused past
        the socket that saw it, and a fresh refusal drops the shared answer."""
        if self.closing:
            return False
        if shared:
            self.checked_at, refusal = await SHARED_READS.get(
                self._rights_key(), database_sync_to_async(self._timed_check), max_age=self.RECHECK_S
            )
        else:
            refusal = await database_sync_to_async(self._check)()
        if refusal is not None:
            SHARED_READS.forget(self._rights_key())
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
            and not await self._still_authorised(shared=True)
        ):
            return
        await super().dispatch(message)

    async def access_changed(self, message):
        """A revocation committed for this socket's user or token (webapp.accounts.revocation)."""
        await self._still_authorised()

    def _query(self, name: str) -> str | None:
        return parse_qs(self.scope.get("query_string", b"").decode()).get(name, [None])[0]

    async def disconnect(self, code):
        if self.counted is not None:
            self._renewal.cancel()
            counted, self.counted = self.counted, None
            await self.counts.release(*counted)
        await self._leave()

    async def _renew_count(self) -> None:
        """Keep this socket counted (RedisSocketCounts) while it is open: every third of the TTL."""
        while self.counted is not None:
            await asyncio.sleep(SOCKET_COUNT_TTL_S / 3)
            if self.counted is not None:
                try:
                    await self.counts.renew(*self.counted)
                except Exception:  # noqa: BLE001 - Redis unreachable: the next renewal tries again
                    log.warning("could not renew the count of socket %s", self.counted[2], exc_info=True)

    def _read_key(self, *read) -> tuple:
        """The SharedReads key of `read` on this socket's object; its `created_at`, where it has
        one, tells apart a deleted object from a new one given its pk (SQLite reuses the last id)."""
        return (type(self).__qualname__, self.target.pk, getattr(self.target, "created_at", None), *read)

    def _current_seq(self) -> int | None:
        """The object's seq now, re-read with the caller's rights (sync); None when gone."""
        target = self.get_authorised(self.target.pk)
        return None if target is None else target.seq

    async def _read_snapshot(self) -> EncodedState:
        snapshot = await database_sync_to_async(self.get_snapshot)(self.target)
        return EncodedState("snapshot", snapshot["seq"], await self.encode_json(snapshot))

    async def _read_since(self, seq: int) -> EncodedState:
        delta = await database_sync_to_async(self.get_delta_since)(self.target, seq)
        return EncodedState(delta["type"], delta["seq"], await self.encode_json(delta))

    async def _send_snapshot(self):
        at_least = await database_sync_to_async(self._current_seq)() if self.share_reads else None
        if at_least is None:
            state = await self._read_snapshot()
        else:
            state = await SHARED_READS.get(
                self._read_key("snapshot"), self._read_snapshot, max_age=SHARED_STATE_S, usable=_reaches(at_least)
            )
        self.last_seq = state.seq
        await self._send_state(state)

    async def _send_since(self, seq: int, at_least: int | None = None):
        """Send what was written after `seq` (one delta, or a snapshot after a rebuild), if anything.
        `at_least`: a group message's seq the answer must reach; given (a gap fill), the read is
        shared with the process's other sockets filling the same gap (SHARED_READS)."""
        if self.share_reads and at_least is not None:
            state = await SHARED_READS.get(
                self._read_key("since", seq),
                lambda: self._read_since(seq),
                max_age=SHARED_STATE_S,
                usable=_reaches(at_least),
            )
        else:
            state = await self._read_since(seq)
        if state.type == "snapshot" or state.seq > seq:
            self.last_seq = max(self.last_seq, state.seq)
            await self._send_state(state)

    async def _send_state(self, state: EncodedState):
        """Send a snapshot or catch-up delta, or, when its JSON exceeds MAX_SOCKET_BYTES, the
        referral to load the state over HTTP (the client then continues from the referral's seq)."""
        # json.dumps escapes non-ASCII characters (ensure_ascii), so characters are bytes here.
        if len(state.text) <= MAX_SOCKET_BYTES:
            await self.send(text_data=state.text)
            return
        await self.send_json(
            {
                "type": "error",
                "code": "snapshot_too_large",
                "seq": state.seq,
                "message": f"GET {self.snapshot_path.format(pk=self.target.pk)}, then connect with ?seq=N",
            }
        )

    async def receive_json(self, content, **kwargs):
        if not await self._still_authorised():
            return
        if not isinstance(content, dict) or content.get("type") != "resume":
            await self.send_json({"type": "error", "message": 'expected {"type": "resume", "seq": N}'})
            return
        wait = self._resume_wait()
        if wait is not None:
            await self.send_json({"type": "error", "message": wait})
            return
        seq = content.get("seq")
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0 or seq > self.last_seq:
            await self._send_snapshot()
            return
        await self._send_since(seq)

    def _resume_wait(self) -> str | None:
        """Take one resume from this socket's allowance; why not (naming the limit and when to
        retry) when it is spent: each resume reads the database, and one socket must not slow
        every other socket's deliveries."""
        rate = settings.SWARMSCOPE_SOCKET_RESUMES_PER_MINUTE / 60.0
        now = time.monotonic()
        if self.resume_allowance is None:
            self.resume_allowance = float(self.RESUME_BURST)
        else:
            self.resume_allowance = min(
                float(self.RESUME_BURST), self.resume_allowance + (now - self.resume_refilled_at) * rate
            )
        self.resume_refilled_at = now
        if self.resume_allowance >= 1.0:
            self.resume_allowance -= 1.0
            return None
        retry = (1.0 - self.resume_allowance) / rate if rate > 0 else 60.0
        return (
            f"resume refused: over {settings.SWARMSCOPE_SOCKET_RESUMES_PER_MINUTE} resume requests a minute on one"
            f" socket (SWARMSCOPE_SOCKET_RESUMES_PER_MINUTE); retry in {retry:.1f} s"
        )

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        try:
            await super().receive(text_data=text_data, bytes_data=bytes_data, **kwargs)
        except (ValueError, RecursionError):
            await self.send_json({"type": "error", "message": "messages must be JSON (not nested too deeply)"})

    async def forward_delta(self, message):
        """Send the group message `{"seq": N, "text": ..., "at": <broadcast time.time()>}`
        (webapp.web.broadcast) when it is the next delta; otherwise (a gap, a seq space with holes,
        no text) send what the database has after the last seq sent. With `share_reads`, a socket
        whose next delta waited over COALESCE_AFTER_S catches up in one delta from the database
        (shared with the process's other lagging sockets; later deltas it already covers are then
        dropped here), unless that delta is too big for a message: then it forwards one by one."""
        seq = message["seq"]
        if seq <= self.last_seq:
            return
        text = message.get("text")
        if text is None or seq != self.last_seq + 1:
            await self._send_since(self.last_seq, at_least=seq)
            return
        if self._lagging(message) and await self._catch_up(seq):
            return
        self.last_seq = seq
        await self.send(text_data=text)

    def _lagging(self, message) -> bool:
        if not self.share_reads or "at" not in message or time.monotonic() < self.coalesce_paused_until:
            return False
        return time.time() - message["at"] > self.COALESCE_AFTER_S

    async def _catch_up(self, seq: int) -> bool:
        """One delta of everything after the last seq sent, reaching at least `seq`, sent if it
        fits a message (True); else coalescing pauses for SHARED_STATE_S (False)."""
        since = self.last_seq
        state = await SHARED_READS.get(
            self._read_key("since", since),
            lambda: self._read_since(since),
            max_age=SHARED_STATE_S,
            usable=_reaches(seq),
        )
        if len(state.text) > MAX_SOCKET_BYTES:
            self.coalesce_paused_until = time.monotonic() + SHARED_STATE_S
            return False
        self.last_seq = max(self.last_seq, state.seq)
        await self.send(text_data=state.text)
        return True
