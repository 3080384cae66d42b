"""The project's review page (agreement between reviewers, Cohen's kappa, and against the dataset's
own label; the activity feed) and the user's notifications page (@mentions, mark read)."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from webapp.accounts.models import Project
from webapp.accounts.services import get_role
from webapp.traces import access
from webapp.web.validation import InputError, query_int

from . import feed, services
from .models import TraceReview

FEED_PAGE = 50
#: What each verb reads as; static/js/lib/activity_feed.js says the same for live items.
VERB_TEXT = {
    "commented": "commented",
    "edited": "edited a comment",
    "deleted": "deleted a comment",
    "voted": "voted",
    "set_status": "set the review status",
    "labelled": "labelled the mistake",
}

#: What each review status reads as (the model's labels); static/js/lib/activity_feed.js STATUS_TEXT says the same.
STATUS_TEXT = dict(TraceReview.Status.choices)


def _verb_text(activity) -> str:
    if activity.verb == "voted" and activity.data.get("value") is None:
        return "withdrew a vote"
    return VERB_TEXT.get(activity.verb, activity.verb)


@login_required
def project_review(request: HttpRequest, project_id: int):
    """GET: kappa per reviewer pair (agent and step) and the newest activity (`?before=<id>` pages
    back); the newest page's activity is live over `/ws/projects/<id>/`."""
    project = Project.objects.filter(pk=project_id).first() if get_role(request.user, project_id) else None
    if project is None:
        raise Http404("no such project")
    try:
        before = query_int(request.GET, "before", low=1)
    except InputError:
        before = None  # a bad page link shows the newest
    newest = feed.last_activity_id(project.pk)  # before the page's rows: one arriving meanwhile shows once
    activities = feed.list_activity(project.pk, before=before, limit=FEED_PAGE)
    # the newest page follows the project's socket (static/js/pages/activity_feed.js); older pages stay
    live = [{"project": project.pk, "name": project.name, "seq": newest}] if before is None else []
    return render(
        request,
        "review/project_review.html",
        {
            "project": project,
            "agreement": services.get_agreement(project.pk),
            "activities": [
                {
                    **feed.activity_wire(a),
                    "verb_text": _verb_text(a),
                    "status_text": STATUS_TEXT.get(a.data.get("status"), a.data.get("status")),
                    "created": a.created_at,
                }
                for a in activities
            ],
            "older": activities[-1].pk if len(activities) == FEED_PAGE else None,
            "live_projects": json.dumps(live) if live else "",
            "feed_page": FEED_PAGE,
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def notifications(request: HttpRequest):
    """GET: the user's notifications, newest first (`?before=<id>` pages back), each linking to the
    comment's trace, event or attribution. POST `id=<n>` marks one read (and opens it when `open`
    is set), no id marks all read."""
    project_ids = list(access.project_ids_for(request.user))
    if request.method == "POST":
        try:
            one = query_int(request.POST, "id", low=1)
        except InputError:
            one = None
        services.do_mark_read(request.user, project_ids, [one] if one else None)
        opened = services.get_notification(request.user, project_ids, one) if one and "open" in request.POST else None
        return redirect(services.notification_wire(opened)["link"] if opened else "notifications")
    try:
        before = query_int(request.GET, "before", low=1)
    except InputError:
        before = None
    rows = services.list_notifications(request.user, project_ids, before=before, limit=FEED_PAGE)
    return render(
        request,
        "review/notifications.html",
        {
            "notifications": [{**services.notification_wire(n), "created": n.created_at} for n in rows],
            "unread": services.count_unread(request.user, project_ids),
            "older": rows[-1].pk if len(rows) == FEED_PAGE else None,
            "mail": services.mail_configured(),
        },
    )
