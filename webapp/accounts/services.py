"""Writes and checks for projects, memberships and API tokens (`check_*` validate, `do_*` write)."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from swarmscope.importers.scores import reward_score_name

from .models import ApiToken, Invitation, Membership, Project, hash_token

DEFAULT_PROJECT = "Default"


def do_get_or_create_project(name: str = DEFAULT_PROJECT) -> Project:
    project, _ = Project.objects.get_or_create(name=name, defaults={"slug": slugify(name) or "project"})
    return project


def do_create_project(name: str, creator) -> Project:
    """A new project named `name` (stripped, 1-200 characters, unique ignoring case) with `creator`
    as its admin. Raises ValueError with the reason."""
    name = (name or "").strip()
    if not 1 <= len(name) <= 200:
        raise ValueError("a project needs a name of 1 to 200 characters")
    with transaction.atomic():
        if Project.objects.filter(name__iexact=name).exists():
            raise ValueError(f"a project named {name!r} exists already")
        base = slugify(name) or "project"
        slug, n = base, 1
        while Project.objects.filter(slug=slug).exists():
            n += 1
            slug = f"{base}-{n}"
        project = Project.objects.create(name=name, slug=slug)
        do_add_member(project, creator, Membership.Role.ADMIN)
    return project


def do_set_reward_score(project: Project, name: str | None) -> Project:
    """Set the evaluation score that is the reward of the traces imported or streamed into `project`
    from now on (an import's own `--reward-score` comes first); None or blank: a score named
    `reward` (`swarmscope.importers.scores.select_reward`). Stored traces keep their reward. Raises
    ValueError naming `reward_score` for a name that is too long or holds a NUL character."""
    project.reward_score = reward_score_name(name) or ""
    project.save(update_fields=["reward_score"])
    return project


@transaction.atomic
def do_add_member(project: Project, user, role: str = Membership.Role.ADMIN) -> Membership:
    """Make `user` a member of `project` with at least `role`: an existing member keeps the higher
    of their role and `role` (Membership.RANK: admin > reviewer > viewer), so adding never lowers
    a role, and never leaves the project without an admin. Lowering a role is `do_change_role`."""
    if role not in Membership.RANK:
        raise ValueError(f"unknown role {role!r}")
    membership, created = Membership.objects.select_for_update().get_or_create(
        project=project, user=user, defaults={"role": role}
    )
    if not created and Membership.RANK[role] > Membership.RANK[membership.role]:
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def do_create_token(user, project: Project, name: str = "") -> tuple[ApiToken, str]:
    """Create a token; returns (row, raw token). The raw token is never stored or shown again."""
    raw = ApiToken.new_raw_token()
    token = ApiToken.objects.create(user=user, project=project, name=name, prefix=raw[:10], token_hash=hash_token(raw))
    return token, raw


def do_revoke_token(token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


class AuthenticationRefused(Exception):
    """A token (or a socket's user) that does not let its bearer in; the message says why (answered 401, or close
    code 4401 on a websocket)."""


def authenticate_token(raw: str) -> ApiToken:
    """The live token for `raw` (marking its use). Raises AuthenticationRefused when it is unknown or
    revoked, or when its user is deactivated (`is_active` off)."""
    token = (
        ApiToken.objects.select_related("project", "user")
        .filter(token_hash=hash_token(raw or ""), revoked_at__isnull=True)
        .first()
    )
    if token is None:
        raise AuthenticationRefused("invalid or revoked API token")
    if not token.user.is_active:
        raise AuthenticationRefused("this API token's user is deactivated")
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 30:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def check_token(raw: str) -> ApiToken | None:
    """The live token for `raw` (marking its use), or None when unknown, revoked or of a
    deactivated user (`authenticate_token` says which)."""
    try:
        return authenticate_token(raw)
    except AuthenticationRefused:
        return None


def recheck_token(token_id: int) -> ApiToken:
    """The token `token_id` as it is now, for a socket that authenticated with it; raises
    AuthenticationRefused when it was revoked or deleted, or its user deactivated since."""
    token = ApiToken.objects.select_related("project", "user").filter(pk=token_id, revoked_at__isnull=True).first()
    if token is None:
        raise AuthenticationRefused("API token revoked")
    if not token.user.is_active:
        raise AuthenticationRefused("this API token's user is deactivated")
    return token


def recheck_user(user_id: int):
    """The user `user_id` as they are now, for a socket that authenticated with a session; raises
    AuthenticationRefused when they were deactivated or deleted since."""
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    if user is None:
        raise AuthenticationRefused("this user is deactivated")
    return user


def list_projects_of(user) -> list[Project]:
    """Projects `user` may read: all for a superuser, else those they are a member of."""
    if user.is_superuser:
        return list(Project.objects.order_by("name"))
    return list(Project.objects.filter(memberships__user=user).order_by("name"))


@transaction.atomic
def do_ensure_local_admin(username: str = "admin") -> tuple[object, str | None]:
    """Create the local admin and the Default project on first start.

    Returns (user, password) where password is None when the admin already existed.
    """
    User = get_user_model()
    project = do_get_or_create_project()
    user = User.objects.filter(username=username).first()
    password = None
    if user is None:
        password = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(username=username, email="", password=password)
    do_add_member(project, user, Membership.Role.ADMIN)
    return user, password


# --- roles ---------------------------------------------------------------------------------------


class PermissionRefused(PermissionDenied):
    """The caller may read the project but their role does not allow this write (answered 403:
    JSON by the API views, the 403 page, with this message, where a page raises it)."""


def project_ids_for(user=None, token: ApiToken | None = None) -> list[int]:
    """The ids of the projects the caller reads: a token's own project (while its user may still
    read it: a member, or a superuser), a user's memberships."""
    if token is not None:
        return [token.project_id] if get_role(token.user, token.project_id) is not None else []
    if user is None or not user.is_authenticated:
        return []
    return [p.pk for p in list_projects_of(user)]


def get_ingest_project_id(user) -> int | None:
    """The id of the project a session user's new traces, uploads and OTLP exports go to: the
    first of their projects (by name) where they have WRITE_ROLE; None when there is none. What
    the ingestion rate counts a session's requests against (a token counts against its own)."""
    for project in list_projects_of(user):
        if has_role(user, project.pk, WRITE_ROLE):
            return project.pk
    return None


def get_role(user, project_id: int) -> str | None:
    """`user`'s role in the project: "viewer", "reviewer" or "admin"; "admin" for a superuser;
    None when they are not a member (callers answer 404 then, as for an unknown project)."""
    if user is None or not user.is_authenticated:
        return None
    if user.is_superuser:
        return Membership.Role.ADMIN
    return Membership.objects.filter(project_id=project_id, user=user).values_list("role", flat=True).first()


def has_role(user, project_id: int, needed: str) -> bool:
    """Whether `user`'s role in the project is at least `needed` (Membership.RANK); False for
    non-members. What pages use to show or disable a control (e.g. `can_write`)."""
    role = get_role(user, project_id)
    return role is not None and Membership.RANK[role] >= Membership.RANK[needed]


#: The role that every write of work or data needs: starting, cancelling and retrying counterfactual
#: and attribution jobs and training runs, and ingesting traces (API, upload page, OTLP). Viewers
#: only read; deleting needs the admin role.
WRITE_ROLE = Membership.Role.REVIEWER

#: Tooltip of the write controls that pages show disabled to a viewer.
READ_ONLY_HINT = "Viewers only read: this needs the reviewer or admin role in the project"


def check_role(user, project_id: int, needed: str, action: str = "this") -> str:
    """The caller's role when it is at least `needed`; raises PermissionRefused otherwise, naming
    `action` (e.g. "cancelling a run"), the role needed and the caller's."""
    role = get_role(user, project_id)
    if role is None or Membership.RANK[role] < Membership.RANK[needed]:
        allowed = " or ".join(r for r, rank in Membership.RANK.items() if rank >= Membership.RANK[needed])
        raise PermissionRefused(f"{action} needs the {allowed} role in the project (yours: {role or 'none'})")
    return role


# --- invitations and members ---------------------------------------------------------------------

INVITATION_DAYS = 7


def do_create_invitation(project: Project, role: str, created_by, email: str = "") -> tuple[Invitation, str]:
    """A sign-up link key for `project` and `role`, valid INVITATION_DAYS days; returns (row, raw
    key). Only the key's SHA-256 is stored. Raises ValueError on an unknown role."""
    if role not in Membership.RANK:
        raise ValueError(f"unknown role {role!r}")
    raw = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        project=project,
        role=role,
        key_hash=hash_token(raw),
        email=email,
        created_by=created_by,
        expires_at=timezone.now() + timedelta(days=INVITATION_DAYS),
    )
    return invitation, raw


def check_invitation(raw: str) -> Invitation | None:
    """The open invitation for `raw`, or None when unknown, used or expired."""
    return (
        Invitation.objects.select_related("project")
        .filter(key_hash=hash_token(raw), accepted_at__isnull=True, expires_at__gt=timezone.now())
        .first()
    )


@transaction.atomic
def do_accept_invitation(invitation: Invitation, user) -> Membership:
    """Make `user` a member with the invitation's role, or keep their role where it is higher
    (`do_add_member`: accepting never lowers a role), and mark the invitation used (once)."""
    updated = Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(
        accepted_at=timezone.now(), accepted_by=user
    )
    if not updated:
        raise ValueError("this invitation was already used")
    return do_add_member(invitation.project, user, invitation.role)


def _lock_memberships(membership: Membership) -> int:
    """Lock every membership row of `membership`'s project (in pk order, so two callers cannot
    deadlock) until the transaction ends; set `membership.role` to its current role and return
    the number of the project's other admins. On PostgreSQL a second admin change of the project
    waits here for the first to commit and then sees its result; on SQLite the IMMEDIATE
    transaction already holds the write lock. Raises ValueError when the membership was removed
    meanwhile."""
    rows = list(Membership.objects.select_for_update().filter(project_id=membership.project_id).order_by("pk"))
    current = next((row for row in rows if row.pk == membership.pk), None)
    if current is None:
        raise ValueError("this member was already removed from the project")
    membership.role = current.role
    return sum(1 for row in rows if row.role == Membership.Role.ADMIN and row.pk != membership.pk)


@transaction.atomic
def do_change_role(membership: Membership, role: str) -> Membership:
    """Set a member's role. Raises ValueError on an unknown role, when the member was removed
    meanwhile, or when it would leave the project without an admin (checked under a lock on the
    project's memberships, so two admins demoting each other at once leave one)."""
    if role not in Membership.RANK:
        raise ValueError(f"unknown role {role!r}")
    other_admins = _lock_memberships(membership)
    if membership.role == Membership.Role.ADMIN and role != Membership.Role.ADMIN and not other_admins:
        raise ValueError("a project needs at least one admin")
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def do_remove_member(membership: Membership) -> None:
    """Remove a member and revoke their tokens for the project. Raises ValueError when it would
    leave the project without an admin (checked under a lock on the project's memberships, as
    `do_change_role`) or when the member was already removed."""
    other_admins = _lock_memberships(membership)
    if membership.role == Membership.Role.ADMIN and not other_admins:
        raise ValueError("a project needs at least one admin")
    ApiToken.objects.filter(project=membership.project, user=membership.user, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    membership.delete()
