"""Deleting projects with what depends on them, and the retention period per project.

What a deletion takes along is listed before it happens (the confirm page) with Django's own
collector, the one the admin uses, so the list is what the database cascade will delete.
"""

from __future__ import annotations

from django.contrib.admin.utils import NestedObjects
from django.db import DEFAULT_DB_ALIAS, transaction

from .models import Project

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
