"""Ground truth for credit assignment: exact E[R] and exact Shapley values over messages.

- `enumerate_expected_reward`: E[R] by enumerating every random outcome an episode draws
  (depth-first over forced outcomes, weighting each leaf by its probability); exponential in the
  number of draws, for small episodes. It checks the closed form `Episode.p_success`.
- `coalition_values`: E[R | S] for every coalition S of candidate messages (kept: S, removed: the
  rest) as the closed form of re-simulated episodes; `aggregate_coalition_values` computes the
  same directly when every planted effect targets the aggregate (`trainer.sim.effects`).
- `shapley_values` (Shapley 1953): phi_i = sum_{S not containing i} |S|! (n-|S|-1)! / n!
  * (v(S + i) - v(S)), exact over all 2^n coalitions; `leave_one_out`: v(N) - v(N - i).

Coalition arrays are indexed by bitmask: bit k set means candidate message k is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import factorial

import numpy as np

from trainer.sim.actions import ORCHESTRATOR, Action
from trainer.sim.effects import gain
from trainer.sim.env import Episode, SimConfig, rollout
from trainer.sim.episode_interventions import message_indices, message_item
from trainer.sim.tasks import Task

#: Largest number of candidate messages for exact Shapley values (2^12 coalitions).
MAX_EXACT_MESSAGES = 12


def enumerate_expected_reward(
    task: Task, actions: list[Action] | tuple[Action, ...], config: SimConfig | None = None
) -> float:
    """E[R] of replaying `actions`, summing reward x probability over every outcome branch."""

    def expand(forced: Mapping[str, bool]) -> float:
        env = rollout(task, actions, config, 0, forced)
        free = [(key, p) for key, p in env.draws if key not in forced]
        if not free:
            return float(env.correct)
        key, p = free[0]
        total = 0.0
        for value, weight in ((True, p), (False, 1.0 - p)):
            if weight > 0:
                total += weight * expand({**forced, key: value})
        return total

    return expand({})


def _check_size(n: int) -> None:
    if n > MAX_EXACT_MESSAGES:
        raise ValueError(f"{n} candidate messages: exact values need at most {MAX_EXACT_MESSAGES}")


def coalition_values(episode: Episode, candidates: list[int] | None = None) -> np.ndarray:
    """(2^n,) closed-form E[R | S] for coalitions S of the candidate message actions (indices into
    `episode.actions`; default every message), re-simulating open loop without the removed ones.

    Raises ValueError above MAX_EXACT_MESSAGES candidates.
    """
    candidates = message_indices(episode.actions) if candidates is None else candidates
    _check_size(len(candidates))
    values = np.empty(1 << len(candidates))
    for mask in range(len(values)):
        removed = {c for k, c in enumerate(candidates) if not mask >> k & 1}
        kept = [a for i, a in enumerate(episode.actions) if i not in removed]
        values[mask] = rollout(episode.task, kept, episode.config, episode.seed).p_success
    return values


def aggregate_coalition_values(episode: Episode, candidates: list[int] | None = None) -> np.ndarray:
    """`coalition_values` without re-simulation: v(S) = p_subtasks * clip(aggregate_base +
    gain(items reaching the orchestrator before the aggregate, from S and from non-candidates)).

    Valid when every planted effect targets the aggregate (checked: ValueError otherwise).
    """
    config = episode.config
    if any(effect.target is not None for effect in config.effects):
        raise ValueError("an effect targets a subtask: use coalition_values")
    candidates = message_indices(episode.actions) if candidates is None else candidates
    _check_size(len(candidates))
    end = next((i for i, a in enumerate(episode.actions) if a.kind == "aggregate"), len(episode.actions))
    delivered = [i for i in message_indices(episode.actions[:end]) if episode.actions[i].to == ORCHESTRATOR]
    masks = np.arange(1 << len(candidates))
    arrived: dict[str, object] = {message_item(episode.actions[i]): True for i in delivered if i not in candidates}
    for k, c in enumerate(candidates):
        if c in delivered and arrived.get(item := message_item(episode.actions[c])) is not True:
            arrived[item] = arrived.get(item, False) | (masks >> k & 1 == 1)
    values = np.clip(config.aggregate_base + gain(config.effects, arrived) + np.zeros(len(masks)), 0.0, 1.0)
    return episode.p_subtasks * values if end < len(episode.actions) else np.zeros_like(values)


def shapley_values(values: np.ndarray) -> np.ndarray:
    """Exact Shapley values (Shapley 1953) of the game `values` (2^n,) by bitmask -> (n,).

    They sum to values[-1] - values[0] (efficiency). O(n 2^n).
    """
    size = len(values)
    n = size.bit_length() - 1
    if size != 1 << n:
        raise ValueError("values must have 2^n entries")
    masks = np.arange(size)
    popcount = np.array([bin(m).count("1") for m in range(size)])
    weight = np.array([factorial(s) * factorial(n - s - 1) / factorial(n) if s < n else 0.0 for s in range(n + 1)])
    phi = np.empty(n)
    for i in range(n):
        without = masks[(masks >> i & 1) == 0]
        phi[i] = np.sum(weight[popcount[without]] * (values[without | 1 << i] - values[without]))
    return phi


def leave_one_out(values: np.ndarray) -> np.ndarray:
    """(n,) v(N) - v(N without i) of the game `values` (2^n,) by bitmask."""
    n = len(values).bit_length() - 1
    full = len(values) - 1
    return np.array([values[full] - values[full & ~(1 << i)] for i in range(n)])
