"""The Celery app: queues `default`, `rollouts-cpu`, `rollouts-gpu`, `training`."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")

app = Celery("swarmscope")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name) for name in ("default", "rollouts-cpu", "rollouts-gpu", "training")]
#: A worker's "Task ... succeeded: <result>" line shows at most this many characters of the result
#: (Celery's default, 1024, fills `make run`'s console with job summaries).
TASK_RESULT_LOG_CHARS = 160
app.Task.resultrepr_maxsize = TASK_RESULT_LOG_CHARS
app.autodiscover_tasks()
