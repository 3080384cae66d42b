"""The review activity feed of a project, and links to review targets: what the websocket
consumer needs, without the rest of the review (which depends on webapp.counterfactuals).

The feed's live protocol (`/ws/projects/<id>/`, docs/architecture.md "Live protocol"): its seq is
the id of the project's latest Activity row (ids only grow, so "everything after N" is a filter;
a project's seqs have holes where other projects' activities took ids).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.urls import NoReverseMatch, reverse

from .models import Activity, Notification, TargetKind

#: Activities in a snapshot: the most recent ones (older ones are read over HTTP, `before=`).
SNAPSHOT_ACTIVITIES = 50
#: A resume that missed more activities than this is answered with a snapshot.
MAX_RESUME = 200


def target_link(kind: str, target_id: str, trace_id: int | None) -> str:
    """A shareable link that opens the target: the trace page with the event or attribution
    selected (`?event=` / `?attribution=`), or the run page."""
    if trace_id is not None:
        url = reverse("trace-detail", args=[trace_id])
        if kind == TargetKind.EVENT:
            return f"{url}?event={target_id}"
        if kind == TargetKind.ATTRIBUTION:
            return f"{url}?attribution={target_id}"
        return url
    try:
        return reverse("run-detail", args=[int(target_id)])
    except (NoReverseMatch, ValueError):
        return f"/runs/{target_id}/"


def iso(value) -> str | None:
    return value.isoformat() if value else None


def activity_wire(activity: Activity) -> dict[str, Any]:
    return {
        "id": activity.pk,
        "project": activity.project_id,
        "verb": activity.verb,
        "actor": activity.actor.username if activity.actor else None,
        "target": {"kind": activity.target_kind, "id": activity.target_id, "trace": activity.trace_id},
        "data": activity.data,
        "mentions": [u.username for u in activity.mentions.all()],
        "created_at": iso(activity.created_at),
        "link": target_link(activity.target_kind, activity.target_id, activity.trace_id),
    }


# --- activity ------------------------------------------------------------------------------------


def list_activity(
    project_id: int, *, before: int | None = None, after: int | None = None, limit: int = 50
) -> list[Activity]:
    """The feed, newest first (`before`: older than that id) or, with `after`, what came later
    (oldest first: what a reconnecting client missed)."""
    qs = Activity.objects.filter(project_id=project_id).select_related("actor").prefetch_related("mentions")
    if after is not None:
        return list(qs.filter(pk__gt=after).order_by("id")[:limit])
    if before is not None:
        qs = qs.filter(pk__lt=before)
    return list(qs.order_by("-id")[:limit])


# --- live protocol -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectFeed:
    """The object of a `/ws/projects/<id>/` connection: the project's id and its feed's seq."""

    pk: int
    seq: int


def last_activity_id(project_id: int) -> int:
    """The id of the project's latest activity (its feed's seq); 0 without any."""
    return Activity.objects.filter(project_id=project_id).order_by("-id").values_list("id", flat=True).first() or 0


def get_snapshot(project_id: int) -> dict[str, Any]:
    """`{"type": "snapshot", "seq": N, "project": id, "activities": [...]}`: the SNAPSHOT_ACTIVITIES
    most recent activities (activity_wire), oldest first; N is the latest one's id (0 without any)."""
    activities = list_activity(project_id, limit=SNAPSHOT_ACTIVITIES)[::-1]
    return {
        "type": "snapshot",
        "seq": activities[-1].pk if activities else 0,
        "project": project_id,
        "activities": [activity_wire(a) for a in activities],
    }


def get_delta_since(project_id: int, seq: int) -> dict[str, Any]:
    """`{"type": "delta", "seq": N, "project": id, "activities": [...]}`: the activities after `seq`,
    oldest first, N the latest one's id (`seq` when there is none); a snapshot past MAX_RESUME."""
    activities = list_activity(project_id, after=seq, limit=MAX_RESUME + 1)
    if len(activities) > MAX_RESUME:
        return get_snapshot(project_id)
    return {
        "type": "delta",
        "seq": activities[-1].pk if activities else seq,
        "project": project_id,
        "activities": [activity_wire(a) for a in activities],
    }


# --- a user's notifications, live (`/ws/users/<id>/notifications/`) --------------------------------

#: Notifications a delta lists at most (the bell needs the count; the list is for a toast or a menu).
MAX_NOTIFICATIONS_DELTA = 20


@dataclass(frozen=True)
class NotificationFeed:
    """The object of a `/ws/users/<id>/notifications/` connection: the user's id, the projects
    whose notifications they may read, and the seq (the id of their latest notification in them).
    `project_id` is -id: the socket counts against no project's cap (webapp.web.sockets.SocketCounts)."""

    pk: int
    project_ids: tuple[int, ...]
    seq: int

    @property
    def project_id(self) -> int:
        return -self.pk


def _notifications(user_id: int, project_ids) -> Any:
    return Notification.objects.filter(user_id=user_id, project_id__in=list(project_ids))


def notification_feed(user_id: int, project_ids) -> NotificationFeed:
    ids = tuple(sorted(project_ids))
    seq = _notifications(user_id, ids).order_by("-id").values_list("id", flat=True).first() or 0
    return NotificationFeed(pk=user_id, project_ids=ids, seq=seq)


def get_notification_snapshot(feed: NotificationFeed) -> dict[str, Any]:
    """`{"type": "snapshot", "seq": N, "user": id, "unread": n}`: n unread @mentions (what the
    header's bell shows), N the id of the user's latest notification (0 without any)."""
    now = notification_feed(feed.pk, feed.project_ids)
    unread = _notifications(feed.pk, feed.project_ids).filter(read_at__isnull=True).count()
    return {"type": "snapshot", "seq": now.seq, "user": feed.pk, "unread": unread}


def get_notification_delta_since(feed: NotificationFeed, seq: int) -> dict[str, Any]:
    """`{"type": "delta", "seq": N, "user": id, "unread": n, "notifications": [{id, project,
    actor, comment, link}]}`: the count now and the (at most MAX_NOTIFICATIONS_DELTA newest)
    notifications after `seq`, oldest first; N the latest one's id (`seq` when there is none)."""
    rows = list(
        _notifications(feed.pk, feed.project_ids)
        .filter(pk__gt=seq)
        .select_related("comment__author")
        .order_by("-id")[:MAX_NOTIFICATIONS_DELTA]
    )[::-1]
    unread = _notifications(feed.pk, feed.project_ids).filter(read_at__isnull=True).count()
    return {
        "type": "delta",
        "seq": rows[-1].pk if rows else seq,
        "user": feed.pk,
        "unread": unread,
        "notifications": [
            {
                "id": n.pk,
                "project": n.project_id,
                "actor": n.comment.author.username,
                "comment": n.comment_id,
                "link": target_link(n.comment.target_kind, n.comment.target_id, n.comment.trace_id),
            }
            for n in rows
        ],
    }
