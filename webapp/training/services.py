"""All writes to training runs (check_* validates, do_* writes, request_* enqueues), and the reads
the pages, the API and the live protocol need. (Over 500 lines: the runs' one service layer, the
iteration contract's checks and the training task's body, `do_train`, included.)

Every write gives the run its next `seq` in one transaction and broadcasts one delta after commit
(webapp.web.broadcast), so viewers of `/ws/runs/<id>/` see the run and its iterations as they
are stored. The training recipe is reached only through SWARMSCOPE_TRAINING_RECIPE (a dotted
module path, loaded in workers and for config validation).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.module_loading import import_module

from swarmscope.importers import SourceFile
from webapp.accounts.models import Project
from webapp.traces import ingest as trace_ingest
from webapp.web.broadcast import broadcast_run_delta, broadcast_run_list
from webapp.web.jobs import broker_lost_before, enqueue, mark_broker

from .models import Run, RunIteration

log = logging.getLogger(__name__)

#: The contract's iteration dict: top-level fields and the numeric fields of its parts.
METRIC_FIELDS = (
    "reward",
    "success_rate",
    "critical_steps",
    "parallelism_efficiency",
    "tokens_per_episode",
    "episode_length",
    "entropy",
    "policy_loss",
    "value_loss",
    "stop_value_loss",
)
STOP_NUMBERS = ("stop_regret", "premature", "late")
#: Largest values of the iteration's integer columns (RunIteration.iteration is 32-bit on PostgreSQL).
INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1
CREDIT_NUMBERS = ("free_rider_index", "pseudo_parallelism_index")
MAX_EPISODES = 8


class RunInputError(ValueError):
    """Bad input for a run (config or iteration); `field` names where, e.g. `metrics.reward`."""

    def __init__(self, message: str, field: str):
        self.field = field
        super().__init__(f"{field}: {message}")
        self.message = message

    def as_dict(self) -> dict[str, Any]:
        return {"error": self.message, "field": self.field}


# --- the recipe ---------------------------------------------------------------------------------


def recipe():
    """The training recipe module named by SWARMSCOPE_TRAINING_RECIPE (exposes RunConfig, train)."""
    return import_module(settings.SWARMSCOPE_TRAINING_RECIPE)


def check_config(config: Any) -> dict[str, Any]:
    """The recipe's validated config (`RunConfig.from_dict(config).to_dict()`, defaults filled in).

    Raises RunInputError naming the field (`config.<name>` where the recipe's message names one), and
    for an `llm_model` (policy llm's model folder, read on the worker) not in SWARMSCOPE_LLM_POLICY_MODELS.
    """
    if not isinstance(config, dict):
        raise RunInputError("must be an object", "config")
    run_config = recipe().RunConfig
    try:
        checked = run_config.from_dict(config).to_dict()
    except (ValueError, TypeError) as exc:
        # The recipe's messages start with the field they are about: "reward_weights.success: ...".
        prefix, _, rest = str(exc).partition(": ")
        if rest and prefix != "config" and re.fullmatch(r"[A-Za-z_][\w.\[\]]*", prefix):
            raise RunInputError(rest, f"config.{prefix}") from None
        raise RunInputError(str(exc), "config") from None
    if checked.get("llm_model") and checked["llm_model"] not in settings.SWARMSCOPE_LLM_POLICY_MODELS:
        raise RunInputError(
            "not a model folder this server offers: leave it empty (SmolLM2-135M-Instruct) or ask an operator to "
            "list it in SWARMSCOPE_LLM_POLICY_MODELS",
            "config.llm_model",
        )
    return checked


def seed_group_of(config: dict[str, Any]) -> str:
    """Runs whose configs differ only by `seed` share this key (SHA-256 of the rest, 16 hex digits)."""
    rest = {k: v for k, v in config.items() if k != "seed"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _number(
    value: Any, field: str, *, integer: bool = False, minimum: float | None = None, maximum: float = sys.float_info.max
):
    """`value` if it is a finite number (an int with `integer`) in [minimum, maximum], else
    RunInputError naming `field` (a JSON integer beyond a float's range included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise RunInputError("must be an integer" if integer else "must be a number", field)
    if isinstance(value, float) and not math.isfinite(value):
        raise RunInputError("must be finite", field)
    if minimum is not None and value < minimum:
        raise RunInputError(f"must be at least {minimum}", field)
    if value > maximum or -value > sys.float_info.max:
        raise RunInputError(f"must be at most {maximum:.17g}", field)
    return value


def check_finite_json(value: Any, field: str) -> Any:
    """`value` (decoded JSON) if every number in it is finite and within a float's range, else
    RunInputError naming the first offending path (`field.key[i]`): NaN, Infinity and such
    integers decode in Python but are not JSON, so the database would refuse them."""
    stack = [(field, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            stack.extend((f"{path}.{key}", sub) for key, sub in item.items())
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", sub) for i, sub in enumerate(item))
        elif (
            isinstance(item, float)
            and not math.isfinite(item)
            or isinstance(item, int)
            and not isinstance(item, bool)
            and abs(item) > sys.float_info.max
        ):
            raise RunInputError("must be a finite number", path)
    return value


def _pairs(value: Any, field: str) -> list[list[float]]:
    if not isinstance(value, list):
        raise RunInputError("must be a list of [step, value] pairs", field)
    for i, pair in enumerate(value):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise RunInputError("must be a [step, value] pair", f"{field}[{i}]")
        _number(pair[0], f"{field}[{i}][0]")
        _number(pair[1], f"{field}[{i}][1]")
    return [list(p) for p in value]


def _shares(value: Any, field: str) -> dict[str, float]:
    if not isinstance(value, dict):
        raise RunInputError("must be an object of name -> share", field)
    for name, share in value.items():
        _number(share, f"{field}.{name}")
    return value


def check_iteration(doc: Any) -> dict[str, Any]:  # noqa: C901 - one flat check per documented field
    """Validate one iteration dict of the contract (trainer/recipes/train_orchestrator.py's
    `on_iteration` argument); returns it normalised. Raises RunInputError naming the field."""
    if not isinstance(doc, dict):
        raise RunInputError("must be a JSON object (one iteration)", "body")
    result: dict[str, Any] = {
        "iteration": _number(doc.get("iteration"), "iteration", integer=True, minimum=0, maximum=INT32_MAX),
        "env_steps": _number(doc.get("env_steps"), "env_steps", integer=True, minimum=0, maximum=INT64_MAX),
        "wall_s": _number(doc.get("wall_s", 0.0), "wall_s", minimum=0),
    }
    if doc.get("budget_steps") is not None:
        result["budget_steps"] = _number(
            doc["budget_steps"], "budget_steps", integer=True, minimum=1, maximum=INT64_MAX
        )
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict):
        raise RunInputError("must be an object", "metrics")
    _number(metrics.get("reward"), "metrics.reward")
    for name in METRIC_FIELDS:  # the contract's metrics are numbers; a recipe may add others (any JSON)
        if metrics.get(name) is not None:
            _number(metrics[name], f"metrics.{name}")
    result["metrics"] = metrics
    stop = doc.get("stop") or {}
    if not isinstance(stop, dict):
        raise RunInputError("must be an object", "stop")
    for name in ("p_stop_by_step", "continue_value_by_step"):
        if name in stop:
            _pairs(stop[name], f"stop.{name}")
    for name in STOP_NUMBERS:
        if stop.get(name) is not None:
            _number(stop[name], f"stop.{name}", integer=name != "stop_regret")
    result["stop"] = stop
    credit = doc.get("credit") or {}
    if not isinstance(credit, dict):
        raise RunInputError("must be an object", "credit")
    for name in ("by_role", "by_agent"):
        if name in credit:
            _shares(credit[name], f"credit.{name}")
    for name in CREDIT_NUMBERS:
        if credit.get(name) is not None:
            _number(credit[name], f"credit.{name}")
    if credit.get("free_rider_episodes") is not None:
        _number(credit["free_rider_episodes"], "credit.free_rider_episodes", integer=True, minimum=0, maximum=INT64_MAX)
    result["credit"] = credit
    episodes = doc.get("episodes") or []
    if not isinstance(episodes, list) or len(episodes) > MAX_EPISODES:
        raise RunInputError(f"must be a list of at most {MAX_EPISODES} trace objects", "episodes")
    for i, episode in enumerate(episodes):
        if not isinstance(episode, dict):
            raise RunInputError("must be a trace object", f"episodes[{i}]")
    result["episodes"] = episodes
    for name in ("metrics", "stop", "credit"):  # a recipe's own entries (any JSON) too
        check_finite_json(result[name], name)
    return result


# --- wire form ----------------------------------------------------------------------------------


def eta_s(run: Run) -> float | None:
    """Seconds left, extrapolated linearly from env steps per training second; None when unknown."""
    if run.status not in (Run.RUNNING, Run.QUEUED) or run.env_steps <= 0 or run.wall_s <= 0:
        return None
    return max(0.0, (run.budget_steps - run.env_steps) * run.wall_s / run.env_steps)


def run_summary(run: Run) -> dict[str, Any]:
    """The run-level part of a snapshot, a delta and the API's run resource."""
    return {
        "id": run.pk,
        "project": run.project_id,
        "name": run.name,
        "config": run.config,
        "seed_group": run.seed_group,
        "status": run.status,
        "env_steps": run.env_steps,
        "budget_steps": run.budget_steps,
        "iterations": run.iterations_done,
        "progress": min(1.0, run.env_steps / run.budget_steps) if run.budget_steps else 0.0,
        "best_reward": run.best_reward,
        "eta_s": eta_s(run),
        "wall_s": run.wall_s,
        "error": run.error,
        "external": run.external,
        "summary": run.summary,
        "seq": run.seq,
        "has_checkpoint": bool(run.checkpoint_path),
        "created_at": run.created_at.isoformat() if run.created_at else None,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


def iteration_wire(row: RunIteration, episode_ids: list[int]) -> dict[str, Any]:
    return {
        "iteration": row.iteration,
        "env_steps": row.env_steps,
        "wall_s": row.wall_s,
        "metrics": row.metrics,
        "stop": row.stop,
        "credit": row.credit,
        "episodes": episode_ids,
        "seq": row.seq,
    }


def _iterations_since(run: Run, seq: int) -> list[dict[str, Any]]:
    rows = list(RunIteration.objects.filter(run=run, seq__gt=seq).order_by("iteration"))
    links = RunIteration.episodes.through.objects.filter(runiteration__in=rows).order_by("trace_id")
    episodes: dict[int, list[int]] = {}
    for link in links.values("runiteration_id", "trace_id"):
        episodes.setdefault(link["runiteration_id"], []).append(link["trace_id"])
    return [iteration_wire(r, episodes.get(r.pk, [])) for r in rows]


def get_snapshot(run: Run) -> dict[str, Any]:
    """The live protocol's snapshot (swarmscope.protocol) of `run` as of its current seq."""
    with transaction.atomic():
        run = Run.objects.get(pk=run.pk)
        return {"type": "snapshot", "seq": run.seq, "run": run_summary(run), "iterations": _iterations_since(run, -1)}


def get_delta_since(run: Run, seq: int) -> dict[str, Any]:
    """One delta: the run's summary and every iteration written after `seq`."""
    with transaction.atomic():
        run = Run.objects.get(pk=run.pk)
        return {"type": "delta", "seq": run.seq, "run": run_summary(run), "iterations": _iterations_since(run, seq)}


def list_runs(project_ids: Iterable[int]):
    return Run.objects.filter(project_id__in=list(project_ids)).order_by("-created_at")


# --- the live runs list (`/ws/projects/<id>/runs/`, webapp.training.consumers.RunListConsumer) ----

#: Runs in a runs-list snapshot: the project's newest (the page itself is HTML).
RUN_LIST_SNAPSHOT = 50
#: A resume that missed more new runs than this is answered with a snapshot.
RUN_LIST_MAX_RESUME = 200


def last_run_id(project_id: int) -> int:
    """The runs list's seq: the id of the project's newest run (ids only grow; a project's seqs have
    holes where other projects' runs took ids); 0 without any."""
    return Run.objects.filter(project_id=project_id).order_by("-id").values_list("id", flat=True).first() or 0


def get_run_list_snapshot(project_id: int) -> dict[str, Any]:
    """`{"type": "snapshot", "seq": N, "project": id, "runs": [run_summary, ...]}`: the
    RUN_LIST_SNAPSHOT newest runs, oldest first; N the newest one's id (0 without any)."""
    runs = list(Run.objects.filter(project_id=project_id).order_by("-id")[:RUN_LIST_SNAPSHOT])[::-1]
    return {
        "type": "snapshot",
        "seq": runs[-1].pk if runs else 0,
        "project": project_id,
        "runs": [run_summary(r) for r in runs],
    }


def get_run_list_delta_since(project_id: int, seq: int) -> dict[str, Any]:
    """`{"type": "delta", "seq": N, "project": id, "runs": [...]}`: the runs created after run id
    `seq`, oldest first, N the newest one's id (`seq` when none); a snapshot past RUN_LIST_MAX_RESUME."""
    runs = list(Run.objects.filter(project_id=project_id, pk__gt=seq).order_by("id")[: RUN_LIST_MAX_RESUME + 1])
    if len(runs) > RUN_LIST_MAX_RESUME:
        return get_run_list_snapshot(project_id)
    return {
        "type": "delta",
        "seq": runs[-1].pk if runs else seq,
        "project": project_id,
        "runs": [run_summary(r) for r in runs],
    }


def _announce_run(run_id: int) -> None:
    """After a run's creation commits: send it to the viewers of its project's runs list."""
    run = Run.objects.filter(pk=run_id).first()
    if run is not None:
        delta = {"type": "delta", "seq": run.pk, "project": run.project_id, "runs": [run_summary(run)]}
        broadcast_run_list(run.project_id, delta)


def get_run_for(run_id: int, project_ids: Iterable[int]) -> Run | None:
    """The run if it is in one of `project_ids`, else None (unknown and foreign look the same)."""
    return Run.objects.filter(pk=run_id, project_id__in=list(project_ids)).first()


# --- writes -------------------------------------------------------------------------------------


def _next_seq(run: Run) -> int:
    """Lock the run row, advance its seq, and broadcast the delta after commit. Inside atomic()."""
    Run.objects.filter(pk=run.pk).update(seq=F("seq") + 1)
    seq = Run.objects.values_list("seq", flat=True).get(pk=run.pk)
    run.seq = seq
    transaction.on_commit(lambda: broadcast_run_delta(run.pk, get_delta_since(run, seq - 1)))
    return seq


def _save(run: Run, **fields: Any) -> Run:
    """Write `fields` of `run` and give it its next seq, in one transaction."""
    with transaction.atomic():
        for name, value in fields.items():
            setattr(run, name, value)
        run.seq = _next_seq(run)
        Run.objects.filter(pk=run.pk).update(**fields)
    return run


def do_create_run(project: Project, config: dict[str, Any], *, name: str = "", external: bool = False) -> Run:
    """Create a queued run of `config` (validated by the recipe). Raises RunInputError."""
    config = check_config(config)
    if len(name) > 300:
        raise RunInputError("must be at most 300 characters", "name")
    budget = int(config.get("budget_steps") or 0)
    with transaction.atomic():
        run = Run.objects.create(
            project=project,
            name=name,
            config=config,
            seed_group=seed_group_of(config),
            budget_steps=budget,
            external=external,
            status=Run.RUNNING if external else Run.QUEUED,
            started_at=timezone.now() if external else None,
        )
        if not name:
            Run.objects.filter(pk=run.pk).update(name=_default_name(run))
            run.name = _default_name(run)
        run.seq = _next_seq(run)
        transaction.on_commit(lambda: _announce_run(run.pk))
    return run


def _default_name(run: Run) -> str:
    c = run.config
    return (
        f"{c.get('algorithm', '?')}·{c.get('credit', '?')}·{c.get('stop', '?')} on {c.get('level', '?')} "
        f"seed {c.get('seed', 0)} (#{run.pk})"
    )


def checkpoint_dir(run: Run):
    """Where the run's checkpoints live: SWARMSCOPE_DATA_DIR/runs/<id>/ (`last.pt` inside)."""
    return settings.DATA_DIR / "runs" / str(run.pk)


def do_mark_running(run: Run) -> Run:
    return _save(
        run,
        status=Run.RUNNING,
        error="",
        started_at=run.started_at or timezone.now(),
        finished_at=None,
        heartbeat_at=timezone.now(),
    )


def reap_stale_runs() -> list[int]:
    """Mark failed the app's running (or cancelling) runs whose task stopped touching
    `heartbeat_at` for SWARMSCOPE_RUN_STALE_S seconds — a worker that died whole (a solo pool, a
    lost machine) cannot say so itself. Resume continues them from the last checkpoint. Returns
    the ids marked failed."""
    limit = settings.SWARMSCOPE_RUN_STALE_S
    cutoff = timezone.now() - timedelta(seconds=limit)
    reaped = []
    for run in Run.objects.filter(status__in=(Run.RUNNING, Run.CANCELLING), external=False, heartbeat_at__lt=cutoff):
        do_finish(
            run, status=Run.FAILED, error=f"the training worker stopped reporting (no heartbeat for {limit:.0f} s)"
        )
        reaped.append(run.pk)
    requeue_lost_runs()
    return reaped


def requeue_lost_runs(max_age_s: float | None = None) -> list[int]:
    """Send again the training task of the app's queued runs whose message may be lost: one whose
    send failed (the broker was down at commit: `heartbeat_at` cleared by `request_training`);
    every one sent before the Redis broker's current data began (a restart without persistence or a
    flush dropped it: `jobs.broker_lost_before`; also when a newer run was sent since); and, where
    that cannot be known (RabbitMQ, whose durable queues survive a restart), one sent more than
    `max_age_s` (default SWARMSCOPE_RUN_STALE_S) seconds ago and still queued. A duplicate is harmless: `do_train`
    claims a queued run once. Called every SWARMSCOPE_RUN_REQUEUE_S by Celery beat (so a run is
    sent again within that period plus the workers' reconnection after Redis returns) and by
    `reap_stale_runs`. Returns the re-queued run ids."""
    cutoff = timezone.now() - timedelta(seconds=settings.SWARMSCOPE_RUN_STALE_S if max_age_s is None else max_age_s)
    requeued = []
    lost = Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=cutoff)
    lost_before = broker_lost_before()
    if lost_before is not None:
        lost |= Q(heartbeat_at__lt=lost_before)  # sent to a broker's data that is gone
    for run in Run.objects.filter(lost, status=Run.QUEUED, external=False):
        # Conditional on the heartbeat read: of two reapers, one re-sends.
        if Run.objects.filter(pk=run.pk, status=Run.QUEUED, heartbeat_at=run.heartbeat_at).update(
            heartbeat_at=timezone.now()
        ):
            request_training(run)
            requeued.append(run.pk)
    return requeued


def keyed_by_run(run: Run, episode: dict[str, Any]) -> dict[str, Any]:
    """`episode` (a trace object) with its `source_id` prefixed `run-<id>/`, once: the identity of a
    sample episode is the run's. The recipe names an episode by task and seed
    (`<task>/seed-<seed>`), which two runs of the same level and seed share while their policies,
    and so their episodes, differ (another algorithm or credit scheme: the ablation); a run that
    re-sends an iteration (a resume) re-sends the same episodes under the same keys."""
    prefix = f"run-{run.pk}/"
    source_id = str(episode.get("source_id") or "")
    return episode if source_id.startswith(prefix) else {**episode, "source_id": prefix + source_id}


def do_record_iteration(run: Run, doc: Any) -> RunIteration:
    """Store one iteration (re-sent iteration numbers replace the stored one, e.g. after a resume),
    import its sample episodes as traces of the run's project (keyed by run: `keyed_by_run`) and
    link them, update the run's progress and best reward — all or nothing. Raises RunInputError
    naming the bad field."""
    data = check_iteration(doc)
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        earlier = (
            RunIteration.objects.filter(run=run, iteration__lt=data["iteration"], env_steps__gt=data["env_steps"])
            .order_by("iteration")
            .first()
        )
        if earlier is not None:
            raise RunInputError(f"must not be below iteration {earlier.iteration}'s ({earlier.env_steps})", "env_steps")
        later = (
            RunIteration.objects.filter(run=run, iteration__gt=data["iteration"], env_steps__lt=data["env_steps"])
            .order_by("iteration")
            .first()
        )
        if later is not None:
            raise RunInputError(f"must not be above iteration {later.iteration}'s ({later.env_steps})", "env_steps")
        trace_ids = []
        for i, episode in enumerate(data["episodes"]):
            name = f"run {run.pk} iteration {data['iteration']} episode {i}.json"
            episode = keyed_by_run(run, episode)
            [outcome] = trace_ingest.do_import_sources(
                run.project,
                [SourceFile(name, json.dumps(episode).encode())],
                kind="episode",
                derived_from=f"run:{run.pk}",
            )
            if outcome.error or outcome.skipped or not outcome.traces:
                raise RunInputError(outcome.error or outcome.skipped or "holds no trace", f"episodes[{i}]")
            trace_ids.extend(t.pk for t in outcome.traces)
        seq = _next_seq(run)
        row, created = RunIteration.objects.update_or_create(
            run=run,
            iteration=data["iteration"],
            defaults={
                "env_steps": data["env_steps"],
                "wall_s": data["wall_s"],
                "metrics": data["metrics"],
                "stop": data["stop"],
                "credit": data["credit"],
                "seq": seq,
            },
        )
        row.episodes.set(trace_ids)
        reward = data["metrics"].get("reward")
        if created:
            best = (
                run.best_reward
                if reward is None or (run.best_reward is not None and run.best_reward >= reward)
                else reward
            )
        else:  # a re-sent iteration replaces the stored one: its old reward may have been the best
            rewards = [m.get("reward") for m in RunIteration.objects.filter(run=run).values_list("metrics", flat=True)]
            best = max((r for r in rewards if isinstance(r, (int, float))), default=None)
        fields = {
            "env_steps": max(run.env_steps, data["env_steps"]),
            "best_reward": best,
            "heartbeat_at": timezone.now(),
            "iterations_done": RunIteration.objects.filter(run=run).count(),
            "wall_s": max(run.wall_s, data["wall_s"]),
        }
        if data.get("budget_steps"):
            fields["budget_steps"] = data["budget_steps"]
        Run.objects.filter(pk=run.pk).update(**fields)
    return row


def do_request_cancel(run: Run) -> Run:
    """Ask a queued or running run to stop: queued runs stop at once, running ones at the end of
    the current iteration (the task polls); a cancelling run stays as it is. Raises RunInputError
    (field `status`; the page and the API answer 409) when the run is not active."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.status not in Run.ACTIVE:
            raise RunInputError(f"the run is {run.status}; only a queued or running run can be cancelled", "status")
        if run.status == Run.QUEUED:
            return _save(run, status=Run.CANCELLED, finished_at=timezone.now())
        if run.status == Run.RUNNING:
            return _save(
                run,
                status=Run.CANCELLED if run.external else Run.CANCELLING,
                **({"finished_at": timezone.now()} if run.external else {}),
            )
    return run


def is_cancel_requested(run_id: int) -> bool:
    """Polled by the training task between iterations; also its heartbeat."""
    Run.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())
    return Run.objects.filter(pk=run_id, status__in=(Run.CANCELLING, Run.CANCELLED)).exists()


def do_finish(run: Run, *, status: str = Run.FINISHED, error: str = "", summary: dict | None = None) -> Run:
    """Close a run: `finished`, `cancelled` or `failed` (with `error`), with the recipe's summary."""
    if status not in (Run.FINISHED, Run.CANCELLED, Run.FAILED):
        raise RunInputError("must be 'finished', 'cancelled' or 'failed'", "status")
    if summary is not None and not isinstance(summary, dict):
        raise RunInputError("must be an object", "summary")
    check_finite_json(summary, "summary")
    fields: dict[str, Any] = {"status": status, "error": error[:5000], "finished_at": timezone.now()}
    if summary is not None:
        fields["summary"] = summary
    return _save(run, **fields)


def do_set_checkpoint(run: Run, path: str) -> None:
    Run.objects.filter(pk=run.pk).update(checkpoint_path=path)


class _Unstorable(Exception):  # noqa: N818 - a signal out of the recipe's loop, not an error class
    """An iteration `do_record_iteration` refused, raised through the recipe to end its run; the
    message is the run's error as the user reads it."""


def do_train(run_id: int, project_id: int | None = None, *, pace: Callable[[], None] | None = None) -> str:
    """Train run `run_id` with the recipe's `train(config, checkpoint_dir=..., resume=...,
    on_iteration=..., should_stop=...)`: each iteration is stored and broadcast, cancel is polled
    between iterations. Returns the run's final status ("missing" for no such run of `project_id`,
    or an external one; a run neither queued nor cancelling keeps its status: a duplicate delivery).

    Resumes only from the run's own checkpoint (SWARMSCOPE_DATA_DIR/runs/<id>/last.pt, recorded in
    `checkpoint_path`); a file left there by something else is set aside as `stale-last.pt`. A
    failing recipe, an iteration the app cannot store and a summary it cannot store fail the run
    with the reason. `pace()` is called before training and before storing each iteration (the
    worker's CPU priority, `webapp.training.tasks`)."""
    runs = Run.objects.filter(pk=run_id)
    if project_id is not None:
        runs = runs.filter(project_id=project_id)
    run = runs.first()
    if run is None or run.external:
        return "missing"
    if run.status == Run.CANCELLING:
        do_finish(run, status=Run.CANCELLED)
        return Run.CANCELLED
    if run.status != Run.QUEUED:
        return run.status  # a duplicate delivery: the run already ran or is running elsewhere
    # Claim the run: of two deliveries of one queued run (a re-sent task), one trains it.
    if not Run.objects.filter(pk=run.pk, status=Run.QUEUED).update(status=Run.RUNNING, heartbeat_at=timezone.now()):
        return Run.objects.values_list("status", flat=True).get(pk=run.pk)
    training = recipe()
    directory = checkpoint_dir(run)
    directory.mkdir(parents=True, exist_ok=True)
    checkpoint = directory / "last.pt"
    # Resume only from this run's own checkpoint: a file left there by something else (a database
    # that was reset while SWARMSCOPE_DATA_DIR was kept) is not this run's and is set aside.
    resume = bool(run.checkpoint_path) and checkpoint.exists()
    if checkpoint.exists() and not resume:
        checkpoint.replace(directory / "stale-last.pt")
    do_mark_running(run)
    if pace is not None:
        pace()

    def on_iteration(doc: dict) -> None:
        if pace is not None:
            pace()
        # an iteration the app cannot store (a reward that overflowed to inf) fails the run, with
        # the field named, rather than training on unseen
        try:
            do_record_iteration(run, doc)
        except RunInputError as exc:
            raise _Unstorable(f"iteration {doc.get('iteration')} could not be stored: {exc}") from exc
        do_set_checkpoint(run, str(checkpoint))

    try:
        summary = training.train(
            training.RunConfig.from_dict(run.config),
            checkpoint_dir=directory,
            resume=resume,
            on_iteration=on_iteration,
            should_stop=lambda: is_cancel_requested(run_id),
        )
    except _Unstorable as exc:  # the app's own refusal, said as such (no exception class name)
        log.warning("run %s failed: %s", run_id, exc)
        do_finish(run, status=Run.FAILED, error=str(exc))
        return Run.FAILED
    except Exception as exc:  # noqa: BLE001 - the run records why; the worker lives on
        log.exception("run %s failed", run_id)
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        do_finish(run, status=Run.FAILED, error=last)
        return Run.FAILED
    run.refresh_from_db()
    cancelled = run.status in (Run.CANCELLING, Run.CANCELLED) or (
        isinstance(summary, dict) and summary.get("status") == "cancelled"
    )
    status = Run.CANCELLED if cancelled else Run.FINISHED
    summary = json.loads(json.dumps(summary, default=str)) if isinstance(summary, dict) else {}
    try:
        do_finish(run, status=status, summary=summary)
    except RunInputError as exc:
        do_finish(run, status=Run.FAILED, error=f"the recipe's summary: {exc}")
        return Run.FAILED
    return status


def request_training(run: Run) -> None:
    """Enqueue the run's training task on the `training` queue, after commit. A queued run's
    `heartbeat_at` is when its task was sent; a send that fails (the broker is down) clears it and
    the write still succeeds: `requeue_lost_runs` sends it again."""
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())

    def send() -> None:
        sent_at = timezone.now()  # the marker's time is at most this run's: not counted lost
        Run.objects.filter(pk=run.pk, status=Run.QUEUED).update(heartbeat_at=sent_at)
        if not enqueue("webapp.training.tasks.train_run", run.pk, run.project_id, queue="training"):
            Run.objects.filter(pk=run.pk, status=Run.QUEUED).update(heartbeat_at=None)
        else:
            mark_broker(sent_at)  # its loss with the message tells the sweep to send it again

    transaction.on_commit(send)


def budget_spent(run: Run) -> bool:
    """Whether `run` has played its whole budget (the recipe trains while env_steps < budget_steps)."""
    return bool(run.budget_steps) and run.env_steps >= run.budget_steps


def request_resume(run: Run) -> Run:
    """Re-queue a cancelled or failed run; the task continues from its last checkpoint. A queued
    run has its task sent again (its message may be lost: a broker restart drops its queues; a
    duplicate is harmless, `do_train` claims a queued run once). Raises RunInputError when the run
    is not resumable (running, cancelling, finished, or external), naming `budget_steps` when a
    cancelled or failed run's budget is spent (its task would end at once: nothing is left to train)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.external or run.status not in (*Run.RESUMABLE, Run.QUEUED):
            raise RunInputError(
                f"{'an external' if run.external else 'a'} {run.status} run cannot be resumed", "status"
            )
        if run.status != Run.QUEUED and budget_spent(run):
            raise RunInputError(
                f"its budget of {run.budget_steps} env steps is spent ({run.env_steps} played), so resuming would "
                "train nothing; start a new run with a larger budget",
                "budget_steps",
            )
        if run.status != Run.QUEUED:
            _save(run, status=Run.QUEUED, error="", finished_at=None)
        request_training(run)
    return run


def do_start_run(project: Project, config: dict[str, Any], *, name: str = "") -> Run:
    """Create a run and enqueue its training (the "New run" form). Raises RunInputError."""
    with transaction.atomic():
        run = do_create_run(project, config, name=name)
        request_training(run)
    return run


# --- seed groups --------------------------------------------------------------------------------


def series(iterations: list[dict[str, Any]], metric: str) -> list[list[float]]:
    """`[[env_steps, value], ...]` of `metrics[metric]` over iterations (None values left out)."""
    return [
        [it["env_steps"], it["metrics"][metric]]
        for it in iterations
        if isinstance(it.get("metrics", {}).get(metric), (int, float))
    ]


@dataclass(frozen=True)
class SeedGroup:
    """The runs of one seed group, one per seed: `runs` are drawn as the group's mean and 95 % band
    and counted as its seeds; `repeats` are the other runs of an already kept seed, left out
    (`kept_for[repeat id]` = the id of the run kept for its seed). Both newest first."""

    key: str
    runs: list[Run]
    repeats: list[Run]
    kept_for: dict[int, int]

    @property
    def seeds(self) -> int:
        return len(self.runs)

    def describe(self) -> str:
        """ "3 seeds", "3 seeds (1 repeated run left out)"."""
        text = f"{self.seeds} seed{'s' if self.seeds != 1 else ''}"
        if self.repeats:
            n = len(self.repeats)
            text += f" ({n} repeated run{'s' if n != 1 else ''} left out)"
        return text


def _seed_of(run: Run) -> str:
    return json.dumps((run.config or {}).get("seed"), sort_keys=True)


def pick_seed_runs(runs: Iterable[Run]) -> tuple[list[Run], list[Run], dict[int, int]]:
    """One run per seed (`config["seed"]`) of a seed group: a finished one before others, then the
    one that got furthest (env steps), then the most recent — so a run killed early does not stand
    for its seed. Returns (kept, repeats left out, {repeat id: kept id}), newest first."""
    newest_first = sorted(runs, key=lambda r: (r.created_at, r.pk), reverse=True)
    kept: dict[str, Run] = {}
    for run in sorted(newest_first, key=lambda r: (r.status == Run.FINISHED, r.env_steps), reverse=True):
        kept.setdefault(_seed_of(run), run)
    kept_ids = {r.pk for r in kept.values()}
    repeats = [r for r in newest_first if r.pk not in kept_ids]
    return ([r for r in newest_first if r.pk in kept_ids], repeats, {r.pk: kept[_seed_of(r)].pk for r in repeats})


def list_seed_groups(keys: Iterable[str], project_ids: Iterable[int]) -> dict[str, SeedGroup]:
    """The seed groups of the given keys in `project_ids` (a key with no run there is absent)."""
    members: dict[str, list[Run]] = {}
    for run in Run.objects.filter(seed_group__in=set(keys), project_id__in=list(project_ids)):
        members.setdefault(run.seed_group, []).append(run)
    return {key: SeedGroup(key, *pick_seed_runs(runs)) for key, runs in members.items()}
