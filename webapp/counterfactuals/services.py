"""Counterfactual jobs: request, run in chunks, record samples, finish with an attribution.
(Over 500 lines: the jobs' one write path, from request to the stored attribution.)

`request_counterfactual` validates and stores a job and enqueues its chunks on the backend's queue;
`do_run_chunk` (the body of the Celery task) runs the chunk's missing paired samples and records
them with `do_record_samples` (idempotent by (job, index)), adding the chunk's server usage to
the job's (`add_usage`); the job finishes (`do_finish_job`) when
its samples are all stored, or, with ε, when the 95 % interval of Δ is narrower than ε (and not of
zero width, and over at least 16 samples: `swarmscope.credit.epsilon_met`). Δ comes from
`swarmscope.credit.paired_effect` over the stored samples. `reap_stale_jobs` re-queues the
missing chunks of jobs whose heartbeat stopped (docs/architecture.md, "Job durability"). Every state
change is broadcast after commit (`webapp.web.broadcast.broadcast_job`, in the form of `wire.job_wire`).
Cost estimates are in `costs`.

Rollout backends are classes named by dotted paths in `SWARMSCOPE_ROLLOUT_BACKENDS`, loaded here
only. A backend class has a `queue` (Celery queue name) and `from_trace(core trace)` (raises
ValueError for a trace it cannot re-run); an instance has `check(intervention)` (raises
InterventionError), `paired(intervention, seeds (N,), traces=bool)` -> object with `control` and
`treated` (N,) rewards and `branches` (core traces, when asked), and `environment()` -> JSON dict
of what re-runs it; an LLM backend also has `usage()` -> {count name: int}, the server's usage of
every request the instance sent (trainer.rollout.chat.Usage). `trainer.rollout.sim.SimRollout` is
the reference.
"""

from __future__ import annotations

import functools
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from swarmscope.credit import (
    Rollout,
    coalition_game,
    design_size,
    epsilon_met,
    from_samples,
    kernel_shap,
    leave_one_out,
    paired_effect,
    play_chunk,
    shapley_2additive,
    shapley_permutation,
)
from swarmscope.interventions import Intervention, InterventionError, check_intervention
from swarmscope.model import Trace as CoreTrace
from swarmscope.otlp_export import iter_otlp_json, origin_ns, to_otlp_json
from webapp.traces.ingest import do_ingest
from webapp.traces.models import Trace
from webapp.traces.services import StoredSpanSource, core_trace_header, forget_computed_metrics, to_core_trace
from webapp.web.broadcast import broadcast_job
from webapp.web.jobs import consuming_queues, enqueue

from . import capabilities, pilot
from .models import Attribution, CounterfactualJob, RolloutSample
from .wire import attribution_wire, job_wire

log = logging.getLogger(__name__)

#: Most paired samples one job may request.
MAX_SAMPLES = 4096
#: The counts of a backend's `usage()` (trainer.rollout.chat.Usage): a new job on a backend that
#: reports usage starts with each at 0.
USAGE_KEYS = ("requests", "prompt_tokens", "cached_tokens", "completion_tokens", "length_cut", "retries")
METHOD = "paired_loo"


@dataclass(frozen=True)
class Estimator:
    """One estimator of "Attribute this trace" (swarmscope.credit), for P players: `rollouts(P)`
    per sample; `counted(P)` of them counted by each stored attribution (as the estimator counts);
    `seeds(P)` consecutive seeds per sample (sample i plays seeds seed + i seeds(P) ..)."""

    function: Any
    method: str
    rollouts: Any
    counted: Any
    seeds: Any = lambda players: 1


#: Request name -> Estimator.
ESTIMATORS = {
    "loo": Estimator(leave_one_out, "paired_loo", lambda p: p + 1, lambda p: 2),
    "shapley": Estimator(shapley_permutation, "shapley_permutation_antithetic", lambda p: 2 * p, lambda p: 2 * p),
    "kernelshap": Estimator(kernel_shap, "kernel_shap_paired", lambda p: 4, lambda p: 4),
    "shapley2": Estimator(
        shapley_2additive, "shapley_2additive", lambda p: 2 * design_size(p), lambda p: 2 * design_size(p), design_size
    ),
}


class JobRequestError(ValueError):
    """A counterfactual request that cannot run (HTTP 400); `field` names the offending field."""

    def __init__(self, message: str, field: str):
        self.message, self.field = message, field
        super().__init__(f"field {field!r}: {message}")


@dataclass(frozen=True)
class SampleResult:
    """One paired sample as a backend produced it: rewards at `seed`, and its branch trace (stored);
    `values` an attribution sample's player values."""

    index: int
    seed: int
    control_reward: float | None
    intervention_reward: float | None
    branch_trace: Trace | None = None
    values: list[float] | None = None


@functools.cache
def code_version() -> str:
    """The git commit of this checkout (read once per process), else $SWARMSCOPE_CODE_VERSION or 'unknown'."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("SWARMSCOPE_CODE_VERSION", "unknown")


def get_backend_class(name: str):
    """The backend class `name` of SWARMSCOPE_ROLLOUT_BACKENDS. Raises JobRequestError for an unknown name."""
    path = settings.SWARMSCOPE_ROLLOUT_BACKENDS.get(name) if isinstance(name, str) else None
    if path is None:
        raise JobRequestError(
            f"unknown backend {name!r}; one of {sorted(settings.SWARMSCOPE_ROLLOUT_BACKENDS)}", "backend"
        )
    return import_string(path)


def _backend(job: CounterfactualJob):
    """The job's backend instance, built from its trace."""
    return import_string(job.backend_path).from_trace(to_core_trace(job.trace))


#: Seconds between a running chunk's checks that its job is still active (`_stop_when_inactive`).
CANCEL_POLL_S = 2.0


@contextmanager
def _stop_when_inactive(job: CounterfactualJob, backend) -> Iterator[None]:
    """While the body runs, a thread checks every CANCEL_POLL_S seconds that `job` is still queued or
    running and, once it is not (cancelled, failed), makes the backend's LLM client refuse its next
    request (`ChatClient.should_stop`: `Cancelled`), so a cancel stops a running chunk within a
    request, not after it. Backends without a client (SwarmSim) run on unchanged."""
    client = getattr(backend, "client", None)
    if client is None or not hasattr(client, "should_stop"):
        yield
        return
    inactive, done = threading.Event(), threading.Event()

    def poll() -> None:
        try:
            while not done.wait(CANCEL_POLL_S):
                status = CounterfactualJob.objects.filter(pk=job.pk).values_list("status", flat=True).first()
                if status is not None and status not in CounterfactualJob.ACTIVE:  # None: not visible here
                    inactive.set()
                    return
        finally:
            connection.close()  # this thread's own database connection

    client.should_stop = inactive.is_set
    watcher = threading.Thread(target=poll, name=f"job-{job.pk}-cancel", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def initial_usage(backend_class) -> dict[str, int]:
    """A new job's `usage`: every USAGE_KEYS count at 0 for a backend that reports the server's
    usage (it has `usage()`), else {} (SwarmSim: no server, no usage)."""
    return dict.fromkeys(USAGE_KEYS, 0) if callable(getattr(backend_class, "usage", None)) else {}


def _chunk_usage(backend) -> dict[str, int] | None:
    """The server's usage of every request `backend` (one chunk's instance) sent, or None for a
    backend without `usage()` or none built."""
    usage = getattr(backend, "usage", None)
    return usage() if callable(usage) else None


def add_usage(total: dict[str, Any], usage: dict[str, Any] | None) -> dict[str, Any]:
    """`total` with every integer count of `usage` added (a new dict; None adds nothing). The
    caller holds the job row's lock (`select_for_update`), so concurrent chunks add, never overwrite."""
    summed = dict(total)
    for key, value in (usage or {}).items():
        if isinstance(value, int) and not isinstance(value, bool):
            summed[key] = int(summed.get(key, 0)) + value
    return summed


def _notify(job: CounterfactualJob) -> None:
    """Broadcast the job's state to the viewers of its trace, after commit."""
    transaction.on_commit(lambda: broadcast_job(job.trace_id, job_wire(CounterfactualJob.objects.get(pk=job.pk))))


# --- requesting --------------------------------------------------------------------------------


def check_int(value: Any, field: str, low: int, high: int) -> int:
    """`value` if it is an integer (not a bool) in [low, high], else JobRequestError naming `field`."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise JobRequestError(f"must be an integer in [{low}, {high}]", field)
    return value


def check_epsilon(epsilon: Any) -> None:
    """Raise JobRequestError naming `epsilon` unless it is None or a number in (0, float max]."""
    if epsilon is not None and (
        isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0 < epsilon <= sys.float_info.max
    ):
        raise JobRequestError("must be a positive number (reward units)", "epsilon")


def request_counterfactual(
    trace: Trace,
    intervention: Intervention | dict,
    n: int,
    backend: str = "sim",
    seed: int = 0,
    epsilon: float | None = None,
    estimate: dict[str, Any] | None = None,
) -> CounterfactualJob:
    """Create a job of `n` paired samples (2 <= n <= MAX_SAMPLES; with `epsilon` > 0, n is the
    cap) of `intervention` on `trace` with `backend`, seeds seed .. seed + n - 1, and enqueue its
    chunks after commit; `estimate`: the cost estimate it was confirmed with, kept on the job
    (costs.job_estimate). Raises JobRequestError (naming the field) for a bad number, an unknown
    backend, a malformed intervention, one that does not fit the trace, or a trace the backend
    cannot re-run."""
    n = check_int(n, "n", 2, MAX_SAMPLES)
    seed = check_int(seed, "seed", 0, 2**62)
    check_epsilon(epsilon)
    backend_class = get_backend_class(backend)
    try:
        if not isinstance(intervention, Intervention):
            intervention = Intervention.from_dict(intervention)
        core_trace = to_core_trace(trace)
        check_intervention(core_trace, intervention)
        check_backend_runs(trace, backend, core_trace)
        backend_class.from_trace(core_trace).check(intervention)
    except JobRequestError:
        raise
    except InterventionError as exc:
        raise JobRequestError(exc.message, f"intervention.{exc.field}") from exc
    except ValueError as exc:
        raise JobRequestError(cannot_rerun_text(backend, exc), "backend") from exc
    with transaction.atomic():
        job = CounterfactualJob.objects.create(
            trace=trace,
            intervention=intervention.to_dict(),
            backend=backend,
            backend_path=settings.SWARMSCOPE_ROLLOUT_BACKENDS[backend],
            n_samples=n,
            epsilon=None if epsilon is None else float(epsilon),
            seed=seed,
            heartbeat_at=timezone.now(),
            usage=initial_usage(backend_class),
            estimate=estimate or {},
        )
        _enqueue_missing(job)
        _notify(job)
    return job


def request_attribution(
    trace: Trace,
    method: str,
    budget: int,
    backend: str = "sim",
    seed: int = 0,
    players: str = CounterfactualJob.MESSAGES,
    estimate: dict[str, Any] | None = None,
) -> CounterfactualJob:
    """Create an "Attribute this trace" job: credit for every player of `trace` by removal, with
    the estimator `method` of ESTIMATORS and at most `budget` rollouts (its samples: budget //
    rollouts per sample, at least 2, at most MAX_SAMPLES), seeds (and the estimator's sampling
    seed) from `seed`; enqueue its chunks after commit. `players`: `messages` (every message
    event, each removed alone) or `agents` (every agent that sends a message, each removed with all
    its events: `Intervention("remove", agents=(name,))`, stored as target `agent:<name>`).
    `estimate`: the cost estimate it was confirmed with. Raises JobRequestError naming the field."""
    names, n, _ = check_attribution(trace, method, budget, backend, seed, players)
    with transaction.atomic():
        job = CounterfactualJob.objects.create(
            trace=trace,
            kind=CounterfactualJob.ATTRIBUTION,
            method=method,
            players=names,
            player_kind=players,
            intervention={"kind": "remove"},
            backend=backend,
            backend_path=settings.SWARMSCOPE_ROLLOUT_BACKENDS[backend],
            n_samples=n,
            seed=seed,
            heartbeat_at=timezone.now(),
            usage=initial_usage(get_backend_class(backend)),
            estimate=estimate or {},
        )
        _enqueue_missing(job)
        _notify(job)
    return job


def check_attribution(
    trace: Trace,
    method: Any,
    budget: Any,
    backend: Any = "sim",
    seed: Any = 0,
    players: Any = CounterfactualJob.MESSAGES,
) -> tuple[list[str], int, Any]:
    """Validate an "Attribute this trace" request (`request_attribution`): its players (message
    event ids or agent names), its number of samples n, and the backend instance that will run it.
    Raises JobRequestError naming the field."""
    if not isinstance(method, str) or method not in ESTIMATORS:
        raise JobRequestError(f"unknown method {method!r}; one of {sorted(ESTIMATORS)}", "method")
    if players not in (CounterfactualJob.MESSAGES, CounterfactualJob.AGENTS):
        raise JobRequestError(f"must be {CounterfactualJob.MESSAGES!r} or {CounterfactualJob.AGENTS!r}", "players")
    budget = check_int(budget, "budget", 1, 10**7)
    check_int(seed, "seed", 0, 2**62)
    if not isinstance(backend, str):
        raise JobRequestError("must be a string", "backend")
    backend_class = get_backend_class(backend)
    core_trace = to_core_trace(trace)
    check_backend_runs(trace, backend, core_trace)
    messages = capabilities.message_events(core_trace, backend_class)
    kinds = "/".join(capabilities.player_types(backend_class))
    if players == CounterfactualJob.AGENTS:
        names = capabilities.message_agents(messages)
        if len(names) < 2:
            raise JobRequestError(
                f"the trace needs at least 2 agents that send messages to attribute; it has {len(names)} "
                f"({kinds} events, as the {backend} backend removes them)",
                "players",
            )
    else:
        names = [event.id for event in messages]
        if len(names) < 2:
            raise JobRequestError(
                f"the trace needs at least 2 messages to attribute; it has {len(names)} "
                f"({kinds} events, as the {backend} backend removes them)",
                "method",
            )
    try:
        runner = backend_class.from_trace(core_trace)
        for name in names:
            runner.check(player_intervention(players, name))
    except InterventionError as exc:
        raise JobRequestError(exc.message, f"intervention.{exc.field}") from exc
    except ValueError as exc:
        raise JobRequestError(cannot_rerun_text(backend, exc), "backend") from exc
    per_sample = ESTIMATORS[method].rollouts(len(names))
    n = budget // per_sample
    if not 2 <= n <= MAX_SAMPLES:
        raise JobRequestError(
            f"{method} over {len(names)} {players} needs {per_sample} rollouts per sample: "
            f"a budget in [{2 * per_sample}, {MAX_SAMPLES * per_sample}]",
            "budget",
        )
    return names, n, runner


def player_intervention(player_kind: str, player: str, kind: str = "remove") -> Intervention:
    """The intervention that removes one player of an attribution job: message event `player`
    (by `kind`), or every event of agent `player` (`player_kind` `agents`)."""
    if player_kind == CounterfactualJob.AGENTS:
        return Intervention("remove", agents=(player,))
    return Intervention(kind, (player,))


def _missing_chunks(job: CounterfactualJob) -> list[tuple[int, int]]:
    """(start, stop) of every chunk of SWARMSCOPE_ROLLOUT_CHUNK indices with a sample not stored."""
    size = settings.SWARMSCOPE_ROLLOUT_CHUNK
    stored = set(job.samples.values_list("index", flat=True))
    starts = sorted({i - i % size for i in range(job.n_samples) if i not in stored})
    return [(start, min(start + size, job.n_samples)) for start in starts]


def _enqueue_missing(job: CounterfactualJob) -> int:
    """Enqueue, after commit, a chunk task for every chunk with missing samples; returns how many."""
    queue = import_string(job.backend_path).queue
    chunks = _missing_chunks(job)
    for start, stop in chunks:
        transaction.on_commit(
            functools.partial(
                enqueue,
                "webapp.counterfactuals.tasks.run_counterfactual_chunk",
                job.pk,
                start,
                stop,
                job.trace.project_id,
                queue=queue,
            )
        )
    return len(chunks)


# --- running -----------------------------------------------------------------------------------


def do_run_chunk(job_id: int, start: int, stop: int, project_id: int | None = None) -> int:
    """Run the paired samples start .. stop - 1 of job `job_id` that are not stored yet, record
    them, and finish the job when it is complete. Returns the number of samples newly stored.

    Does nothing for a job that is no longer queued or running, nor for one whose trace is no
    longer in project `project_id` (the project it was requested in, when given): a task re-checks
    the project of what it works on rather than trusting its message. A backend error marks the job
    failed with the reason and stores nothing of the chunk. Sample 0 also stores its branch trace.
    The server usage of the chunk's requests (those of a failed chunk too) is added to the job's.
    """
    jobs = CounterfactualJob.objects.select_related("trace__project").filter(pk=job_id)
    if project_id is not None:
        jobs = jobs.filter(trace__project_id=project_id)
    job = jobs.first()
    if job is None or job.status not in CounterfactualJob.ACTIVE:
        return 0
    now = timezone.now()
    CounterfactualJob.objects.filter(pk=job.pk, status__in=CounterfactualJob.ACTIVE).update(
        status=CounterfactualJob.RUNNING, heartbeat_at=now
    )
    if CounterfactualJob.objects.filter(pk=job.pk, started_at__isnull=True).update(started_at=now):
        _notify(job)  # the viewers see "running" when the first chunk starts, not at its end
    stored = set(job.samples.filter(index__gte=start, index__lt=stop).values_list("index", flat=True))
    indices = [i for i in range(start, min(stop, job.n_samples)) if i not in stored]
    results: list[SampleResult] = []
    usage = None
    if indices:
        backend = None
        try:
            backend = _backend(job)
            with _stop_when_inactive(job, backend):
                results = _run_samples(job, backend, indices)
        except Exception as exc:  # noqa: BLE001 - any backend failure fails the job, with its reason
            log.warning("counterfactual job %s failed", job.pk, exc_info=True)
            do_fail_job(job, capabilities.describe_failure(exc), _chunk_usage(backend))
            return 0
        usage = _chunk_usage(backend)  # the chunk's requests, sample 0's branch re-run included
    added = do_record_samples(job, results, usage)
    maybe_finish_job(job)
    return added


def _run_samples(job: CounterfactualJob, backend, indices: list[int]) -> list[SampleResult]:
    """The paired samples `indices` of `job` from `backend` (its instance for this chunk); sample
    0's branch trace is stored."""
    if job.kind == CounterfactualJob.ATTRIBUTION:
        return _run_attribution_samples(job, backend, indices)
    intervention = Intervention.from_dict(job.intervention)
    seeds = np.array([job.seed + i for i in indices])
    rewards = pilot.reuse(job, backend, indices)  # the estimate's cost pilot ran these samples
    if rewards is None:
        pairs = backend.paired(intervention, seeds)
        rewards = pairs.control, pairs.treated
    branch = None
    if 0 in indices:
        branch_trace = backend.paired(intervention, seeds[:1], traces=True).branches[0]
        branch = do_ingest(job.trace.project, branch_trace, kind="branch", derived_from=f"trace:{job.trace_id}").trace
    return [
        SampleResult(i, int(s), float(c), float(t), branch if i == 0 else None)
        for i, s, c, t in zip(indices, seeds, *rewards)
    ]


def _run_attribution_samples(job: CounterfactualJob, backend, indices: list[int]) -> list[SampleResult]:
    """Samples `indices` of an attribution job (`play_attribution_chunk` with `backend`)."""
    values = play_attribution_chunk(
        backend,
        job.method,
        job.players,
        job.player_kind,
        job.n_samples,
        job.seed,
        indices,
        job.intervention["kind"],
    )
    stride = ESTIMATORS[job.method].seeds(len(job.players))
    return [SampleResult(i, job.seed + i * stride, None, None, values=values[i].tolist()) for i in indices]


def play_attribution_chunk(
    rollout: Rollout,
    method: str,
    players: list[str],
    player_kind: str,
    n: int,
    seed: int,
    indices: list[int],
    kind: str = "remove",
) -> np.ndarray:
    """The per-player sample values (n, players) of an attribution's estimator (ESTIMATORS[method])
    over all `n` samples, seeds and sampling from `seed`, with the coalition game of `players`
    over `rollout` played only on samples `indices` (`swarmscope.credit.play_chunk`; rows of other
    samples are 0): what a chunk task sends, and what `costs.estimate_attribution_cost` plans."""
    game = coalition_game(rollout, [player_intervention(player_kind, p, kind) for p in players])
    estimator = ESTIMATORS[method]
    options = {} if method == "loo" else {"sampling_seed": seed}
    return play_chunk(
        estimator.function, game, len(players), n, indices, seed, estimator.seeds(len(players)), **options
    )


def do_record_samples(job: CounterfactualJob, samples: list[SampleResult], usage: dict[str, int] | None = None) -> int:
    """Store `samples` of `job`; a sample whose (job, index) is stored already is skipped (a
    re-delivered chunk counts nothing twice). Adds `usage` (the server's usage of the chunk's
    requests: they were sent, so a chunk run twice at once counts both runs' requests) to the job's
    under the row lock. Touches the heartbeat, updates the progress count and broadcasts it.
    Returns the number of samples newly stored."""
    with transaction.atomic():
        job = CounterfactualJob.objects.select_for_update().get(pk=job.pk)
        before = job.samples.count()
        RolloutSample.objects.bulk_create(
            [
                RolloutSample(
                    job=job,
                    index=s.index,
                    seed=s.seed,
                    control_reward=s.control_reward,
                    intervention_reward=s.intervention_reward,
                    branch_trace=s.branch_trace,
                    values=s.values,
                )
                for s in samples
            ],
            ignore_conflicts=True,
        )
        job.done_count = job.samples.count()
        job.heartbeat_at = timezone.now()
        job.usage = add_usage(job.usage, usage)
        job.save(update_fields=["done_count", "heartbeat_at", "usage"])
        _notify(job)
        return job.done_count - before


def _stored_rollout(samples: list[RolloutSample]) -> Rollout:
    """A `swarmscope.credit.Rollout` that answers from stored samples (by seed): None gives the
    control rewards, any intervention the intervention rewards."""
    rewards = {s.seed: (s.control_reward, s.intervention_reward) for s in samples}

    def rollout(intervention: Intervention | None, seeds: np.ndarray) -> np.ndarray:
        return np.array([rewards[int(seed)][0 if intervention is None else 1] for seed in seeds])

    return rollout


def _leading_samples(job: CounterfactualJob) -> list[RolloutSample]:
    """The stored samples 0 .. k - 1 of `job`, k the first index not stored (seeds are consecutive)."""
    samples = []
    for sample in job.samples.order_by("index"):
        if sample.index != len(samples):
            break
        samples.append(sample)
    return samples


def maybe_finish_job(job: CounterfactualJob) -> bool:
    """Finish `job` when all its samples are stored, or (with ε) when `swarmscope.credit.epsilon_met`
    holds for Δ over its k leading samples: k >= EPSILON_MIN_SAMPLES and 0 < width < ε. Returns
    whether it finished now.

    The ε stop never ends a job on a zero-width interval: with 0/1 rewards Δ's interval is Tango's
    score interval, which has width >= 2 z² / (k + z²) even when every pair agrees (a run of equal
    pairs is evidence of a small effect, not of none); a t interval (other rewards) has width 0
    only when all k samples are equal, and then the job samples on (to its cap). Before, the first
    chunk of 8 equal pairs (likely for a real effect of 0.2: 0.8^8 = 0.17) stopped the job with
    "Δ = 0, CI [0, 0]" (bench/bench_interval_coverage.py: 27 % of real effects at ε = 0.1)."""
    samples = _leading_samples(job)
    if len(samples) < 2:
        return False
    if len(samples) < job.n_samples:
        if job.epsilon is None:
            return False
        effect = paired_effect(
            _stored_rollout(samples), Intervention.from_dict(job.intervention), len(samples), job.seed
        )
        if not epsilon_met(effect, job.epsilon, len(samples)):
            return False
    return do_finish_job(job, len(samples))


def do_finish_job(job: CounterfactualJob, n: int | None = None) -> bool:
    """Mark `job` done and store its `Attribution`: paired leave-one-out Δ = E[R | h] - E[R | do(i)]
    (swarmscope.credit.paired_effect) over its stored samples 0 .. n - 1 (default all), with
    the backend's environment and this code's version. Only one caller finishes a job: returns
    False when it was no longer queued or running. An attribution job stores one attribution per
    player instead, from the per-player sample values."""
    with transaction.atomic():
        finished = CounterfactualJob.objects.filter(pk=job.pk, status__in=CounterfactualJob.ACTIVE).update(
            status=CounterfactualJob.DONE, finished_at=timezone.now()
        )
        if not finished:
            return False
        samples = list(job.samples.order_by("index")[: n or job.n_samples])
        if job.kind == CounterfactualJob.ATTRIBUTION:
            _store_credit(job, samples)
            _notify(job)
            return True
        intervention = Intervention.from_dict(job.intervention)
        effect = paired_effect(_stored_rollout(samples), intervention, len(samples), job.seed)
        Attribution.objects.create(
            trace=job.trace,
            job=job,
            target=", ".join(intervention.targets),
            intervention=job.intervention,
            method=METHOD,
            estimate=effect.estimate,
            ci_low=effect.ci_low,
            ci_high=effect.ci_high,
            n_rollouts=effect.n_rollouts,
            backend=job.backend_path,
            seed=job.seed,
            environment=_backend(job).environment(),
            code_version=code_version(),
        )
        if intervention.agents and not intervention.events:  # a removal effect: free-riding may change
            forget_computed_metrics(job.trace_id)
        _notify(job)
    return True


def agent_removal_effects(trace: Trace) -> dict[str, tuple[float, float, float]]:
    """Agent -> (estimate, ci_low, ci_high) of Δ = E[R | h] - E[R | do(remove the agent)], the newest
    paired leave-one-out attribution removing that one agent (what swarmscope.metrics.free_riders
    reads; Shapley values are not removal effects and are left out)."""
    effects: dict[str, tuple[float, float, float]] = {}
    rows = Attribution.objects.filter(trace=trace, method=METHOD, target__startswith="agent:").order_by(
        "created_at", "id"
    )
    for row in rows:
        intervention = row.intervention or {}
        agents = intervention.get("agents") or []
        if intervention.get("kind") == "remove" and len(agents) == 1 and not intervention.get("events"):
            effects[agents[0]] = (row.estimate, row.ci_low, row.ci_high)
    return effects


def _store_credit(job: CounterfactualJob, samples: list[RolloutSample]) -> None:
    """One Attribution per player of an attribution job, from its stored per-player sample values."""
    values = np.array([s.values for s in samples], float)  # (n, players)
    estimator = ESTIMATORS[job.method]
    counted = estimator.counted(len(job.players)) * len(samples)
    environment = _backend(job).environment()
    rows = []
    for k, player in enumerate(job.players):
        intervention = player_intervention(job.player_kind, player, job.intervention["kind"])
        targets = ", ".join(intervention.targets)
        credit = from_samples(targets, estimator.method, values[:, k], counted, len(job.players))
        rows.append(
            Attribution(
                trace=job.trace,
                job=job,
                target=credit.target,
                intervention=intervention.to_dict(),
                method=credit.method,
                estimate=credit.estimate,
                ci_low=credit.ci_low,
                ci_high=credit.ci_high,
                n_rollouts=credit.n_rollouts,
                backend=job.backend_path,
                seed=job.seed,
                environment=environment,
                code_version=code_version(),
            )
        )
    Attribution.objects.bulk_create(rows)
    if job.player_kind == CounterfactualJob.AGENTS:  # agents' removal effects: free-riding may change
        forget_computed_metrics(job.trace_id)


def do_fail_job(job: CounterfactualJob, reason: str, usage: dict[str, int] | None = None) -> None:
    """Mark an active `job` failed with `reason`; its stored samples stay (a retry reuses them).
    `usage` (the failed chunk's server usage) is added to the job's under the row lock, whatever its status."""
    with transaction.atomic():
        if usage:
            locked = CounterfactualJob.objects.select_for_update().get(pk=job.pk)
            locked.usage = add_usage(locked.usage, usage)
            locked.save(update_fields=["usage"])
        if CounterfactualJob.objects.filter(pk=job.pk, status__in=CounterfactualJob.ACTIVE).update(
            status=CounterfactualJob.FAILED, error=reason[:2000], finished_at=timezone.now()
        ):
            _notify(job)


def do_cancel_job(job: CounterfactualJob) -> CounterfactualJob:
    """Cancel an active `job` (its queued chunks then do nothing); a finished job stays as it is."""
    with transaction.atomic():
        if CounterfactualJob.objects.filter(pk=job.pk, status__in=CounterfactualJob.ACTIVE).update(
            status=CounterfactualJob.CANCELLED, finished_at=timezone.now()
        ):
            _notify(job)
    job.refresh_from_db()
    return job


def do_retry_job(job: CounterfactualJob) -> CounterfactualJob:
    """Re-queue a failed or cancelled `job`: its stored samples are kept, its missing chunks enqueued."""
    with transaction.atomic():
        if CounterfactualJob.objects.filter(
            pk=job.pk, status__in=(CounterfactualJob.FAILED, CounterfactualJob.CANCELLED)
        ).update(status=CounterfactualJob.QUEUED, error="", finished_at=None, heartbeat_at=timezone.now()):
            job.refresh_from_db()
            if not _enqueue_missing(job):
                maybe_finish_job(job)
            _notify(job)
    job.refresh_from_db()
    return job


def reap_stale_jobs(max_age_s: float | None = None) -> list[int]:
    """Re-queue the missing chunks of every queued or running job whose heartbeat is older than
    `max_age_s` seconds (default SWARMSCOPE_JOB_STALE_S): its worker died or its task was lost.
    The heartbeat is reset, so the next reaper waits for it again. A job whose backend's queue no
    live worker consumes (`consuming_queues`) is failed with that reason instead. Returns the
    re-queued job ids."""
    cutoff = timezone.now() - timedelta(seconds=settings.SWARMSCOPE_JOB_STALE_S if max_age_s is None else max_age_s)
    reaped = []
    consumed: set[str] | None = None
    for n, job in enumerate(
        CounterfactualJob.objects.filter(status__in=CounterfactualJob.ACTIVE, heartbeat_at__lt=cutoff)
    ):
        if n == 0:
            consumed = consuming_queues()  # asked once per sweep, only when a job is stale
        queue = import_string(job.backend_path).queue
        if consumed is not None and queue not in consumed:
            # e.g. an `openai` job on a deployment without the GPU worker: re-sending would never end
            do_fail_job(
                job,
                f"no worker consumes the {queue} queue of the {job.backend} backend: "
                "start a worker on it (e.g. compose's gpu profile), then retry the job",
            )
            continue
        with transaction.atomic():
            # Conditional on the heartbeat read: of two reapers, one re-queues.
            if CounterfactualJob.objects.filter(pk=job.pk, heartbeat_at=job.heartbeat_at).update(
                heartbeat_at=timezone.now()
            ):
                if not _enqueue_missing(job):
                    maybe_finish_job(job)
                reaped.append(job.pk)
    return reaped


def get_job_for(job_id: int, project_ids: list[int]) -> CounterfactualJob | None:
    """The job if its trace is in one of `project_ids`, else None (unknown and foreign look the same)."""
    return CounterfactualJob.objects.filter(pk=job_id, trace__project_id__in=project_ids).first()


def list_attributions(trace: Trace):
    """The trace's stored attributions, newest first."""
    return Attribution.objects.filter(trace=trace).order_by("-created_at", "-id")


def otlp_export(trace: Trace) -> dict[str, Any]:
    """`trace` as OTLP/JSON (swarmscope.otlp_export) with what Swarmscope learnt about it: a branch
    trace names its parent trace, job, intervention and seed (`swarmscope.branch.*`); every
    attribution is in `swarmscope.attributions`, and one that targets events is also a
    `swarmscope.attribution` span event on each targeted event's span."""
    core_trace, options = _otlp_export_options(trace)
    return to_otlp_json(core_trace, **options)


def otlp_export_chunks(trace: Trace, page_events: int | None = None) -> Iterator[str]:
    """`otlp_export(trace)`, the same text, as JSON chunks (`iter_otlp_json`) for a streamed
    download: the events are read from the database a page of `page_events` (default
    SWARMSCOPE_EXPORT_PAGE_EVENTS) at a time as the chunks are taken (`StoredSpanSource`), so the
    memory it takes is a page's, not the trace's."""
    header, options = _otlp_export_options(trace, core_trace_header(trace))
    return iter_otlp_json(header, source=StoredSpanSource(trace, page_events), **options)


def _otlp_export_options(trace: Trace, core_trace: CoreTrace | None = None) -> tuple[CoreTrace, dict[str, Any]]:
    """`trace` as the library's Trace (`core_trace` where given, else the whole trace read now),
    and the export's `extra`, `span_events` and `origin_ns`."""
    extra: dict[str, Any] = {}
    sample = RolloutSample.objects.filter(branch_trace=trace).select_related("job").first()
    if sample is not None:
        extra.update(
            {
                "swarmscope.branch.of_trace": sample.job.trace_id,
                "swarmscope.branch.job": sample.job_id,
                "swarmscope.branch.intervention": sample.job.intervention,
                "swarmscope.branch.seed": sample.seed,
            }
        )
    attributions = [attribution_wire(a) for a in list_attributions(trace)]
    span_events: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for row in attributions:
        for target in row["target"].split(","):
            if target.startswith("event:"):
                span_events.setdefault(target[len("event:") :], []).append(
                    (
                        "swarmscope.attribution",
                        {k: row[k] for k in ("id", "method", "estimate", "ci_low", "ci_high", "n_rollouts", "backend")},
                    )
                )
    if attributions:
        extra["swarmscope.attributions"] = attributions
    core_trace = core_trace or to_core_trace(trace)
    origin = origin_ns(core_trace) or int(trace.created_at.timestamp() * 1e9)  # else when it arrived
    return core_trace, {"extra": extra, "span_events": span_events, "origin_ns": origin}


def list_jobs(trace: Trace, limit: int = 50):
    """The trace's counterfactual and attribution jobs, newest first (at most `limit`)."""
    return CounterfactualJob.objects.filter(trace=trace).order_by("-created_at", "-id")[:limit]


# --- what a backend can run (capabilities.py), at request time -------------------------------------


def check_backend_runs(trace: Trace, backend: str, core_trace=None) -> None:
    """Raise JobRequestError naming `backend`, with the reason in words (`capabilities.refusal`:
    which setting, what the trace lacks), when backend `backend` cannot re-run `trace` at all."""
    reason = capabilities.refusal(trace, backend, core_trace)
    if reason:
        raise JobRequestError(reason, "backend")


def cannot_rerun_text(backend: str, exc: ValueError) -> str:
    """A backend's refusal (`from_trace`'s ValueError) as a request error, without exception reprs."""
    return f"the {backend} backend cannot re-run this trace: {capabilities.words(str(exc))}"
