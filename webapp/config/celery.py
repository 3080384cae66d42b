"""The Celery app: queues `default`, `rollouts-cpu`, `rollouts-gpu`, `training`."""

import logging
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


class QuietHousekeeping(logging.Filter):
    """Drops the INFO lines of the beat's periodic housekeeping tasks (the app's beat_schedule,
    CELERY_BEAT_SCHEDULE: sent, received, succeeded; requeue-lost-runs alone wrote 3 lines every 15 s
    to `make run`'s console); their warnings and errors, and every other task's lines, pass."""

    @property
    def tasks(self) -> set[str]:
        """The periodic tasks' names (read when needed: the app's configuration loads lazily)."""
        return {entry["task"] for entry in (app.conf.beat_schedule or {}).values()}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        message = record.getMessage()
        return not any(task in message for task in self.tasks)


HOUSEKEEPING = QuietHousekeeping()
for _logger in ("celery.beat", "celery.worker.strategy", "celery.app.trace"):
    logging.getLogger(_logger).addFilter(HOUSEKEEPING)
