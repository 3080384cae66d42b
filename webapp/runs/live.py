"""The live protocol of `/ws/runs/<id>/` (DESIGN.md "Live protocol"), as pure functions.

The same framing as `/ws/traces/<id>/` (webapp.core.live), with a run's records:

- ``{"type": "snapshot", "seq": N, "run": {...}, "iterations": [...]}``: the run as of seq N.
- ``{"type": "delta", "seq": N, "run": {...}, "iterations": [...]}``: the run's summary (always
  whole: status, progress, best reward) and the iterations written after the previous seq,
  upserted by `iteration` number. A resume answer folds several writes into one delta.

client -> server: ``{"type": "resume", "seq": N}``. Invariant (tests/runs/test_live.py):
``apply_run_delta(snapshot(t0), delta_since(t0)) == snapshot(t1)``.
"""

from __future__ import annotations

import copy
from typing import Any


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
