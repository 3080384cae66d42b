"""Train a SwarmSim orchestrator with clipped PPO or GRPO-style group baselines (one readable recipe).

    python -m trainer.recipes.train_orchestrator --config cfg.json [--out DIR] [--resume]
        [--url http://127.0.0.1:8000 --token ssk_...]

Read top to bottom: `RunConfig` (every knob, validated), the reward (`episode_reward`), stop
hindsight (`stop_hindsight`), credit (`decision_credit`), the update (`ppo_update`), the loop
(`train`), and the CLI.

- **Policy**: `trainer.policy.OrchestratorPolicy`: features of the trace so far -> masked logits
  over spawn / delegate / message / aggregate / stop, a value head V(s) and a value-of-continuation
  head C(s).
- **Algorithms**: `ppo`: clipped surrogate (Schulman et al. 2017, eq. 7) with GAE(gamma = 1,
  lambda) advantages on V; `grpo`: the advantage of every decision is the episode's reward minus
  the mean of its group (episodes on the same task), over the group's std (Shao et al. 2024,
  DeepSeekMath §4.1, outcome supervision), with the same clipped surrogate.
- **Credit** (per decision; the decisions are cut into `credit_blocks` contiguous blocks, one
  decision per block when there are fewer): `shared`: every decision is credited with the episode's
  terminal reward (through the algorithm's baseline); `counterfactual`: paired leave-one-out
  Δ_k = R(h) - R(h with block k redrawn from the policy), `credit_samples` redraws per block,
  each a closed-loop re-rollout at the episode's seed (common random numbers, DESIGN.md "Credit"),
  by `swarmscope.credit.leave_one_out`; `shapley`: Shapley values of the blocks in the same
  coalition game (absent blocks redrawn), `credit_samples` antithetic permutation pairs
  (`swarmscope.credit.shapley_permutation`). The block's credit is the advantage of each of its
  decisions. Every re-rollout step after the fork counts in `env_steps` and in `budget_steps`
  (the replayed prefix before the fork does not: it is the factual episode's, restored).
- **Reward** (`episode_reward`): w_success * R + anneal * (w_parallelism * r_parallel + w_finish *
  r_finish) - w_critical_steps * CS, the Kimi K2.5 PARL orchestration terms (r_parallel: working
  sub-agents / parallel_target, capped at 1; r_finish: share of subtasks finished), annealed
  linearly to 0 over the first `anneal_fraction` of the budget, and the critical-steps cost (CS:
  `swarmscope.metrics.critical_steps`, events). Under PPO the CS cost of each orchestrator event
  is paid at its decision (`decision_rewards`; the same return).
- **Stop** (`stop_targets`) is optimal stopping on two heads (`trainer.policy`): S(s), the value
  of stopping now, and G(s) = C(s) - S(s), the gain of continuing; p(stop) = sigmoid(-G / τ), so
  the orchestrator stops when the learned value of continuing falls below the value of stopping
  now. Stop gets no policy gradient (its rows are left out of the surrogate): the heads are
  regressed on paired outcomes at the episode's seed (common random numbers). Where the episode
  stopped at t: S = its reward, G = R(continue) - R(stop), the continuation one re-rollout with stop
  masked from t on, run to the step limit (the alternative the issue compares with). At
  `stop_points` other decisions s drawn per episode (and the first decision after the answer):
  G = R(factual, it went on) - R(stop at s), the latter the factual prefix replayed with a stop at
  s (one step). Both re-rollouts count in the budget. Because both terms of G share the outcome
  draws, its target after the answer is the exact, small, negative critical-steps cost of going on,
  not buried in ±0.5 outcome noise as a reward difference across episodes would be. Guard against
  the collapse into stopping without an answer (optimal stopping for a policy that cannot yet
  answer well): stop is offered once the orchestrator has answered (`trainer.policy`). Logged per
  step: p(stop) and C(s); per episode the stop regret (`stop_hindsight`).

Earlier versions trained stop as an action-head logit with the paired credit as its advantage;
after normalisation that ~0.03 signal was drowned by the outcome noise (the stop never fired), or,
once the annealed terms faded, the policy collapsed into stopping at once (bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from swarmscope.client import SwarmscopeClient, SwarmscopeError
from swarmscope.credit import leave_one_out, shapley_permutation
from swarmscope.metrics import parallelism_efficiency, pseudo_parallel_agents
from trainer.policy import (
    AGGREGATE,
    MOVES,
    STOP,
    STOP_MODES,
    OrchestratorPolicy,
    Played,
    Script,
    move_probabilities,
    moves_of,
    play,
)
from trainer.sim.actions import aggregate, delegate, spawn, stop
from trainer.sim.env import Episode, SimConfig, simulate
from trainer.sim.tasks import LEVELS, Task, generate_task

ALGORITHMS = ("ppo", "grpo")
CREDITS = ("shared", "counterfactual", "shapley")
#: Reward weights and their anneal settings (see `episode_reward`).
DEFAULT_REWARD_WEIGHTS = {"success": 1.0, "parallelism": 0.1, "finish": 0.5, "critical_steps": 0.002,
                          "parallel_target": 8.0, "anneal_fraction": 1.0}
#: Largest reward weight (or setting): a reward of 1e308 * R overflows to inf and no iteration can be stored.
MAX_WEIGHT = 1e6
#: Seed bases of training tasks and episodes (far from `trainer.sim.tasks.TEST_SET_SEED`'s range).
TASK_SEED_BASE, EPISODE_SEED_BASE = 1_000_000_000, 2_000_000_000
STOP_BINS = 40


# --- configuration ----------------------------------------------------------------------------

@dataclass
class RunConfig:
    """One training run; JSON-serialisable (`to_dict`), validated by `from_dict`.

    level: a SwarmSim level of `trainer.sim.tasks.LEVELS` (`long`: >= 200 decisions per episode).
    algorithm: "ppo" | "grpo". credit: "shared" | "counterfactual" | "shapley".
    stop: "learned" | "rule" | "none" (`trainer.policy` stop modes).
    reward_weights: weights of `episode_reward` (success, parallelism, finish, critical_steps per
        critical step) and its settings parallel_target (sub-agents) and anneal_fraction (of the budget).
    budget_steps: environment steps in all, credit re-rollouts included; the run stops at the first
        iteration boundary at or past it.
    seed: seeds the network's initialisation, the tasks and the episodes.
    episodes_per_iteration: episodes played per iteration, in groups of `group_size` sharing a task.
    lr: Adam learning rate. epochs, minibatch_size, clip: PPO update. gae_lambda: GAE's lambda.
    entropy_coef, value_coef, continuation_coef: loss weights (the entropy bonus is annealed with the
        orchestration terms, `anneal_factor`). hidden: torso width.
    max_steps: decisions after which SwarmSim stops an episode (the step limit).
    max_agents: most sub-agents alive at once. credit_blocks, credit_samples: see the module docstring.
    stop_points: decisions per episode at which the value of stopping is measured (`stop_targets`).
    sample_episodes: episodes per iteration reported as traces. threads: torch CPU threads.
    """

    level: str = "long"
    algorithm: str = "ppo"
    credit: str = "shared"
    stop: str = "learned"
    reward_weights: dict = field(default_factory=lambda: dict(DEFAULT_REWARD_WEIGHTS))
    budget_steps: int = 200_000
    seed: int = 0
    episodes_per_iteration: int = 16
    group_size: int = 4
    lr: float = 3e-3
    epochs: int = 4
    minibatch_size: int = 512
    clip: float = 0.2
    gae_lambda: float = 0.95
    entropy_coef: float = 0.003
    value_coef: float = 0.5
    continuation_coef: float = 0.5
    hidden: int = 64
    max_steps: int = 400
    max_agents: int = 64
    credit_blocks: int = 4
    credit_samples: int = 2
    stop_points: int = 4
    sample_episodes: int = 1
    threads: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """Validate and build; missing fields take their defaults, `reward_weights` is merged into
        the defaults. Raises ValueError naming the field (`reward_weights.<key>` inside it)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"config: must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        for name in data:
            if name not in known:
                raise ValueError(f"{name}: unknown field (known: {', '.join(sorted(known))})")
        choices = {"level": tuple(LEVELS), "algorithm": ALGORITHMS, "credit": CREDITS, "stop": STOP_MODES}
        for name, allowed in choices.items():
            if name in data and data[name] not in allowed:
                raise ValueError(f"{name}: must be one of {', '.join(allowed)}, got {data[name]!r}")
        # (low, high): high keeps a run storable (64-bit integers) and within what a worker can hold
        bounds = {"budget_steps": (1, 10 ** 12), "seed": (0, 2 ** 62), "episodes_per_iteration": (1, 4096),
                  "group_size": (1, 256), "epochs": (1, 100), "minibatch_size": (1, 65536), "hidden": (1, 4096),
                  "max_steps": (2, 100_000), "max_agents": (1, 10_000), "credit_blocks": (1, 1000),
                  "credit_samples": (2, 1000), "stop_points": (0, 1000), "sample_episodes": (0, 16),
                  "threads": (1, 64)}
        for name, (low, high) in bounds.items():
            if name in data:
                value = data[name]
                if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                    raise ValueError(f"{name}: must be an integer in [{low}, {high:,}], got {value!r}")
        positive = ("lr", "clip")
        unit = ("gae_lambda",)
        for name in ("lr", "clip", "gae_lambda", "entropy_coef", "value_coef", "continuation_coef"):
            if name in data:
                value = data[name]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                        or value < 0 or (name in positive and value == 0) or (name in unit and value > 1):
                    bound = "in [0, 1]" if name in unit else "> 0" if name in positive else ">= 0"
                    raise ValueError(f"{name}: must be a finite number {bound}, got {value!r}")
        weights = dict(DEFAULT_REWARD_WEIGHTS)
        given = data.get("reward_weights", {})
        if not isinstance(given, Mapping):
            raise ValueError(f"reward_weights: must be an object of numbers, got {given!r}")
        for key, value in given.items():
            if key not in DEFAULT_REWARD_WEIGHTS:
                raise ValueError(f"reward_weights.{key}: unknown weight (known: {', '.join(DEFAULT_REWARD_WEIGHTS)})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_WEIGHT:
                raise ValueError(f"reward_weights.{key}: must be a number in [0, {MAX_WEIGHT:g}], got {value!r}")
            weights[key] = float(value)
        if not 0 < weights["anneal_fraction"] <= 1:
            raise ValueError("reward_weights.anneal_fraction: must be in (0, 1]")
        if weights["parallel_target"] < 1:
            raise ValueError("reward_weights.parallel_target: must be >= 1")
        values = {**{k: v for k, v in data.items() if k != "reward_weights"}, "reward_weights": weights}
        config = cls(**values)
        if config.episodes_per_iteration % config.group_size:
            raise ValueError(f"group_size: must divide episodes_per_iteration ({config.episodes_per_iteration}), "
                             f"got {config.group_size}")
        if config.sample_episodes > config.episodes_per_iteration:
            raise ValueError("sample_episodes: must be <= episodes_per_iteration")
        return config

    def sim_config(self) -> SimConfig:
        return SimConfig(max_steps=self.max_steps)


# --- reward -----------------------------------------------------------------------------------

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
    return {"success": episode.reward, "critical_steps": cs, "r_parallel": r_parallel, "r_finish": r_finish,
            "task": task, "expected_task": weights["success"] * episode.p_success - cost, "total": total}


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


def anneal_factor(env_steps: int, config: RunConfig) -> float:
    """1 - env_steps / (anneal_fraction * budget_steps), clipped to [0, 1]."""
    return float(np.clip(1.0 - env_steps / (config.reward_weights["anneal_fraction"] * config.budget_steps), 0, 1))


# --- stop hindsight ---------------------------------------------------------------------------

@dataclass
class StopOutcome:
    """`regret` = expected task reward at the best stopping point in hindsight - achieved (>= 0);
    `best_point` and `achieved_point`: decisions taken before answering (the first aggregate or stop);
    `premature` / `late`: the episode answered before / ended after its best point, with regret > 0."""

    regret: float
    best_point: int
    achieved_point: int
    premature: bool
    late: bool


def stop_hindsight(episode: Episode, weights: Mapping[str, float]) -> StopOutcome:
    """The best stopping point of `episode` in hindsight, which SwarmSim knows.

    Stopping at point t means: after the first t decisions of the episode's path, aggregate (if
    not yet) and stop. Its value is the expected task reward w_success * E[R] - w_critical_steps *
    CS, E[R] the closed form `p_success` under the episode's draws. The path is the episode's
    actions; when it answered (aggregated or stopped) before delegating every subtask, the path is
    its decisions before the answer completed by delegating the rest round-robin to its workers
    (a solver spawned if it had none). Before every subtask is delegated (point t*) E[R] = 0; from
    t* on E[R] is fixed and CS only grows; so the best point is 0 or t*, and two short replays
    (same seed) give both. Units: reward.
    """
    actions, task, seed = list(episode.actions), episode.task, episode.seed
    n = len(task.subtasks)
    answer_at = next((t for t, a in enumerate(actions) if a.kind in ("aggregate", "stop")), len(actions))
    delegated = {a.subtask for a in actions[:answer_at] if a.kind == "delegate"}
    if len(delegated) == n:
        path = actions
        t_star = max(t for t, a in enumerate(actions[:answer_at]) if a.kind == "delegate") + 1 if n else 0
    else:
        path = actions[:answer_at]
        workers, count = [], {}
        for action in path:
            if action.kind == "spawn":
                count[action.role] = count.get(action.role, 0) + 1
                if action.role != "verifier":
                    workers.append(action.agent or f"{action.role}_{count[action.role]}")
            elif action.kind == "despawn" and action.agent in workers:
                workers.remove(action.agent)
        if not workers:
            path.append(spawn("solver", f"solver_{count.get('solver', 0) + 1}"))
            workers.append(path[-1].agent)
        missing = [i for i in range(n) if i not in delegated]
        path += [delegate(i, workers[k % len(workers)]) for k, i in enumerate(missing)]
        t_star = len(path)
    config = replace(episode.config, max_steps=max(episode.config.max_steps, len(path) + 2))

    def value(point: int) -> float:
        prefix = path[:point]
        tail = [stop()] if any(a.kind == "aggregate" for a in prefix) else [aggregate(), stop()]
        ep = simulate(task, prefix + tail, config, seed)
        return weights["success"] * ep.p_success - weights["critical_steps"] * critical_steps_of(ep)

    achieved = episode_reward(episode, weights, 0.0)["expected_task"]
    best_point, best = 0, value(0)
    at_star = value(t_star)
    if at_star > best:
        best_point, best = t_star, at_star
    regret = max(0.0, best - achieved)
    premature = regret > 1e-9 and answer_at < best_point
    late = regret > 1e-9 and not premature
    return StopOutcome(regret, best_point, answer_at, premature, late)


# --- stop targets -----------------------------------------------------------------------------

def stop_targets(policy: OrchestratorPolicy, game: Played, reward: float, config: RunConfig,
                 reward_of: Callable[[Episode], float], rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """Regression targets of the stop heads for one played episode (T recorded decisions): the value
    of stopping S (T,) and the gain of continuing G (T,), NaN where not measured, and the
    environment steps the measurements took. Units: reward (`reward_of`).

    Paired at the episode's seed (common random numbers): where the episode stopped at t, S = its
    `reward` and G = R(continue) - reward, the continuation a closed-loop re-rollout from t with stop
    masked to the step limit (its steps after the fork count). At up to `config.stop_points`
    decisions s where stop was legal but not taken (drawn by `rng`), plus the first such decision
    after the answer (aggregate): S = R(the first s factual decisions, then stop) (one step after
    the fork) and G = reward - S.
    """
    n = len(game.moves)
    values, gains = np.full(n, np.nan), np.full(n, np.nan)
    steps = 0
    env, moves = game.env, moves_of(game)
    if config.stop != "learned" or not n:
        return values, gains, steps
    t = n - 1
    if game.moves[t] == STOP and game.masks[t].sum() > 1:
        script = Script(env.task, env.seed, moves, (True,) * t + (False,), 0, t, t, no_stop_after=True)
        [going_on] = play(policy, [script], config.sim_config(), config.stop, config.max_agents, record=False)
        steps += going_on.env_steps
        values[t], gains[t] = reward, reward_of(going_on.episode) - reward
    open_points = [s for s in range(n) if game.masks[s][STOP] and game.moves[s] != STOP]
    points = set(rng.choice(open_points, size=min(config.stop_points, len(open_points)), replace=False).tolist()) \
        if open_points else set()
    answered = next((s for s, m in enumerate(game.moves) if m == AGGREGATE), None)
    after_answer = [s for s in open_points if answered is not None and s > answered]
    if after_answer:
        points.add(after_answer[0])
    for s in sorted(points):
        stopped = simulate(env.task, list(env.actions[:s]) + [stop()], config.sim_config(), env.seed)
        steps += 1
        values[s] = reward_of(stopped)
        gains[s] = reward - values[s]
    return values, gains, steps


# --- credit -----------------------------------------------------------------------------------

def block_of(n_decisions: int, n_blocks: int) -> np.ndarray:
    """(T,) block index of each decision: `n_blocks` contiguous, near-equal blocks (at most T)."""
    k = max(1, min(n_blocks, n_decisions))
    return np.concatenate([np.full(len(part), b) for b, part in enumerate(np.array_split(np.arange(n_decisions), k))]) \
        if n_decisions else np.zeros(0, dtype=int)


def decision_credit(policy: OrchestratorPolicy, game: Played, reward: float, config: RunConfig,
                    reward_of: Callable[[Episode], float]) -> tuple[np.ndarray, int]:
    """Per-decision credit (T,) of a played episode under `config.credit` ("counterfactual" or
    "shapley"), and the environment steps its re-rollouts took.

    The coalition game: players are the decision blocks (`block_of`); a coalition keeps its blocks'
    factual moves (where still legal) and redraws the others from the policy (salt = the estimator's
    sample seed; the environment seed stays the episode's: common random numbers); its value is
    `reward_of` the re-rolled episode. Keeping every block is the factual episode (no rollout).
    """
    moves = moves_of(game)
    blocks = block_of(len(moves), config.credit_blocks)
    n_players = int(blocks.max()) + 1 if len(blocks) else 1
    env = game.env
    steps = 0

    def coalition(kept: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        nonlocal steps
        rewards = np.full(len(kept), reward)
        scripts, rows = [], []
        for row, (keep, salt) in enumerate(zip(np.asarray(kept, bool), seeds)):
            if keep.all():
                continue
            per_decision = tuple(bool(keep[b]) for b in blocks)
            fork = per_decision.index(False)
            scripts.append(Script(env.task, env.seed, moves, per_decision, int(salt), fork))
            rows.append(row)
        if scripts:
            played = play(policy, scripts, config.sim_config(), config.stop, config.max_agents, record=False)
            steps += sum(p.env_steps for p in played)
            rewards[rows] = [reward_of(p.episode) for p in played]
        return rewards

    if config.credit == "counterfactual":
        found = leave_one_out(coalition, n_players, config.credit_samples, first_seed=1)
    else:
        found = shapley_permutation(coalition, n_players, config.credit_samples, first_seed=1,
                                    sampling_seed=env.seed % (2 ** 32))
    per_block = np.array([a.estimate for a in found])
    return per_block[blocks], steps


def agents_of_decisions(episode: Episode) -> list[str]:
    """The agent each decision concerns: the spawned agent, the delegate, the message's receiver,
    or the orchestrator (aggregate, stop)."""
    count: dict[str, int] = {}
    names = []
    for action in episode.actions:
        if action.kind == "spawn":
            count[action.role] = count.get(action.role, 0) + 1
            names.append(action.agent or f"{action.role}_{count[action.role]}")
        elif action.kind == "delegate":
            names.append(action.agent)
        elif action.kind == "message":
            names.append(action.to)
        else:
            names.append("orchestrator")
    return names


def attribution(episodes: list[Episode], credits: list[np.ndarray]) -> dict[str, Any]:
    """The iteration's attribution panel: credit share (of |credit|) by role and by agent (top 20
    agents), `free_rider_index`: share of spawned sub-agents credited with less than half an equal
    share, `pseudo_parallelism_index`: share of spawned sub-agents none of whose events reaches the
    final answer (`swarmscope.metrics.pseudo_parallel_agents`), both averaged over episodes."""
    by_agent: dict[str, float] = {}
    free, pseudo = [], []
    for episode, credit in zip(episodes, credits):
        agents = agents_of_decisions(episode)
        mine: dict[str, float] = {}
        for agent, value in zip(agents, np.abs(credit)):
            mine[agent] = mine.get(agent, 0.0) + float(value)
        total = sum(mine.values())
        spawned = [a.name for a in episode.trace.agents if a.name != "orchestrator"]
        if total > 0:
            for agent, value in mine.items():
                by_agent[agent] = by_agent.get(agent, 0.0) + value / total
        if spawned:
            equal = 1.0 / (len(spawned) + 1)
            free.append(np.mean([(mine.get(a, 0.0) / total if total else 0.0) < equal / 2 for a in spawned]))
            pseudo.append(len(pseudo_parallel_agents(episode.trace)) / len(spawned))
    grand = sum(by_agent.values())
    shares = {agent: value / grand for agent, value in by_agent.items()} if grand else {}
    by_role: dict[str, float] = {}
    for agent, share in shares.items():
        role = agent.rsplit("_", 1)[0] if agent != "orchestrator" else "orchestrator"
        by_role[role] = by_role.get(role, 0.0) + share
    top = dict(sorted(shares.items(), key=lambda item: -item[1])[:20])
    return {"by_role": by_role, "by_agent": top, "free_rider_index": float(np.mean(free)) if free else 0.0,
            "pseudo_parallelism_index": float(np.mean(pseudo)) if pseudo else 0.0}


# --- advantages and update --------------------------------------------------------------------

def gae(values: np.ndarray, reward: float | np.ndarray, lam: float) -> np.ndarray:
    """GAE (Schulman et al. 2016, eq. 16) with gamma = 1: values (T,) -> advantages (T,), with a
    terminal `reward` (a float: δ_t = V_{t+1} - V_t for t < T - 1, δ_{T-1} = reward - V_{T-1}) or
    per-decision rewards r (T,): δ_t = r_t + V_{t+1} - V_t, V_T = 0."""
    rewards = np.asarray(reward, dtype=float)
    if rewards.ndim == 0:
        rewards = np.append(np.zeros(len(values) - 1), rewards)
    deltas = rewards + np.append(values[1:], 0.0) - values
    out = np.zeros_like(deltas)
    running = 0.0
    for t in range(len(deltas) - 1, -1, -1):
        running = deltas[t] + lam * running
        out[t] = running
    return out


def ppo_update(policy: OrchestratorPolicy, optimizer: torch.optim.Optimizer, batch: dict[str, torch.Tensor],
               config: RunConfig, generator: torch.Generator, anneal: float = 1.0) -> dict[str, float]:
    """`epochs` passes of clipped PPO over `batch` (N decisions: features (N, F), masks (N, M),
    moves, logp, advantages, returns (N,), and the stop heads' targets stop_value, gain (N,) where
    stop_measured (N,) is 1, `stop_targets`) in shuffled minibatches. Loss = -min(ρA, clip(ρ)A)
    over the non-stop decisions (ρ of the action head given no stop; stop is not a policy-gradient
    action) + value_coef (V - R)^2 + continuation_coef ((S - S*)^2 + (G - G*)^2 over the measured
    decisions) - entropy_coef * anneal * H (of the non-stop moves; `anneal` in [0, 1]: exploration early,
    none at the end, where a bonus of a fixed size kept needless moves about as likely as useful ones
    whose edge is a few critical steps, bench/RESULTS.md). Returns the last epoch's means:
    policy_loss, value_loss, stop_value_loss, entropy, clip_fraction."""
    n = len(batch["moves"])
    stats: dict[str, list[float]] = {}
    for _ in range(config.epochs):
        stats = {key: [] for key in ("policy_loss", "value_loss", "stop_value_loss", "entropy", "clip_fraction")}
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, config.minibatch_size):
            rows = order[start:start + config.minibatch_size]
            masks, moves = batch["masks"][rows], batch["moves"][rows]
            heads = policy(batch["features"][rows], masks)
            _, logp_all = move_probabilities(heads.logits, heads.gain.detach(), masks, config.stop)
            acting = (moves != STOP).float()  # stop rows: trained by the stop heads, not the surrogate
            logp = logp_all.gather(1, torch.where(moves == STOP, 0, moves)[:, None]).squeeze(1)
            ratio = torch.exp((logp - batch["logp"][rows]) * acting)
            adv = batch["advantages"][rows]
            surrogate = torch.min(ratio * adv, ratio.clamp(1 - config.clip, 1 + config.clip) * adv)
            policy_loss = -(surrogate * acting).sum() / acting.sum().clamp(min=1)
            value_loss = ((heads.value - batch["returns"][rows]) ** 2).mean()
            measured = batch["stop_measured"][rows]
            squared = (heads.stop_value - batch["stop_value"][rows]) ** 2 + (heads.gain - batch["gain"][rows]) ** 2
            stop_value_loss = (squared * measured).sum() / measured.sum().clamp(min=1)
            others = masks.clone()
            others[:, STOP] = False
            probs = logp_all.exp() * others
            entropy = -(probs * logp_all.clamp(min=-30)).sum(-1).mean()
            loss = (policy_loss + config.value_coef * value_loss + config.continuation_coef * stop_value_loss
                    - config.entropy_coef * anneal * entropy)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()
            for key, value in (("policy_loss", policy_loss), ("value_loss", value_loss),
                               ("stop_value_loss", stop_value_loss), ("entropy", entropy),
                               ("clip_fraction", (((ratio - 1).abs() > config.clip).float() * acting).sum()
                                / acting.sum().clamp(min=1))):
                stats[key].append(value.item())
    return {key: float(np.mean(values)) for key, values in stats.items()}


# --- the loop ---------------------------------------------------------------------------------

def iteration_scripts(config: RunConfig, iteration: int) -> list[Script]:
    """The episodes of `iteration`: groups of `group_size` share a task (fresh per group)."""
    groups = config.episodes_per_iteration // config.group_size
    scripts = []
    for g in range(groups):
        task_seed = TASK_SEED_BASE + config.seed * 10_000_000 + iteration * 1000 + g
        task = generate_task(config.level, task_seed, f"{config.level}-train-{task_seed}")
        for k in range(config.group_size):
            scripts.append(Script(task, EPISODE_SEED_BASE + config.seed * 10_000_000 + iteration * 1000
                                  + g * config.group_size + k))
    return scripts


def _binned(points: list[tuple[int, float]], width: int) -> list[list[float]]:
    sums: dict[int, list[float]] = {}
    for step, value in points:
        sums.setdefault(step // width * width, []).append(value)
    return [[step, float(np.mean(values))] for step, values in sorted(sums.items())]


def run_iteration(policy: OrchestratorPolicy, optimizer: torch.optim.Optimizer, config: RunConfig,
                  iteration: int, env_steps: int) -> tuple[dict[str, Any], int]:
    """Play, credit, update once. Returns (the contract's iteration dict without `iteration`,
    `env_steps`, `budget_steps`, `wall_s`; environment steps this iteration took)."""
    weights = config.reward_weights
    anneal = anneal_factor(env_steps, config)
    games = play(policy, iteration_scripts(config, iteration), config.sim_config(), config.stop, config.max_agents)
    steps = sum(g.env_steps for g in games)
    terms = [episode_reward(g.episode, weights, anneal) for g in games]
    rewards = np.array([t["total"] for t in terms])

    def reward_of(episode: Episode) -> float:
        return episode_reward(episode, weights, anneal)["total"]

    # credit -> advantages per decision; stop -> the stop heads' targets
    advantages, credits, stop_values, gains = [], [], [], []
    points_rng = np.random.default_rng([config.seed, iteration, 7])
    for k, game in enumerate(games):
        values = np.array(game.values)
        if config.credit == "shared":
            credit = np.full(len(game.moves), rewards[k])
            if config.algorithm == "ppo":
                adv = gae(values, decision_rewards(rewards[k], len(game.moves), weights), config.gae_lambda)
            else:
                group = rewards[k // config.group_size * config.group_size:][:config.group_size]
                adv = np.full(len(game.moves), (rewards[k] - group.mean()) / (group.std() + 1e-6))
        else:
            credit, extra = decision_credit(policy, game, rewards[k], config, reward_of)
            steps += extra
            adv = credit.copy()
        value, gain, extra = stop_targets(policy, game, rewards[k], config, reward_of, points_rng)
        steps += extra
        if game.moves and game.moves[-1] == STOP and not np.isnan(gain[-1]):
            credit[-1] = -gain[-1]  # the stop's paired credit: stopping now vs continuing
        advantages.append(adv)
        credits.append(credit)
        stop_values.append(value)
        gains.append(gain)
    flat = np.concatenate(advantages)
    flat = (flat - flat.mean()) / (flat.std() + 1e-8)
    batch = {
        "features": torch.from_numpy(np.concatenate([np.stack(g.features) for g in games])),
        "masks": torch.from_numpy(np.concatenate([np.stack(g.masks) for g in games])),
        "moves": torch.tensor(np.concatenate([g.moves for g in games]), dtype=torch.long),
        "logp": torch.tensor(np.concatenate([g.logp for g in games]), dtype=torch.float32),
        "advantages": torch.tensor(flat, dtype=torch.float32),
        "returns": torch.tensor(np.concatenate([reward_to_go(r, len(g.moves), weights)
                                                for g, r in zip(games, rewards)]), dtype=torch.float32),
        "stop_value": torch.tensor(np.nan_to_num(np.concatenate(stop_values)), dtype=torch.float32),
        "gain": torch.tensor(np.nan_to_num(np.concatenate(gains)), dtype=torch.float32),
        "stop_measured": torch.tensor(~np.isnan(np.concatenate(gains)), dtype=torch.float32),
    }
    generator = torch.Generator().manual_seed(config.seed * 1_000_003 + iteration)
    losses = ppo_update(policy, optimizer, batch, config, generator, anneal)

    # what the run page shows
    episodes = [g.episode for g in games]
    outcomes = [stop_hindsight(e, weights) for e in episodes]
    efficiency = [parallelism_efficiency(e.trace) for e in episodes]
    width = max(1, config.max_steps // STOP_BINS)
    moves_all = [m for g in games for m in g.moves]
    for episode, term in zip(episodes[:config.sample_episodes], terms):
        episode.trace.rewards["training_reward"] = term["total"]
        episode.trace.attributes.update(training={"iteration": iteration, "credit": config.credit,
                                                  "algorithm": config.algorithm, "stop": config.stop})
    report = {
        "metrics": {
            "reward": float(rewards.mean()),
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
            "credit_env_steps": int(steps - sum(g.env_steps for g in games)),
            "move_shares": {name: moves_all.count(m) / max(1, len(moves_all)) for m, name in enumerate(MOVES)},
        },
        "stop": {
            "p_stop_by_step": _binned([(t, p) for g in games for t, p in enumerate(g.p_stop)], width),
            "continue_value_by_step": _binned([(t, v) for g in games for t, v in enumerate(g.continuation)], width),
            "stop_regret": float(np.mean([o.regret for o in outcomes])),
            "premature": int(sum(o.premature for o in outcomes)),
            "late": int(sum(o.late for o in outcomes)),
        },
        "credit": attribution(episodes, credits),
        "episodes": [e.trace.to_dict() for e in episodes[:config.sample_episodes]],
    }
    return report, steps


def _load(path: Path) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=False)


def _save(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def check_resumable(config: RunConfig, state: Mapping[str, Any]) -> None:
    """Raise ValueError naming the first field in which `config` differs from the checkpoint
    `state`'s (any but `budget_steps`, which a resume may raise)."""
    stored = RunConfig.from_dict(state["config"])
    for name in RunConfig.__dataclass_fields__:
        if name != "budget_steps" and getattr(stored, name) != getattr(config, name):
            raise ValueError(f"{name}: differs from the checkpoint's ({getattr(stored, name)!r}); "
                             "resume with the same config")


def train(config: RunConfig, *, checkpoint_dir: Path | None = None, resume: bool = False,
          on_iteration: Callable[[dict], None] | None = None,
          should_stop: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Train until `budget_steps` environment steps (credit re-rollouts included) are spent.

    Calls `on_iteration(dict)` once per iteration (the contract's JSON-serialisable iteration dict)
    and polls `should_stop()` between iterations (then returns with status "cancelled"). With
    `checkpoint_dir`, writes `last.pt` (model, optimiser, iteration, env_steps, wall_s, config)
    after every iteration; `resume=True` continues from it (a fresh start when there is none).
    Deterministic for a given config: a resumed run reports what an uninterrupted one would.
    Returns the summary: status, iterations, env_steps, wall_s, best_reward, final (last metrics),
    checkpoint (path or None). Raises ValueError when the checkpoint's config differs in anything
    but `budget_steps`.
    """
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    policy = OrchestratorPolicy(config.hidden)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
    iteration, env_steps, wall_before, best, final = 0, 0, 0.0, None, {}
    checkpoint = Path(checkpoint_dir) / "last.pt" if checkpoint_dir is not None else None
    if resume and checkpoint is not None and checkpoint.exists():
        state = _load(checkpoint)
        check_resumable(config, state)
        policy.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        iteration, env_steps, wall_before = state["iteration"], state["env_steps"], state["wall_s"]
        best, final = state.get("best_reward"), state.get("final", {})
    started = time.monotonic()
    status = "finished"
    while env_steps < config.budget_steps:
        if should_stop is not None and should_stop():
            status = "cancelled"
            break
        report, steps = run_iteration(policy, optimizer, config, iteration, env_steps)
        env_steps += steps
        wall = wall_before + time.monotonic() - started
        reward = report["metrics"]["reward"]
        best = reward if best is None else max(best, reward)
        final = report["metrics"]
        # Report, then checkpoint: a process killed in between re-runs this iteration on resume
        # (deterministically, from the previous checkpoint) and reports it again under the same
        # number, so no iteration goes unreported.
        if on_iteration is not None:
            on_iteration({"iteration": iteration, "env_steps": env_steps, "budget_steps": config.budget_steps,
                          "wall_s": wall, **report})
        if checkpoint is not None:
            _save(checkpoint, {"model": policy.state_dict(), "optimizer": optimizer.state_dict(),
                               "iteration": iteration + 1, "env_steps": env_steps, "wall_s": wall,
                               "best_reward": best, "final": final, "config": config.to_dict(),
                               "torch_rng": torch.get_rng_state()})
        iteration += 1
    return {"status": status, "iterations": iteration, "env_steps": env_steps,
            "wall_s": wall_before + time.monotonic() - started, "best_reward": best, "final": final,
            "checkpoint": str(checkpoint) if checkpoint is not None and checkpoint.exists() else None}


# --- evaluation (held-out tasks) --------------------------------------------------------------

def load_policy(path: Path) -> tuple[OrchestratorPolicy, RunConfig]:
    """The policy and config of a checkpoint `last.pt`."""
    state = _load(Path(path))
    config = RunConfig.from_dict(state["config"])
    policy = OrchestratorPolicy(config.hidden)
    policy.load_state_dict(state["model"])
    return policy, config


def evaluate(policy: OrchestratorPolicy, tasks: list[Task], config: RunConfig, stop_mode: str | None = None,
             seed: int = 0) -> list[dict[str, float]]:
    """Play each task once (episode seed `seed` + index) with `stop_mode` (default the config's);
    per episode: the `episode_reward` terms (anneal 0), `length` (decisions), `p_success`,
    `stop_regret`, `premature`, `late`."""
    mode = stop_mode or config.stop
    scripts = [Script(task, seed + k) for k, task in enumerate(tasks)]
    games = play(policy, scripts, config.sim_config(), mode, config.max_agents, record=False)
    return [episode_summary(g.episode, config.reward_weights) for g in games]


def episode_summary(episode: Episode, weights: Mapping[str, float]) -> dict[str, float]:
    """`evaluate`'s per-episode figures for any SwarmSim episode (a baseline's too)."""
    outcome = stop_hindsight(episode, weights)
    return {**episode_reward(episode, weights, 0.0), "length": len(episode.actions), "p_success": episode.p_success,
            "stop_regret": outcome.regret, "premature": float(outcome.premature), "late": float(outcome.late)}


# --- CLI --------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m trainer.recipes.train_orchestrator",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="RunConfig as a JSON file")
    parser.add_argument("--out", default="runs/orchestrator", help="metrics.jsonl, episodes/ and last.pt go here")
    parser.add_argument("--resume", action="store_true",
                        help="continue from --out/last.pt (with --url: reporting to the same app run while it is open)")
    parser.add_argument("--url", help="the app's base URL: stream each iteration to its runs API")
    parser.add_argument("--token", default=os.environ.get("SWARMSCOPE_TOKEN"), help="API token (with --url)")
    parser.add_argument("--name", default="", help="the run's name in the app")
    return parser.parse_args(argv)


def app_run(client: Any, out: Path, config: RunConfig, args: argparse.Namespace) -> int:
    """The app run this process reports to: with --resume, the one recorded in OUT/app_run.json
    for the same URL while it is still open; else a new one (recorded there). Raises SwarmscopeError
    or OSError when the app refuses or cannot be reached."""
    record = out / "app_run.json"
    if args.resume and record.exists():
        try:
            known = json.loads(record.read_text())
            known = known if isinstance(known, dict) and isinstance(known.get("run_id"), int) else {}
        except ValueError:
            known = {}
        if not known:
            print(f"{record}: unreadable, reporting as a new run", flush=True)
        elif known.get("url") == client.url:
            try:
                status = client.get_run(known["run_id"])["status"]
            except SwarmscopeError as exc:
                if exc.status != 404:
                    raise
                status = "gone"
            if status in ("queued", "running"):
                print(f"streaming to {client.url} as run {known['run_id']} (resumed)", flush=True)
                return known["run_id"]
            print(f"run {known['run_id']} in the app is {status}: reporting as a new run", flush=True)
    run_id = client.create_run(config.to_dict(), name=args.name)["id"]
    record.write_text(json.dumps({"url": client.url, "run_id": run_id}))
    print(f"streaming to {client.url} as run {run_id}", flush=True)
    return run_id


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        doc = json.loads(Path(args.config).read_text())
        config = RunConfig.from_dict(doc)
    except (OSError, json.JSONDecodeError, ValueError) as exc:
        print(f"{args.config}: {exc}", file=sys.stderr)
        return 2
    if args.url and not args.token:
        print("--token (or SWARMSCOPE_TOKEN) is required with --url", file=sys.stderr)
        return 2
    out = Path(args.out)
    if args.resume and (out / "last.pt").exists():
        try:
            state = _load(out / "last.pt")
        except Exception as exc:  # noqa: BLE001 - whatever torch.load makes of a damaged file
            print(f"{out / 'last.pt'}: not a checkpoint of this recipe ({exc})", file=sys.stderr)
            return 2
        try:
            check_resumable(config, state)
        except ValueError as exc:
            print(f"{args.config}: {exc}", file=sys.stderr)
            return 2
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    client = run_id = None
    if args.url:
        client = SwarmscopeClient(args.url, args.token, retries=2)
        try:
            run_id = app_run(client, out, config, args)
        except (SwarmscopeError, OSError) as exc:  # OSError: URLError, refused, timed out
            print(f"{args.url}: {exc}", file=sys.stderr)
            return 2
    metrics = (out / "metrics.jsonl").open("a")
    closed = []  # the app's answer when it closed the run (cancelled there)

    def on_iteration(report: dict) -> None:
        for k, trace in enumerate(report["episodes"]):
            (out / "episodes" / f"iteration-{report['iteration']:05d}-{k}.json").write_text(json.dumps(trace))
        metrics.write(json.dumps({key: value for key, value in report.items() if key != "episodes"}) + "\n")
        metrics.flush()
        if client is not None:
            try:
                client.post_iteration(run_id, report)
            except SwarmscopeError as exc:
                if exc.status != 409:
                    raise
                closed.append(exc)
        m = report["metrics"]
        print(f"iteration {report['iteration']}: env steps {report['env_steps']}/{report['budget_steps']}, "
              f"reward {m['reward']:.3f}, success {m['success_rate']:.2f}, length {m['episode_length']:.0f}, "
              f"stop regret {report['stop']['stop_regret']:.3f}", flush=True)

    try:
        summary = train(config, checkpoint_dir=out, resume=args.resume, on_iteration=on_iteration,
                        should_stop=lambda: bool(closed))
    except KeyboardInterrupt:  # Ctrl-C: the app run stays open, so --resume goes on reporting to it
        where = f"; --resume continues, reporting to run {run_id}" if client is not None else "; --resume continues"
        print(f"interrupted: checkpoint {out / 'last.pt'} kept{where}", file=sys.stderr)
        return 130
    except BaseException as exc:
        if client is not None:
            try:
                client.finish_run(run_id, status="failed", error=repr(exc))
            except (SwarmscopeError, OSError) as report_error:
                print(f"{args.url}: could not mark run {run_id} failed: {report_error}", file=sys.stderr)
        raise
    finally:
        metrics.close()
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if closed:
        print(f"{args.url}: run {run_id} was closed in the app ({closed[0]}); stopped after iteration "
              f"{summary['iterations'] - 1}, checkpoint kept: --resume continues as a new run", file=sys.stderr)
        return 1
    if client is not None:
        client.finish_run(run_id, summary=summary)
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
