"""The cost pilot: a first what-if job's cap share measured on its own first chunk.

How far a model's re-generated turns run into the room their cap leaves differs from trace to trace
(bench/RESULTS.md, issue 29: SmolLM2-135M uses 0.33-0.39 of it on a hand-made chat, 0.63-0.77 on a
Who&When log, all of it on another), so a prior share (`costs.CAP_SHARE`, or the model's jobs on
other traces) misses a first job's tokens by up to 1.8x. Where no finished job of the model on the
trace says (`costs.cap_share`), the estimate of a what-if job starts a pilot on the backend's queue:
the job's own samples 0 .. P - 1 (P = SWARMSCOPE_COST_PILOT_SAMPLES, by default a chunk,
SWARMSCOPE_ROLLOUT_CHUNK; seeds seed .. seed + P - 1), sent as the job's first chunk sends them. Once
it is done, the estimate's shares are `costs.cap_share_of` of the pilot's own plan (recorded length,
at cap) and the server's usage of its requests, and the job that is then confirmed (same trace,
intervention, seed, backend settings) takes the pilot's samples as its first chunk (`reuse`: their
rewards, and their usage counted as the chunk's), so the pilot costs nothing a job would not send.

A pilot's state is kept in the cache (`CACHE_S`): under `key` {status: "queued" | "running" | "done" |
"failed", samples, started (epoch s: enqueued, then taken by the worker); done: seconds, usage
{requests, prompt_tokens, completion_tokens, ...}, plan {recorded_length, at_cap, turn_completions},
control and treated (P,) rewards; failed: reason, ended (epoch s)}.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache

from swarmscope.interventions import Intervention
from webapp.traces.models import Trace
from webapp.web.jobs import enqueue

#: Seconds a pilot's state is kept; a queued or running one older than RUNNING_S is taken for lost (its
#: worker died, or none serves its queue), a failed one older than FAILED_S is tried again.
CACHE_S = 7 * 24 * 3600
FAILED_S = 60
RUNNING_S = 30 * 60


def samples() -> int:
    """P, the pilot's samples (SWARMSCOPE_COST_PILOT_SAMPLES; 0 turns pilots off)."""
    return max(0, settings.SWARMSCOPE_COST_PILOT_SAMPLES)


def pilot_key(
    trace: Trace, n_events: int, backend: str, environment: dict, intervention: Intervention, seed: int
) -> str:
    """The cache key of the pilot of a job: its trace (and its size: a live trace grows), backend and
    its `environment()` (endpoint, model, sampling), intervention, seed and P."""
    identity = [trace.pk, n_events, backend, environment, intervention.to_dict(), seed, samples()]
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
    return f"swarmscope:cost-pilot:{digest}"


def state(key: str) -> dict[str, Any] | None:
    """The pilot's state under `key` (module docstring), None where there is none, it was lost (running
    for over RUNNING_S) or it failed over FAILED_S ago (the next estimate tries again: the server may
    be back)."""
    found = cache.get(key)
    if not found:
        return None
    now = time.time()
    if found["status"] in ("queued", "running") and now - found["started"] > RUNNING_S:
        return None
    if found["status"] == "failed" and now - found.get("ended", 0) > FAILED_S:
        return None
    return found


def start(key: str, trace: Trace, backend: str, queue: str, intervention: Intervention, seed: int) -> dict[str, Any]:
    """The pilot's state, the pilot enqueued on `queue` (the backend's) first where it has none (at
    most one pilot per key runs: `cache.add`; the task's body is `costs.do_run_pilot`)."""
    found = state(key)
    if found is not None:
        return found
    queued = {"status": "queued", "samples": samples(), "started": time.time()}
    if cache.get(key) is not None:
        cache.delete(key)  # a lost or failed pilot's state (`state` said None)
    if cache.add(key, queued, CACHE_S):
        args = (key, trace.pk, backend, intervention.to_dict(), seed)
        if not enqueue("webapp.counterfactuals.tasks.run_cost_pilot", *args, queue=queue):
            store(key, {**queued, "status": "failed", "reason": "the task queue could not be reached"})
    return state(key) or queued


def store(key: str, found: dict[str, Any]) -> dict[str, Any]:
    """Keep the pilot's state `found` under `key` (CACHE_S; a failed one with the time it `ended`);
    returns it."""
    if found["status"] == "failed":
        found = {**found, "ended": time.time()}
    cache.set(key, found, CACHE_S)
    return found


def reuse(job, backend, indices: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """The rewards (control, treated), each (P,), of the done pilot of `job` (a what-if job; its trace,
    backend name, intervention and seed, and `backend`'s environment) where `indices` are exactly its
    samples 0 .. P - 1, its usage added to `backend`'s client's (the chunk's usage: the pilot sent the
    chunk's requests) and its state dropped (one job takes it); None where there is no such pilot."""
    count = samples()
    trace, client = getattr(backend, "trace", None), getattr(backend, "client", None)
    if not count or indices != list(range(count)) or trace is None or client is None:
        return None  # not the pilot's samples, or not an LLM backend (no pilot: SwarmSim)
    intervention = Intervention.from_dict(job.intervention)
    key = pilot_key(job.trace, len(trace.events), job.backend, backend.environment(), intervention, job.seed)
    found = state(key)
    if not found or found["status"] != "done" or found["samples"] != count:
        return None
    usage = client.usage
    for name, value in found["usage"].items():
        setattr(usage, name, getattr(usage, name, 0) + value)
    cache.delete(key)
    return np.array(found["control"]), np.array(found["treated"])


def public(found: dict[str, Any] | None) -> dict[str, Any] | None:
    """What an estimate answer shows of a pilot's state: {status, samples, elapsed_s (since enqueued,
    or since the worker took it); done: seconds,
    turns, requests, prompt_tokens, completion_tokens; failed: reason}."""
    if found is None:
        return None
    shown: dict[str, Any] = {
        "status": found["status"],
        "samples": found["samples"],
        "elapsed_s": round(time.time() - found["started"], 1),
    }
    if found["status"] == "done":
        usage = found["usage"]
        shown.update(
            seconds=found["seconds"],
            turns=found["plan"]["turn_completions"],
            **{k: usage.get(k, 0) for k in ("requests", "prompt_tokens", "completion_tokens")},
        )
    elif found["status"] == "failed":
        shown["reason"] = found["reason"]
    return shown
