"""HTML pages: trace list, trace page, compare, upload, deleting a trace (project admins).

Members read; uploading and the trace page's write controls (counterfactuals, attributions, job
cancel) need the reviewer or admin role: `can_write` in the context, READ_ONLY_HINT as tooltip."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from webapp.accounts.datacare import list_dependants
from webapp.accounts.services import (
    READ_ONLY_HINT,
    WRITE_ROLE,
    PermissionRefused,
    get_role,
    has_role,
)
from webapp.accounts.views import require_admin
from webapp.web.api import get_write_project

from . import access, datacare, ingest, samples, services
from .api import upload_sources
from .models import Trace

PAGE_SIZE = 50


def _trace_or_404(request: HttpRequest, trace_id: int):
    trace = access.get_trace_for(trace_id, user=request.user)
    if trace is None:
        raise Http404("no such trace")
    return trace


def _trace_urls(trace) -> dict[str, str]:
    return {
        "ws_url": f"/ws/traces/{trace.pk}/",
        "snapshot_url": reverse("api-trace-snapshot", args=[trace.pk]),
        "export_native_url": reverse("api-trace-export", args=[trace.pk]) + "?format=native",
        "export_survey_url": reverse("api-trace-export", args=[trace.pk]) + "?format=survey",
        "export_otlp_url": reverse("api-trace-export-otlp", args=[trace.pk]),
    }


@login_required
def trace_list(request: HttpRequest):
    query = request.GET.get("q", "").strip()
    session = request.GET.get("session", "").strip()
    qs = services.list_traces(access.project_ids_for(request.user), query=query, session=session)
    page = Paginator(qs, PAGE_SIZE).get_page(request.GET.get("page") or 1)
    context = {"page": page, "query": query, "session": session}
    if not page.paginator.count and not (query or session):  # the empty state offers the sample data
        context.update(can_load_samples=samples.can_load_samples(request.user), load_refused=samples.LOAD_REFUSED)
    return render(request, "traces/trace_list.html", context)


@login_required
def session_detail(request: HttpRequest, session_id: str):
    """The traces of one session (a conversation, a Claude Code session, a Codex thread), in order."""
    traces = services.session_traces(access.project_ids_for(request.user), session_id)
    if not traces:
        raise Http404("no such session")
    totals = {
        "events": sum(t.event_count for t in traces),
        "tokens": sum(t.total_tokens for t in traces),
        "duration_s": sum(t.duration_s for t in traces),
    }
    return render(
        request,
        "traces/session.html",
        {"session_id": session_id, "traces": traces, "totals": totals, "limit": services.MAX_SESSION_TRACES},
    )


@login_required
def trace_detail(request: HttpRequest, trace_id: int):
    trace = _trace_or_404(request, trace_id)
    return render(
        request,
        "traces/trace_detail.html",
        {
            "trace": trace,
            **_trace_urls(trace),
            "rollout_backends_json": json.dumps(sorted(settings.SWARMSCOPE_ROLLOUT_BACKENDS)),
            "can_write": has_role(request.user, trace.project_id, WRITE_ROLE),
            "read_only_hint": READ_ONLY_HINT,
        },
    )


@login_required
def trace_compare(request: HttpRequest):
    try:
        left, right = (_trace_or_404(request, int(request.GET[k])) for k in ("left", "right"))
    except (KeyError, ValueError):
        raise Http404("compare needs ?left=<trace id>&right=<trace id>") from None
    return render(
        request,
        "traces/compare.html",
        {
            "left": left,
            "right": right,
            "left_snapshot_url": _trace_urls(left)["snapshot_url"],
            "right_snapshot_url": _trace_urls(right)["snapshot_url"],
        },
    )


@login_required
def upload(request: HttpRequest):
    """GET: the form (disabled, with a notice, for a viewer). POST: import the files into the first
    project where the user may write; the 403 page for a viewer, 404 for a user of no project."""
    outcomes, nothing_chosen = None, False
    if request.method == "POST":
        project = get_write_project(request, "uploading traces")  # raises PermissionRefused (403) for a viewer
        if project is None:
            raise Http404("you are not a member of any project")
        if request.FILES:
            outcomes = ingest.do_import_sources(project, upload_sources(request))
        else:
            nothing_chosen = True
    try:
        can_write = get_write_project(request, "uploading traces") is not None
    except PermissionRefused:
        can_write = False
    return render(
        request,
        "traces/upload.html",
        {
            "outcomes": outcomes,
            "nothing_chosen": nothing_chosen,
            "can_write": can_write,
            "read_only_hint": READ_ONLY_HINT,
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def trace_delete(request: HttpRequest, trace_id: int):
    """Confirm page listing what goes with the trace; POST deletes it (project admins)."""
    trace = Trace.objects.filter(pk=trace_id).first()
    role = get_role(request.user, trace.project_id) if trace else None
    if trace is None or role is None:
        raise Http404("no such trace")
    require_admin(role)
    if request.method == "POST":
        name = str(trace)
        datacare.do_delete_trace(trace)
        messages.info(request, f"Trace {name} was deleted.")
        return redirect("trace-list")
    return render(
        request,
        "accounts/confirm_delete.html",
        {
            "object": trace,
            "kind": "trace",
            "dependants": list_dependants(trace),
            "cancel_url": reverse("trace-detail", args=[trace.pk]),
        },
    )
