"""JSON forms of counterfactual jobs and attributions: what the API answers and the trace's
websocket broadcasts (`webapp.web.broadcast.broadcast_job`)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from .models import Attribution, CounterfactualJob


def attribution_wire(attribution: Attribution) -> dict[str, Any]:
    """The API's form of a stored attribution."""
    return {
        "id": attribution.pk,
        "trace": attribution.trace_id,
        "job": attribution.job_id,
        "target": attribution.target,
        "intervention": attribution.intervention,
        "method": attribution.method,
        "estimate": attribution.estimate,
        "ci_low": attribution.ci_low,
        "ci_high": attribution.ci_high,
        "n_rollouts": attribution.n_rollouts,
        "backend": attribution.backend,
        "seed": attribution.seed,
        "environment": attribution.environment,
        "code_version": attribution.code_version,
        "created_at": attribution.created_at.isoformat(),
    }


def usage_wire(job: CounterfactualJob) -> dict[str, Any]:
    """A job's server usage: `requests`, `prompt_tokens`, `cached_tokens` (prompt tokens the
    server's prefix cache served), `completion_tokens`, `truncated` (completions cut at max_tokens),
    `retries` (tries after a failed one): counts, each None for a backend that reports no usage
    (SwarmSim); `cache_hit_rate` = cached_tokens / prompt_tokens (None without prompt tokens);
    `wall_s`: seconds from the first chunk's start to the finish (to now while active; None before
    it starts)."""
    usage = job.usage or {}

    def count(key: str) -> int | None:
        return int(usage.get(key, 0)) if usage else None

    prompt, cached = count("prompt_tokens"), count("cached_tokens")
    wall_s = None
    if job.started_at is not None:
        end = job.finished_at or timezone.now()
        wall_s = round(max(0.0, (end - job.started_at).total_seconds()), 3)
    return {
        "requests": count("requests"),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "completion_tokens": count("completion_tokens"),
        "cache_hit_rate": cached / prompt if prompt and cached is not None else None,
        "truncated": count("length_cut"),
        "retries": count("retries"),
        "wall_s": wall_s,
    }


def job_wire(job: CounterfactualJob) -> dict[str, Any]:
    """The API's and the websocket's form of a job: progress (`done` of `total` samples) and, once
    done, `result` (the attribution), `samples` (per-sample rewards) and the branch trace of sample 0
    with the URL that compares it side by side with the original; `usage` (`usage_wire`) all along,
    beside `estimate`, the cost estimate the job was confirmed with (None where none was needed)."""
    wire: dict[str, Any] = {
        "id": job.pk,
        "trace": job.trace_id,
        "status": job.status,
        "intervention": job.intervention,
        "backend": job.backend,
        "n_samples": job.n_samples,
        "epsilon": job.epsilon,
        "seed": job.seed,
        "done": job.done_count,
        "total": job.n_samples,
        "error": job.error,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "result": None,
        "samples": [],
        "branch_trace": None,
        "compare_url": None,
        "kind": job.kind,
        "method": job.method,
        "players": len(job.players),
        "player_kind": job.player_kind,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "usage": usage_wire(job),
        "estimate": job.estimate or None,
    }
    if job.kind == CounterfactualJob.ATTRIBUTION:
        wire["results"] = (
            [attribution_wire(a) for a in job.attributions.order_by("-estimate", "-ci_low", "target")]
            if job.status == CounterfactualJob.DONE
            else []
        )
        return wire
    if job.status == CounterfactualJob.DONE:
        attribution = Attribution.objects.filter(job=job).first()
        wire["result"] = attribution_wire(attribution) if attribution else None
        samples = list(
            job.samples.order_by("index").values(
                "index", "seed", "control_reward", "intervention_reward", "branch_trace_id"
            )
        )
        wire["samples"] = [
            {
                "index": s["index"],
                "seed": s["seed"],
                "control": s["control_reward"],
                "intervention": s["intervention_reward"],
            }
            for s in samples
        ]
        branch = next((s["branch_trace_id"] for s in samples if s["branch_trace_id"]), None)
        if branch:
            wire["branch_trace"] = branch
            wire["compare_url"] = f"/traces/compare/?left={job.trace_id}&right={branch}"
    return wire


def job_summary_wire(job: CounterfactualJob) -> dict[str, Any]:
    """A job's line in the trace's history: what ran, how far and at what server usage
    (`usage_wire`) beside its confirmed `estimate`, without samples or results; `url` is the job's
    full form (`job_wire`)."""
    return {
        "id": job.pk,
        "trace": job.trace_id,
        "kind": job.kind,
        "status": job.status,
        "method": job.method,
        "player_kind": job.player_kind if job.kind == CounterfactualJob.ATTRIBUTION else None,
        "players": len(job.players),
        "intervention": job.intervention,
        "backend": job.backend,
        "n_samples": job.n_samples,
        "done": job.done_count,
        "total": job.n_samples,
        "seed": job.seed,
        "error": job.error,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "usage": usage_wire(job),
        "estimate": job.estimate or None,
        "url": f"/api/jobs/{job.pk}/",
    }
