"""The live protocol (docs/architecture.md "Live protocol") as pure functions: applying deltas.

Messages (JSON), server -> client:

- ``{"type": "snapshot", "seq": N, "trace": {...}, "agents": [...], "events": [...],
  "edges": [...], "labels": [...]}``: the whole trace as of sequence number N.
- ``{"type": "delta", "seq": N, "agents": [...], "events": [...], "edges": [...],
  "labels": [...]}``: what batch N added or changed. Events and agents are upserted by id/name
  (an event re-sent with its `t_end` replaces the open one); edges and labels are appended.
  A resume answer may fold several batches into one delta whose `seq` is the latest.
- ``{"type": "error", "message": "..."}``: a bad client message; with ``"code":
  "snapshot_too_large", "seq": N`` the referral of a snapshot or catch-up delta too big for a
  websocket message (webapp.web.sockets.MAX_SOCKET_BYTES): the client loads the state over HTTP
  and connects with ``?seq=N``.
- ``{"type": "job", "job": {...}}`` (the trace socket, no seq): a counterfactual job's progress.

client -> server: ``{"type": "resume", "seq": N}`` after a gap or a reconnect: the server answers
with one delta holding everything after N (or a snapshot when N is unknown).

Every wire record carries the `seq` of the batch that last wrote it, so "everything after N" is a
filter on stored rows, and `apply_delta(snapshot(t0), delta(t0..t1)) == snapshot(t1)`.

`/ws/runs/<id>/` uses the same framing with a run's records:

- ``{"type": "snapshot", "seq": N, "run": {...}, "iterations": [...]}``
- ``{"type": "delta", "seq": N, "run": {...}, "iterations": [...]}``: the run's summary (always
  whole) and the iterations written after the previous seq, upserted by `iteration` number.

`/ws/projects/<id>/` (the review feed) too, numbered by Activity ids (a project's seqs have holes):

- ``{"type": "snapshot", "seq": N, "project": id, "activities": [...]}``: the recent activity.
- ``{"type": "delta", "seq": N, "project": id, "activities": [...]}``: activities after the
  previous seq, oldest first (appended; the client applies each).

The JSON Schemas of every message are in swarmscope.protocol_schema.
"""

from __future__ import annotations

import copy
from typing import Any

COLLECTIONS = ("agents", "events", "edges", "labels")


def _key(collection: str, record: dict[str, Any]) -> Any:
    if collection == "events":
        return record["id"]
    if collection == "agents":
        return record["name"]
    if collection == "edges":
        return (record["src"], record["dst"], record["type"])
    return (record.get("key"), record.get("event_id"), record.get("agent"), repr(record.get("value")))


def apply_delta(snapshot: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """Return a new snapshot: `snapshot` with `delta` applied (upsert by key), `seq` advanced.

    Raises ValueError when the delta is older than the snapshot (a replay).
    """
    if delta["seq"] < snapshot["seq"]:
        raise ValueError(f"delta seq {delta['seq']} is older than snapshot seq {snapshot['seq']}")
    result = copy.deepcopy(snapshot)
    for collection in COLLECTIONS:
        records = result.setdefault(collection, [])
        index = {_key(collection, r): i for i, r in enumerate(records)}
        for record in delta.get(collection, []):
            position = index.get(_key(collection, record))
            if position is None:
                index[_key(collection, record)] = len(records)
                records.append(record)
            else:
                records[position] = record
    result["seq"] = delta["seq"]
    return result


def canonical(snapshot: dict[str, Any]) -> dict[str, Any]:
    """`snapshot` with every collection sorted by key, for comparing two snapshots."""
    result = {k: v for k, v in snapshot.items() if k not in COLLECTIONS}
    for collection in COLLECTIONS:
        result[collection] = sorted(snapshot.get(collection, []), key=lambda r: repr(_key(collection, r)))
    return result


def apply_run_delta(snapshot: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """A new snapshot: `snapshot` with `delta` applied. Raises ValueError on a delta older than it."""
    if delta["seq"] < snapshot["seq"]:
        raise ValueError(f"delta seq {delta['seq']} is older than snapshot seq {snapshot['seq']}")
    result = copy.deepcopy(snapshot)
    result["run"] = copy.deepcopy(delta["run"])
    index = {it["iteration"]: i for i, it in enumerate(result["iterations"])}
    for record in delta.get("iterations", []):
        position = index.get(record["iteration"])
        if position is None:
            index[record["iteration"]] = len(result["iterations"])
            result["iterations"].append(copy.deepcopy(record))
        else:
            result["iterations"][position] = copy.deepcopy(record)
    result["iterations"].sort(key=lambda it: it["iteration"])
    result["seq"] = delta["seq"]
    return result
