"""Orchestrator policies: observation -> action distribution (stop included), baselines, batched API.

A `Policy` maps an `Observation` to a distribution over actions: a list of (action, probability)
pairs summing to 1. `run_policy` samples from it with the episode's counter-based randomness (key
`policy/<step>`), so a re-rollout that forks later reuses the policy's choices up to the fork.

Baselines (survey §7's heuristics): `FixedFanOut(k)` spawns k solvers and delegates subtasks
round-robin in topological order; `single_agent()` is k = 1; `SpawnEverything` spawns one solver per
subtask (and a verifier); all three use the rule-based stop: aggregate and stop when every subtask
has reported. `RuleBasedStop` adds that rule to any policy, e.g. `RandomPolicy`. `tune_fan_out`
is the tuned heuristic: the best `FixedFanOut` over a grid of its knobs (k, role, verifier) on
training tasks by a given score.

`BatchedSwarmEnv` steps B episodes at once with numpy for training: the same outcomes, random
numbers and closed-form E[R] as `SwarmEnv` for spawn, delegate, aggregate and stop (no messages,
despawns or trace; its clock ignores the verifier's own queue).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Protocol

import numpy as np

from trainer.sim.actions import Action, aggregate, delegate, spawn, stop
from trainer.sim.env import Episode, Observation, SimConfig, SwarmEnv, solve_probability
from trainer.sim.rng import key_hash, uniform, uniforms
from trainer.sim.tasks import Task

#: Roles a policy may spawn to do work (planted roles such as `free_rider` are left out).
WORK_ROLES = ("solver", "expert", "verifier")


class Policy(Protocol):
    def distribution(self, observation: Observation) -> list[tuple[Action, float]]:
        """Actions with probabilities (> 0, summing to 1) for this observation."""


def run_policy(env: SwarmEnv, policy: Policy) -> Episode:
    """Step `env` with actions sampled from `policy` (key `policy/<step>`) until it stops."""
    while not env.done:
        choices = policy.distribution(env.observe())
        u = uniform(env.seed, f"policy/{len(env.actions)}")
        cumulative = np.cumsum([p for _, p in choices])
        env.step(choices[min(int(np.searchsorted(cumulative, u, side="right")), len(choices) - 1)][0])
    return env.episode()


def legal_actions(observation: Observation) -> list[Action]:
    """Every legal action: spawn a work role, delegate an open subtask to a live worker, aggregate
    (once), stop."""
    workers = [name for role, names in observation.agents.items() if role != "verifier" for name in names]
    actions = [spawn(role) for role in WORK_ROLES]
    actions += [delegate(i, name) for i, done in enumerate(observation.delegated) if not done for name in workers]
    if not observation.aggregated:
        actions.append(aggregate())
    return actions + [stop()]


def all_reported(observation: Observation) -> bool:
    return all(observation.returned)


def _stop_rule(observation: Observation) -> list[tuple[Action, float]] | None:
    """The rule-based stop: once every subtask has reported, aggregate, then stop."""
    if not all_reported(observation):
        return None
    return [(stop() if observation.aggregated else aggregate(), 1.0)]


@dataclass(frozen=True)
class FixedFanOut:
    """Spawn `k` agents of `role` (and one verifier if `verifier`), delegate subtasks in id order
    (a topological order) round-robin, then the rule-based stop."""

    k: int
    role: str = "solver"
    verifier: bool = False

    def distribution(self, observation: Observation) -> list[tuple[Action, float]]:
        done = _stop_rule(observation)
        if done is not None:
            return done
        workers = observation.agents.get(self.role, [])
        if len(workers) < self._width(observation):
            return [(spawn(self.role), 1.0)]
        if self.verifier and not observation.agents.get("verifier"):
            return [(spawn("verifier"), 1.0)]
        i = observation.delegated.index(False)
        return [(delegate(i, workers[i % len(workers)]), 1.0)]

    def _width(self, observation: Observation) -> int:
        return self.k


def single_agent(role: str = "solver") -> FixedFanOut:
    return FixedFanOut(1, role)


#: The knobs `tune_fan_out` searches by default: k, role, verifier.
FAN_OUT_GRID = ((1, 2, 4, 8, 16, 32, 64), ("solver", "expert"), (False, True))


def tune_fan_out(
    tasks: Sequence[Task],
    score: Callable[[Episode], float],
    config: SimConfig | None = None,
    seed: int = 0,
    grid: tuple[Iterable[int], Iterable[str], Iterable[bool]] = FAN_OUT_GRID,
) -> tuple[FixedFanOut, dict[FixedFanOut, float]]:
    """The tuned heuristic: every `FixedFanOut(k, role, verifier)` of `grid` plays each of `tasks`
    once (episode seed `seed` + index, the same for every candidate: common random numbers); returns
    the candidate of the highest mean `score` (ties: the first in grid order) and every candidate's
    mean score. Raises ValueError for no tasks or an empty grid."""
    if not tasks:
        raise ValueError("tasks: tune_fan_out needs at least one task")
    means: dict[FixedFanOut, float] = {}
    for k, role, verifier in product(*grid):
        policy = FixedFanOut(k, role, verifier)
        means[policy] = float(
            np.mean([score(run_policy(SwarmEnv(task, config, seed + i), policy)) for i, task in enumerate(tasks)])
        )
    if not means:
        raise ValueError("grid: tune_fan_out needs at least one candidate")
    best = max(means, key=lambda p: means[p])
    return best, means


@dataclass(frozen=True)
class SpawnEverything(FixedFanOut):
    """One agent per subtask, plus a verifier."""

    k: int = 0
    verifier: bool = True

    def _width(self, observation: Observation) -> int:
        return len(observation.delegated)


@dataclass(frozen=True)
class RandomPolicy:
    """Uniform over `legal_actions`, stop included (a baseline a learner should beat)."""

    def distribution(self, observation: Observation) -> list[tuple[Action, float]]:
        actions = legal_actions(observation)
        return [(action, 1.0 / len(actions)) for action in actions]


@dataclass(frozen=True)
class RuleBasedStop:
    """`inner` with stop and premature aggregates masked out until every subtask has reported,
    then aggregate and stop (the survey's rule-based stop)."""

    inner: Policy

    def distribution(self, observation: Observation) -> list[tuple[Action, float]]:
        done = _stop_rule(observation)
        if done is not None:
            return done
        kept = [(a, p) for a, p in self.inner.distribution(observation) if a.kind not in ("stop", "aggregate")]
        total = sum(p for _, p in kept)
        return [(a, p / total) for a, p in kept]


# --- batched ---------------------------------------------------------------------------------

#: Action codes of `BatchedSwarmEnv.step`.
SPAWN, DELEGATE, AGGREGATE, STOP = range(4)


class BatchedSwarmEnv:
    """B SwarmSim episodes stepped together; every task must have the same number n of subtasks.

    `step(kind, arg, agent)` takes (B,) int arrays: kind in SPAWN/DELEGATE/AGGREGATE/STOP; `arg` the
    role index into WORK_ROLES (spawn) or the subtask (delegate); `agent` the worker index (delegate,
    in spawn order). Illegal actions, and actions of finished episodes, change nothing and count in
    `invalid` (B,). Returns (reward (B,) float: 1.0 for an episode that stopped this step with a
    correct aggregate, done (B,) bool). `p_success` (B,) is the closed form E[R] as in `SwarmEnv`.
    """

    def __init__(self, tasks: list[Task], seeds: np.ndarray, config: SimConfig | None = None, max_agents: int = 64):
        self.config = config or SimConfig()
        n = len(tasks[0].subtasks)
        if any(len(task.subtasks) != n for task in tasks):
            raise ValueError("every task of a batch needs the same number of subtasks")
        b = len(tasks)
        self.seeds = np.asarray(seeds)
        self.difficulty = np.array([[s.difficulty for s in task.subtasks] for task in tasks])
        self.deps = np.zeros((b, n, n), dtype=bool)
        for k, task in enumerate(tasks):
            for s in task.subtasks:
                self.deps[k, s.id, list(s.deps)] = True
        self.keys = {
            name: np.array([key_hash(name.format(i)) for i in range(n)], dtype=np.uint64)
            for name in ("solve/{}/0", "solve/{}/1", "verify/{}")
        }
        self.skills = np.array([self.config.skills[role] for role in WORK_ROLES])
        self.rows = np.arange(b)
        self.t = np.zeros(b)
        self.agent_role = np.full((b, max_agents), -1)
        self.free_at = np.zeros((b, max_agents))
        self.n_agents = np.zeros(b, dtype=int)
        self.delegated = np.zeros((b, n), dtype=bool)
        self.correct = np.zeros((b, n), dtype=bool)
        self.q = np.ones((b, n))
        self.result_t = np.zeros((b, n))
        self.success = np.zeros(b, dtype=bool)
        self.p_success = np.zeros(b)
        self.aggregated = np.zeros(b, dtype=bool)
        self.done = np.zeros(b, dtype=bool)
        self.invalid = np.zeros(b, dtype=int)
        self.steps = np.zeros(b, dtype=int)

    def step(self, kind: np.ndarray, arg: np.ndarray, agent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        costs, live = self.config.costs, ~self.done
        b, n = self.delegated.shape
        capacity = self.agent_role.shape[1]
        spawning = live & (kind == SPAWN) & (arg >= 0) & (arg < len(WORK_ROLES)) & (self.n_agents < capacity)
        sub = np.clip(arg, 0, n - 1)
        slot = np.clip(agent, 0, capacity - 1)
        role = self.agent_role[self.rows, slot]
        delegating = (
            live
            & (kind == DELEGATE)
            & (arg >= 0)
            & (arg < n)
            & (agent >= 0)
            & (agent < self.n_agents)
            & (role >= 0)
            & (role != WORK_ROLES.index("verifier"))
            & ~self.delegated[self.rows, sub]
        )
        aggregating = live & (kind == AGGREGATE) & ~self.aggregated
        stopping = live & (kind == STOP)
        self.invalid += live & ~(spawning | delegating | aggregating | stopping)
        acting = spawning | delegating | aggregating | stopping
        self.t = np.where(acting, self.t + costs.decision_s, self.t)

        # spawn
        new = self.n_agents[spawning]
        self.agent_role[spawning, new] = arg[spawning]
        self.free_at[spawning, new] = self.t[spawning]
        self.n_agents += spawning

        # delegate
        d = delegating
        if d.any():
            rows, i, a = self.rows[d], sub[d], slot[d]
            deps = self.deps[rows, i]
            ready = ~np.any(deps & ~self.delegated[rows], axis=1)
            inputs_correct = ready & ~np.any(deps & ~self.correct[rows], axis=1)
            p = solve_probability(self.skills[self.agent_role[rows, a]], self.difficulty[rows, i]) * ready
            seeds = self.seeds[rows]
            verified = np.any(self.agent_role[rows] == WORK_ROLES.index("verifier"), axis=1)
            first = inputs_correct & (uniforms(seeds, self.keys["solve/{}/0"][i]) < p)
            caught = verified & ~first & (uniforms(seeds, self.keys["verify/{}"][i]) < self.config.catch)
            second = inputs_correct & (uniforms(seeds, self.keys["solve/{}/1"][i]) < p)
            duration = costs.solve_s * (1 + self.difficulty[rows, i])
            start = np.maximum(
                np.maximum(self.t[rows], self.free_at[rows, a]),
                np.max(np.where(deps, self.result_t[rows], 0.0), axis=1),
            )
            end = start + duration + verified * costs.verify_s + caught * duration
            self.delegated[rows, i] = True
            self.correct[rows, i] = first | (caught & second)
            self.q[rows, i] = p + (1 - p) * verified * self.config.catch * p
            self.result_t[rows, i] = end
            self.free_at[rows, a] = end

        # aggregate
        if aggregating.any():
            rows = self.rows[aggregating]
            complete = self.delegated[rows].all(axis=1)
            p_agg = float(np.clip(self.config.aggregate_base, 0.0, 1.0))
            u = uniforms(self.seeds[rows], np.full(len(rows), key_hash("aggregate"), dtype=np.uint64))
            self.success[rows] = complete & self.correct[rows].all(axis=1) & (u < p_agg)
            self.p_success[rows] = complete * p_agg * self.q[rows].prod(axis=1)
            self.t[rows] = np.maximum(self.t[rows], self.result_t[rows].max(axis=1)) + costs.decision_s
            self.aggregated |= aggregating

        self.steps += acting
        self.done |= stopping | (self.steps >= self.config.max_steps)
        reward = np.where(stopping, self.success.astype(float), 0.0)
        return reward, self.done.copy()


@dataclass(frozen=True)
class BatchedFanOut:
    """`FixedFanOut(k)` for `BatchedSwarmEnv` (optionally with a verifier spawned after the k
    solvers): a function of the step count, so it needs no observation."""

    k: int
    verifier: bool = False

    def act(self, env: BatchedSwarmEnv) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(kind, arg, agent) arrays (B,) for the next step of every episode."""
        n = env.delegated.shape[1]
        spawns = self.k + self.verifier
        s = env.steps
        task = s - spawns
        kind = np.select([s < spawns, task < n, task == n], [SPAWN, DELEGATE, AGGREGATE], STOP)
        arg = np.where(s < self.k, WORK_ROLES.index("solver"), np.where(s < spawns, WORK_ROLES.index("verifier"), task))
        return kind, arg, np.maximum(task, 0) % self.k
