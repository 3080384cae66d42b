"""Settings, ASGI, URLs and the Celery app: glue only."""

from .celery import app as celery_app

__all__ = ["celery_app"]
