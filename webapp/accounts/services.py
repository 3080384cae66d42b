"""Writes and checks for projects, memberships and API tokens (`check_*` validate, `do_*` write)."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from .models import ApiToken, Membership, Project, hash_token

DEFAULT_PROJECT = "Default"


def do_get_or_create_project(name: str = DEFAULT_PROJECT) -> Project:
    project, _ = Project.objects.get_or_create(name=name, defaults={"slug": slugify(name) or "project"})
    return project


def do_add_member(project: Project, user, role: str = Membership.Role.ADMIN) -> Membership:
    membership, _ = Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    return membership


def do_create_token(user, project: Project, name: str = "") -> tuple[ApiToken, str]:
    """Create a token; returns (row, raw token). The raw token is never stored or shown again."""
    raw = ApiToken.new_raw_token()
    token = ApiToken.objects.create(user=user, project=project, name=name, prefix=raw[:10],
                                    token_hash=hash_token(raw))
    return token, raw


def do_revoke_token(token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def check_token(raw: str) -> ApiToken | None:
    """The live token for `raw` (marking its use), or None when unknown or revoked."""
    token = (ApiToken.objects.select_related("project", "user")
             .filter(token_hash=hash_token(raw), revoked_at__isnull=True).first())
    if token is not None:
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 30:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
    return token


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
