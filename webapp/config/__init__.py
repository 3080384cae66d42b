"""Settings, ASGI, URLs and the Celery app: glue only."""
