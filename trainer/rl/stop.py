"""Stopping as optimal stopping on two heads (`trainer.policy`): S(s), the value of stopping now, and
G(s) = C(s) - S(s), the gain of continuing; p(stop) = sigmoid(-G / τ), so the orchestrator stops
when the learned value of continuing falls below the value of stopping now.

Stop gets no policy gradient: the heads are regressed on paired outcomes at the episode's seed
(common random numbers, `stop_targets`). Where the episode stopped at t: S = its reward, G =
R(continue) - R(stop), the continuation one re-rollout with stop masked from t on, run to the step
limit. At `stop_points` other decisions s drawn per episode (and the first decision after the
answer): G = R(factual, it went on) - R(stop at s), the latter the factual prefix replayed with a
stop at s (one step). Both re-rollouts count in the budget. Because both terms of G share the
outcome draws, its target after the answer is the exact, small, negative critical-steps cost of
going on, not buried in ±0.5 outcome noise as a reward difference across episodes would be. Against
the collapse into stopping without an answer, stop is offered once the orchestrator has answered
(`trainer.policy`), unless the stop mode is `anytime` (for partial credit, `trainer.sim.env`).

Two regrets. `stop_regret` (use this one) is over the stops the policy could actually take: the
oracle is the best stopping point among the decisions where stop was offered on the episode's
path, its decisions up to its stop and (given the policy) its continuation, the same policy
re-rolled at the episode's seed with stop masked from there on; each point is valued by a paired
re-rollout (the prefix replayed, then stop: one step) at SwarmSim's exact expectation E[R]. A
stop before the oracle's point is premature, one after it late. The run page reports it
(`trainer.recipes.report.stop_outcomes`, without the continuation).
`stop_hindsight` (the older figure, superseded; issue 30) also credits stopping at decision 0
("never start") and stopping right after the last delegation, whether or not the policy was offered
them; only `episode_summary` without a stop mode (the benchmarks' baselines) still reports it.

The fixed-K stop (issue 30 item 8; `Script.stop_after`): stop after exactly K delegations (a
partial answer), answering first when K >= n (the rule stop), applied to any trained action policy.
`fixed_k_values` values every K on a policy's rule-stop episodes (the fixed-K episode is the rule
episode's prefix up to its K-th delegation, then a stop: one replayed step per K); `best_k` is the
tuning criterion (the highest mean over training tasks, ties to the smaller K); `tune_fixed_k` plays
fresh training tasks and applies it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from trainer.policy import (
    AGGREGATE,
    LEARNED_STOPS,
    STOP,
    STOP_MODES,
    OrchestratorPolicy,
    Played,
    Script,
    moves_of,
    play,
)
from trainer.rl.rewards import critical_steps_of, episode_reward
from trainer.sim.actions import aggregate, delegate, spawn, stop
from trainer.sim.env import Episode, SimConfig, simulate

if TYPE_CHECKING:
    from trainer.recipes.config import RunConfig


@dataclass
class StopOutcome:
    """`regret` = expected task reward at the best stopping point in hindsight - achieved (>= 0);
    `best_point` and `achieved_point`: decisions taken before answering (the first aggregate or stop);
    `premature` / `late`: the episode answered before / ended after its best point, with regret > 0.
    (`stop_regret`: the points are stopping decisions, the decision the stop replaced;
    `replays`: the re-rollouts it took, one environment step each after the replayed prefix.)"""

    regret: float
    best_point: int
    achieved_point: int
    premature: bool
    late: bool
    replays: int = 0


def stop_hindsight(episode: Episode, weights: Mapping[str, float]) -> StopOutcome:
    """The best stopping point of `episode` in hindsight, which SwarmSim knows.

    Stopping at point t means: after the first t decisions of the episode's path, aggregate (if
    not yet) and stop. Its value is the expected task reward w_success * E[R] - w_critical_steps *
    CS, E[R] the closed form `p_success` under the episode's draws. The path is the episode's
    actions; when it answered (aggregated or stopped) before delegating every subtask, the path is
    its decisions before the answer completed by delegating the rest round-robin to its workers
    (a solver spawned if it had none). Before every subtask is delegated (point t*) E[R] = 0; from
    t* on E[R] is fixed and CS only grows; so the best point is 0 or t*, and two short replays
    (same seed) give both. Units: reward. That holds for all-or-nothing grading only: under
    partial credit (`trainer.sim.env`) this returns `stop_regret` over the episode's own path
    (late stops only), at 8 stop points drawn from the episode's seed.
    """
    if episode.config.answer_credit == "partial":
        return stop_regret(episode, weights, "anytime", points=8, rng=np.random.default_rng(episode.seed))
    actions, task, seed = list(episode.actions), episode.task, episode.seed
    n = len(task.subtasks)
    answer_at = next((t for t, a in enumerate(actions) if a.kind in ("aggregate", "stop")), len(actions))
    delegated = {a.subtask for a in actions[:answer_at] if a.kind == "delegate"}
    if len(delegated) == n:
        path = actions
        t_star = max(t for t, a in enumerate(actions[:answer_at]) if a.kind == "delegate") + 1 if n else 0
    else:
        path = actions[:answer_at]
        workers: list[str] = []
        count: dict[str | None, int] = {}
        for action in path:
            if action.kind == "spawn":
                count[action.role] = count.get(action.role, 0) + 1
                if action.role != "verifier":
                    workers.append(action.agent or f"{action.role}_{count[action.role]}")
            elif action.kind == "despawn" and action.agent in workers:
                workers.remove(action.agent)
        if not workers:
            name = f"solver_{count.get('solver', 0) + 1}"
            path.append(spawn("solver", name))
            workers.append(name)
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


def stop_value(episode: Episode, point: int, weights: Mapping[str, float]) -> float:
    """The expected task reward (w_success * E[R] - w_critical_steps * CS; reward units) of stopping
    `episode` at decision `point` instead of taking its action there: the first `point` actions
    replayed at the episode's seed (common random numbers), then a stop. Raises IndexError unless
    0 <= point <= len(actions)."""
    if not 0 <= point <= len(episode.actions):
        raise IndexError(f"stop point {point} outside the episode's 0..{len(episode.actions)} decisions")
    stopped = simulate(episode.task, list(episode.actions[:point]) + [stop()], episode.config, episode.seed)
    return weights["success"] * stopped.p_success - weights["critical_steps"] * critical_steps_of(stopped)


def offered_stops(episode: Episode, mode: str) -> list[int]:
    """The decisions of `episode` at which stop mode `mode` (`trainer.policy.STOP_MODES`) offered a
    choice to stop, other than the episode's own end: every decision under `anytime`; those after
    the aggregate under `learned`; none under `rule` and `none` (their stop is not a choice).
    Raises ValueError for an unknown mode."""
    if mode not in STOP_MODES:
        raise ValueError(f"stop mode must be one of {STOP_MODES}, got {mode!r}")
    end = _achieved_point(episode)
    if mode == "anytime":
        return list(range(end))
    if mode == "learned":
        answered = next((t for t, a in enumerate(episode.actions) if a.kind == "aggregate"), None)
        return [] if answered is None else list(range(answered + 1, end))
    return []


def _achieved_point(episode: Episode) -> int:
    """The decision the episode stopped at: its stop action's, or len(actions) when the step limit
    (or the end of a replayed plan) stopped it after its last action."""
    actions = episode.actions
    return len(actions) - 1 if actions and actions[-1].kind == "stop" else len(actions)


def stop_regret(
    episode: Episode,
    weights: Mapping[str, float],
    offer: str = "anytime",
    *,
    policy: OrchestratorPolicy | None = None,
    mode: str | None = None,
    config: SimConfig | None = None,
    max_agents: int = 64,
    points: int | None = None,
    rng: np.random.Generator | None = None,
) -> StopOutcome:
    """Stop regret over the stops the policy could actually take (reward units, >= 0).

    The path: the episode's decisions up to its stop at t, then, with a `policy`, its continuation:
    a closed-loop re-rollout at the episode's seed (common random numbers) that replays the first t
    decisions and plays on under stop `mode` (default `offer`) with stop masked from t on, to the
    step limit of `config` (default the episode's; a larger one continues an episode the step limit
    stopped). The oracle is the best of the path's stopping points: `offered_stops(path, offer)`,
    each valued by `stop_value` (the prefix replayed, then a stop: one step), the path's end, and
    the episode's own stop (its `expected_task`). regret = oracle - achieved. Premature: the episode
    stopped before the oracle's point (only a continuation can show it); late: after it.

    `points=None` values every offered stop (exact); `points=k` only k of them, drawn by `rng` (an
    estimate from below). `replays` counts the environment steps it took (the continuation's after
    its fork, one per valued stop). Raises ValueError for an unknown mode or `points` without `rng`.
    """
    if points is not None and rng is None:
        raise ValueError("stop_regret: points needs an rng")
    achieved_point = _achieved_point(episode)
    achieved = episode_reward(episode, weights, 0.0)["expected_task"]
    path, steps = episode, 0
    if policy is not None:
        t = achieved_point
        script = Script(episode.task, episode.seed, moves_of(episode)[:t], (True,) * t, 0, t, t, no_stop_after=True)
        sim = config or episode.config
        [going_on] = play(policy, [script], sim, mode or offer, max_agents, record=False)
        steps += going_on.env_steps
        path = going_on.episode
    candidates = [s for s in offered_stops(path, offer) if s != achieved_point]
    if points is not None and rng is not None and candidates:
        candidates = sorted(rng.choice(candidates, size=min(points, len(candidates)), replace=False).tolist())
    best_point, best = achieved_point, achieved
    end = _achieved_point(path)
    if path is not episode and end != achieved_point:
        own_end = episode_reward(path, weights, 0.0)["expected_task"]
        if own_end > best + 1e-12:
            best_point, best = end, own_end
    for point in candidates:
        value = stop_value(path, point, weights)
        steps += 1
        if value > best + 1e-12:
            best_point, best = point, value
    regret = best - achieved
    return StopOutcome(
        regret,
        best_point,
        achieved_point,
        premature=regret > 1e-9 and achieved_point < best_point,
        late=regret > 1e-9 and achieved_point > best_point,
        replays=steps,
    )


def episode_summary(episode: Episode, weights: Mapping[str, float], mode: str | None = None) -> dict[str, float]:
    """The evaluation figures of any SwarmSim episode (a baseline's too): the `episode_reward` terms
    (anneal 0), `length` (decisions), `p_success`, `stop_regret`, `premature`, `late` (0.0 / 1.0).
    The regret is `stop_hindsight`'s, or with a stop `mode` `stop_regret`'s over the stops that
    mode offered along the episode (exact; without a policy, so late stops only)."""
    outcome = stop_hindsight(episode, weights) if mode is None else stop_regret(episode, weights, mode)
    return {
        **episode_reward(episode, weights, 0.0),
        "length": len(episode.actions),
        "p_success": episode.p_success,
        "stop_regret": outcome.regret,
        "premature": float(outcome.premature),
        "late": float(outcome.late),
    }


def stop_targets(
    policy: OrchestratorPolicy,
    game: Played,
    reward: float,
    config: RunConfig,
    reward_of: Callable[[Episode], float],
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Regression targets of the stop heads for one played episode (T recorded decisions): the value
    of stopping S (T,) and the gain of continuing G (T,), NaN where not measured, and the
    environment steps the measurements took. Units: reward (`reward_of`).

    Paired at the episode's seed (common random numbers): where the episode stopped at t, S = its
    `reward` and G = R(continue) - reward, the continuation a closed-loop re-rollout from t with stop
    masked to the step limit (its steps after the fork count). At up to `config.stop_points`
    decisions s where stop was legal but not taken (drawn by `rng`), plus the first such decision
    after the answer (aggregate): S = R(the first s factual decisions, then stop) (one step after
    the fork) and G = reward - S. Nothing is measured unless `config.stop` is a learned stop
    (`trainer.policy.LEARNED_STOPS`).
    """
    n = len(game.moves)
    values, gains = np.full(n, np.nan), np.full(n, np.nan)
    steps = 0
    env, moves = game.env, moves_of(game)
    if config.stop not in LEARNED_STOPS or not n:
        return values, gains, steps
    t = n - 1
    if game.moves[t] == STOP and game.masks[t].sum() > 1:
        script = Script(env.task, env.seed, moves, (True,) * t + (False,), 0, t, t, no_stop_after=True)
        [going_on] = play(policy, [script], config.sim_config(), config.stop, config.max_agents, record=False)
        steps += going_on.env_steps
        values[t], gains[t] = reward, reward_of(going_on.episode) - reward
    open_points = [s for s in range(n) if game.masks[s][STOP] and game.moves[s] != STOP]
    points = (
        set(rng.choice(open_points, size=min(config.stop_points, len(open_points)), replace=False).tolist())
        if open_points
        else set()
    )
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


# --- the fixed-K stop (issue 30 item 8) -----------------------------------------------------------


def delegation_points(episode: Episode) -> list[int]:
    """The decisions right after each delegation of `episode`, in order: entry k - 1 is where the
    fixed-K stop stops (the index of the K-th delegate action + 1)."""
    return [t + 1 for t, action in enumerate(episode.actions) if action.kind == "delegate"]


def fixed_k_values(episode: Episode, ks: Sequence[int], weights: Mapping[str, float]) -> dict[int, float]:
    """The expected task reward (reward units) of the fixed-K stop for each K in `ks`, from the same
    policy's rule-stop episode `episode` at the same seed (mode "rule": its decisions before the K-th
    delegation are the fixed-K episode's, same masks and draws, `OrchestratorState.fixed_stop`).
    K < n with at least K delegations: `stop_value` at the K-th delegation point (one replayed
    step; K = 0 stops at once); otherwise (K >= n, or the step limit came before the K-th
    delegation) the episode's own."""
    n = len(episode.task.subtasks)
    points = delegation_points(episode)
    own = episode_reward(episode, weights, 0.0)["expected_task"]

    def value(k: int) -> float:
        if k < n and k <= len(points):
            return stop_value(episode, points[k - 1] if k else 0, weights)
        return own

    return {k: value(k) for k in ks}


def best_k(values: Mapping[int, Sequence[float]]) -> int:
    """The tuning criterion: the K whose values (one per training task) have the highest mean; ties
    go to the smaller K. Raises ValueError when `values` is empty."""
    if not values:
        raise ValueError("best_k: no K to choose from")
    means = {k: float(np.mean(v)) for k, v in values.items()}
    return min(means, key=lambda k: (-means[k], k))


@dataclass
class FixedK:
    """`tune_fixed_k`'s result: the chosen `k`, the mean value of every K on the tuning tasks
    (`means`, reward units) and the environment steps the tuning took (`env_steps`: the rule plays
    and one step per replayed stop)."""

    k: int
    means: dict[int, float]
    env_steps: int


def tune_fixed_k(
    policy: OrchestratorPolicy,
    scripts: Sequence[Script],
    config: SimConfig,
    weights: Mapping[str, float],
    ks: Sequence[int],
    max_agents: int = 64,
) -> FixedK:
    """Tune the fixed-K stop for `policy` on `scripts` (training-like tasks, never the held-out
    ones): play each once under the rule stop, value every K in `ks` by `fixed_k_values`, pick by
    `best_k`."""
    games = play(policy, scripts, config, "rule", max_agents, record=False)
    values: dict[int, list[float]] = {k: [] for k in ks}
    steps = sum(g.env_steps for g in games)
    for game in games:
        episode = game.episode
        n, points = len(episode.task.subtasks), len(delegation_points(episode))
        for k, value in fixed_k_values(episode, ks, weights).items():
            values[k].append(value)
            steps += int(k < n and k <= points)
    return FixedK(best_k(values), {k: float(np.mean(v)) for k, v in values.items()}, steps)
