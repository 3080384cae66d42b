"""The orchestrator's reward: the episode's terms (Kimi K2.5 PARL's orchestration reward), the same
return spread over the decisions for PPO, its reward-to-go, and the anneal of the auxiliary terms."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from trainer.sim.env import Episode


def critical_steps_of(episode: Episode) -> float:
    """CS of the episode's trace (Kimi K2.5 PARL; events), from its `parallel_speedup` reward
    (= events / CS, `trainer.sim.rewards`). 0.0 for an empty trace."""
    speedup = episode.trace.rewards.get("parallel_speedup", 0.0)
    return float(round(len(episode.trace.events) / speedup)) if speedup else 0.0


def episode_reward(episode: Episode, weights: Mapping[str, float], anneal: float) -> dict[str, float]:
    """Reward terms of one episode: `success` (0/1), `critical_steps` (events), `r_parallel` =
    min(1, sub-agents that solved a subtask / parallel_target), `r_finish` = subtasks finished / n,
    `task` = w_success * success - w_critical_steps * CS, `expected_task` (the same with E[R] =
    `p_success` for R), and `total` = task + anneal * (w_parallelism * r_parallel + w_finish * r_finish),
    anneal in [0, 1] (Kimi K2.5 PARL's annealed auxiliary terms)."""
    trace = episode.trace
    cs = critical_steps_of(episode)
    n = trace.attributes["n_subtasks"]
    working = {e.agent for e in trace.events if e.type == "tool_call" and e.tool == "solve"}
    finished = {e.attributes["subtask"] for e in trace.events if e.type == "return"}
    r_parallel = min(1.0, len(working) / weights["parallel_target"])
    r_finish = len(finished) / n if n else 0.0
    cost = weights["critical_steps"] * cs
    task = weights["success"] * episode.reward - cost
    total = task + anneal * (weights["parallelism"] * r_parallel + weights["finish"] * r_finish)
    return {
        "success": episode.reward,
        "critical_steps": cs,
        "r_parallel": r_parallel,
        "r_finish": r_finish,
        "task": task,
        "expected_task": weights["success"] * episode.p_success - cost,
        "total": total,
    }


def decision_rewards(reward: float, n_decisions: int, weights: Mapping[str, float]) -> np.ndarray:
    """The episode's `reward` spread over its T = `n_decisions` decisions (T,), summing to it: each
    decision pays w_critical_steps at once for the critical step it adds as an orchestrator event
    (CS = orchestrator events + Σ stage maxima of the sub-agent lanes, `swarmscope.metrics`; every
    decision is one orchestrator event), the rest comes at the end. The same return, so the same
    optimum; but PPO's GAE sees the cost of a needless message or spawn at that decision instead of
    inferring it through V from the terminal reward, where ±0.5 of outcome noise hides it."""
    out = np.full(n_decisions, -weights["critical_steps"])
    out[-1] += reward + weights["critical_steps"] * n_decisions
    return out


def reward_to_go(reward: float, n_decisions: int, weights: Mapping[str, float]) -> np.ndarray:
    """(T,) value targets under `decision_rewards`: the rewards from decision t on."""
    return reward + weights["critical_steps"] * np.arange(n_decisions)


def anneal_factor(env_steps: int, budget_steps: int, anneal_fraction: float) -> float:
    """1 - env_steps / (anneal_fraction * budget_steps), clipped to [0, 1]: the weight of the
    auxiliary reward terms and of the entropy bonus, fading linearly over the first
    `anneal_fraction` of the budget."""
    return float(np.clip(1.0 - env_steps / (anneal_fraction * budget_steps), 0, 1))
