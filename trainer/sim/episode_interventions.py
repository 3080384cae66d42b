"""Interventions on an episode (docs/architecture.md "Credit") and re-simulation from the fork point.

On a message (the action at `index`, a `message` action): `remove` it; `mask` it (same position
and cost, placeholder item without effect); `resample` it (a new item drawn, by key
`resample/<index>`, from the config's planted items and the original); `replace` it with `item`.
On an agent (`remove_agent`): drop its spawn and every action it sends, receives or is delegated.
Re-simulation replays the actions before the fork point unchanged and, with the same seed, draws
the same random numbers for every outcome the intervention does not change (common random
numbers): open loop replays the recorded actions after it, a `policy` chooses them afresh.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from trainer.sim.actions import Action
from trainer.sim.baselines import Policy, run_policy
from trainer.sim.env import Episode, SwarmEnv, rollout, simulate
from trainer.sim.rng import uniform

INTERVENTION_KINDS = ("remove", "mask", "resample", "replace", "remove_agent")


@dataclass(frozen=True)
class Intervention:
    """`kind` of INTERVENTION_KINDS on the message action at `index`, or on `agent` (remove_agent);
    `item` is the replacement for `replace`."""

    kind: str
    index: int | None = None
    agent: str | None = None
    item: str | None = None


def message_indices(actions: tuple[Action, ...] | list[Action]) -> list[int]:
    """Indices of the `message` actions: the candidate messages of an episode."""
    return [i for i, action in enumerate(actions) if action.kind == "message"]


def message_item(action: Action) -> str:
    """The item of a `message` action an episode ran (SwarmEnv rejects a message without one)."""
    return cast(str, action.item)


def _named_spawns(actions: list[Action]) -> list[Action]:
    """The actions with every spawn carrying its resolved agent name (numbered per role as
    `SwarmEnv` does), so dropping one spawn keeps the others' names."""
    counts: dict[str | None, int] = {}
    named = []
    for action in actions:
        if action.kind == "spawn":
            counts[action.role] = counts.get(action.role, 0) + 1
            if action.agent is None:
                action = replace(action, agent=f"{action.role}_{counts[action.role]}")
        named.append(action)
    return named


def intervene(episode: Episode, intervention: Intervention) -> tuple[int, list[Action]]:
    """The fork point and the actions from it on under `intervention` (the ones before are kept).

    Raises ValueError for an unknown kind, an index that is not a message, or an unknown agent.
    """
    actions = list(episode.actions)
    if intervention.kind == "remove_agent":
        named = _named_spawns(actions)
        spawns = [i for i, a in enumerate(named) if a.kind == "spawn" and a.agent == intervention.agent]
        if not spawns:
            raise ValueError(f"no spawned agent {intervention.agent!r}")
        fork = spawns[0]
        return fork, [a for a in named[fork:] if intervention.agent not in (a.agent, a.to)]
    if intervention.kind not in INTERVENTION_KINDS:
        raise ValueError(f"intervention kind must be one of {INTERVENTION_KINDS}")
    index = intervention.index
    if index is None or not 0 <= index < len(actions) or actions[index].kind != "message":
        raise ValueError(f"action {index!r} is not a message")
    message = actions[index]
    if intervention.kind == "remove":
        return index, actions[index + 1 :]
    if intervention.kind == "mask":
        item = f"masked/{index}"
    elif intervention.kind == "replace":
        if intervention.item is None:
            raise ValueError("replace needs an item")
        item = intervention.item
    else:
        pool = sorted({m for e in episode.config.effects for m in e.members} | {message_item(message)})
        item = pool[int(uniform(episode.seed, f"resample/{index}") * len(pool))]
    return index, [replace(message, item=item)] + actions[index + 1 :]


def resimulate(episode: Episode, intervention: Intervention, policy: Policy | None = None) -> Episode:
    """The counterfactual episode: same task, config and seed; actions before the fork replayed, then
    the intervened ones (open loop) or, with a `policy`, the intervened action at the fork (mask,
    resample, replace) and the policy's choices after it (closed loop)."""
    fork, after = intervene(episode, intervention)
    if policy is None:
        return simulate(episode.task, list(episode.actions[:fork]) + after, episode.config, episode.seed)
    env = SwarmEnv(episode.task, episode.config, episode.seed)
    for action in episode.actions[:fork]:
        env.step(action)
    if after and intervention.kind in ("mask", "resample", "replace"):
        env.step(after[0])
    return run_policy(env, policy)


def paired_effect(
    episode: Episode, intervention: Intervention, n: int = 10_000, first_seed: int = 0
) -> tuple[float, float]:
    """Monte-Carlo Δ = E[R | h] - E[R | do(intervention)] from n >= 2 paired open-loop rollouts (seeds
    first_seed .. first_seed + n - 1, the same for control and intervention: common random numbers).

    Returns (estimate, standard error) in reward units.
    """
    fork, after = intervene(episode, intervention)
    treated = list(episode.actions[:fork]) + after
    differences = np.array(
        [
            float(rollout(episode.task, episode.actions, episode.config, seed).correct)
            - float(rollout(episode.task, treated, episode.config, seed).correct)
            for seed in range(first_seed, first_seed + n)
        ]
    )
    return float(differences.mean()), float(differences.std(ddof=1) / np.sqrt(n))
