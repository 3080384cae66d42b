"""The project's review page: agreement between reviewers (Cohen's kappa) and the activity feed."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest
from django.shortcuts import render

from webapp.accounts.models import Project
from webapp.accounts.services import get_role
from webapp.web.validation import InputError, query_int

from . import feed, services

FEED_PAGE = 50
VERB_TEXT = {
    "commented": "commented",
    "edited": "edited a comment",
    "deleted": "deleted a comment",
    "voted": "voted",
    "set_status": "set the review status",
    "labelled": "labelled the mistake",
}


@login_required
def project_review(request: HttpRequest, project_id: int):
    """GET: kappa per reviewer pair (agent and step) and the newest activity (`?before=<id>` pages back)."""
    project = Project.objects.filter(pk=project_id).first() if get_role(request.user, project_id) else None
    if project is None:
        raise Http404("no such project")
    try:
        before = query_int(request.GET, "before", low=1)
    except InputError:
        before = None  # a bad page link shows the newest
    activities = feed.list_activity(project.pk, before=before, limit=FEED_PAGE)
    return render(
        request,
        "review/project_review.html",
        {
            "project": project,
            "agreement": services.get_agreement(project.pk),
            "activities": [{**feed.activity_wire(a), "verb_text": VERB_TEXT.get(a.verb, a.verb)} for a in activities],
            "older": activities[-1].pk if len(activities) == FEED_PAGE else None,
        },
    )
