"""Projects own every trace; members have a role; API tokens act for a user in one project."""

import hashlib
import secrets

from django.conf import settings
from django.db import models

TOKEN_PREFIX = "ssk_"


class Project(models.Model):
    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    retention_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="traces older than this many days are deleted; empty keeps them"
    )
    reward_score = models.CharField(
        max_length=200,
        blank=True,
        help_text="the evaluation score that is a trace's reward when imported or streamed "
        "(swarmscope.importers.scores); empty: a score named 'reward'",
    )

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        VIEWER = "viewer"
        REVIEWER = "reviewer"
        ADMIN = "admin"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user")]

    #: What each role may do, cumulative: viewers read, reviewers also review, admins also manage.
    RANK = {Role.VIEWER: 0, Role.REVIEWER: 1, Role.ADMIN: 2}


def hash_token(raw: str) -> str:
    """SHA-256 hex of a raw token: the only form stored."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class ApiToken(models.Model):
    """A bearer token for the REST API, OTLP endpoint and SDK; shown once, stored hashed."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=12)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    @staticmethod
    def new_raw_token() -> str:
        return TOKEN_PREFIX + secrets.token_urlsafe(32)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'token'})"


class Invitation(models.Model):
    """A sign-up link for one project and role; the raw key is in the link only, stored hashed.

    Used once: `accepted_at`/`accepted_by` record who signed up with it. Expires at `expires_at`.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=20, choices=Membership.Role.choices, default=Membership.Role.VIEWER)
    key_hash = models.CharField(max_length=64, unique=True)
    email = models.EmailField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
