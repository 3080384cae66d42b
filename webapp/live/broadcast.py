"""The only code that sends to channel groups (STYLE.md rule 3). Called after commit.

Every function here never raises: a channel layer that is down must not fail a write that has
committed; viewers catch up through `resume` (or a reload) when they reconnect.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

#: Deltas with more events than this travel as a reference; consumers read them from the database.
INLINE_EVENT_LIMIT = 2000


def trace_group(trace_id: int) -> str:
    return f"trace-{trace_id}"


def _send(trace_id: int, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(trace_group(trace_id), message)
    except Exception:  # noqa: BLE001 - a broken layer must not break the write path
        log.warning("could not send %s to the viewers of trace %s", message["type"], trace_id, exc_info=True)


def broadcast_trace_delta(trace_id: int, delta: dict[str, Any]) -> None:
    """Send batch `delta` (webapp.core.live format) to every viewer of the trace."""
    message: dict[str, Any] = {"type": "trace.delta", "seq": delta["seq"]}
    if len(delta.get("events", ())) <= INLINE_EVENT_LIMIT:
        message["delta"] = delta
    _send(trace_id, message)


def broadcast_trace_reset(trace_id: int, seq: int) -> None:
    """Tell viewers the trace was rebuilt at `seq`: each is sent a fresh snapshot."""
    _send(trace_id, {"type": "trace.reset", "seq": seq})


def broadcast_job(trace_id: int, job: dict[str, Any]) -> None:
    """Send a counterfactual job's state (`webapp.experiments.services.job_wire`) to the viewers of
    its trace; the job's state is also in the database for a reload."""
    _send(trace_id, {"type": "job.progress", "job": job})
