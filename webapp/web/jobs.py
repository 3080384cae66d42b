"""Enqueueing Celery tasks by name: services enqueue through here and never import their app's
`tasks` module, which imports them (tasks call services, never the other way round).

Enqueueing happens after commit (`transaction.on_commit`), when the write it follows is already
stored: a broker that cannot be reached (Redis down or restarting) must not turn that committed
write into a 500, nor make a client's retry create the work twice. So `enqueue` never raises for
the broker: it logs and returns False, and the work stays discoverable in the database for the
periodic sweeps to send again (docs/architecture.md "Job durability"): counterfactual jobs stay
`queued` with their heartbeat and `reap_stale_jobs` re-queues their missing chunks; training runs
stay `queued` and `reap_stale_runs` re-sends them; OTLP traces keep `spans_pending` for
`derive_pending_spans`; metrics are recomputed on the next write or read.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import current_app
from django.utils import timezone

log = logging.getLogger(__name__)


def enqueue(name: str, *args: Any, queue: str | None = None, countdown: float | None = None) -> bool:
    """Send the task registered as `name` (its dotted path, e.g. "webapp.traces.tasks.derive_spans")
    with `args`, on `queue` or the default one, to run `countdown` seconds from now (default: at
    once); with CELERY_TASK_ALWAYS_EAGER it runs here, now.
    Returns whether it was sent. Raises KeyError for an unknown name (a bug); a broker that cannot
    be reached, or fails the publish, is logged and answered False (see the module docstring)."""
    tasks = current_app.tasks
    if name not in tasks:
        current_app.loader.import_default_modules()  # runs every app's `tasks` autodiscovery
    task = tasks[name]
    options: dict[str, Any] = {"queue": queue} if queue else {}
    if countdown:
        options["countdown"] = countdown
    try:
        task.apply_async(args, **options)
    except Exception:  # noqa: BLE001 - any broker error (kombu OperationalError, OSError, redis errors)
        log.error(
            "could not enqueue %s%r on %s; left for the sweeps to send again",
            name,
            args,
            queue or "default",
            exc_info=True,
        )
        return False
    return True


#: A key the sweeps keep in a Redis broker: it shares the fate of the queued messages (a restart
#: without persistence, a flush drops both), so its absence says that sent messages may be gone.
BROKER_MARKER = "swarmscope:broker-marker"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _redis_broker(action):
    """`action(client)` on the broker's Redis client (kombu's redis transport), or None where the
    broker is not Redis, tasks run here, or it cannot be reached (logged)."""
    if current_app.conf.task_always_eager:
        return None
    try:
        with current_app.connection_for_write() as connection:
            if connection.transport.driver_type != "redis":
                return None
            connection.ensure_connection(max_retries=1)
            return action(connection.default_channel.client)
    except Exception:  # noqa: BLE001 - any broker error, as in `enqueue`
        log.warning("could not reach the broker's Redis", exc_info=True)
        return None


def mark_broker(sent_at: datetime) -> None:
    """Mark a Redis broker with `sent_at` (a moment just before a send whose loss the sweeps must
    notice), unless a mark already stands (SET NX): the marker holds when the broker's current data
    began to be written, and goes with its messages (a restart without persistence, a flush)."""
    micros = (sent_at - EPOCH) // timedelta(microseconds=1)  # exact, as the database stores times
    _redis_broker(lambda client: client.set(BROKER_MARKER, str(micros), nx=True))


def broker_lost_before() -> datetime | None:
    """The moment before which every message sent to a Redis broker is lost: now where BROKER_MARKER
    is gone (it restarted without persistence or was flushed), else the marker's time (`mark_broker`:
    what was sent before the first send into the broker's current data went with the previous data;
    a send around that moment may be counted lost, and a duplicate is harmless). None where that cannot
    be known (not Redis, unreachable). Times are the sending processes' clocks (keep hosts in sync)."""
    marker = _redis_broker(lambda client: client.get(BROKER_MARKER) or b"")
    if marker is None:
        return None
    if marker == b"":
        return timezone.now()
    try:
        return EPOCH + timedelta(microseconds=int(marker))
    except (ValueError, OverflowError):  # not a time of `mark_broker`'s: none known
        return None


def consuming_queues(timeout: float = 2.0) -> set[str] | None:
    """Names of the queues that some live worker consumes: Celery's `inspect().active_queues()`, a
    broadcast each worker answers within `timeout` seconds. None where that cannot be known: tasks
    run here (CELERY_TASK_ALWAYS_EAGER), the broker cannot be reached, or no worker answered at all
    (then nothing runs the periodic sweeps either, and a job is not failed for a whole outage)."""
    if current_app.conf.task_always_eager:
        return None
    try:
        answers = current_app.control.inspect(timeout=timeout).active_queues()
    except Exception:  # noqa: BLE001 - any broker error, as in `enqueue`
        log.warning("could not ask the workers which queues they consume", exc_info=True)
        return None
    if not answers:
        return None
    return {queue["name"] for queues in answers.values() for queue in queues or ()}
