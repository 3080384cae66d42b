"""Deleting traces with what depends on them, and the retention purge.

What a deletion takes along is listed beforehand with `webapp.accounts.datacare.list_dependants`.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from webapp.accounts.models import Project

from .models import Trace

log = logging.getLogger(__name__)


@transaction.atomic
def do_delete_trace(trace) -> int:
    """Delete a trace with its events, edges, agents, labels, jobs, attributions and review;
    returns the number of rows deleted."""
    deleted, _ = trace.delete()
    return deleted


def do_delete_expired_traces(project_id: int, *, now=None) -> int:
    """Delete the project's traces created more than its retention period ago; returns how many.

    Re-reads the project (a task takes ids): a project deleted or without retention deletes nothing.
    Deletes trace by trace, each in its own transaction, so a long purge never holds one big lock.
    """
    project = Project.objects.filter(pk=project_id).first()
    if project is None or not project.retention_days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=project.retention_days)
    count = 0
    for trace in Trace.objects.filter(project_id=project.pk, created_at__lt=cutoff).order_by("id").iterator():
        do_delete_trace(trace)
        count += 1
    if count:
        log.info(
            "retention: deleted %d traces of project %s older than %d days", count, project.pk, project.retention_days
        )
    return count
