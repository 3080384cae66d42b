"""Celery tasks of projects: the retention purge. Tasks take ids and re-read what they need."""

from celery import shared_task

from .datacare import do_delete_expired_traces
from .models import Project


@shared_task
def delete_expired_traces(project_id: int | None = None) -> dict[int, int]:
    """Delete traces older than their project's retention period (Celery beat runs this hourly,
    see CELERY_BEAT_SCHEDULE). With `project_id`, only that project. Returns {project id: deleted}."""
    ids = [project_id] if project_id is not None else list(
        Project.objects.filter(retention_days__isnull=False).values_list("pk", flat=True))
    return {pk: do_delete_expired_traces(pk) for pk in ids}
