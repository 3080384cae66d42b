"""Enqueueing Celery tasks by name: services enqueue through here and never import their app's
`tasks` module, which imports them (tasks call services, never the other way round)."""

from __future__ import annotations

from typing import Any

from celery import current_app


def enqueue(name: str, *args: Any, queue: str | None = None) -> None:
    """Send the task registered as `name` (its dotted path, e.g. "webapp.traces.tasks.derive_spans")
    with `args`, on `queue` or the default one; with CELERY_TASK_ALWAYS_EAGER it runs here, now.
    Raises KeyError for an unknown name and the broker's error when it cannot be reached."""
    tasks = current_app.tasks
    if name not in tasks:
        current_app.loader.import_default_modules()  # runs every app's `tasks` autodiscovery
    options = {"queue": queue} if queue else {}
    tasks[name].apply_async(args, **options)
