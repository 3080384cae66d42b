"""REST API of the team review under /api/review/: parse, authorise, call services, serialise.

Same authentication as the rest of the API (webapp.traces.api.api_view: a Bearer token acting
for its user in its project, or the session). Reading needs membership (viewer); commenting,
voting, labelling and setting the review status need the reviewer role. Unknown and foreign
objects answer 404 alike; a member whose role is too low gets 403. The OpenAPI document of these
endpoints is webapp.web.openapi.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import HttpRequest, JsonResponse

from webapp.accounts.models import Membership
from webapp.accounts.services import PermissionRefused, check_role, get_role
from webapp.traces.models import Trace
from webapp.web.api import BodyError, api_view, check_write_rate, json_body, json_error
from webapp.web.validation import InputError, query_int

from . import feed, services
from .services import ReviewInputError

MAX_ACTIVITY_PAGE = 200


def _caller(request: HttpRequest):
    return request.token.user if request.token is not None else request.user


def _json_body(request: HttpRequest) -> dict[str, Any]:
    try:
        doc = json_body(request)
    except BodyError as exc:
        raise ReviewInputError(str(exc), field=exc.field) from None
    if not isinstance(doc, dict):
        raise ReviewInputError("body must be a JSON object", field="body")
    return doc


def _trace(request: HttpRequest, trace_id: int) -> Trace | None:
    return Trace.objects.filter(pk=trace_id, project_id__in=request.project_ids).first()


def _int_param(request: HttpRequest, name: str) -> int | None:
    try:
        return query_int(request.GET, name, low=1)
    except InputError as exc:
        raise ReviewInputError(exc.message, field=name) from None


def reviewing(view):
    """Turn ReviewInputError into 400 (naming the field) and PermissionRefused into 403."""

    def wrapper(request: HttpRequest, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except ReviewInputError as exc:
            return json_error(400, str(exc), field=exc.field)
        except PermissionRefused as exc:
            return json_error(403, str(exc))

    wrapper.__name__ = view.__name__
    wrapper.__doc__ = view.__doc__
    return wrapper


@api_view("GET", "POST")
@reviewing
def comments(request: HttpRequest):
    """GET `?trace=<id>` (every comment on the trace and its events and attributions) or
    `?kind=&id=[&trace=]` (one target): {results, user, can_review (the caller may comment)}.
    POST {kind, id, trace (events only), body, parent?}."""
    if request.method == "GET":
        if request.GET.get("kind"):
            target = services.get_target(
                request.project_ids, request.GET["kind"], request.GET.get("id"), request.GET.get("trace")
            )
            if target is None:
                return json_error(404, "no such target")
            rows, project_id = services.list_comments(request.project_ids, target=target), target.project_id
        else:
            trace_id = _int_param(request, "trace")
            if trace_id is None:
                raise ReviewInputError("give ?trace=<id> or ?kind=&id=", field="trace")
            trace = _trace(request, trace_id)
            if trace is None:
                return json_error(404, "no such trace")
            rows, project_id = services.list_comments(request.project_ids, trace_id=trace_id), trace.project_id
        role = get_role(_caller(request), project_id)
        return JsonResponse(
            {
                "results": [services.comment_wire(c) for c in rows],
                "user": _caller(request).username,
                "can_review": Membership.RANK.get(role, -1) >= Membership.RANK[Membership.Role.REVIEWER],
            }
        )
    doc = _json_body(request)
    target = services.get_target(request.project_ids, doc.get("kind"), doc.get("id"), doc.get("trace"))
    if target is None:
        return json_error(404, "no such target")
    check_role(_caller(request), target.project_id, Membership.Role.REVIEWER)
    parent = None
    if doc.get("parent") is not None:
        parent = services.get_comment(request.project_ids, services._pk(doc["parent"], "parent"))
        if parent is None:
            return json_error(404, "no such parent comment", field="parent")
    with transaction.atomic():  # the comment undone when it is over the rate (each @mention counts one more)
        comment = services.do_comment(_caller(request), target, doc.get("body"), parent)
        check_write_rate(request, "comment", target.project_id, 1 + comment.mentions.count())
    return JsonResponse(services.comment_wire(comment), status=201)


@api_view("GET", "PATCH", "DELETE")
@reviewing
def comment_detail(request: HttpRequest, comment_id: int):
    """GET one comment; PATCH {body} edits one's own; DELETE deletes one's own (admins: any)."""
    comment = services.get_comment(request.project_ids, comment_id)
    if comment is None:
        return json_error(404, "no such comment")
    if request.method == "GET":
        return JsonResponse(services.comment_wire(comment))
    check_role(_caller(request), comment.project_id, Membership.Role.REVIEWER)
    if request.method == "PATCH":
        with transaction.atomic():  # an edit can add mentions: counted as a comment is
            comment = services.do_edit_comment(_caller(request), comment, _json_body(request).get("body"))
            check_write_rate(request, "comment", comment.project_id, 1 + comment.mentions.count())
    else:
        comment = services.do_delete_comment(_caller(request), comment)
    return JsonResponse(services.comment_wire(comment))


@api_view("GET", "PUT", "DELETE")
@reviewing
def attribution_votes(request: HttpRequest, attribution_id: int):
    """GET the votes on an attribution; PUT {value: agree|disagree, reason} sets the caller's;
    DELETE withdraws it (answered with the votes left; withdrawing no vote changes nothing)."""
    attribution = services.get_attribution(request.project_ids, attribution_id)
    if attribution is None:
        return json_error(404, "no such attribution")
    if request.method == "PUT":
        check_role(_caller(request), attribution.trace.project_id, Membership.Role.REVIEWER)
        doc = _json_body(request)
        services.do_vote(_caller(request), attribution, doc.get("value"), doc.get("reason", ""))
    elif request.method == "DELETE":
        check_role(_caller(request), attribution.trace.project_id, Membership.Role.REVIEWER)
        services.do_withdraw_vote(_caller(request), attribution)
    return JsonResponse(services.get_votes(attribution))


@api_view("GET")
@reviewing
def trace_attribution_votes(request: HttpRequest, trace_id: int):
    """Every attribution of the trace with its votes, grouped by job and estimator (what the review
    panel's vote rows show): {trace, user, can_review, groups: services.list_attribution_votes}."""
    trace = _trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    role = get_role(_caller(request), trace.project_id)
    return JsonResponse(
        {
            "trace": trace.pk,
            "user": _caller(request).username,
            "can_review": Membership.RANK.get(role, -1) >= Membership.RANK[Membership.Role.REVIEWER],
            "groups": services.list_attribution_votes(trace),
        }
    )


@api_view("GET", "PUT")
@reviewing
def trace_status(request: HttpRequest, trace_id: int):
    """GET the trace's review status; PUT {status: open|in_review|settled}."""
    trace = _trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    if request.method == "PUT":
        check_role(_caller(request), trace.project_id, Membership.Role.REVIEWER)
        services.do_set_status(_caller(request), trace, _json_body(request).get("status"))
    return JsonResponse(services.get_status(trace))


@api_view("GET", "PUT")
@reviewing
def trace_mistake_labels(request: HttpRequest, trace_id: int):
    """GET every reviewer's mistake label of the trace (`results`) and the dataset's own, marked
    as such (`reference`: services.list_trace_reference_labels); PUT {agent, event_id, reason} sets
    the caller's."""
    trace = _trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    if request.method == "PUT":
        check_role(_caller(request), trace.project_id, Membership.Role.REVIEWER)
        doc = _json_body(request)
        services.do_label_mistake(_caller(request), trace, doc.get("agent"), doc.get("event_id"), doc.get("reason", ""))
    return JsonResponse(
        {
            "trace": trace.pk,
            "results": services.list_mistake_labels(trace),
            "reference": services.list_trace_reference_labels(trace),
        }
    )


@api_view("GET")
@reviewing
def project_activity(request: HttpRequest, project_id: int):
    """The project's activity feed, newest first: `?before=<id>` pages back, `?after=<id>` returns
    what came later (oldest first), `?limit=` (1..200, default 50)."""
    if project_id not in request.project_ids:
        return json_error(404, "no such project")
    limit = _int_param(request, "limit") or 50
    if limit > MAX_ACTIVITY_PAGE:
        raise ReviewInputError(f"must be at most {MAX_ACTIVITY_PAGE}", field="limit")
    rows = feed.list_activity(
        project_id, before=_int_param(request, "before"), after=_int_param(request, "after"), limit=limit
    )
    return JsonResponse({"project": project_id, "results": [feed.activity_wire(a) for a in rows]})


@api_view("GET")
@reviewing
def project_members(request: HttpRequest, project_id: int):
    """The project's members a comment can @mention (user name and full name, by user name), for
    the comment box's completion."""
    if project_id not in request.project_ids:
        return json_error(404, "no such project")
    return JsonResponse({"project": project_id, "members": services.list_mention_members(project_id)})


@api_view("GET")
@reviewing
def project_agreement(request: HttpRequest, project_id: int):
    """Cohen's kappa between reviewer pairs on the project's mistake labels (agent and step)."""
    if project_id not in request.project_ids:
        return json_error(404, "no such project")
    return JsonResponse(services.get_agreement(project_id))


@api_view("GET")
@reviewing
def notifications(request: HttpRequest):
    """The caller's notifications (@mentions), newest first: {unread, results}; `?unread=1` only
    unread ones, `?before=<id>` pages back, `?limit=` (1..200, default 50)."""
    limit = _int_param(request, "limit") or 50
    if limit > services.MAX_NOTIFICATION_PAGE:
        raise ReviewInputError(f"must be at most {services.MAX_NOTIFICATION_PAGE}", field="limit")
    user = _caller(request)
    rows = services.list_notifications(
        user,
        request.project_ids,
        unread_only=request.GET.get("unread") in ("1", "true"),
        before=_int_param(request, "before"),
        limit=limit,
    )
    return JsonResponse(
        {
            "unread": services.count_unread(user, request.project_ids),
            "results": [services.notification_wire(n) for n in rows],
        }
    )


@api_view("POST")
@reviewing
def notifications_read(request: HttpRequest):
    """POST {ids: [...]} marks those of the caller's notifications read; {} marks all read:
    {marked, unread}."""
    doc = _json_body(request)
    user = _caller(request)
    marked = services.do_mark_read(user, request.project_ids, doc.get("ids"))
    return JsonResponse({"marked": marked, "unread": services.count_unread(user, request.project_ids)})
