"""The Celery app: queues `default`, `rollouts-cpu`, `rollouts-gpu`, `training`."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")

app = Celery("swarmscope")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name) for name in ("default", "rollouts-cpu", "rollouts-gpu", "training")]
app.autodiscover_tasks()
