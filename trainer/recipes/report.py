"""The iteration dict the recipe reports (what the run page shows): metrics, the stop curves and
counts, the attribution panel and the sample episodes' traces. The contract's fields are checked on
the app's side by `webapp.training.services.check_iteration`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from swarmscope.metrics import parallelism_efficiency
from trainer.policy import MOVES, Played
from trainer.recipes.config import RunConfig
from trainer.rl.credit import attribution
from trainer.rl.stop import StopOutcome, stop_regret
from trainer.sim.env import Episode

#: Bins (over `max_steps`) of the per-step stop curves the run page draws.
STOP_BINS = 40


def binned(points: Sequence[tuple[int, float]], width: int) -> list[list[float]]:
    """[[bin start, mean value], ...] of (step, value) points in bins of `width` steps, by step."""
    sums: dict[int, list[float]] = {}
    for step, value in points:
        sums.setdefault(step // width * width, []).append(value)
    return [[step, float(np.mean(values))] for step, values in sorted(sums.items())]


#: Offered stops valued per episode by the report's `stop_regret` (one replay step each; drawn from
#: the episode's seed, so an estimate from below once an episode offers more).
REGRET_POINTS = 8


def stop_outcomes(episodes: list, config: RunConfig) -> list[StopOutcome]:
    """Per episode its StopOutcome by `stop_regret` (trainer.rl.stop) over the stops `config.stop`
    offered on the episode's own path (`offered_stops`: every decision under `anytime`, those after
    the answer under `learned`, none under `rule` and `none`, whose stop is no choice: regret 0), at
    most REGRET_POINTS of them valued at SwarmSim's exact E[R] (reward units). Without a
    continuation re-rollout (it would cost a rollout to the step limit per episode), so every
    counted bad stop is late and premature stays 0: under `learned` that is exact (after the answer
    E[R] is fixed and going on only costs critical steps), under `anytime` premature stops go
    uncounted. Replays are not counted in the run's environment steps."""
    weights = config.reward_weights
    return [
        stop_regret(e, weights, config.stop, points=REGRET_POINTS, rng=np.random.default_rng(e.seed)) for e in episodes
    ]


def episode_means(episodes: list[Episode], terms: list[dict[str, float]]) -> dict[str, float]:
    """The iteration's means over its episodes of their `episode_reward` terms (success,
    critical steps, task), parallelism efficiency (episodes where it is defined), tokens, length
    (decisions) and SwarmSim's exact E[R | actions]."""
    efficiency = [parallelism_efficiency(e.trace) for e in episodes]
    return {
        "success_rate": float(np.mean([t["success"] for t in terms])),
        "critical_steps": float(np.mean([t["critical_steps"] for t in terms])),
        "parallelism_efficiency": float(np.mean([e for e in efficiency if e is not None] or [0.0])),
        "tokens_per_episode": float(np.mean([e.trace.costs["tokens"] for e in episodes])),
        "episode_length": float(np.mean([len(e.actions) for e in episodes])),
        "task_reward": float(np.mean([t["task"] for t in terms])),
        "expected_success": float(np.mean([e.p_success for e in episodes])),
    }


def tag_samples(episodes: list[Episode], rewards: list[float], config: RunConfig, iteration: int, **extra: Any) -> None:
    """Tag the first `sample_episodes` traces with their training reward and the run's settings
    (`attributes.training`: iteration, credit, algorithm, stop and `extra`)."""
    for episode, reward in zip(episodes[: config.sample_episodes], rewards):
        episode.trace.rewards["training_reward"] = reward
        episode.trace.attributes.update(
            training={
                "iteration": iteration,
                "credit": config.credit,
                "algorithm": config.algorithm,
                "stop": config.stop,
                **extra,
            }
        )


def iteration_report(
    games: list[Played],
    terms: list[dict[str, float]],
    credits: list[np.ndarray],
    losses: Mapping[str, float],
    config: RunConfig,
    iteration: int,
    anneal: float,
    credit_steps: int,
) -> dict[str, Any]:
    """The iteration dict without `iteration`, `env_steps`, `budget_steps`, `wall_s`: `metrics` (means
    over the episodes of their `episode_reward` `terms`, the update's `losses`, `anneal`, the
    re-rollouts' `credit_steps`, move shares), `stop` (p(stop) and C(s) by step, mean stop regret,
    premature and late counts, `regret`: "offered", the regret over the stops the policy was offered,
    `stop_outcomes`; runs stored before issue 30 say "hindsight"), `credit` (`attribution` of the
    per-decision `credits`: free riders by exact removal effects on a sample of episodes) and
    `episodes` (the first `sample_episodes` traces, tagged with the training reward and settings)."""
    episodes = [g.episode for g in games]
    outcomes = stop_outcomes(episodes, config)
    width = max(1, config.max_steps // STOP_BINS)
    moves_all = [m for g in games for m in g.moves]
    tag_samples(episodes, [t["total"] for t in terms], config, iteration)
    return {
        "metrics": {
            **episode_means(episodes, terms),
            "reward": float(np.mean([t["total"] for t in terms])),
            "entropy": losses["entropy"],
            "policy_loss": losses["policy_loss"],
            "value_loss": losses["value_loss"],
            "stop_value_loss": losses["stop_value_loss"],
            "clip_fraction": losses["clip_fraction"],
            "anneal": anneal,
            "credit_env_steps": int(credit_steps),
            "move_shares": {name: moves_all.count(m) / max(1, len(moves_all)) for m, name in enumerate(MOVES)},
        },
        "stop": {
            "p_stop_by_step": binned([(t, p) for g in games for t, p in enumerate(g.p_stop)], width),
            "continue_value_by_step": binned([(t, v) for g in games for t, v in enumerate(g.continuation)], width),
            "stop_regret": float(np.mean([o.regret for o in outcomes])),
            "premature": int(sum(o.premature for o in outcomes)),
            "late": int(sum(o.late for o in outcomes)),
            "regret": "offered",
        },
        "credit": attribution(episodes, credits),
        "episodes": [e.trace.to_dict() for e in episodes[: config.sample_episodes]],
    }
