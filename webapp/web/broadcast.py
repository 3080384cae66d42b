"""The only code that sends to channel groups (docs/architecture.md "Live protocol"). Called after commit.

Every function here never raises: a channel layer that is down must not fail a write that has
committed; viewers catch up through `resume` (or a reload) when they reconnect.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from .sockets import MAX_SOCKET_BYTES

log = logging.getLogger(__name__)

#: Deltas with more events than this travel as a reference; consumers read them from the database.
INLINE_EVENT_LIMIT = 2000


def trace_group(trace_id: int) -> str:
    return f"trace-{trace_id}"


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def _send_group(group: str, message: dict[str, Any]) -> None:
    try:
        layer = get_channel_layer()  # inside: building a layer can fail too
        if layer is None:
            return
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # noqa: BLE001 - a broken layer must not break the write path
        log.warning("could not send %s to the group %s", message["type"], group, exc_info=True)


def _send(trace_id: int, message: dict[str, Any]) -> None:
    _send_group(trace_group(trace_id), message)


def _delta_message(kind: str, delta: dict[str, Any]) -> dict[str, Any]:
    """A group message carrying `delta` as JSON text, encoded once here and forwarded as is by each
    viewer's consumer (`SequencedConsumer.forward_delta`), rather than decoded and re-encoded
    per viewer; past INLINE_EVENT_LIMIT events or MAX_SOCKET_BYTES of JSON, only its seq
    (consumers read the database, and refer the client to HTTP when it is too big for a socket).
    `at` (time.time() of the send) tells a consumer how far behind it is (coalescing)."""
    message: dict[str, Any] = {"type": kind, "seq": delta["seq"], "at": time.time()}
    if len(delta.get("events", ())) <= INLINE_EVENT_LIMIT:
        text = json.dumps(delta)
        if len(text) <= MAX_SOCKET_BYTES:
            message["text"] = text
    return message


def broadcast_trace_delta(trace_id: int, delta: dict[str, Any]) -> None:
    """Send batch `delta` (swarmscope.protocol format) to every viewer of the trace."""
    _send(trace_id, _delta_message("trace.delta", delta))


def broadcast_trace_seq(trace_id: int, seq: int) -> None:
    """Tell viewers the trace's delta `seq` was written, without it (a batch too big to build one
    for): each consumer reads what it lacks from the database."""
    _send(trace_id, {"type": "trace.delta", "seq": seq, "at": time.time()})


def broadcast_trace_reset(trace_id: int, seq: int) -> None:
    """Tell viewers the trace was rebuilt at `seq`: each is sent a fresh snapshot."""
    _send(trace_id, {"type": "trace.reset", "seq": seq})


def broadcast_trace_metrics(trace_id: int, message: dict[str, Any]) -> None:
    """Send a trace's recomputed metrics (`{"type": "metrics", "seq": N, "computed_metrics": {...}}`,
    webapp.traces.services.do_publish_metrics) to its viewers, encoded once here; they are also
    cached on the trace row for a reload and for a socket's resume."""
    _send(trace_id, {"type": "trace.metrics", "seq": message["seq"], "text": json.dumps(message)})


def broadcast_job(trace_id: int, job: dict[str, Any]) -> None:
    """Send a counterfactual job's state (`webapp.counterfactuals.wire.job_wire`) to the viewers of
    its trace; the job's state is also in the database for a reload."""
    _send(trace_id, {"type": "job.progress", "job": job})


def broadcast_run_delta(run_id: int, delta: dict[str, Any]) -> None:
    """Send a training run's `delta` (swarmscope.protocol format) to the viewers of `/ws/runs/<id>/`."""
    _send_group(run_group(run_id), _delta_message("run.delta", delta))


def run_list_group(project_id: int) -> str:
    return f"run-list-{project_id}"


def broadcast_run_list(project_id: int, delta: dict[str, Any]) -> None:
    """Send a runs-list delta (`{"type": "delta", "seq": N, "project": id, "runs": [run, ...]}`, N
    the newest run's id; webapp.training.services.get_run_list_delta_since) to the viewers of the
    project's runs list (`/ws/projects/<id>/runs/`): a run was created (its later changes travel
    on `/ws/runs/<id>/`)."""
    _send_group(run_list_group(project_id), _delta_message("run_list.delta", delta))


def project_group(project_id: int) -> str:
    return f"project-{project_id}"


def broadcast_project_activity(project_id: int, activity: dict[str, Any]) -> None:
    """Send a review activity (`webapp.review.feed.activity_wire`) to the project's viewers
    (`/ws/projects/<id>/`) as a delta numbered by the activity's id; it is also in the database
    for the feed and for `resume`."""
    delta = {"type": "delta", "seq": activity["id"], "project": project_id, "activities": [activity]}
    _send_group(project_group(project_id), _delta_message("review.activity", delta))


def notification_group(user_id: int) -> str:
    return f"notifications-{user_id}"


def broadcast_notification(user_id: int, seq: int) -> None:
    """Tell the user's open pages (`/ws/users/<id>/notifications/`) that their notification `seq`
    was created; each socket reads the unread count and the new rows from the database."""
    _send_group(notification_group(user_id), {"type": "notification.created", "seq": seq, "at": time.time()})


def broadcast_notifications_read(user_id: int) -> None:
    """Tell the user's open pages that some of their notifications were marked read: each socket
    sends a fresh snapshot (the unread count)."""
    _send_group(notification_group(user_id), {"type": "notification.read"})


def trace_list_group(project_id: int) -> str:
    return f"trace-list-{project_id}"


def broadcast_trace_list(project_id: int, delta: dict[str, Any]) -> None:
    """Send a trace-list delta (`{"type": "delta", "seq": N, "project": id, "traces": [row, ...]}`,
    webapp.traces.list_consumer) to the viewers of the project's trace list
    (`/ws/projects/<id>/traces/`); each row is also in the database for a reload and for `resume`."""
    _send_group(trace_list_group(project_id), _delta_message("trace_list.delta", delta))
