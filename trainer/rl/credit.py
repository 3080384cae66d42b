"""Per-decision credit by closed-loop re-rollouts, and the iteration's attribution panel.

The decisions are cut into `credit_blocks` contiguous blocks (`block_of`; one decision per block
when there are fewer). `counterfactual`: paired leave-one-out Δ_k = R(h) - R(h with block k redrawn
from the policy), `credit_samples` redraws per block, each a re-rollout at the episode's seed
(common random numbers), by `swarmscope.credit.leave_one_out`; `shapley`: Shapley values of the
blocks in the same coalition game (absent blocks redrawn), `credit_samples` antithetic permutation
pairs (`swarmscope.credit.shapley_permutation`). Every re-rollout step after the fork counts as an
environment step (the replayed prefix before the fork does not: it is the factual episode's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from swarmscope.credit import leave_one_out, shapley_permutation
from swarmscope.metrics import pseudo_parallel_agents
from trainer.policy import OrchestratorPolicy, Played, Script, moves_of, play
from trainer.sim.env import Episode

if TYPE_CHECKING:
    from trainer.recipes.config import RunConfig


def block_of(n_decisions: int, n_blocks: int) -> np.ndarray:
    """(T,) block index of each decision: `n_blocks` contiguous, near-equal blocks (at most T)."""
    k = max(1, min(n_blocks, n_decisions))
    return (
        np.concatenate([np.full(len(part), b) for b, part in enumerate(np.array_split(np.arange(n_decisions), k))])
        if n_decisions
        else np.zeros(0, dtype=int)
    )


def decision_credit(
    policy: OrchestratorPolicy, game: Played, reward: float, config: RunConfig, reward_of: Callable[[Episode], float]
) -> tuple[np.ndarray, int]:
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
        found = shapley_permutation(
            coalition, n_players, config.credit_samples, first_seed=1, sampling_seed=env.seed % (2**32)
        )
    per_block = np.array([a.estimate for a in found])
    return per_block[blocks], steps


def agents_of_decisions(episode: Episode) -> list[str]:
    """The agent each decision concerns: the spawned agent, the delegate, the message's receiver,
    or the orchestrator (aggregate, stop)."""
    count: dict[str | None, int] = {}
    names: list[str] = []
    for action in episode.actions:
        if action.kind == "spawn":
            count[action.role] = count.get(action.role, 0) + 1
            names.append(action.agent or f"{action.role}_{count[action.role]}")
        elif action.kind == "delegate":  # the episode ran it: SwarmEnv checked the agents it names
            names.append(cast(str, action.agent))
        elif action.kind == "message":
            names.append(cast(str, action.to))
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
    return {
        "by_role": by_role,
        "by_agent": top,
        "free_rider_index": float(np.mean(free)) if free else 0.0,
        "pseudo_parallelism_index": float(np.mean(pseudo)) if pseudo else 0.0,
    }
