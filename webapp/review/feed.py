"""The review activity feed of a project, and links to review targets: what the websocket
consumer needs, without the rest of the review (which depends on webapp.counterfactuals)."""

from __future__ import annotations

from typing import Any

from django.urls import NoReverseMatch, reverse

from .models import Activity, TargetKind


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

def list_activity(project_id: int, *, before: int | None = None, after: int | None = None,
                  limit: int = 50) -> list[Activity]:
    """The feed, newest first (`before`: older than that id) or, with `after`, what came later
    (oldest first: what a reconnecting client missed)."""
    qs = Activity.objects.filter(project_id=project_id).select_related("actor").prefetch_related("mentions")
    if after is not None:
        return list(qs.filter(pk__gt=after).order_by("id")[:limit])
    if before is not None:
        qs = qs.filter(pk__lt=before)
    return list(qs.order_by("-id")[:limit])
