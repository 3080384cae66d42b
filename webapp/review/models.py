"""Team review of traces, events, attributions and runs: comments, votes, status, mistake labels,
and the activity feed that records all of it per project.

A comment's target is generic: `target_kind` (trace / event / attribution / run) and `target_id`
(the trace's, attribution's or run's primary key, or the event's id within `trace`). Every row
carries its `project`, so isolation is one filter; rows on a trace also carry `trace`, so deleting
the trace deletes its review.
"""

from django.conf import settings
from django.db import models
from django.db.models.signals import post_delete
from django.dispatch import receiver

from webapp.accounts.models import Project
from webapp.traces.models import Trace


class TargetKind(models.TextChoices):
    TRACE = "trace"
    EVENT = "event"
    ATTRIBUTION = "attribution"
    RUN = "run"


class Comment(models.Model):
    """A Markdown comment; `body_html` is its rendering, sanitised. Deleting keeps the row (replies
    stay in their thread) and blanks the body."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="comments")
    trace = models.ForeignKey(Trace, null=True, blank=True, on_delete=models.CASCADE, related_name="comments")
    target_kind = models.CharField(max_length=20, choices=TargetKind.choices)
    target_id = models.CharField(max_length=300)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="comments")
    body = models.TextField()
    body_html = models.TextField()
    mentions = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="mentioned_in")
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["project", "target_kind", "target_id"]),
            models.Index(fields=["trace", "created_at"]),
        ]


class Vote(models.Model):
    """One reviewer's agree/disagree on an attribution, with a reason; changeable."""

    class Value(models.TextChoices):
        AGREE = "agree"
        DISAGREE = "disagree"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="votes")
    attribution = models.ForeignKey("experiments.Attribution", on_delete=models.CASCADE, related_name="votes")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="votes")
    value = models.CharField(max_length=10, choices=Value.choices)
    reason = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["attribution", "user"], name="one_vote_per_reviewer")]


class TraceReview(models.Model):
    """The review status of a trace: open, in review, settled."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        IN_REVIEW = "in_review", "In review"
        SETTLED = "settled", "Settled"

    trace = models.OneToOneField(Trace, on_delete=models.CASCADE, related_name="review")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)


class MistakeLabel(models.Model):
    """One reviewer's answer to Who&When's question for a failed trace: which agent made the
    decisive mistake (`agent`) and at which step (`event_id`, the event of that step)."""

    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="mistake_labels")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mistake_labels")
    agent = models.CharField(max_length=300)
    event_id = models.CharField(max_length=300)
    reason = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace", "reviewer"], name="one_mistake_label_per_reviewer")]


class Activity(models.Model):
    """One line of a project's activity feed (also sent live to the project's websocket group)."""

    class Verb(models.TextChoices):
        COMMENTED = "commented"
        EDITED = "edited"
        DELETED = "deleted"
        VOTED = "voted"
        SET_STATUS = "set_status"
        LABELLED = "labelled"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="activities")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    verb = models.CharField(max_length=20, choices=Verb.choices)
    trace = models.ForeignKey(Trace, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    target_kind = models.CharField(max_length=20, choices=TargetKind.choices)
    target_id = models.CharField(max_length=300)
    data = models.JSONField(default=dict)
    mentions = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["project", "-id"])]


class Notification(models.Model):
    """An in-app notification of `user`: they were @mentioned in `comment` (by its author).
    One per user and comment (an edit that keeps the mention does not notify again); `read_at` is
    set when they mark it read. Goes with the comment, and so with its trace."""

    class Reason(models.TextChoices):
        MENTIONED = "mentioned"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    comment = models.ForeignKey(Comment, on_delete=models.CASCADE, related_name="notifications")
    reason = models.CharField(max_length=20, choices=Reason.choices, default=Reason.MENTIONED)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "comment"], name="one_notification_per_comment")]
        indexes = [models.Index(fields=["user", "read_at", "-id"], name="notification_user_unread")]


@receiver(post_delete, sender="runs.Run", dispatch_uid="review-run-delete")
def _delete_run_review(sender, instance, **kwargs):
    """Comments and activity on a run go with the run (runs have no foreign key from the review:
    the review's target is generic)."""
    Comment.objects.filter(project_id=instance.project_id, target_kind="run", target_id=str(instance.pk)).delete()
    Activity.objects.filter(project_id=instance.project_id, target_kind="run", target_id=str(instance.pk)).delete()
