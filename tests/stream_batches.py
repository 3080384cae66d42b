"""A recorded trace cut into the batches a running swarm would have sent (`POST
/api/traces/<id>/events/` bodies), for tests that stream a real trace live."""

from __future__ import annotations

from typing import Any

from swarmscope import model as core


def stream_batches(trace: core.Trace, count: int) -> list[dict[str, Any]]:
    """`trace` as `count` batches `{"events", "edges", "agents", "labels"}` in event order (the
    native wire form): the agents ride with the first batch, each edge with the batch of its later
    end (an edge may name events of earlier batches, never of later ones), the labels with the last.
    Raises ValueError when `count` < 1 or the trace has fewer events than `count`."""
    events = trace.events
    if count < 1 or len(events) < count:
        raise ValueError(f"cannot cut {len(events)} events into {count} batches")
    size = -(-len(events) // count)
    batch_of = {e.id: i // size for i, e in enumerate(events)}
    batches: list[dict[str, Any]] = [
        {"events": [e.to_dict() for e in events[i * size : (i + 1) * size]], "edges": [], "agents": [], "labels": []}
        for i in range(-(-len(events) // size))
    ]
    batches[0]["agents"] = [a.to_dict() for a in trace.agents]
    for edge in trace.edges:
        batches[max(batch_of[edge.src], batch_of[edge.dst])]["edges"].append(edge.to_dict())
    batches[-1]["labels"] = [label.to_dict() for label in trace.labels]
    return batches
