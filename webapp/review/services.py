"""Writes and reads of the team review (`check_*` validate, `do_*` write, `get_*`/`list_*` read).

Every write records an Activity and, after commit, sends it to the project's websocket group
(webapp.web.broadcast). Callers authorise first (role checks: webapp.accounts.services.check_role);
ownership (edit/delete one's own comment) is checked here. Bad input raises ReviewInputError naming
the field; a write that is not the caller's to make raises PermissionRefused.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import markdown
import nh3
from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone
from django.utils.html import strip_tags

from swarmscope.agreement import kappa_against, pairwise_kappa
from webapp.accounts.models import Membership
from webapp.accounts.services import PermissionRefused, get_role
from webapp.counterfactuals.models import Attribution
from webapp.traces.models import Agent, Event, Label, Trace
from webapp.web.broadcast import broadcast_notification, broadcast_notifications_read, broadcast_project_activity
from webapp.web.validation import MAX_DB_INT, InputError, parse_int

from .feed import activity_wire, iso, target_link
from .models import Activity, Comment, MistakeLabel, Notification, TargetKind, TraceReview, Vote

logger = logging.getLogger(__name__)

MAX_COMMENT_CHARS = 20_000
MAX_REASON_CHARS = 5_000
#: `@name` where name is a user name (Django's default validator: letters, digits and @.+-_).
MENTION = re.compile(r"(?<![\w@.+-])@([\w.+-]+)")
#: HTML the rendered Markdown may keep; everything else (scripts, styles, event handlers) is removed.
ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "em",
    "strong",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "del",
}


class ReviewInputError(ValueError):
    """Bad review input: `field` names what was wrong (answered 400)."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Target:
    """What a comment is on: `kind`, `id` (a primary key, or an event's id within `trace`), its
    project and, for traces, events and attributions, its trace."""

    kind: str
    id: str
    project_id: int
    trace: Trace | None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "trace": self.trace.pk if self.trace else None}


# --- rendering -----------------------------------------------------------------------------------


def render_markdown(body: str) -> str:
    """Markdown (Python-Markdown, with fenced code and tables) as HTML sanitised by nh3 (Ammonia):
    only ALLOWED_TAGS survive, links get `rel="noopener noreferrer nofollow"`, raw HTML is escaped."""
    html = markdown.markdown(body, extensions=["fenced_code", "tables"], output_format="html")
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes={"a": {"href", "title"}, "code": {"class"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def comment_excerpt(comment: Comment, limit: int = 200) -> str:
    """The comment as one line of plain text, at most `limit` characters (… where cut): its
    sanitised rendering (`body_html`, what the trace page shows) without the tags, so neither
    Markdown syntax nor raw HTML shows."""
    text = " ".join(html.unescape(strip_tags(comment.body_html)).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def parse_mentions(body: str) -> list[str]:
    """User names written as `@name` in `body`, in order of first appearance, without repeats."""
    seen: dict[str, None] = {}
    for name in MENTION.findall(body):
        seen.setdefault(name.rstrip("."), None)
    return list(seen)


#: At most this many members are listed for @mention completion (a project's members, by name).
MAX_MENTION_MEMBERS = 500


def list_mention_members(project_id: int) -> list[dict[str, str]]:
    """The members of project `project_id` a comment can @mention, by user name: `[{"username",
    "name"}]` (`name` the full name, "" when none), at most MAX_MENTION_MEMBERS; active users only
    (a deactivated one is never notified)."""
    users = (
        get_user_model()
        .objects.filter(memberships__project_id=project_id, is_active=True)
        .order_by("username")
        .distinct()[:MAX_MENTION_MEMBERS]
    )
    return [{"username": u.username, "name": u.get_full_name()} for u in users]


def _mentioned_members(project_id: int, body: str) -> list:
    names = parse_mentions(body)
    if not names:
        return []
    users = get_user_model().objects.filter(username__in=names, memberships__project_id=project_id)
    return list(users.distinct())


# --- targets -------------------------------------------------------------------------------------


def _run_model():
    try:
        return apps.get_model("runs", "Run")
    except LookupError:
        return None


def get_target(project_ids: Iterable[int], kind: str, target_id: Any, trace_id: Any = None) -> Target | None:
    """The target if it exists in one of `project_ids`, else None (unknown and foreign look alike).

    kind: "trace" (target_id: trace id), "event" (trace_id + target_id: the event's id),
    "attribution" (attribution id), "run" (run id). Raises ReviewInputError on a malformed id.
    """
    ids = list(project_ids)
    if kind not in TargetKind.values:
        raise ReviewInputError(f"kind must be one of {', '.join(TargetKind.values)}", field="kind")
    if kind == TargetKind.EVENT:
        trace = Trace.objects.filter(pk=_pk(trace_id, "trace"), project_id__in=ids).first()
        event_id = str(target_id or "")
        if trace is None or not event_id or not Event.objects.filter(trace=trace, event_id=event_id).exists():
            return None
        return Target(kind, event_id, trace.project_id, trace)
    pk = _pk(target_id, "id")
    if kind == TargetKind.TRACE:
        trace = Trace.objects.filter(pk=pk, project_id__in=ids).first()
        return Target(kind, str(pk), trace.project_id, trace) if trace else None
    if kind == TargetKind.ATTRIBUTION:
        attribution = Attribution.objects.select_related("trace").filter(pk=pk, trace__project_id__in=ids).first()
        return Target(kind, str(pk), attribution.trace.project_id, attribution.trace) if attribution else None
    run_model = _run_model()
    run = run_model.objects.filter(pk=pk, project_id__in=ids).first() if run_model else None
    return Target(kind, str(pk), run.project_id, None) if run else None


def _pk(value: Any, field: str) -> int:
    """An id sent as a JSON integer or a string of ASCII digits, from 1 to 2**63 - 1."""
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 < value <= MAX_DB_INT:
            return value
        raise ReviewInputError("must be a positive integer id", field=field)
    try:
        return parse_int(value, field=field, low=1)
    except InputError:
        raise ReviewInputError("must be a positive integer id", field=field) from None


# --- wire formats --------------------------------------------------------------------------------


def comment_wire(comment: Comment) -> dict[str, Any]:
    """A comment as the API and the websocket send it; a deleted one has `body: null`."""
    deleted = comment.deleted_at is not None
    return {
        "id": comment.pk,
        "target": {"kind": comment.target_kind, "id": comment.target_id, "trace": comment.trace_id},
        "parent": comment.parent_id,
        "author": comment.author.username,
        "body": None if deleted else comment.body,
        "body_html": "" if deleted else comment.body_html,
        "mentions": [u.username for u in comment.mentions.all()],
        "created_at": iso(comment.created_at),
        "edited_at": iso(comment.edited_at),
        "deleted": deleted,
        "link": target_link(comment.target_kind, comment.target_id, comment.trace_id),
    }


def _record(
    project_id: int,
    actor,
    verb: str,
    kind: str,
    target_id: str,
    trace_id: int | None,
    data: dict[str, Any],
    mentions: Iterable = (),
) -> Activity:
    activity = Activity.objects.create(
        project_id=project_id,
        actor=actor,
        verb=verb,
        trace_id=trace_id,
        target_kind=kind,
        target_id=target_id,
        data=data,
    )
    if mentions:
        activity.mentions.set(mentions)
    transaction.on_commit(lambda: broadcast_project_activity(project_id, activity_wire(activity)))
    return activity


# --- comments ------------------------------------------------------------------------------------


def check_comment_body(body: Any) -> str:
    if not isinstance(body, str) or not body.strip():
        raise ReviewInputError("a comment needs a non-empty text", field="body")
    if len(body) > MAX_COMMENT_CHARS:
        raise ReviewInputError(f"at most {MAX_COMMENT_CHARS} characters", field="body")
    return body.strip()


@transaction.atomic
def do_comment(user, target: Target, body: Any, parent: Comment | None = None) -> Comment:
    """Comment on `target` (a reply when `parent` is given: it must be on the same target)."""
    body = check_comment_body(body)
    if parent is not None and (
        parent.project_id != target.project_id
        or parent.target_kind != target.kind
        or parent.target_id != target.id
        or parent.trace_id != (target.trace.pk if target.trace else None)
    ):
        raise ReviewInputError("a reply must be on the same target as the comment it answers", field="parent")
    comment = Comment.objects.create(
        project_id=target.project_id,
        trace=target.trace,
        target_kind=target.kind,
        target_id=target.id,
        parent=parent,
        author=user,
        body=body,
        body_html=render_markdown(body),
    )
    mentioned = _mentioned_members(target.project_id, body)
    comment.mentions.set(mentioned)
    do_notify_mentions(comment, mentioned)
    _record(
        target.project_id,
        user,
        Activity.Verb.COMMENTED,
        target.kind,
        target.id,
        comment.trace_id,
        {"comment": comment_wire(comment)},
        mentioned,
    )
    return comment


def _own_or_admin(user, comment: Comment, *, admin_may: bool) -> None:
    if comment.author_id == user.pk:
        return
    if admin_may and get_role(user, comment.project_id) == Membership.Role.ADMIN:
        return
    raise PermissionRefused(
        "only the author may change this comment" + (" (or a project admin delete it)" if admin_may else "")
    )


@transaction.atomic
def do_edit_comment(user, comment: Comment, body: Any) -> Comment:
    """Replace the text of one's own comment (mentions are re-parsed)."""
    _own_or_admin(user, comment, admin_may=False)
    if comment.deleted_at is not None:
        raise ReviewInputError("a deleted comment cannot be edited", field="body")
    comment.body = check_comment_body(body)
    comment.body_html = render_markdown(comment.body)
    comment.edited_at = timezone.now()
    comment.save(update_fields=["body", "body_html", "edited_at"])
    mentioned = _mentioned_members(comment.project_id, comment.body)
    comment.mentions.set(mentioned)
    do_notify_mentions(comment, mentioned)
    _record(
        comment.project_id,
        user,
        Activity.Verb.EDITED,
        comment.target_kind,
        comment.target_id,
        comment.trace_id,
        {"comment": comment_wire(comment)},
        mentioned,
    )
    return comment


@transaction.atomic
def do_delete_comment(user, comment: Comment) -> Comment:
    """Delete one's own comment (a project admin may delete any). The row stays, blanked, so its
    replies keep their thread."""
    _own_or_admin(user, comment, admin_may=True)
    if comment.deleted_at is None:
        comment.deleted_at = timezone.now()
        comment.body, comment.body_html = "", ""
        comment.save(update_fields=["deleted_at", "body", "body_html"])
        comment.mentions.clear()
        _record(
            comment.project_id,
            user,
            Activity.Verb.DELETED,
            comment.target_kind,
            comment.target_id,
            comment.trace_id,
            {"comment": comment_wire(comment)},
        )
    return comment


def list_comments(
    project_ids: Iterable[int], *, trace_id: int | None = None, target: Target | None = None
) -> list[Comment]:
    """Comments on `target`, or on a trace and everything in it (`trace_id`), oldest first."""
    qs = (
        Comment.objects.filter(project_id__in=list(project_ids))
        .select_related("author")
        .prefetch_related("mentions")
        .order_by("created_at", "id")
    )
    if target is not None:
        qs = qs.filter(target_kind=target.kind, target_id=target.id, trace_id=target.trace.pk if target.trace else None)
    elif trace_id is not None:
        qs = qs.filter(trace_id=trace_id)
    return list(qs)


def get_comment(project_ids: Iterable[int], comment_id: int) -> Comment | None:
    return Comment.objects.select_related("author").filter(pk=comment_id, project_id__in=list(project_ids)).first()


# --- votes ---------------------------------------------------------------------------------------


def get_votes(attribution: Attribution) -> dict[str, Any]:
    """{attribution, agree, disagree, votes: [{user, value, reason, updated_at}]}."""
    votes = list(Vote.objects.filter(attribution=attribution).select_related("user").order_by("updated_at", "id"))
    return _tally(attribution.pk, votes)


@transaction.atomic
def do_vote(user, attribution: Attribution, value: Any, reason: Any = "") -> Vote:
    """Agree or disagree with an attribution; a second vote by the same user replaces the first."""
    if value not in Vote.Value.values:
        raise ReviewInputError("must be 'agree' or 'disagree'", field="value")
    if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
        raise ReviewInputError(f"must be a text of at most {MAX_REASON_CHARS} characters", field="reason")
    project_id = attribution.trace.project_id
    vote, _ = Vote.objects.update_or_create(
        attribution=attribution,
        user=user,
        defaults={"value": value, "reason": reason.strip(), "project_id": project_id},
    )
    _record(
        project_id,
        user,
        Activity.Verb.VOTED,
        TargetKind.ATTRIBUTION,
        str(attribution.pk),
        attribution.trace_id,
        {"value": value, "reason": vote.reason, "votes": get_votes(attribution)},
    )
    return vote


@transaction.atomic
def do_withdraw_vote(user, attribution: Attribution) -> bool:
    """Withdraw the caller's vote on `attribution`; False (and nothing recorded) when they had none.
    The activity is a `voted` one with `value: null` (the feed's verbs stay as the protocol has them)."""
    deleted, _ = Vote.objects.filter(attribution=attribution, user=user).delete()
    if not deleted:
        return False
    _record(
        attribution.trace.project_id,
        user,
        Activity.Verb.VOTED,
        TargetKind.ATTRIBUTION,
        str(attribution.pk),
        attribution.trace_id,
        {"value": None, "reason": "", "votes": get_votes(attribution)},
    )
    return True


def list_attribution_votes(trace: Trace) -> list[dict[str, Any]]:
    """The trace's attributions grouped by the job that computed them and its estimator, newest
    group first, each group's rows ranked by estimate (highest credit first) with their votes:
    [{"job": id | None, "method", "created_at", "rows": [{"attribution": {id, target, method,
    estimate, ci_low, ci_high, n_rollouts}, "agree", "disagree", "votes": [...]}]}]. Two queries."""
    attributions = list(Attribution.objects.filter(trace=trace).order_by("-created_at", "-id"))
    votes: dict[int, list[Vote]] = {}
    for vote in Vote.objects.filter(attribution__trace=trace).select_related("user").order_by("updated_at", "id"):
        votes.setdefault(vote.attribution_id, []).append(vote)
    groups: dict[tuple[int | None, str], dict[str, Any]] = {}
    for a in attributions:
        group = groups.setdefault(
            (a.job_id, a.method), {"job": a.job_id, "method": a.method, "created_at": iso(a.created_at), "rows": []}
        )
        mine = votes.get(a.pk, [])
        group["rows"].append(
            {
                **_tally(a.pk, mine),
                # the attribution itself (the tally's "attribution" is its id only)
                "attribution": {
                    "id": a.pk,
                    "target": a.target,
                    "method": a.method,
                    "estimate": a.estimate,
                    "ci_low": a.ci_low,
                    "ci_high": a.ci_high,
                    "n_rollouts": a.n_rollouts,
                },
            }
        )
    for group in groups.values():
        group["rows"].sort(key=lambda r: (-r["attribution"]["estimate"], r["attribution"]["id"]))
    return list(groups.values())


def _tally(attribution_id: int, votes: list[Vote]) -> dict[str, Any]:
    return {
        "attribution": attribution_id,
        "agree": sum(v.value == Vote.Value.AGREE for v in votes),
        "disagree": sum(v.value == Vote.Value.DISAGREE for v in votes),
        "votes": [
            {"user": v.user.username, "value": v.value, "reason": v.reason, "updated_at": iso(v.updated_at)}
            for v in votes
        ],
    }


def get_attribution(project_ids: Iterable[int], attribution_id: int) -> Attribution | None:
    return (
        Attribution.objects.select_related("trace")
        .filter(pk=attribution_id, trace__project_id__in=list(project_ids))
        .first()
    )


# --- review status and mistake labels -------------------------------------------------------------


def get_status(trace: Trace) -> dict[str, Any]:
    review = TraceReview.objects.filter(trace=trace).select_related("updated_by").first()
    if review is None:
        return {"trace": trace.pk, "status": TraceReview.Status.OPEN, "updated_by": None, "updated_at": None}
    return {
        "trace": trace.pk,
        "status": review.status,
        "updated_by": review.updated_by.username if review.updated_by else None,
        "updated_at": iso(review.updated_at),
    }


@transaction.atomic
def do_set_status(user, trace: Trace, status: Any) -> TraceReview:
    """Set the trace's review status: open, in_review or settled."""
    if status not in TraceReview.Status.values:
        raise ReviewInputError(f"must be one of {', '.join(TraceReview.Status.values)}", field="status")
    review, _ = TraceReview.objects.update_or_create(trace=trace, defaults={"status": status, "updated_by": user})
    _record(
        trace.project_id, user, Activity.Verb.SET_STATUS, TargetKind.TRACE, str(trace.pk), trace.pk, {"status": status}
    )
    return review


def label_wire(label: MistakeLabel) -> dict[str, Any]:
    return {
        "reviewer": label.reviewer.username,
        "agent": label.agent,
        "event_id": label.event_id,
        "reason": label.reason,
        "updated_at": iso(label.updated_at),
    }


def list_mistake_labels(trace: Trace) -> list[dict[str, Any]]:
    return [
        label_wire(lb)
        for lb in MistakeLabel.objects.filter(trace=trace).select_related("reviewer").order_by("reviewer__username")
    ]


@transaction.atomic
def do_label_mistake(user, trace: Trace, agent: Any, event_id: Any, reason: Any = "") -> MistakeLabel:
    """Record the caller's mistake agent and mistake step (an event of the trace) for `trace`.
    The agent must be one of the trace's agents and the event one of its events."""
    if not isinstance(agent, str) or not Agent.objects.filter(trace=trace, name=agent).exists():
        raise ReviewInputError("must name an agent of the trace", field="agent")
    if not isinstance(event_id, str) or not Event.objects.filter(trace=trace, event_id=event_id).exists():
        raise ReviewInputError("must name an event of the trace (the mistake step)", field="event_id")
    if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
        raise ReviewInputError(f"must be a text of at most {MAX_REASON_CHARS} characters", field="reason")
    label, _ = MistakeLabel.objects.update_or_create(
        trace=trace, reviewer=user, defaults={"agent": agent, "event_id": event_id, "reason": reason.strip()}
    )
    _record(
        trace.project_id,
        user,
        Activity.Verb.LABELLED,
        TargetKind.TRACE,
        str(trace.pk),
        trace.pk,
        {"agent": agent, "event_id": event_id},
    )
    return label


#: Label keys a dataset states a trace's decisive mistake with (Who&When: swarmscope.importers.whowhen).
MISTAKE_AGENT_KEY, MISTAKE_STEP_KEY = "mistake_agent", "mistake_step"
#: Labels of this source are Swarmscope's own notes on an import, not a dataset's answer.
OWN_LABEL_SOURCE = "swarmscope"
#: A dataset's rater in the agreement view is named "dataset:<source>" (a user name has no ":").
REFERENCE_PREFIX = "dataset:"


def list_reference_labels(trace_ids: Iterable[int]) -> dict[str, dict[str, dict[int, str]]]:
    """The datasets' own mistake labels of the traces, by source: {source: {"agent": {trace_id:
    agent}, "step": {trace_id: event_id}}}. The agent is the trace's agent the label resolved to
    (its value as given where it resolved to none); a step that names no event of the trace
    (`mistake_step_unresolved`) is left out."""
    out: dict[str, dict[str, dict[int, str]]] = {}
    rows = (
        Label.objects.filter(trace_id__in=list(trace_ids), key__in=(MISTAKE_AGENT_KEY, MISTAKE_STEP_KEY))
        .exclude(source=OWN_LABEL_SOURCE)
        .order_by("seq", "id")
        .values_list("trace_id", "key", "value", "agent", "event_id", "source")
    )
    for trace_id, key, value, agent, event_id, source in rows:
        dataset = out.setdefault(source or "dataset", {"agent": {}, "step": {}})
        if key == MISTAKE_AGENT_KEY and (agent or value not in (None, "")):
            dataset["agent"][trace_id] = agent or str(value)
        elif key == MISTAKE_STEP_KEY and event_id:
            dataset["step"][trace_id] = event_id
    return out


def list_trace_reference_labels(trace: Trace) -> list[dict[str, Any]]:
    """The dataset's own answer for `trace`, per source: [{"source", "reference": true, "agent",
    "event_id"}] (either may be None); [] for a trace no dataset labelled."""
    by_source = list_reference_labels([trace.pk])
    return [
        {
            "source": source,
            "reference": True,
            "agent": labels["agent"].get(trace.pk),
            "event_id": labels["step"].get(trace.pk),
        }
        for source, labels in sorted(by_source.items())
        if labels["agent"] or labels["step"]
    ]


def _agreement_wire(pair, step) -> dict[str, Any]:
    return {
        "a": pair.rater_a,
        "b": pair.rater_b,
        "n_traces": pair.n_items,
        "agent": {"observed": pair.observed, "kappa": pair.kappa},
        "step": {"observed": step.observed, "kappa": step.kappa},
    }


def get_agreement(project_id: int) -> dict[str, Any]:
    """Cohen's kappa between every pair of reviewers of the project, on the traces both labelled,
    for the mistake agent and for the mistake step (swarmscope.agreement):
    {"reviewers": [...], "traces_labelled": n, "pairs": [{a, b, n_traces, agent: {observed, kappa},
    step: {observed, kappa}}], "references": [...]} (kappa null where undefined).

    `references`: each dataset's own label (e.g. Who&When's mistake agent and step) as a reference
    rater, one entry per source: {"source", "name": "dataset:<source>", "traces_labelled" (of the
    traces reviewers labelled), "pairs": [{a: reviewer, b: name, ...}]}; empty when no reviewed trace
    carries one."""
    agents: dict[str, dict[int, str]] = {}
    steps: dict[str, dict[int, str]] = {}
    rows = MistakeLabel.objects.filter(trace__project_id=project_id).values_list(
        "reviewer__username", "trace_id", "agent", "event_id"
    )
    for reviewer, trace_id, agent, event_id in rows:
        agents.setdefault(reviewer, {})[trace_id] = agent
        steps.setdefault(reviewer, {})[trace_id] = event_id
    by_pair = {(p.rater_a, p.rater_b): p for p in pairwise_kappa(steps)}
    pairs = [_agreement_wire(pair, by_pair[(pair.rater_a, pair.rater_b)]) for pair in pairwise_kappa(agents)]
    traces = {t for labels in agents.values() for t in labels}
    references = []
    for source, labels in sorted(list_reference_labels(traces).items()):
        name = REFERENCE_PREFIX + source
        step_pairs = {p.rater_a: p for p in kappa_against(steps, labels["step"], name)}
        references.append(
            {
                "source": source,
                "name": name,
                "traces_labelled": len(set(labels["agent"]) | set(labels["step"])),
                "pairs": [
                    _agreement_wire(pair, step_pairs[pair.rater_a])
                    for pair in kappa_against(agents, labels["agent"], name)
                ],
            }
        )
    return {
        "project": project_id,
        "reviewers": sorted(agents),
        "traces_labelled": len(traces),
        "pairs": pairs,
        "references": references,
    }


# --- notifications ---------------------------------------------------------------------------------

#: With these e-mail backends (the settings' default prints to the console) mentions are not e-mailed.
NO_MAIL_BACKENDS = ("django.core.mail.backends.console.EmailBackend", "django.core.mail.backends.dummy.EmailBackend")
MAX_NOTIFICATION_PAGE = 200


def mail_configured() -> bool:
    """Whether mentions are e-mailed: EMAIL_BACKEND names a backend that delivers (SMTP, a file,
    locmem in tests), not the console or dummy one."""
    return settings.EMAIL_BACKEND not in NO_MAIL_BACKENDS


def do_notify_mentions(comment: Comment, mentioned: Iterable) -> list[Notification]:
    """Notify each member `mentioned` in `comment` (project members only: _mentioned_members) once
    per comment, the author excepted; e-mail them after commit where mail is configured and they
    have an address. Returns the new notifications (an edit re-mentioning someone adds none)."""
    users = [u for u in mentioned if u.pk != comment.author_id]
    if not users:
        return []
    already = set(Notification.objects.filter(comment=comment).values_list("user_id", flat=True))
    fresh = [
        Notification.objects.create(user=u, project_id=comment.project_id, comment=comment)
        for u in users
        if u.pk not in already
    ]
    for n in fresh:  # the bell of each of their open pages (webapp.review.consumers.NotificationConsumer)
        transaction.on_commit(lambda n=n: broadcast_notification(n.user_id, n.pk))
    if fresh and mail_configured():
        ids = [n.pk for n in fresh]
        transaction.on_commit(lambda: do_email_notifications(ids))
    return fresh


def notification_wire(n: Notification) -> dict[str, Any]:
    c = n.comment
    return {
        "id": n.pk,
        "reason": n.reason,
        "project": n.project_id,
        "actor": c.author.username,
        "target": {"kind": c.target_kind, "id": c.target_id, "trace": c.trace_id},
        "trace_name": c.trace.name if c.trace else None,
        "comment": c.pk,
        "excerpt": "" if c.deleted_at else comment_excerpt(c),
        "deleted": c.deleted_at is not None,
        "link": target_link(c.target_kind, c.target_id, c.trace_id),
        "created_at": iso(n.created_at),
        "read": n.read_at is not None,
    }


def do_email_notifications(notification_ids: list[int]) -> int:
    """E-mail the notifications (django.core.mail) to users with an address, once each; returns how
    many were sent. A failing mail server is logged, not raised: the comment is already stored."""
    sent = 0
    for n in Notification.objects.filter(pk__in=notification_ids, emailed_at__isnull=True).select_related(
        "user", "comment__author", "comment__trace"
    ):
        if not n.user.email:
            continue
        wire = notification_wire(n)
        target = wire["target"]
        where = f"trace “{wire['trace_name']}”" if wire["trace_name"] else f"{target['kind']} {target['id']}"
        try:
            send_mail(
                f"[Swarmscope] {wire['actor']} mentioned you on {where}",
                f"{wire['actor']} wrote:\n\n{n.comment.body}\n\nOpen it on your Swarmscope server: {wire['link']}\n",
                None,
                [n.user.email],
            )
        except (OSError, ValueError) as exc:  # smtplib's errors are OSErrors
            logger.warning("mention e-mail to user %s failed: %s", n.user.pk, exc)
            continue
        Notification.objects.filter(pk=n.pk).update(emailed_at=timezone.now())
        sent += 1
    return sent


def list_notifications(
    user, project_ids: Iterable[int], *, unread_only: bool = False, before: int | None = None, limit: int = 50
) -> list[Notification]:
    """The user's notifications in `project_ids` (those they may read: a member's, or a token's
    one), newest first; `before`: older than that id."""
    qs = Notification.objects.filter(user=user, project_id__in=list(project_ids)).select_related(
        "comment__author", "comment__trace"
    )
    if unread_only:
        qs = qs.filter(read_at__isnull=True)
    if before is not None:
        qs = qs.filter(pk__lt=before)
    return list(qs.order_by("-id")[:limit])


def get_notification(user, project_ids: Iterable[int], notification_id: int) -> Notification | None:
    """One of the user's notifications in `project_ids`, or None."""
    return (
        Notification.objects.filter(user=user, project_id__in=list(project_ids), pk=notification_id)
        .select_related("comment__author", "comment__trace")
        .first()
    )


def count_unread(user, project_ids: Iterable[int]) -> int:
    """How many of the user's notifications in `project_ids` are unread (one indexed COUNT)."""
    return Notification.objects.filter(user=user, read_at__isnull=True, project_id__in=list(project_ids)).count()


def do_mark_read(user, project_ids: Iterable[int], ids: Any = None) -> int:
    """Mark the user's notifications in `project_ids` read: those of `ids` (a list of ids), or all
    when None. Returns how many changed; others' ids match none of the user's and change nothing.
    Raises ReviewInputError (field "ids") when `ids` is not a list of integers."""
    qs = Notification.objects.filter(user=user, read_at__isnull=True, project_id__in=list(project_ids))
    if ids is not None:
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 < i <= MAX_DB_INT for i in ids
        ):
            raise ReviewInputError(f"must be a list of notification ids (1 to {MAX_DB_INT})", field="ids")
        qs = qs.filter(pk__in=ids)
    changed = qs.update(read_at=timezone.now())
    if changed:
        transaction.on_commit(lambda: broadcast_notifications_read(user.pk))
    return changed
