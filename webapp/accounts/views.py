"""Pages of projects: list, members (invite, change role, remove), settings (retention, reward score), deleting
a project (with a confirm page listing what goes with it), sign-up by invitation, API tokens.

Non-members get 404 for a project or trace (as for an unknown one); members whose role is too low
for a change get 403.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from swarmscope.inputs import InputError, parse_int, text_refusal

from . import datacare, login_throttle, services
from .models import ApiToken, Invitation, Membership, Project

NEW_INVITE_KEY = "swarmscope_new_invitation"
NEW_TOKEN_KEY = "swarmscope_new_token"


def _project_or_404(request: HttpRequest, project_id: int) -> tuple[Project, str]:
    role = services.get_role(request.user, project_id)
    project = Project.objects.filter(pk=project_id).first() if role else None
    if project is None:
        raise Http404("no such project")
    return project, role


def _form_text(request: HttpRequest, name: str) -> str:
    """The posted text field `name` ("" when absent); ValueError naming it when it holds text no
    database can store (a NUL character: PostgreSQL refuses it; `swarmscope.inputs.text_refusal`)."""
    value = request.POST.get(name, "")
    refusal = text_refusal(value)
    if refusal is not None:
        raise ValueError(f"{name}: {refusal}")
    return value


def _pk(value: str | None) -> int:
    """A posted id, or 0 (matches nothing) when it is not one."""
    try:
        return parse_int(value, field="id", low=1)
    except InputError:
        return 0


def require_admin(role: str) -> None:
    if role != Membership.Role.ADMIN:
        raise PermissionDenied("only a project admin may do this")


@login_required
@require_http_methods(["GET", "POST"])
def projects(request: HttpRequest):
    """The user's projects and their recent review activity (live); POST `name` creates one with
    the user as its admin."""
    error = None
    if request.method == "POST":
        try:
            project = services.do_create_project(_form_text(request, "name"), request.user)
        except ValueError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Created the project {project.name}: invite its members here.")
            return redirect("project-members", project_id=project.pk)
    rows = []
    # each row's trace count is the traces app's (`{% project_traces_link %}`, webapp/traces/templatetags):
    # what the linked list shows, which accounts, a layer below traces, does not know
    for project in (
        Project.objects.filter(pk__in=[p.pk for p in services.list_projects_of(request.user)])
        .annotate(n_members=Count("memberships"))
        .order_by("name")
    ):
        rows.append({"project": project, "role": services.get_role(request.user, project.pk)})
    # the recent review activity below the table comes from each project's socket (/ws/projects/<id>/,
    # static/js/pages/activity_feed.js): its snapshot fills the list, then new activity arrives live
    feed = json.dumps([{"project": r["project"].pk, "name": r["project"].name, "seq": None} for r in rows])
    return render(
        request,
        "accounts/projects.html",
        {"rows": rows, "error": error, "name": request.POST.get("name", ""), "feed_projects": feed},
        status=400 if error else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def members(request: HttpRequest, project_id: int):
    """GET: members and open invitations (any member). POST (admins): `action` = invite (role,
    email) | role (membership, role) | remove (membership) | cancel (invitation)."""
    project, role = _project_or_404(request, project_id)
    if request.method == "POST":
        require_admin(role)
        action = request.POST.get("action")
        try:
            if action == "invite":
                _, raw = services.do_create_invitation(
                    project, request.POST.get("role", ""), request.user, _form_text(request, "email")[:254]
                )
                request.session[NEW_INVITE_KEY] = request.build_absolute_uri(reverse("invitation", args=[raw]))
            elif action in ("role", "remove"):
                membership = Membership.objects.filter(project=project, pk=_pk(request.POST.get("membership"))).first()
                if membership is None:
                    raise Http404("no such member")
                if action == "role":
                    services.do_change_role(membership, request.POST.get("role", ""))
                    messages.info(request, f"{membership.user.username} is now {membership.role}.")
                else:
                    services.do_remove_member(membership)
                    messages.info(request, f"{membership.user.username} was removed; their tokens are revoked.")
            elif action == "cancel":
                Invitation.objects.filter(
                    project=project, pk=_pk(request.POST.get("invitation")), accepted_at__isnull=True
                ).delete()
            else:
                messages.error(request, "Unknown action.")
        except ValueError as exc:
            messages.error(request, str(exc))
        return redirect("project-members", project_id=project.pk)
    return render(
        request,
        "accounts/members.html",
        {
            "project": project,
            "role": role,
            "is_admin": role == Membership.Role.ADMIN,
            "roles": Membership.Role.choices,
            "memberships": project.memberships.select_related("user").order_by("user__username"),
            "invitations": project.invitations.filter(accepted_at__isnull=True).order_by("-created_at"),
            "new_invitation_url": request.session.pop(NEW_INVITE_KEY, None),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def project_settings(request: HttpRequest, project_id: int):
    """The retention period (empty keeps traces) and the reward score (the evaluation score that is
    a trace's reward; empty: a score named `reward`); admins change them, each posted field alone
    or both, all or nothing."""
    project, role = _project_or_404(request, project_id)
    if request.method == "POST":
        require_admin(role)
        raw = request.POST.get("retention_days", "").strip()
        try:
            try:
                days = parse_int(raw, field="retention_days") if raw else None
            except InputError:
                raise ValueError("retention must be a whole number of days") from None
            saved = []
            with transaction.atomic():
                if "retention_days" in request.POST:
                    datacare.do_set_retention(project, days)
                    saved.append("Retention saved." if raw else "Traces are kept until deleted.")
                if "reward_score" in request.POST:
                    services.do_set_reward_score(project, _form_text(request, "reward_score"))
                    saved.append(_reward_score_saved(project.reward_score))
            for message in saved:
                messages.info(request, message)
        except ValueError as exc:
            messages.error(request, str(exc))
        return redirect("project-settings", project_id=project.pk)
    return render(
        request, "accounts/project_settings.html", {"project": project, "is_admin": role == Membership.Role.ADMIN}
    )


def _reward_score_saved(name: str) -> str:
    """The message of a saved reward score (`name`; "" when cleared)."""
    if name:
        return f"Reward score saved: traces imported or streamed from now on take their score {name!r} as the reward."
    return "Reward score cleared: a score named 'reward' is a trace's reward."


@login_required
@require_http_methods(["GET", "POST"])
def project_delete(request: HttpRequest, project_id: int):
    """Confirm page listing what goes with the project; POST with the project's name deletes it."""
    project, role = _project_or_404(request, project_id)
    require_admin(role)
    if request.method == "POST":
        if request.POST.get("confirm_name") != project.name:
            messages.error(request, "Type the project's name to confirm.")
            return redirect("project-delete", project_id=project.pk)
        name = project.name
        datacare.do_delete_project(project)
        messages.info(request, f"Project {name} and everything in it were deleted.")
        return redirect("projects")
    return render(
        request,
        "accounts/confirm_delete.html",
        {
            "object": project,
            "kind": "project",
            "dependants": datacare.list_dependants(project),
            "confirm_name": project.name,
            "cancel_url": reverse("project-members", args=[project.pk]),
        },
    )


INVITE_SESSION_KEY = "swarmscope_invitation_key"
INVITE_URL_TOKEN = "accept"


@require_http_methods(["GET", "POST"])
def invitation(request: HttpRequest, key: str):
    """Sign up by invitation: a new user picks a user name and password; a logged-in user joins.

    As Django's password reset does, the key moves from the URL into the session on first visit
    and the browser is redirected to `/accounts/invite/accept/`, so the key does not linger in
    the address bar, the history or Referer headers.
    """
    if key != INVITE_URL_TOKEN:
        request.session[INVITE_SESSION_KEY] = key
        return redirect("invitation", key=INVITE_URL_TOKEN)
    raw = request.session.get(INVITE_SESSION_KEY, "")
    invite = services.check_invitation(raw) if raw else None
    if invite is None:
        return render(request, "accounts/invitation.html", {"invalid": True}, status=404)
    form = UserCreationForm(request.POST or None) if not request.user.is_authenticated else None
    if request.method == "POST":
        if request.user.is_authenticated:
            services.do_accept_invitation(invite, request.user)
            request.session.pop(INVITE_SESSION_KEY, None)
            messages.info(request, f"You joined {invite.project.name} as {invite.role}.")
            return redirect("projects")
        if form.is_valid():
            user = form.save(commit=False)
            user.email = invite.email
            user.save()
            services.do_accept_invitation(invite, user)
            login(request, user, backend="webapp.accounts.login_throttle.ThrottledModelBackend")
            messages.info(request, f"Welcome, {user.username}: you joined {invite.project.name} as {invite.role}.")
            return redirect("trace-list")
    return render(request, "accounts/invitation.html", {"invite": invite, "form": form})


@login_required
def tokens(request: HttpRequest):
    if request.method == "POST":
        projects = {str(p.pk): p for p in services.list_projects_of(request.user)}
        project = projects.get(request.POST.get("project", ""))
        if project is None:
            raise Http404("no such project")
        try:
            name = _form_text(request, "name")[:200]
        except ValueError as exc:
            return HttpResponseBadRequest(str(exc))
        _, raw = services.do_create_token(request.user, project, name)
        # Post/redirect/get: the token is shown once, and reloading the page creates no other.
        request.session[NEW_TOKEN_KEY] = raw
        return redirect("tokens")
    return render(
        request,
        "accounts/tokens.html",
        {
            "raw_token": request.session.pop(NEW_TOKEN_KEY, None),
            "projects": services.list_projects_of(request.user),
            "tokens": ApiToken.objects.filter(user=request.user).select_related("project").order_by("-created_at"),
        },
    )


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int):
    token = ApiToken.objects.filter(pk=token_id, user=request.user).first()
    if token is None:
        raise Http404("no such token")
    services.do_revoke_token(token)
    messages.info(request, f"Token {token.prefix}… revoked.")
    return redirect("tokens")


class ThrottledLoginView(auth_views.LoginView):
    """Django's login page, answering 429 with when to try again, without checking the password,
    while the user name or the client address is over the failed-login limit (login_throttle)."""

    def post(self, request: HttpRequest, *args, **kwargs):
        username = request.POST.get("username", "")
        wait = login_throttle.check_login_allowed(username, login_throttle.client_address(request))
        if wait is None:
            return super().post(request, *args, **kwargs)
        context = self.get_context_data(
            form=self.get_form_class()(request), throttled=login_throttle.retry_message(wait)
        )
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(wait)
        return response
