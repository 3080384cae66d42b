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
from trainer.rl.stop import StopOutcome, stop_hindsight, stop_regret

#: Bins (over `max_steps`) of the per-step stop curves the run page draws.
STOP_BINS = 40


def binned(points: Sequence[tuple[int, float]], width: int) -> list[list[float]]:
    """[[bin start, mean value], ...] of (step, value) points in bins of `width` steps, by step."""
    sums: dict[int, list[float]] = {}
    for step, value in points:
        sums.setdefault(step // width * width, []).append(value)
    return [[step, float(np.mean(values))] for step, values in sorted(sums.items())]


def uses_offered_regret(config: RunConfig) -> bool:
    """True where `stop_hindsight` does not apply (trainer.rl.stop): stop offered before the answer
    (`stop="anytime"`, where stopping at decision 0 is a real choice) or partial answer credit
    (its hindsight points hold for all-or-nothing grading only); the report then counts
    `stop_regret` over the stops the mode offered instead."""
    return config.stop == "anytime" or config.answer_credit == "partial"


#: Offered stops valued per episode by the report's `stop_regret` (one replay step each; drawn from
#: the episode's seed, so an estimate from below once an episode offers more), as `stop_hindsight`'s
#: partial-credit branch.
REGRET_POINTS = 8


def stop_outcomes(episodes: list, config: RunConfig) -> tuple[list[StopOutcome], str]:
    """Per episode its StopOutcome, and which regret it is: "offered" (`stop_regret` over
    REGRET_POINTS of the stops `config.stop` offered on the episode's path; no continuation
    re-rollout, so every counted bad stop is late and premature stays 0) where
    `uses_offered_regret`, else "hindsight" (`stop_hindsight`)."""
    weights = config.reward_weights
    if uses_offered_regret(config):
        return [
            stop_regret(e, weights, config.stop, points=REGRET_POINTS, rng=np.random.default_rng(e.seed))
            for e in episodes
        ], "offered"
    return [stop_hindsight(e, weights) for e in episodes], "hindsight"


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
    premature and late counts, `regret`: "hindsight" or "offered", see `stop_outcomes`), `credit`
    (`attribution` of the per-decision `credits`) and
    `episodes` (the first `sample_episodes` traces, tagged with the training reward and settings)."""
    episodes = [g.episode for g in games]
    outcomes, regret_kind = stop_outcomes(episodes, config)
    efficiency = [parallelism_efficiency(e.trace) for e in episodes]
    width = max(1, config.max_steps // STOP_BINS)
    moves_all = [m for g in games for m in g.moves]
    for episode, term in zip(episodes[: config.sample_episodes], terms):
        episode.trace.rewards["training_reward"] = term["total"]
        episode.trace.attributes.update(
            training={
                "iteration": iteration,
                "credit": config.credit,
                "algorithm": config.algorithm,
                "stop": config.stop,
            }
        )
    return {
        "metrics": {
            "reward": float(np.mean([t["total"] for t in terms])),
            "success_rate": float(np.mean([t["success"] for t in terms])),
            "critical_steps": float(np.mean([t["critical_steps"] for t in terms])),
            "parallelism_efficiency": float(np.mean([e for e in efficiency if e is not None] or [0.0])),
            "tokens_per_episode": float(np.mean([e.trace.costs["tokens"] for e in episodes])),
            "episode_length": float(np.mean([len(e.actions) for e in episodes])),
            "entropy": losses["entropy"],
            "policy_loss": losses["policy_loss"],
            "value_loss": losses["value_loss"],
            "stop_value_loss": losses["stop_value_loss"],
            "task_reward": float(np.mean([t["task"] for t in terms])),
            "expected_success": float(np.mean([e.p_success for e in episodes])),
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
            "regret": regret_kind,
        },
        "credit": attribution(episodes, credits),
        "episodes": [e.trace.to_dict() for e in episodes[: config.sample_episodes]],
    }
