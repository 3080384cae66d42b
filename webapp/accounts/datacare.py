"""Deleting traces and projects with what depends on them, and the retention period per project.

What a deletion takes along is listed before it happens (the confirm page) with Django's own
collector, the one the admin uses, so the list is what the database cascade will delete.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.contrib.admin.utils import NestedObjects
from django.db import DEFAULT_DB_ALIAS, transaction
from django.utils import timezone

from .models import Project

log = logging.getLogger(__name__)

#: A century: longer means "keep", and larger numbers overflow the column on PostgreSQL.
MAX_RETENTION_DAYS = 36500


def list_dependants(obj) -> list[tuple[str, int]]:
    """What deleting `obj` deletes: [(verbose name plural, count)], `obj`'s own model first."""
    collector = NestedObjects(using=DEFAULT_DB_ALIAS)
    collector.collect([obj])
    counts = [(str(model._meta.verbose_name_plural), len(objs)) for model, objs in collector.model_objs.items()]
    own = str(type(obj)._meta.verbose_name_plural)
    return sorted(counts, key=lambda item: (item[0] != own, item[0]))


@transaction.atomic
def do_delete_trace(trace) -> int:
    """Delete a trace with its events, edges, agents, labels, jobs, attributions and review;
    returns the number of rows deleted."""
    deleted, _ = trace.delete()
    return deleted


@transaction.atomic
def do_delete_project(project: Project) -> int:
    """Delete a project with everything in it (traces, runs, memberships, tokens, review)."""
    deleted, _ = project.delete()
    return deleted


def do_set_retention(project: Project, days: int | None) -> Project:
    """Set the retention period in days (None keeps traces forever). Raises ValueError outside
    1..MAX_RETENTION_DAYS."""
    if days is not None and not 1 <= days <= MAX_RETENTION_DAYS:
        raise ValueError(f"retention must be from 1 to {MAX_RETENTION_DAYS} days (leave it empty to keep traces)")
    project.retention_days = days
    project.save(update_fields=["retention_days"])
    return project


def do_delete_expired_traces(project_id: int, *, now=None) -> int:
    """Delete the project's traces created more than its retention period ago; returns how many.

    Re-reads the project (a task takes ids): a project deleted or without retention deletes nothing.
    Deletes trace by trace, each in its own transaction, so a long purge never holds one big lock.
    """
    from webapp.traces.models import Trace  # traces depend on accounts, not the other way round

    project = Project.objects.filter(pk=project_id).first()
    if project is None or not project.retention_days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=project.retention_days)
    count = 0
    for trace in Trace.objects.filter(project_id=project.pk, created_at__lt=cutoff).order_by("id").iterator():
        do_delete_trace(trace)
        count += 1
    if count:
        log.info("retention: deleted %d traces of project %s older than %d days", count, project.pk,
                 project.retention_days)
    return count
