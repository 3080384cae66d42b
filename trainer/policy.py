"""The orchestrator policy for SwarmSim in PyTorch: observation features, masked action head, value
head and value-of-continuation head, and a batched player of episodes (`play`).

Action space (`MOVES`, survey §3 sub-decisions O1-O5): spawn a solver / an expert / a verifier;
delegate the next open subtask (in id order, a topological order) to the live worker that is free
first; message that worker (a null item: it costs time and tokens); aggregate (legal once every
subtask is delegated: an earlier answer is certainly wrong); stop. The argument
of a move is resolved by these rules, so the network chooses the kind of decision, and the masks
(`legal_moves`) rule out the illegal ones. Stop modes: `learned` (stop is an optimal-stopping
decision on the value heads, below, offered once the orchestrator has answered), `anytime` (the
same learned stop, offered at every decision: a stop before the answer submits a partial answer,
worth something under SwarmSim's partial credit, `trainer.sim.env`, so a premature stop is a
real, possible mistake), `rule` (stop and aggregate masked until every subtask is delegated, then
aggregate and stop are forced: the survey's rule-based stop) and `none` (stop masked: the episode
runs to the step limit).

**The learned stop is optimal stopping** (Snell 1952; Chow, Robbins & Siegmund 1971, ch. 3), not
a policy-gradient logit. Two heads estimate the value of stopping now, S(s) (the reward the episode
gets when it stops at s), and the gain of continuing, G(s) = C(s) - S(s) (C: the reward when it
goes on instead). The rule "stop when the value of continuing falls below the value of stopping
now" is p(stop | s) = sigmoid(-G(s) / STOP_TEMPERATURE): a soft version of stop iff C(s) < S(s).
The other moves share 1 - p(stop) by the action head's softmax over them. G is regressed on paired
differences (both terms at the same seed, so the outcome noise they share cancels; see the recipe),
which is what makes the small gain of stopping after the answer (a few critical steps) learnable
under 0/1 outcome noise. Guards against the collapse into stopping at once: G starts optimistic
(`INITIAL_GAIN`: continuing looks worth it until the data says otherwise), and stop is offered only
once the orchestrator has answered (aggregated). A stop without an answer scores R = 0 in SwarmSim;
when it was offered as soon as every subtask was delegated, G was measured against an early
policy's continuation full of filler moves (each paying the critical-steps cost), came out
negative, and runs learned to stop without answering at all (bench/RESULTS.md). So under
`learned` the decision is when to end the episode once answered: at once, or after more moves;
`anytime` drops the guard, for environments where an unfinished answer earns partial credit.

Sampling uses SwarmSim's counter-based randomness (`trainer.sim.rng`): decision t of the episode
with seed s draws u = uniform(s, "policy/<t>") (with a `salt`, "policy/<t>/<salt>"), so a
re-rollout that keeps the seed shares every draw it does not change (common random numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np
import torch
from torch import nn

from trainer.sim.actions import (
    ORCHESTRATOR,
    Action,
    aggregate,
    delegate,
    message,
    spawn,
    stop,
)
from trainer.sim.env import Episode, SimConfig, SwarmEnv
from trainer.sim.rng import uniform
from trainer.sim.tasks import Task

#: Moves of the action head, in logit order.
MOVES = ("spawn_solver", "spawn_expert", "spawn_verifier", "delegate", "message", "aggregate", "stop")
SPAWN_SOLVER, SPAWN_EXPERT, SPAWN_VERIFIER, DELEGATE, MESSAGE, AGGREGATE, STOP = range(len(MOVES))
#: The role each spawn move spawns, indexed by move (SPAWN_SOLVER .. SPAWN_VERIFIER).
SPAWN_ROLES = ("solver", "expert", "verifier")
#: The decision kind of each move (spawn / delegate / message / aggregate / stop).
MOVE_KIND = ("spawn", "spawn", "spawn", "delegate", "message", "aggregate", "stop")
STOP_MODES = ("learned", "anytime", "rule", "none")
#: The stop modes whose stop is the learned optimal-stopping decision (the stop heads are trained).
LEARNED_STOPS = ("learned", "anytime")
#: Observation features (`features`), in order.
FEATURES = (
    "delegated_share",
    "all_delegated",
    "next_difficulty",
    "solvers",
    "experts",
    "expert_share",
    "verifier_alive",
    "workers_per_subtask",
    "workers_idle_share",
    "wait_s",
    "messages",
    "aggregated",
    "steps_share",
    "clock_s",
    "events",
    "n_subtasks",
    "bias",
)
#: The features the value head V(s) reads: task progress and the make-up of the worker pool (what
#: the outcome depends on), not the clock or the pool's size. A move that makes no progress (a
#: message, one more worker of a kind already there) leaves them unchanged, so its GAE advantage is
#: its own cost. With the clock features (steps, time, events, messages) V learned "later is worth
#: more" (the costs paid so far leave the reward-to-go) and credited a null move with progress it
#: did not make; with worker counts, "more experts is worth more" (true of the first), and runs
#: spawned an expert before nearly every delegation (bench/RESULTS.md).
CRITIC_FEATURES = (
    "delegated_share",
    "all_delegated",
    "next_difficulty",
    "expert_share",
    "verifier_alive",
    "aggregated",
    "n_subtasks",
    "bias",
)
#: Initial logit biases: delegate leans on; aggregate (legal only once every subtask is delegated)
#: leans on too. (The stop logit is unused: p(stop) comes from the gain head, module docstring.)
INITIAL_BIAS = (0.0, 0.0, 0.0, 1.0, -1.0, 1.0, -5.0)
#: Temperature of the learned stop, in reward units: p(stop) = sigmoid(-G / STOP_TEMPERATURE).
#: Small, because the stop is asked at every decision and the hazards add up: a gain of +0.02
#: gives p(stop) = 5e-5 per decision (1 % over 200), a gain of -0.01 (10 critical steps at w_cs
#: 0.001) gives 0.99.
STOP_TEMPERATURE = 0.002
#: Initial bias of the gain head G (reward units): p(stop) ~ sigmoid(-50) ~ 0 until trained.
INITIAL_GAIN = 0.5


class OrchestratorState:
    """Book-keeping over one `SwarmEnv` that the features and the move rules read (O(1) per step)."""

    def __init__(self, env: SwarmEnv, max_agents: int):
        self.env, self.max_agents = env, max_agents
        self.n = len(env.task.subtasks)
        self.next_subtask = 0
        self.workers: list[str] = []
        self.roles = {"solver": 0, "expert": 0, "verifier": 0}
        self.messages = 0

    def target(self) -> str:
        """The live worker that is free first (ties: spawn order)."""
        agents = self.env.agents
        return min(self.workers, key=lambda name: agents[name].free_at)

    def legal(self, mode: str) -> np.ndarray:
        """(len(MOVES),) bool mask of the legal moves under stop `mode`."""
        mask = np.zeros(len(MOVES), dtype=bool)
        room = len(self.workers) + self.roles["verifier"] < self.max_agents
        mask[[SPAWN_SOLVER, SPAWN_EXPERT, SPAWN_VERIFIER]] = room
        mask[DELEGATE] = bool(self.workers) and self.next_subtask < self.n
        mask[MESSAGE] = bool(self.workers)
        # an answer before every subtask is delegated is certainly wrong (E[R] = 0, `trainer.sim.env`)
        mask[AGGREGATE] = not self.env.aggregated and self.next_subtask == self.n
        # the guard (module docstring): under `learned`, stop only once answered
        mask[STOP] = mode == "anytime" or mode == "learned" and self.env.aggregated
        if mode == "rule":
            mask[AGGREGATE] = False
            if self.next_subtask == self.n:  # every subtask delegated: aggregate, then stop
                mask[:] = False
                mask[STOP if self.env.aggregated else AGGREGATE] = True
        if not mask.any():  # nothing else is legal (no room, no worker, aggregated): stop
            mask[STOP] = True
        return mask

    def fixed_stop(self, mask: np.ndarray, k: int) -> np.ndarray:
        """`mask` (from `legal`) under the fixed-K stop (`trainer.rl.stop.fixed_k_values`): stop and
        aggregate masked until K subtasks are delegated (stop stays where nothing else is legal);
        then stop forced, or aggregate forced first when K >= n (the answer: the rule stop). Before
        the K-th delegation the mask is `legal("rule")`'s, so the fixed-K episode is the rule
        episode's prefix up to its K-th delegation, then a stop. Modifies and returns `mask`."""
        if self.next_subtask < min(k, self.n):
            mask[AGGREGATE] = False
            if mask[:STOP].any():
                mask[STOP] = False
            return mask
        mask[:] = False
        mask[AGGREGATE if k >= self.n and not self.env.aggregated else STOP] = True
        return mask

    def features(self) -> np.ndarray:
        """(len(FEATURES),) float32: the observation from the trace so far (agents alive by role,
        subtask status, messages, budget left), scaled to about [0, 1]."""
        env, n = self.env, self.n
        agents = env.agents
        idle = sum(agents[w].free_at <= env.t for w in self.workers)
        wait = min((agents[w].free_at for w in self.workers), default=env.t) - env.t
        steps = len(env.actions)
        nxt = env.task.subtasks[self.next_subtask].difficulty if self.next_subtask < n else 0.0
        return np.array(
            [
                self.next_subtask / n,
                float(self.next_subtask == n),
                nxt,
                self.roles["solver"] / 32,
                self.roles["expert"] / 32,
                self.roles["expert"] / len(self.workers) if self.workers else 0.0,
                float(self.roles["verifier"] > 0),
                len(self.workers) / n,
                idle / len(self.workers) if self.workers else 0.0,
                min(wait, 50.0) / 10,
                self.messages / 32,
                float(env.aggregated),
                steps / env.config.max_steps,
                env.t / 100,
                len(env.events) / 1000,
                n / 100,
                1.0,
            ],
            dtype=np.float32,
        )

    def action(self, move: int) -> Action:
        """The SwarmSim action of `move` (legal per `legal`)."""
        if move <= SPAWN_VERIFIER:
            return spawn(SPAWN_ROLES[move])
        if move == DELEGATE:
            return delegate(self.next_subtask, self.target())
        if move == MESSAGE:
            return message(ORCHESTRATOR, self.target(), f"note/{len(self.env.actions)}")
        return aggregate() if move == AGGREGATE else stop()

    def apply(self, move: int) -> None:
        """Step the environment with `move` and update the book-keeping."""
        action = self.action(move)
        self.env.step(action)
        if move <= SPAWN_VERIFIER:
            role = SPAWN_ROLES[move]
            self.roles[role] += 1
            if role != "verifier":
                self.workers.append(f"{role}_{self.roles[role]}")
        elif move == DELEGATE:
            self.next_subtask += 1
        elif move == MESSAGE:
            self.messages += 1


class Heads(NamedTuple):
    """The policy's outputs for a batch of B decisions: `logits` (B, M) masked action logits,
    `value` V(s) (B,) the expected reward from s on (the recipe's per-decision rewards),
    `stop_value` S(s) (B,) the expected episode reward when the orchestrator stops at s, `gain`
    G(s) (B,) the expected gain of continuing instead (reward units). The value of continuation
    is C(s) = S(s) + G(s) (`continuation`)."""

    logits: torch.Tensor
    value: torch.Tensor
    stop_value: torch.Tensor
    gain: torch.Tensor

    @property
    def continuation(self) -> torch.Tensor:
        return self.stop_value + self.gain


class OrchestratorPolicy(nn.Module):
    """MLP torso over `FEATURES` with three heads (`Heads`): action logits (len(MOVES),), value of
    stopping now S(s) and gain of continuing G(s); and a separate MLP critic V(s) over
    `CRITIC_FEATURES`. Input (B, F) float32."""

    def __init__(self, hidden: int = 64):
        super().__init__()
        self.torso = nn.Sequential(nn.Linear(len(FEATURES), hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.logits = nn.Linear(hidden, len(MOVES))
        self.critic_columns = [FEATURES.index(name) for name in CRITIC_FEATURES]
        self.value = nn.Sequential(
            nn.Linear(len(CRITIC_FEATURES), hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 1),
        )
        self.stop_value = nn.Linear(hidden, 1)
        self.gain = nn.Linear(hidden, 1)
        with torch.no_grad():
            self.logits.weight.mul_(0.01)
            self.logits.bias.copy_(torch.tensor(INITIAL_BIAS))
            self.gain.weight.mul_(0.01)
            self.gain.bias.fill_(INITIAL_GAIN)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> Heads:
        """`Heads` of features (B, F); logits are -1e9 where `mask` (B, M) bool is False."""
        h = self.torso(features)
        logits = self.logits(h).masked_fill(~mask, -1e9)
        value = self.value(features[:, self.critic_columns]).squeeze(-1)
        return Heads(logits, value, self.stop_value(h).squeeze(-1), self.gain(h).squeeze(-1))


def move_probabilities(
    logits: torch.Tensor, gain: torch.Tensor, mask: torch.Tensor, mode: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """(probabilities (B, M) of every move, log-probabilities (B, M) of the non-stop moves given
    that the orchestrator does not stop). p(stop) is 1 where stop is the only legal move; under the
    `LEARNED_STOPS` modes, where stop is legal among others, sigmoid(-gain / STOP_TEMPERATURE) (optimal
    stopping, module docstring); else 0. The non-stop moves share 1 - p(stop) by the softmax of
    `logits` (B, M) over the legal ones. `gain` (B,), `mask` (B, M) bool."""
    others = mask.clone()
    others[:, STOP] = False
    conditional = torch.log_softmax(logits.masked_fill(~others, -1e9), dim=-1)
    only_stop = mask[:, STOP] & ~others.any(-1)
    learned = torch.sigmoid(-gain / STOP_TEMPERATURE) if mode in LEARNED_STOPS else torch.zeros_like(gain)
    p_stop = torch.where(only_stop, torch.ones_like(gain), torch.where(mask[:, STOP], learned, torch.zeros_like(gain)))
    probs = conditional.exp() * (1 - p_stop)[:, None] * others
    probs[:, STOP] = p_stop
    return probs, conditional


@dataclass
class Played:
    """One played episode: the final env, and per decision the policy's record (T decisions):
    `features` (T, F), `masks` (T, M), `moves` (T,), `logp` (T,) (of a non-stop move: its
    log-probability given no stop, what PPO's ratio uses; of a stop: log p(stop)), `values` (T,),
    `continuation` (T,) C(s), `p_stop` (T,); `sampled` (T,) bool: drawn from the policy (not forced);
    `env_steps`: steps simulated after the `fork` (the steps before it replay a known prefix);
    `episode`: the finished episode, set by `play` when the game ends (unset before)."""

    env: SwarmEnv
    state: OrchestratorState
    features: list[np.ndarray] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)
    moves: list[int] = field(default_factory=list)
    logp: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    continuation: list[float] = field(default_factory=list)
    p_stop: list[float] = field(default_factory=list)
    sampled: list[bool] = field(default_factory=list)
    env_steps: int = 0
    episode: Episode = field(init=False)


class Game(Protocol):
    """A played episode as the credit re-rollouts read it (`Played`, or policy llm's
    `trainer.llm_policy.play.LLMPlayed`): its final `env`, the `env_steps` simulated after its fork,
    and its `episode` once built."""

    env: SwarmEnv
    env_steps: int
    episode: Episode


@dataclass(frozen=True)
class Script:
    """How to play one episode: `task`, env `seed`, and optionally `moves` (a factual move list)
    with `keep(t) -> bool` per decision t: kept decisions replay the factual move when it is legal;
    the others are drawn from the policy with `salt` (an independent draw, same env seed: CRN).
    `fork`: the first decision that may differ from the factual episode (steps before it are a
    replayed prefix and do not count in `env_steps`). `no_stop_at`: a decision where stop is masked
    (the orchestrator continues: the stop decision's counterfactual); with `no_stop_after`, stop
    stays masked from there on (the episode runs on to the step limit). `stop_after` = K >= 0: the
    fixed-K stop (`OrchestratorState.fixed_stop`: stop after exactly K delegations, answering
    first when K >= n); -1: the stop `mode`'s."""

    task: Task
    seed: int
    moves: tuple[int, ...] = ()
    kept: tuple[bool, ...] = ()
    salt: int = 0
    fork: int = 0
    no_stop_at: int = -1
    no_stop_after: bool = False
    stop_after: int = -1

    def legal(self, state: OrchestratorState, mode: str) -> np.ndarray:
        """(len(MOVES),) bool: the legal moves at `state`'s next decision under stop `mode` and this
        script's stop rules (`stop_after`, `no_stop_at`, `no_stop_after`)."""
        t = len(state.env.actions)
        mask = state.legal(mode)
        if self.stop_after >= 0:
            mask = state.fixed_stop(mask, self.stop_after)
        if (t == self.no_stop_at or self.no_stop_after and 0 <= self.no_stop_at <= t) and mask.sum() > 1:
            mask[STOP] = False
        return mask

    def replayed(self, t: int, mask: np.ndarray) -> int | None:
        """The factual move decision `t` replays (kept, and legal under `mask`), else None (drawn)."""
        if t < len(self.moves) and self.kept[t] and mask[self.moves[t]]:
            return self.moves[t]
        return None

    def draw(self, t: int) -> float:
        """The uniform of decision `t`: uniform(seed, "policy/<t>"), "policy/<t>/<salt>" with a salt."""
        return uniform(self.seed, f"policy/{t}/{self.salt}" if self.salt else f"policy/{t}")


def play(
    policy: OrchestratorPolicy,
    scripts: Sequence[Script],
    config: SimConfig,
    mode: str,
    max_agents: int = 64,
    record: bool = True,
    build: bool = True,
) -> list[Played]:
    """Play every script to its end, one batched forward pass per decision over the live episodes.

    Returns one `Played` per script, with its `episode` (trace, reward, p_success) built; with
    `build=False` the episode is left unbuilt (no trace, no critical path: about half a re-rollout's
    time at n = 64) and the outcome is read from the env (`env.score`, `env.p_success`). A decision
    t of script k with t < len(moves) and kept[t] replays moves[t] where legal (no forward pass);
    the others are sampled from the masked policy with u = uniform(seed, "policy/<t>[/<salt>]").
    Raises ValueError for an unknown stop `mode`.
    """
    if mode not in STOP_MODES:
        raise ValueError(f"stop mode must be one of {STOP_MODES}, got {mode!r}")
    games = []
    for script in scripts:
        env = SwarmEnv(script.task, config, script.seed)
        games.append(Played(env, OrchestratorState(env, max_agents)))
    live = list(range(len(scripts)))
    while live:
        asking = []
        for k in live:
            game, script = games[k], scripts[k]
            while not game.env.done:
                t = len(game.env.actions)
                mask = script.legal(game.state, mode)
                move = script.replayed(t, mask)
                if move is not None:
                    game.state.apply(move)
                    game.env_steps += t >= script.fork
                    game.sampled.append(False)
                    continue
                asking.append((k, mask))
                break
        if not asking:
            break
        features = torch.from_numpy(np.stack([games[k].state.features() for k, _ in asking]))
        masks = torch.from_numpy(np.stack([mask for _, mask in asking]))
        with torch.no_grad():
            heads = policy(features, masks)
            probs_t, conditional = move_probabilities(heads.logits, heads.gain, masks, mode)
            probs = probs_t.numpy().astype(np.float64)
            values, cont = heads.value, heads.continuation
        for row, (k, mask) in enumerate(asking):
            game, script = games[k], scripts[k]
            t = len(game.env.actions)
            u = script.draw(t)
            cumulative = np.cumsum(probs[row])
            move = min(int(np.searchsorted(cumulative, u * cumulative[-1], side="right")), len(MOVES) - 1)
            while not mask[move]:  # numerical tail: the last legal move at or below
                move -= 1
            if record:
                game.features.append(features[row].numpy())
                game.masks.append(mask)
                game.moves.append(move)
                game.logp.append(
                    float(np.log(max(probs[row, STOP], 1e-30))) if move == STOP else float(conditional[row, move])
                )
                game.values.append(float(values[row]))
                game.continuation.append(float(cont[row]))
                game.p_stop.append(float(probs[row, STOP]))
            game.sampled.append(True)
            game.state.apply(move)
            game.env_steps += t >= script.fork
        live = [k for k in live if not games[k].env.done]
    if build:
        for game in games:
            game.episode = game.env.episode()
    return games


def moves_of(game: Game | Episode) -> tuple[int, ...]:
    """The moves of a played episode (or of an `Episode`'s actions), forced and sampled alike, in
    decision order. Raises KeyError for an action no move makes (despawn)."""
    actions = game.actions if isinstance(game, Episode) else game.env.actions
    return tuple(_move_of(action) for action in actions)


def _move_of(action: Action) -> int:
    if action.kind == "spawn":
        return SPAWN_ROLES.index(action.role)
    return {"delegate": DELEGATE, "message": MESSAGE, "aggregate": AGGREGATE, "stop": STOP}[action.kind]
