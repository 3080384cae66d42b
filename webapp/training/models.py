"""Training runs of an orchestrator policy, their iterations, and the sample episodes they keep.

A run's state lives here (docs/architecture.md "Paths through the app"): the Celery task re-reads it, a cancel is a
status the task polls, and resuming continues from the checkpoint under SWARMSCOPE_DATA_DIR. Every
write gives the run its next `seq`; an iteration row carries the `seq` that wrote it, so "what came
after seq N" is a filter (the live protocol of `/ws/runs/<id>/`, swarmscope.protocol).
"""

from __future__ import annotations

from django.db import models

from webapp.accounts.models import Project
from webapp.traces.models import Trace


class Run(models.Model):
    """One training run: `config` is the recipe's RunConfig.to_dict(); `seed_group` the SHA-256
    prefix of the config without its seed, so runs that differ only by seed form one group.

    `env_steps` / `budget_steps`: environment steps so far / in all (credit re-rollouts counted);
    `best_reward`: the highest iteration mean reward; `external`: reported through the runs API by
    a trainer outside the app (no Celery task, no cancel from here)."""

    QUEUED, RUNNING, CANCELLING, CANCELLED, FAILED, FINISHED = (
        "queued",
        "running",
        "cancelling",
        "cancelled",
        "failed",
        "finished",
    )
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, CANCELLING, CANCELLED, FAILED, FINISHED)]
    ACTIVE = (QUEUED, RUNNING, CANCELLING)
    RESUMABLE = (CANCELLED, FAILED)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=300)
    config = models.JSONField(help_text="the recipe's RunConfig.to_dict()")
    seed_group = models.CharField(max_length=64, db_index=True, help_text="hash of the config without 'seed'")
    status = models.CharField(max_length=20, choices=STATUSES, default=QUEUED, db_index=True)
    env_steps = models.BigIntegerField(default=0)
    budget_steps = models.BigIntegerField(default=0)
    iterations_done = models.IntegerField(default=0)
    best_reward = models.FloatField(null=True, blank=True)
    summary = models.JSONField(default=dict, blank=True, help_text="the recipe's final summary")
    checkpoint_path = models.CharField(max_length=500, blank=True)
    error = models.TextField(blank=True)
    external = models.BooleanField(default=False)
    seq = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    wall_s = models.FloatField(default=0.0, help_text="training seconds of all attempts so far")
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="touched by the training task at start and every iteration"
    )

    class Meta:
        indexes = [models.Index(fields=["project", "-created_at"]), models.Index(fields=["status", "heartbeat_at"])]

    def __str__(self) -> str:
        return self.name or f"run {self.pk}"


class RunIteration(models.Model):
    """One training iteration as the recipe reported it (the contract's iteration dict):
    `metrics` (reward, success_rate, critical_steps, parallelism_efficiency, tokens_per_episode,
    episode_length, entropy, losses), `stop` (p_stop_by_step, continue_value_by_step, stop_regret,
    premature, late; `regret`: "offered", over the stops the stop mode offered, or "hindsight" in
    runs stored before issue 30), `credit` (by_role, by_agent, free_rider_index by removal effect
    on `free_rider_episodes` sampled episodes, pseudo_parallelism_index; without
    free_rider_episodes, the superseded credit-share index);
    `wall_s`: seconds since the run started; `episodes`: its sample episodes, imported as traces."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="iterations")
    iteration = models.IntegerField()
    env_steps = models.BigIntegerField()
    wall_s = models.FloatField(default=0.0)
    metrics = models.JSONField(default=dict)
    stop = models.JSONField(default=dict)
    credit = models.JSONField(default=dict)
    episodes = models.ManyToManyField(Trace, blank=True, related_name="run_iterations")
    seq = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "iteration"], name="run_iteration_identity")]
        indexes = [models.Index(fields=["run", "seq"])]
