"""Counterfactual jobs, their paired rollout samples, and the attributions they produce.

Job and sample state live here, not in the broker (docs/architecture.md, "Job durability"): a chunk
that runs twice finds its samples stored (unique per job and index) and counts none twice.
"""

from __future__ import annotations

from django.db import models

from webapp.traces.models import Trace


class CounterfactualJob(models.Model):
    """N paired re-rollouts of one trace under one intervention: sample i runs the control (the
    factual history) and the intervention both at seed `seed + i` (common random numbers).

    An `attribution` job ("Attribute this trace") credits every one of its `players` with the
    estimator `method` (`loo`, `shapley`, `kernelshap`, `shapley2` of swarmscope.credit): with
    `player_kind` `messages` the players are message event ids, each removed by `intervention`'s
    kind; with `agents` they are agent names, each removed with all its events
    (`Intervention("remove", agents=(name,))`). Its sample i is the estimator's sample i (a seed,
    an antithetic permutation pair, a coalition pair, an orthogonal block of coalition pairs),
    stored as one value per player.

    With `epsilon`, the job stops once the 95 % interval of Δ is narrower than it (reward units),
    `n_samples` being the cap. `heartbeat_at` is touched by every chunk; the reaper re-queues the
    missing chunks of jobs whose heartbeat is too old.

    `usage`: the LLM server's own usage of the job's requests (`requests`, `prompt_tokens`,
    `cached_tokens`, `completion_tokens`, `length_cut`, `retries`: counts), summed over its chunks
    under the job row's lock; {} for a backend that reports none (SwarmSim). `started_at`: when its
    first chunk started (wall time runs from there to `finished_at`). `estimate`: the cost estimate
    the job was confirmed with (`costs.job_estimate`: requests, tokens, their range, the model and
    turn cap, the cap share and its source); {} for a backend that needs none.
    """

    QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED, CANCELLED)]
    ACTIVE = (QUEUED, RUNNING)
    COUNTERFACTUAL, ATTRIBUTION = "counterfactual", "attribution"
    KINDS = [(k, k) for k in (COUNTERFACTUAL, ATTRIBUTION)]

    kind = models.CharField(max_length=20, choices=KINDS, default=COUNTERFACTUAL)
    method = models.CharField(
        max_length=20, blank=True, help_text="attribution jobs: loo | shapley | kernelshap | shapley2"
    )
    players = models.JSONField(
        default=list, blank=True, help_text="attribution jobs: the credited event ids or agent names"
    )
    MESSAGES, AGENTS = "messages", "agents"
    player_kind = models.CharField(
        max_length=10,
        choices=[(k, k) for k in (MESSAGES, AGENTS)],
        default=MESSAGES,
        help_text="attribution jobs: players are message event ids or agent names",
    )
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="counterfactual_jobs")
    intervention = models.JSONField(help_text="swarmscope.interventions.Intervention.to_dict()")
    backend = models.CharField(max_length=100, help_text="a key of SWARMSCOPE_ROLLOUT_BACKENDS")
    backend_path = models.CharField(max_length=300, help_text="the dotted path the key named at request time")
    n_samples = models.PositiveIntegerField(help_text="samples requested (the cap when epsilon is set)")
    epsilon = models.FloatField(null=True, blank=True)
    seed = models.BigIntegerField(default=0, help_text="sample i uses seed + i")
    status = models.CharField(max_length=20, choices=STATUSES, default=QUEUED, db_index=True)
    error = models.TextField(blank=True)
    done_count = models.PositiveIntegerField(default=0)
    heartbeat_at = models.DateTimeField()
    usage = models.JSONField(default=dict, blank=True, help_text="the LLM server's usage, summed over chunks")
    estimate = models.JSONField(default=dict, blank=True, help_text="the cost estimate the job was confirmed with")
    started_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "heartbeat_at"])]

    @property
    def attribution(self) -> Attribution | None:
        """The attribution of a counterfactual job (None until it is done)."""
        return self.attributions.first()


class RolloutSample(models.Model):
    """One paired sample: rewards of the control and of the intervention at `seed`; of an
    attribution job, `values`: the estimator's sample value of each player, in `players` order."""

    job = models.ForeignKey(CounterfactualJob, on_delete=models.CASCADE, related_name="samples")
    index = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    control_reward = models.FloatField(null=True, blank=True)
    intervention_reward = models.FloatField(null=True, blank=True)
    values = models.JSONField(null=True, blank=True)
    branch_trace = models.ForeignKey(Trace, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="sample_identity")]


class Attribution(models.Model):
    """The credit of one target, with everything docs/architecture.md "Credit" says re-runs it.

    `estimate`, `ci_low`, `ci_high`: Δ and its 95 % interval in reward units; `n_rollouts`: the
    rollouts behind it (2 per paired sample); `environment`: the backend's config (SwarmSim: task,
    actions, sim config, episode seed); `code_version`: the git commit that computed it.
    """

    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="attributions")
    job = models.ForeignKey(
        CounterfactualJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="attributions"
    )
    target = models.CharField(max_length=500, help_text="`event:<id>` / `agent:<name>`, comma-separated")
    intervention = models.JSONField()
    method = models.CharField(max_length=100)
    estimate = models.FloatField()
    ci_low = models.FloatField()
    ci_high = models.FloatField()
    n_rollouts = models.PositiveIntegerField()
    backend = models.CharField(max_length=300, help_text="the backend's dotted path")
    seed = models.BigIntegerField()
    environment = models.JSONField(default=dict)
    code_version = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["trace", "-created_at"])]
