"""HTML pages: trace list, trace page, compare, upload, deleting a trace (project admins).

Members read; uploading and the trace page's write controls (counterfactuals, attributions, job
cancel) need the reviewer or admin role: `can_write` in the context, READ_ONLY_HINT as tooltip."""

from __future__ import annotations

import json
from dataclasses import replace

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from swarmscope.importers.scores import reward_score_name
from swarmscope.inputs import id_or_none
from webapp.accounts.datacare import list_dependants
from webapp.accounts.ratelimit import check_ingest_rate
from webapp.accounts.services import (
    READ_ONLY_HINT,
    WRITE_ROLE,
    get_role,
    has_role,
    list_projects_of,
)
from webapp.accounts.views import require_admin
from webapp.web.api import check_write, get_write_project, writable_projects
from webapp.web.validation import InputError, parse_int

from . import access, datacare, facets, ingest, samples, search, services
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


#: The trace list's columns: (sort key or "", heading, CSS classes). "secondary" columns wrap or
#: fold away on narrow screens (static/css/trace_list.css).
LIST_COLUMNS = (
    ("name", "Name", "col-name"),
    ("", "System", "secondary"),
    ("", "Format", "secondary"),
    ("agents", "Agents", "num"),
    ("events", "Events", "num"),
    ("tokens", "Tokens", "num secondary"),
    ("duration", "Duration", "num"),
    ("reward", "Reward", "num"),
    ("", "Labels", "labels secondary"),
    ("created", "Created", "col-created"),
)
#: At most this many projects' lists are watched live by one page.
MAX_LIVE_PROJECTS = 20


def _sort_columns(filters: services.ListFilters) -> list[dict]:
    columns = []
    for key, heading, classes in LIST_COLUMNS:
        column = {"key": key, "heading": heading, "classes": classes, "aria_sort": "", "href": ""}
        if key:
            current = filters.sort.lstrip("-") == key
            descending = filters.sort.startswith("-")
            # a first click sorts numbers and dates high to low, names A to Z
            first = key if key == "name" else "-" + key
            target = (key if descending else "-" + key) if current else first
            column["href"] = "?" + replace(filters, sort=target).urlencode()
            if current:
                column["aria_sort"] = "descending" if descending else "ascending"
        columns.append(column)
    return columns


#: Filter parameters without a field of their own in the list's form (their problems go above the list).
OTHER_FILTER_PARAMS = ("label", "errors", "outcome", "kind", "sort")


def _problems_by_field(problems: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """ListFilters.problems as parameter -> its messages joined, for the field that shows them."""
    joined: dict[str, list[str]] = {}
    for name, text in problems:
        joined.setdefault(name, []).append(text)
    return {name: "; ".join(texts) for name, texts in joined.items()}


@login_required
def trace_list(request: HttpRequest):
    """The trace list: facets, sortable columns and paging, every one a query parameter
    (services.ListFilters); derived traces (branches, episodes) hidden unless a `kind` asks for
    them, counted as chips on their parents' rows; live over `/ws/projects/<id>/traces/`."""
    wrong = next((v for v in request.GET.getlist("project") if v.strip() and id_or_none(v) is None), None)
    if wrong is not None:  # a project filter must name a project: other malformed filters are dropped
        reason = f"project: {wrong[:40]!r} is not a project id"
        return render(request, "400.html", {"reason": reason}, status=400)
    filters = services.ListFilters.from_query(request.GET)
    project_ids = list(access.project_ids_for(request.user))
    qs = services.list_traces(project_ids, filters=filters)
    counts = facets.facet_counts(project_ids, filters)
    paginator = Paginator(qs, PAGE_SIZE)
    paginator.count = counts.total  # the facets' cube counted the list already (a cached_property)
    page = paginator.get_page(request.GET.get("page") or 1)
    traces = list(page.object_list)
    derived = services.derived_counts(traces)
    hits = search.get_search_hits([t.pk for t in traces], filters.query) if filters.query else {}
    for trace in traces:
        trace.search_hit = hits.get(trace.pk)
        trace.derived = derived.get(trace.pk, {})
        trace.live = services.is_live(trace)
        trace.live_for_s = services.list_row(trace)["live_for_s"] if trace.live else 0
        origin, _, pk = trace.derived_from.partition(":")
        trace.parent_trace_id = id_or_none(pk) if origin == "trace" else None
        trace.derived_run_id = id_or_none(pk) if origin == "run" else None
    facet_values = services.list_facets(project_ids, filters, counts)
    hidden = [f for f in facet_values["kinds"] if not f["shown"] and f["count"]]
    live_projects = project_ids[:MAX_LIVE_PROJECTS]
    client_filters = {
        "kinds": list(filters.shown_kinds),
        "formats": list(filters.formats),
        "systems": list(filters.systems),
        "projects": list(filters.projects),
        "session": filters.session,
        "derived_from": filters.derived_from,
        "label": filters.label,
        "outcome": filters.outcome,
        "query": filters.query,
        "server_only": bool(
            filters.models
            or filters.errors
            or filters.after
            or filters.before
            or any(getattr(filters, name) for name in services.RANGE_PARAMS)
        ),
    }
    context = {
        "page": page,
        "traces": traces,
        "filters": filters,
        "filter_query": filters.urlencode(),
        "query": filters.query,
        "session": filters.session,
        "facets": facet_values,
        "hidden_kinds": hidden,
        "columns": _sort_columns(filters),
        "live_config": {
            "sockets": [
                {"project": p, "url": f"/ws/projects/{p}/traces/", "seq": services.list_seq(p)} for p in live_projects
            ],
            "filters": client_filters,
            "insertable": page.number == 1 and filters.sort == services.DEFAULT_SORT,
            "live_window_s": services.LIVE_WINDOW_S,
        },
        "clear_session_query": replace(filters, session="").urlencode(),
        "range_names": ("after", "before", *services.RANGE_PARAMS, "page"),
        # What could not be applied: beside its field (ranges) or above the list (the others).
        "problems": _problems_by_field(filters.problems),
        "other_problems": [text for name, text in filters.problems if name in OTHER_FILTER_PARAMS],
    }
    if not page.paginator.count and not filters.active:  # the empty state offers the sample data
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
        "tokens": sum(t.total_tokens or 0 for t in traces),
        "estimated_tokens": sum(t.estimated_tokens for t in traces),
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
    """`?left=<trace id>&right=<trace id>`: two traces side by side. Either one missing: 400 with the
    usage line naming it (as /runs/compare/ answers too few runs); an id that is not one of the
    user's traces (or not an id): 404, as for an unknown trace."""
    missing = [k for k in ("left", "right") if not request.GET.get(k, "").strip()]
    if missing:
        return render(request, "traces/compare.html", {"missing": " and ".join(missing)}, status=400)
    try:
        left, right = (_trace_or_404(request, parse_int(request.GET.get(k), field=k, low=1)) for k in ("left", "right"))
    except InputError:
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
    """GET: the form, its Project preselected (`?project=<id>`, else the first project, by name,
    where the user may write; disabled, with a notice, for a viewer). POST: import the files into
    the chosen project (`project`; without one, that first project), the score named by
    `reward_score` (else the project's setting) as each trace's reward, the report noting a reward
    score that no imported trace has (`ingest.check_reward_score`); the 403 page for a project
    where the user only reads or a viewer everywhere, 404 for a user of no project, 400 for a bad
    reward score name."""
    outcomes, nothing_chosen, status, refused, project = None, False, 200, None, None
    notes: list[str] = []
    reward_score: str | None = None
    projects = writable_projects(request.user)
    if request.method == "POST":
        project = _upload_project(request, projects)
        try:
            reward_score = reward_score_name(request.POST.get("reward_score"))
            invalid = None
        except ValueError as exc:
            invalid = str(exc)
        refused = None if invalid else check_ingest_rate(request.user.pk, project.pk)  # as the API counts it
        if invalid is not None:
            messages.error(request, f"Upload refused: {invalid}. Nothing was imported.")
            status = 400
        elif refused is not None:
            messages.error(request, f"Upload refused: {refused.message}. Nothing was imported.")
            status = 429
        elif _declared_length(request) > settings.SWARMSCOPE_MAX_UPLOAD_BYTES:
            # Daphne and Django spooled the body to disk; it is refused before any file is read
            messages.error(
                request,
                f"Upload refused: over {settings.SWARMSCOPE_MAX_UPLOAD_BYTES // 2**20} MiB "
                "(SWARMSCOPE_MAX_UPLOAD_BYTES). Upload fewer files at a time.",
            )
            status = 413
        elif request.FILES:
            outcomes = ingest.do_import_sources(project, upload_sources(request), reward_score=reward_score)
            notes = ingest.check_reward_score(project, outcomes, reward_score)
        else:
            nothing_chosen = True
    wanted = str(project.pk) if project is not None else request.GET.get("project", "")
    selected = next((p for p in projects if str(p.pk) == wanted), projects[0] if projects else None)
    response = render(
        request,
        "traces/upload.html",
        {
            "outcomes": outcomes,
            "notes": notes,
            "nothing_chosen": nothing_chosen,
            "can_write": bool(projects),
            "projects": projects,
            "selected": selected,
            "imported_into": project if outcomes is not None else None,
            "read_only_hint": READ_ONLY_HINT,
            "reward_score": reward_score or "",
        },
        status=status,
    )
    if refused is not None:
        response["Retry-After"] = str(refused.retry_after_s)
    return response


def _upload_project(request: HttpRequest, projects: list):
    """The project an upload goes to: the form's `project` (403 unless the user may write there,
    404 for one they cannot see), else the first of `projects`."""
    chosen = request.POST.get("project", "")
    if not chosen:
        project = get_write_project(request, "uploading traces")  # raises PermissionRefused (403) for a viewer
        if project is None:
            raise Http404("you are not a member of any project")
        return project
    project_id = id_or_none(chosen)
    project = next((p for p in list_projects_of(request.user) if p.pk == project_id), None)
    if project is None:
        raise Http404("no such project")
    check_write(request, project.pk, "uploading traces")  # raises PermissionRefused (403) for a reader
    return project


def _declared_length(request: HttpRequest) -> int:
    """The request's Content-Length, 0 when absent or not a number."""
    try:
        return int(request.headers.get("Content-Length") or 0)
    except ValueError:
        return 0


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
