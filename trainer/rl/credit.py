"""Per-decision credit by closed-loop re-rollouts, the outcome it redistributes over the decisions,
and the iteration's attribution panel.

**What the arms share and what they do not** (issue 16 item 5). Every arm trains the same critic V
on the same targets (the factual reward-to-go, `trainer.rl.rewards.reward_to_go`), pays the same
per-decision cost (w_critical_steps at each decision, `decision_rewards`) and computes GAE on V
(`trainer.rl.losses.gae`, PPO) or the group baseline (GRPO), and pays the outcome at the last
decision (`decision_rewards`). The arms differ only in `spread` (T,), each decision's share of its
block's credit, which moves reward between the episode's decisions: r_t = -w_cs + spread_t -
mean(spread) (+ the outcome at the end; `credit_rewards`). The return is unchanged (a
return-equivalent redistribution, Arjona-Medina et al. 2019, RUDDER, §3), so is the optimum.
`shared`: spread = 0. Zero-sum rather than RUDDER's correction (the rest of the outcome, R -
sum(credit), at the end): leave-one-out credits need not sum to the outcome, so the rest can be
large (where several blocks' redraws would finish an episode that hit the step limit, each Δ is
about -1), and GAE pays it to the last, padding decisions; a trial run with it fell to E[R] 0.12
(bench/RESULTS.md, issue 16 item 5).

The decisions are cut into blocks (`blocks_of`): `credit_block_size` decisions each (their number
grows with the episode), or with block size 0 the older `credit_blocks` contiguous blocks whatever
the episode's length (`block_of`). A block's credit is spread evenly over its decisions.
`counterfactual`: paired leave-one-out Δ_k = R(h) - R(h with block k redrawn from the policy),
`credit_samples` redraws per block, each a re-rollout at the episode's seed (common random numbers),
by `swarmscope.credit.leave_one_out`; `shapley`: Shapley values of the blocks in the same coalition
game (absent blocks redrawn), `credit_samples` antithetic permutation pairs
(`swarmscope.credit.shapley_permutation`); `oracle`: the leave-one-out of `counterfactual` on the same
re-rollouts, each valued at SwarmSim's exact E[R] given its actions (`Episode.p_success`, the closed
form `trainer.sim.exact.enumerate_expected_reward` checks) instead of its 0/1 outcome: the credit
without outcome noise (the redraws' own noise stays). Every re-rollout step after the fork counts
as an environment step (the replayed prefix before the fork does not: it is the factual episode's).

**Credit that replaces the outcome** (issue 30 item 7: the zero-sum arms above move ~1 % of the
advantage's variance and leave the full 0/1 outcome in place, so they cannot show what credit buys).
`BASELINED` arms: `outcome_credit` gives each block the paired leave-one-out of the outcome alone,
Δ_k = Y(h) - mean_j Y(h with block k redrawn) (Y = R, or E[R | actions] for `..._exact`), the
outcome minus a counterfactual baseline from re-rollouts that share its random draws (COMA,
Foerster et al. 2018); the recipe adds w_success Δ_k to the GAE advantage of the outcome-free
reward (`trainer.recipes.train_orchestrator.credit_advantages_of`). Its re-rollouts build no trace
(`rerolled(build=False)`: the outcome and E[R] are read from the env), half the time of one at
n = 64 (bench/credit_diffusion.py --time-rerollouts).

**Other policies** (issue 31): `policy` is the MLP `OrchestratorPolicy` or a `Player` that plays
the re-rollouts' scripts its own way: policy llm's `trainer.llm_policy.play.LLMPlayer`, whose
redraws sample the language model (in torch or on the vLLM server) at the same counter-based
uniforms (`Script.draw`), the replayed prefix the factual episode's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from swarmscope.credit import leave_one_out, shapley_permutation
from swarmscope.graph import TraceGraph
from swarmscope.metrics import FREE_RIDER_EVENT_SHARE, free_riders, pseudo_parallel_agents
from trainer.policy import Game, OrchestratorPolicy, Script, moves_of, play
from trainer.rl.losses import gae
from trainer.rl.rewards import decision_rewards
from trainer.sim.actions import stop
from trainer.sim.env import Episode, InvalidAction, rollout
from trainer.sim.episode_interventions import Intervention, intervene

if TYPE_CHECKING:
    from trainer.recipes.config import RunConfig

#: The credit schemes whose block credit is a counterfactual baseline on the outcome alone
#: (`outcome_credit`): it replaces the outcome in the policy gradient (issue 30 item 7).
BASELINED = ("counterfactual_baseline", "counterfactual_baseline_exact")
#: The credit schemes that re-roll blocks of decisions (`decision_credit`, `outcome_credit`).
REROLLED = ("counterfactual", "shapley", "oracle", *BASELINED)
#: Plays re-rollout scripts for a policy other than the MLP: (scripts, build) -> one game per
#: script, in order, each with its final `env`, `env_steps` after the script's fork, and (where
#: `build`) its `episode` (`trainer.policy.play`'s contract; policy llm's `LLMPlayer`).
Player = Callable[[Sequence[Script], bool], Sequence[Game]]


def block_of(n_decisions: int, n_blocks: int) -> np.ndarray:
    """(T,) block index of each decision: `n_blocks` contiguous, near-equal blocks (at most T)."""
    k = max(1, min(n_blocks, n_decisions))
    return (
        np.concatenate([np.full(len(part), b) for b, part in enumerate(np.array_split(np.arange(n_decisions), k))])
        if n_decisions
        else np.zeros(0, dtype=int)
    )


def blocks_of(n_decisions: int, block_size: int, n_blocks: int) -> np.ndarray:
    """(T,) block index of each decision: consecutive blocks of `block_size` decisions (the last
    may be shorter) when block_size >= 1, else `block_of(n_decisions, n_blocks)`."""
    if block_size >= 1:
        return np.arange(n_decisions) // block_size
    return block_of(n_decisions, n_blocks)


def rerolled(
    policy: OrchestratorPolicy | Player,
    game: Game,
    blocks: np.ndarray,
    kept: np.ndarray,
    salts: Sequence[int],
    config: RunConfig,
    build: bool = True,
) -> list[Game]:
    """Re-rollouts of `game`, one per row of `kept` (R, K) bool (every row drops a block): the kept
    blocks' factual moves replayed where still legal, the others drawn from `policy` (the MLP, or a
    `Player`) with the row's salt, at the episode's seed (common random numbers), forking at the
    first dropped decision. `build=False`: episodes unbuilt (`trainer.policy.play`), the outcome
    read from each `env`."""
    moves = moves_of(game)
    env = game.env
    scripts = []
    for keep, salt in zip(np.asarray(kept, bool), salts):
        per_decision = tuple(bool(keep[b]) for b in blocks)
        scripts.append(Script(env.task, env.seed, moves, per_decision, int(salt), per_decision.index(False)))
    if isinstance(policy, OrchestratorPolicy):
        sim = config.sim_config()
        return list(play(policy, scripts, sim, config.stop, config.max_agents, record=False, build=build))
    return list(policy(scripts, build))


def block_credit(
    policy: OrchestratorPolicy | Player,
    game: Game,
    factual: float,
    config: RunConfig,
    value_of: Callable[[Game], float],
    build: bool = True,
) -> tuple[np.ndarray, int]:
    """Per-decision credit (T,) of a played episode: each decision its block's estimate in the
    coalition game of `decision_credit` (Shapley under `config.credit == "shapley"`, else the paired
    leave-one-out), a coalition valued `value_of` its re-rollout (`factual` for the factual
    episode, no rollout); and the environment steps the re-rollouts took. `build`: whether the
    re-rollouts' episodes are built (`rerolled`); `value_of` must read only the env when not."""
    moves = moves_of(game)
    blocks = blocks_of(len(moves), config.credit_block_size, config.credit_blocks)
    n_players = int(blocks.max()) + 1 if len(blocks) else 1
    steps = 0

    def coalition(kept: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        nonlocal steps
        kept = np.asarray(kept, bool)
        rewards = np.full(len(kept), factual)
        rows = [row for row, keep in enumerate(kept) if not keep.all()]
        if rows:
            salts = [int(s) for s in np.asarray(seeds)[rows]]
            played = rerolled(policy, game, blocks, kept[rows], salts, config, build=build)
            steps += sum(p.env_steps for p in played)
            rewards[rows] = [value_of(p) for p in played]
        return rewards

    if config.credit == "shapley":
        found = shapley_permutation(
            coalition, n_players, config.credit_samples, first_seed=1, sampling_seed=game.env.seed % (2**32)
        )
    else:
        found = leave_one_out(coalition, n_players, config.credit_samples, first_seed=1)
    per_block = np.array([a.estimate for a in found])
    return per_block[blocks], steps


def outcome_credit(
    policy: OrchestratorPolicy | Player, game: Game, config: RunConfig, exact: bool
) -> tuple[np.ndarray, int]:
    """Counterfactual-baseline credit of the outcome alone, (T,) per decision, and the re-rollouts'
    environment steps: decision t in block k gets Δ_k = Y(h) - mean_j Y(h with block k redrawn,
    salt j), `credit_samples` redraws at the episode's seed (common random numbers), the paired
    leave-one-out of `block_credit`. Y is the 0/1 outcome R (`env.score`) or, with `exact`, its
    closed-form expectation E[R | actions] (`env.p_success`). Δ_k is COMA's counterfactual
    advantage (Foerster et al. 2018, eq. 4) with the block as the agent and the later blocks'
    factual moves held (replayed where legal): the outcome minus a baseline from the re-rollouts.
    The fast path: no re-rollout builds its trace; `decision_credit` with `reward_of` the episode's
    `reward` (or `p_success`) gives the same values through the full path."""

    def value_of(played: Game) -> float:
        return float(played.env.p_success if exact else played.env.score)

    return block_credit(policy, game, value_of(game), config, value_of, build=False)


def decision_credit(
    policy: OrchestratorPolicy | Player,
    game: Game,
    reward: float,
    config: RunConfig,
    reward_of: Callable[[Episode], float],
) -> tuple[np.ndarray, int]:
    """Per-decision credit (T,) of a played episode under `config.credit` (one of `REROLLED`): each
    decision gets its block's credit; and the environment steps its re-rollouts took.

    The coalition game: players are the decision blocks (`blocks_of`); a coalition keeps its
    blocks' factual moves (where still legal) and redraws the others (`rerolled`; salt = the
    estimator's sample seed); its value is `reward_of` the re-rolled episode, `reward` for the
    factual one (no rollout). For `oracle`, pass the exact expectations: `reward` the factual
    episode's expected reward and `reward_of` an episode's (`trainer.rl.rewards.episode_reward`'s
    `expected_total`). Raises ValueError for a credit scheme that re-rolls nothing.
    """
    if config.credit not in REROLLED:
        raise ValueError(f"credit: {config.credit!r} re-rolls no blocks (one of {', '.join(REROLLED)})")
    return block_credit(policy, game, reward, config, lambda played: reward_of(played.episode))


def spread_of(credit: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """(T,) each decision's share of its block's credit: credit_t / (decisions in t's block), so a
    block's spread sums to its credit. `credit` (T,) constant within each block, `blocks` (T,)."""
    sizes = np.bincount(blocks)[blocks] if len(blocks) else np.zeros(0)
    return np.asarray(credit, float) / np.maximum(sizes, 1)


def credit_rewards(reward: float, spread: np.ndarray, weights: Mapping[str, float]) -> np.ndarray:
    """(T,) per-decision rewards: `decision_rewards(reward, T, weights)` (-w_critical_steps at
    every decision, the rest of `reward` at the last; the same in every arm) plus spread -
    mean(spread), `spread` (T,). They sum to `reward` (return-equivalent, RUDDER §3)."""
    spread = np.asarray(spread, float)
    return decision_rewards(reward, len(spread), weights) + spread - (spread.mean() if len(spread) else 0.0)


def credit_advantages(
    values: np.ndarray,
    reward: float,
    spread: np.ndarray,
    weights: Mapping[str, float],
    config: RunConfig,
    group: np.ndarray | None = None,
) -> np.ndarray:
    """(T,) advantages of one episode's decisions (before the batch's normalisation), the same in
    every arm but for `spread` (T,) (module docstring). PPO: GAE(gamma 1, `gae_lambda`) on the
    critic's `values` (T,) with `credit_rewards`. GRPO: (reward - mean(group) + sum_{s>=t} (spread_s
    - mean(spread))) / (std(group) + 1e-6), `group` (G,) the rewards of the episodes on its task
    (spread = 0: Shao et al. 2024's outcome supervision, every decision the same advantage)."""
    spread = np.asarray(spread, float)
    if config.algorithm == "ppo":
        return gae(np.asarray(values, float), credit_rewards(reward, spread, weights), config.gae_lambda)
    if group is None:
        raise ValueError("group: GRPO needs the rewards of the episode's group")
    centred = spread - (spread.mean() if len(spread) else 0.0)
    to_go = np.cumsum(centred[::-1])[::-1]
    return (reward - group.mean() + to_go) / (group.std() + 1e-6)


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


#: Episodes per iteration whose sub-agents' removal effects `attribution` computes (evenly spaced
#: over the iteration, so over its tasks): one open-loop replay per sub-agent with >= 5 % of the
#: episode's events, about 30 ms each on a loaded CPU, not counted in the run's environment steps.
FREE_RIDER_EPISODES = 4
#: Half-width of the exact removal effect's interval (SwarmSim's closed form; float rounding only).
EXACT_TOLERANCE = 1e-9


def removal_effects(episode: Episode, agents: Sequence[str]) -> dict[str, float]:
    """Exact removal effect of each of `agents` (spawned sub-agents of `episode`), in E[R] units:
    Δ_a = E[R | h] - E[R | do(remove a)], the second term the episode's actions without a's spawn
    and every action a sends, receives or is delegated (`Intervention("remove_agent")`, the trace
    metrics' intervention), replayed open loop at the episode's seed and ended as the episode ended
    (a stop, so partial credit grades it alike), valued at SwarmSim's closed form `p_success`
    (E[R], or E[score] under partial credit). An agent whose removal SwarmSim cannot replay is left
    out."""
    effects: dict[str, float] = {}
    for agent in agents:
        try:
            fork, after = intervene(episode, Intervention("remove_agent", agent=agent))
            actions = list(episode.actions[:fork]) + after
            if not actions or actions[-1].kind != "stop":
                actions.append(stop())
            effects[agent] = episode.p_success - rollout(episode.task, actions, episode.config, episode.seed).p_success
        except (ValueError, InvalidAction):
            continue
    return effects


def episode_free_riders(episode: Episode, graph: TraceGraph | None = None) -> tuple[list[str], list[str]]:
    """(free riders, spawned sub-agents) of one episode by the trace metrics' definition
    (`swarmscope.metrics.free_riders`): a sub-agent with >= 5 % of the events whose removal effect's
    95 % interval contains 0. Here the effect is exact (`removal_effects`), its interval
    [Δ - EXACT_TOLERANCE, Δ + EXACT_TOLERANCE]: a sub-agent whose removal lowers E[R] (a verifier
    others rely on) is never one. `graph`: the trace's TraceGraph, if already built."""
    graph = graph or TraceGraph.of(episode.trace)
    spawned = [a.name for a in episode.trace.agents if a.name != "orchestrator"]
    counts = Counter(event.agent for event in graph.order)
    floor = FREE_RIDER_EVENT_SHARE * len(graph.order)
    judged = [a for a in spawned if counts[a] and counts[a] >= floor]
    effects = removal_effects(episode, judged)
    intervals = {a: (d, d - EXACT_TOLERANCE, d + EXACT_TOLERANCE) for a, d in effects.items()}
    return free_riders(graph, intervals), spawned


def attribution(
    episodes: list[Episode], credits: list[np.ndarray], sample: int = FREE_RIDER_EPISODES
) -> dict[str, Any]:
    """The iteration's attribution panel: credit share (of |credit|) by role and by agent (top 20
    agents); `free_rider_index`: share of spawned sub-agents that are free riders by their exact
    removal effect (`episode_free_riders`), averaged over `sample` episodes evenly spaced over the
    iteration (`free_rider_episodes` says how many; an episode with E[R] = 0 has no removal that
    lowers it, so each of its judged sub-agents counts); `pseudo_parallelism_index`: share of
    spawned sub-agents none of whose events reaches the final answer
    (`swarmscope.metrics.pseudo_parallel_agents`), averaged over every episode."""
    by_agent: dict[str, float] = {}
    free, pseudo = [], []
    measured = (
        set(np.linspace(0, len(episodes) - 1, min(sample, len(episodes))).round().astype(int).tolist())
        if episodes and sample
        else set()
    )
    for k, (episode, credit) in enumerate(zip(episodes, credits)):
        agents = agents_of_decisions(episode)
        mine: dict[str, float] = {}
        for agent, value in zip(agents, np.abs(credit)):
            mine[agent] = mine.get(agent, 0.0) + float(value)
        total = sum(mine.values())
        if total > 0:
            for agent, value in mine.items():
                by_agent[agent] = by_agent.get(agent, 0.0) + value / total
        spawned = [a.name for a in episode.trace.agents if a.name != "orchestrator"]
        if not spawned:
            continue
        graph = TraceGraph.of(episode.trace)
        pseudo.append(len(pseudo_parallel_agents(graph)) / len(spawned))
        if k in measured:
            riders, _ = episode_free_riders(episode, graph)
            free.append(len(riders) / len(spawned))
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
        "free_rider_episodes": len(free),
        "pseudo_parallelism_index": float(np.mean(pseudo)) if pseudo else 0.0,
    }
