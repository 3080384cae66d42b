"""Game families for benchmarking credit estimators against SwarmSim's exact answers (issue 16).

Each game is a distinct SwarmSim episode (its own task, solvers, message order, effect sizes and
base success probability), not one game relabelled. `make_game(family, g)` builds game g of a
family from seed `FAMILY_SEEDS[family] + g`; the players are its candidate messages (message
events in action order), and its exact coalition values E[R | S] (2^n,), Shapley values and
leave-one-out Δ come from `trainer.sim.exact`'s closed forms. Families:

- `pairwise`: a pivotal, a harmful, a synergistic pair, a redundant pair, the rest null, on the
  aggregate; sizes drawn U(0.05, 0.40) and scaled so no coalition's probability is clipped, so the
  game is exactly 2-additive (`interaction_order` = 2);
- `synergy3`, `synergy4`: a pivotal, a harmful (`synergy3`, and `synergy4` with room), and one
  3-way or 4-way synergy (U(0.30, 0.60): helps only when all its members are kept), no clipping:
  interaction order 3 or 4;
- `redundancy`: a redundant triple (any one of three suffices), a redundant pair, a pivotal, no
  clipping: order 3;
- `noisy`: subtasks that may fail (difficulty U(0.2, 0.6)), with 3-4 messages briefing solvers
  before their subtask, with effects on it (a pivotal, a harmful; of four, a synergistic pair;
  a lone third one is null), and 3-4 messages to the orchestrator with effects on the aggregate
  (a pivotal, a redundant pair, a null), sizes U(0.05, 0.35); E[R | S] is a
  product over subtasks (high-order interactions, clipping allowed) and the rollouts re-simulate
  every subtask downstream of the fork;
- `mixed`, `mixed-resim`: bench/bench_interval_coverage.py's suite (clipping allowed; `-resim`:
  subtasks of difficulty U(0.1, 0.4)), kept draw for draw; `pivot12`: trace g of the audit's
  suite (`trainer.sim.suites.pivot12_case`: one game relabelled, 12 players).

Coupling (`coupled_game`, `coupled_rollout`): a rollout of coalition S at seed s draws every
random outcome of SwarmSim (a subtask's solve, the aggregate) from (s, key), as `SwarmEnv` does;
for S other than the factual (every player kept), each outcome drawn by an action at or after
the fork (the first removed message) reuses the factual rollout's draw with probability `rho` and
is re-drawn independently otherwise (an LLM re-rollout regenerates what follows the fork); draws
before the fork are shared. rho = 1 is SwarmSim's common random numbers (`SimRollout`,
`AggregateRollout`, rollout for rollout); rho = 0 regenerates everything after the fork. The
marginals, so the exact values, do not depend on rho. Games have no verifier, so the outcomes a
rollout draws, and their probabilities, depend on the coalition alone (`DrawTable`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from swarmscope.credit import CoalitionGame, Rollout
from swarmscope.interventions import Intervention, InterventionError
from trainer.sim.actions import ORCHESTRATOR, Action, aggregate, delegate, message, spawn, stop
from trainer.sim.effects import Effect, harmful, null, pivotal, redundant, synergistic
from trainer.sim.env import Episode, SimConfig, SwarmEnv, simulate
from trainer.sim.episode_interventions import message_indices, message_item
from trainer.sim.exact import MAX_EXACT_MESSAGES, aggregate_coalition_values, leave_one_out, shapley_values
from trainer.sim.rng import key_hash, uniforms
from trainer.sim.suites import pivot12_case
from trainer.sim.tasks import Level, generate_task

#: The estimator benchmark's families (bench/bench_estimators.py), and the legacy interval suite's.
FAMILIES = ("pairwise", "synergy3", "synergy4", "redundancy", "noisy")
LEGACY_FAMILIES = ("mixed", "mixed-resim", "pivot12")
#: Base seed of each family: game g is seeded FAMILY_SEEDS[family] + g.
FAMILY_SEEDS = {
    "pairwise": 41_000,
    "synergy3": 42_000,
    "synergy4": 43_000,
    "redundancy": 44_000,
    "noisy": 45_000,
    "mixed": 31_000,
    "mixed-resim": 531_000,
}
#: Coupling values rho of the benchmark: perfect (SwarmSim's CRN), half, none.
COUPLINGS = (1.0, 0.5, 0.0)


@dataclass(frozen=True)
class DrawTable:
    """The random outcomes a rollout of each coalition draws: `keys` (K,) outcome keys (`solve/<i>/0`,
    `aggregate`), `hashes` (K,) their `key_hash`, `at` (K,) the index in the factual actions of
    the action that draws each, and `p` (2^n, K) each outcome's success probability by coalition
    bitmask (1 where a coalition does not draw it). The reward is 1 when every outcome succeeds."""

    keys: tuple[str, ...]
    hashes: np.ndarray
    at: np.ndarray
    p: np.ndarray


@dataclass(frozen=True, eq=False)
class Game:
    """Game `index` of `family`: its `episode`, `candidates` (n,) message action indices, `players`
    (n,) their message event ids, `kinds` (n,) the planted kind of each one's item ("null" when it
    has none), exact `values` (2^n,) E[R | S] by bitmask (bit k: player k kept), `shapley` (n,),
    `loo` (n,), the game's `order` (`interaction_order`) and its `draws`."""

    family: str
    index: int
    episode: Episode
    candidates: list[int]
    players: list[str]
    kinds: tuple[str, ...]
    values: np.ndarray
    shapley: np.ndarray
    loo: np.ndarray
    order: int
    draws: DrawTable

    @property
    def n_players(self) -> int:
        return len(self.players)


class _EverySuccess(Mapping[str, bool]):
    """Forced outcomes (`SwarmEnv`'s `outcomes`) that make every draw succeed, so a rollout draws
    every outcome an episode can (none is skipped after a failure) and records its probability."""

    def __getitem__(self, key: str) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 1  # truthy: SwarmEnv replaces an empty mapping by {}


def interaction_order(values: np.ndarray, tol: float = 1e-9) -> int:
    """The largest |T| with a Möbius coefficient (Harsanyi dividend) m(T) = sum_{S ⊆ T}
    (-1)^{|T \\ S|} v(S) of |m(T)| > tol, for `values` (2^n,) by bitmask (Grabisch 1997: a game is
    k-additive when every m(T) with |T| > k is 0); 0 for a constant game. O(n 2^n).
    Raises ValueError unless len(values) is a power of two."""
    size = len(values)
    n = size.bit_length() - 1
    if size != 1 << n:
        raise ValueError("values must have 2^n entries")
    m = np.array(values, float)
    masks = np.arange(size)
    for k in range(n):
        has = (masks >> k & 1) == 1
        m[has] -= m[masks[has] & ~(1 << k)]
    popcount = np.array([bin(x).count("1") for x in range(size)])
    big = np.abs(m) > tol
    big[0] = False
    return int(popcount[big].max()) if big.any() else 0


def _no_clipping(rng: random.Random, effects: list[tuple[str, tuple[str, ...], float]]) -> tuple[float, list[Effect]]:
    """A base success probability and the effects (kind, members, amount), amounts scaled so that
    base + every gain stays in [0.02, 0.98] for every coalition (no clipping)."""
    up = sum(a for kind, _, a in effects if kind != "harmful")
    down = sum(a for kind, _, a in effects if kind == "harmful")
    scale = min(1.0, 0.9 / (up + down)) if up + down > 0 else 1.0
    up, down = up * scale, down * scale
    base = rng.uniform(0.02 + down, 0.98 - up)
    made = []
    for kind, members, amount in effects:
        amount *= scale
        made.append(
            {"pivotal": pivotal, "harmful": harmful}[kind](members[0], amount)
            if kind in ("pivotal", "harmful")
            else {"synergistic": synergistic, "redundant": redundant}[kind](members, amount)
        )
    return base, made


def _aggregate_plan(family: str, rng: random.Random, items: list[str]) -> tuple[float, list[Effect]]:
    """The aggregate's base probability and the planted effects of an aggregate family, on `items`
    (shuffled); every item without an effect gets a null one."""
    amount = lambda: rng.uniform(0.05, 0.40)  # noqa: E731
    strong = lambda: rng.uniform(0.30, 0.60)  # noqa: E731
    plan: list[tuple[str, tuple[str, ...], float]]
    if family == "pairwise":
        plan = [
            ("pivotal", (items[0],), amount()),
            ("harmful", (items[1],), amount()),
            ("synergistic", (items[2], items[3]), amount()),
            ("redundant", (items[4], items[5]), amount()),
        ]
    elif family == "synergy3":
        plan = [
            ("pivotal", (items[0],), amount()),
            ("harmful", (items[1],), amount()),
            ("synergistic", tuple(items[2:5]), strong()),
        ]
    elif family == "synergy4":
        plan = [("pivotal", (items[0],), amount()), ("synergistic", tuple(items[1:5]), strong())]
        if len(items) >= 7:
            plan.append(("harmful", (items[5],), amount()))
    elif family == "redundancy":
        plan = [
            ("redundant", tuple(items[0:3]), strong()),
            ("redundant", (items[3], items[4]), amount()),
            ("pivotal", (items[5],), amount()),
        ]
    else:
        raise ValueError(f"no aggregate family {family!r}")
    base, effects = _no_clipping(rng, plan)
    used = {m for effect in effects for m in effect.members}
    return base, effects + [null(item) for item in items if item not in used]


def _interleave(rng: random.Random, work: list[Action], sent: list[Action]) -> list[Action]:
    """`work` and `sent` merged at random positions, each keeping its own order."""
    slots = set(rng.sample(range(len(work) + len(sent)), len(sent)))
    w, s = iter(work), iter(sent)
    return [next(s) if position in slots else next(w) for position in range(len(work) + len(sent))]


def _mixed(g: int, resim: bool) -> Episode:
    """Game g of bench/bench_interval_coverage.py's suite (its module docstring), draw for draw."""
    seed = FAMILY_SEEDS["mixed-resim" if resim else "mixed"] + g
    rng = random.Random(seed)
    difficulty = (0.1, 0.4) if resim else (0.0, 0.0)
    task = generate_task(Level(rng.randint(2, 4), rng.randint(1, 3), difficulty), seed, f"coverage/{g}")
    m = rng.randint(4, 8)
    items = [f"fact/{j}" for j in range(m)]
    rng.shuffle(items)
    effects = [
        pivotal(items[0], rng.uniform(0.02, 0.45)),
        harmful(items[1], rng.uniform(0.02, 0.40)),
        synergistic((items[2], items[3]), rng.uniform(0.02, 0.40)),
    ]
    rest = items[4:]
    if len(rest) >= 3:
        effects.append(redundant((rest[0], rest[1]), rng.uniform(0.02, 0.30)))
        rest = rest[2:]
    effects += [null(item) for item in rest]
    solvers = [f"solver_{j}" for j in range(1, rng.randint(2, 4) + 1)]
    work: list[Action] = [delegate(s.id, solvers[s.id % len(solvers)]) for s in task.subtasks]
    sent = [message(rng.choice(solvers), ORCHESTRATOR, item) for item in sorted(items)]
    actions = [spawn("solver") for _ in solvers] + _interleave(rng, work, sent) + [aggregate(), stop()]
    config = SimConfig(aggregate_base=rng.uniform(0.05, 0.70), effects=tuple(effects))
    return simulate(task, actions, config, seed)


def _aggregate_family(family: str, g: int) -> Episode:
    """Game g of an aggregate family: subtasks of difficulty 0, 6-8 messages to the orchestrator."""
    seed = FAMILY_SEEDS[family] + g
    rng = random.Random(seed)
    task = generate_task(Level(rng.randint(2, 4), rng.randint(1, 2), (0.0, 0.0)), seed, f"{family}/{g}")
    m = rng.randint(6, 8)
    items = [f"fact/{j}" for j in range(m)]
    rng.shuffle(items)
    base, effects = _aggregate_plan(family, rng, items)
    solvers = [f"solver_{j}" for j in range(1, rng.randint(2, 4) + 1)]
    work: list[Action] = [delegate(s.id, solvers[s.id % len(solvers)]) for s in task.subtasks]
    sent = [message(rng.choice(solvers), ORCHESTRATOR, item) for item in sorted(items)]
    actions = [spawn("solver") for _ in solvers] + _interleave(rng, work, sent) + [aggregate(), stop()]
    return simulate(task, actions, SimConfig(aggregate_base=base, effects=tuple(effects)), seed)


def _noisy(g: int) -> Episode:
    """Game g of the `noisy` family (module docstring): 3-4 messages briefing solvers before their
    subtask, 3-4 to the orchestrator."""
    seed = FAMILY_SEEDS["noisy"] + g
    rng = random.Random(seed)
    task = generate_task(Level(rng.randint(2, 3), rng.randint(1, 2), (0.2, 0.6)), seed, f"noisy/{g}")
    solvers = [f"solver_{j}" for j in range(1, rng.randint(2, 3) + 1)]
    owner = {s.id: solvers[s.id % len(solvers)] for s in task.subtasks}
    amount = lambda: rng.uniform(0.05, 0.35)  # noqa: E731
    briefed = [rng.randrange(len(task.subtasks)) for _ in range(rng.randint(3, 4))]
    kinds = ["pivotal", "harmful", "synergistic", "synergistic", "null"][: len(briefed)]
    rng.shuffle(kinds)
    effects: list[Effect] = []
    briefs: list[tuple[int, str]] = []  # (subtask, item) of each message to a solver
    pair: list[tuple[int, str]] = []
    for j, (subtask, kind) in enumerate(zip(briefed, kinds)):
        item = f"brief/{j}"
        if kind == "synergistic":
            pair.append((subtask, item))
            continue
        briefs.append((subtask, item))
        effects.append(
            {"pivotal": pivotal, "harmful": harmful}[kind](item, amount(), subtask)
            if kind != "null"
            else null(item, subtask)
        )
    if len(pair) == 2:
        subtask = pair[0][0]
        pair = [(subtask, pair[0][1]), (subtask, pair[1][1])]
        effects.append(synergistic((pair[0][1], pair[1][1]), amount(), subtask))
    else:  # a lone member: a null brief
        effects += [null(item, subtask) for subtask, item in pair]
    briefs += pair
    facts = [f"fact/{j}" for j in range(rng.randint(3, 4))]
    effects += [pivotal(facts[0], amount()), redundant((facts[1], facts[2]), amount())]
    effects += [null(item) for item in facts[3:]]
    body: list[Action] = [delegate(s.id, owner[s.id]) for s in task.subtasks]
    for subtask, item in briefs:
        position = next(i for i, a in enumerate(body) if a.kind == "delegate" and a.subtask == subtask)
        sender = rng.choice([s for s in solvers if s != owner[subtask]])
        body.insert(rng.randint(0, position), message(sender, owner[subtask], item))
    for item in facts:
        body.insert(rng.randint(0, len(body)), message(rng.choice(solvers), ORCHESTRATOR, item))
    actions = [spawn("solver") for _ in solvers] + body + [aggregate(), stop()]
    config = SimConfig(aggregate_base=rng.uniform(0.5, 0.95), effects=tuple(effects))
    return simulate(task, actions, config, seed)


def draw_table(episode: Episode, candidates: list[int]) -> tuple[np.ndarray, DrawTable]:
    """(exact values (2^n,), `DrawTable`) of `episode`'s coalitions over `candidates` (message
    action indices), each coalition re-simulated once with every outcome forced to succeed (so
    each draw is recorded): the values are `Episode.p_success`, `trainer.sim.exact.coalition_values`'
    closed form. Raises ValueError for a verifier (its draws depend on outcomes), partial answer
    credit, or above MAX_EXACT_MESSAGES candidates."""
    if any(a.kind == "spawn" and a.role == "verifier" for a in episode.actions):
        raise ValueError("a verifier's draws depend on outcomes: no draw table")
    if getattr(episode.config, "answer_credit", "all_or_nothing") != "all_or_nothing":
        raise ValueError("the draw table's reward is all or nothing (every outcome succeeds)")
    if len(candidates) > MAX_EXACT_MESSAGES:
        raise ValueError(f"{len(candidates)} candidates: exact values need at most {MAX_EXACT_MESSAGES}")
    size = 1 << len(candidates)
    values = np.empty(size)
    rows: list[dict[str, float]] = []
    at: dict[str, int] = {}
    for mask in range(size):
        removed = {c for k, c in enumerate(candidates) if not mask >> k & 1}
        env = SwarmEnv(episode.task, episode.config, episode.seed, _EverySuccess())
        drawn: dict[str, float] = {}
        for index, action in enumerate(episode.actions):
            if index in removed:
                continue
            before = len(env.draws)
            done = env.step(action)
            for key, probability in env.draws[before:]:
                drawn[key] = probability
                at.setdefault(key, index)
            if done:
                break
        values[mask] = env.p_success
        rows.append(drawn)
    # outcomes that succeed surely in every coalition (a subtask of difficulty 0) change nothing
    keys = tuple(sorted((k for k in at if any(row.get(k, 1.0) < 1.0 for row in rows)), key=lambda k: (at[k], k)))
    p = np.array([[row.get(key, 1.0) for key in keys] for row in rows]).reshape(size, len(keys))
    table = DrawTable(
        keys, np.array([key_hash(key) for key in keys], np.uint64), np.array([at[key] for key in keys]), p
    )
    return values, table


def aggregate_draw_table(episode: Episode, candidates: list[int]) -> tuple[np.ndarray, DrawTable]:
    """`draw_table` without re-simulation where every subtask succeeds surely and every effect
    targets the aggregate: one outcome, `aggregate`, of probability v(S)
    (`trainer.sim.exact.aggregate_coalition_values`, which raises ValueError otherwise)."""
    if episode.p_subtasks != 1.0:
        raise ValueError("a subtask may fail: use draw_table")
    values = aggregate_coalition_values(episode, candidates)
    at = next(i for i, a in enumerate(episode.actions) if a.kind == "aggregate")
    return values, DrawTable(
        ("aggregate",), np.array([key_hash("aggregate")], np.uint64), np.array([at]), values[:, None]
    )


def make_game(family: str, g: int) -> Game:
    """Game g >= 0 of `family` (FAMILIES or LEGACY_FAMILIES; module docstring) with its exact values.
    Raises ValueError for an unknown family or g < 0."""
    if g < 0:
        raise ValueError("game index must be >= 0")
    if family in ("mixed", "mixed-resim"):
        episode = _mixed(g, family == "mixed-resim")
    elif family == "pivot12":
        episode = pivot12_case(g).episode
    elif family == "noisy":
        episode = _noisy(g)
    elif family in FAMILIES:
        episode = _aggregate_family(family, g)
    else:
        raise ValueError(f"unknown game family {family!r}: one of {FAMILIES + LEGACY_FAMILIES}")
    candidates = message_indices(episode.actions)
    if episode.p_subtasks == 1.0 and all(effect.target is None for effect in episode.config.effects):
        values, table = aggregate_draw_table(episode, candidates)
    else:
        values, table = draw_table(episode, candidates)
    planted = {m: effect.kind for effect in episode.config.effects for m in effect.members}
    event_of = {index: event.id for index, event in zip(candidates, _message_events(episode))}
    return Game(
        family,
        g,
        episode,
        candidates,
        [event_of[c] for c in candidates],
        tuple(planted.get(message_item(episode.actions[c]), "null") for c in candidates),
        values,
        shapley_values(values),
        leave_one_out(values),
        interaction_order(values),
        table,
    )


def _message_events(episode: Episode) -> list:
    return [event for event in episode.trace.events if event.type == "message"]


def _fork(game: Game) -> np.ndarray:
    """(2^n,) the action index of each coalition's fork: its first removed candidate (the number of
    actions for the factual coalition, which has none)."""
    n = game.n_players
    fork = np.full(1 << n, len(game.episode.actions))
    for mask in range(1 << n):
        removed = [c for k, c in enumerate(game.candidates) if not mask >> k & 1]
        if removed:
            fork[mask] = min(removed)
    return fork


def coupled_game(game: Game, rho: float) -> CoalitionGame:
    """The coalition game of `game` under coupling `rho` in [0, 1] (module docstring): kept (B, n)
    bool, seeds (B,) ints >= 0 -> rewards (B,) in {0, 1}, E = values[S] whatever rho. At rho = 1
    it is `trainer.rollout.sim.SimRollout`'s game (and `AggregateRollout.game()`'s), reward for
    reward. Raises ValueError for rho outside [0, 1]."""
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must be in [0, 1], got {rho}")
    table = game.draws
    n, k = game.n_players, len(table.keys)
    weights = 1 << np.arange(n)
    after = table.at[None, :] >= _fork(game)[:, None]  # (2^n, K): drawn at or after the fork
    masks_all = np.arange(1 << n)
    own = np.array([[key_hash(f"{key}/rerun/{m}") for key in table.keys] for m in masks_all], np.uint64).reshape(-1, k)
    coin = np.array([[key_hash(f"{key}/coupling/{m}") for key in table.keys] for m in masks_all], np.uint64)
    coin = coin.reshape(-1, k)

    def play(kept: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        masks = np.asarray(kept, bool).reshape(-1, n) @ weights
        seeds = np.repeat(np.asarray(seeds).reshape(-1, 1), k, axis=1)
        u = uniforms(seeds.ravel(), np.broadcast_to(table.hashes, seeds.shape).ravel()).reshape(seeds.shape)
        if rho < 1.0:
            regenerate = after[masks] & (uniforms(seeds.ravel(), coin[masks].ravel()).reshape(seeds.shape) >= rho)
            if regenerate.any():
                fresh = uniforms(seeds[regenerate], own[masks][regenerate])
                u[regenerate] = fresh
        return np.all(u < table.p[masks], axis=1).astype(float)

    return play


def coupled_rollout(game: Game, rho: float) -> Rollout:
    """`coupled_game` as a `swarmscope.credit.Rollout`: an intervention removes candidate messages
    (its events among `game.players`); None is the factual history. Raises InterventionError for
    any other intervention."""
    play = coupled_game(game, rho)
    index = {player: k for k, player in enumerate(game.players)}

    def rollout(intervention: Intervention | None, seeds: np.ndarray) -> np.ndarray:
        kept = np.ones(game.n_players, bool)
        if intervention is not None:
            if intervention.kind != "remove" or intervention.agents:
                raise InterventionError("a benchmark game removes candidate messages only", "kind")
            for event in intervention.events:
                if event not in index:
                    raise InterventionError(f"{event!r} is not a candidate message", "events")
                kept[index[event]] = False
        seeds = np.asarray(seeds)
        return play(np.tile(kept, (len(seeds), 1)), seeds)

    return rollout


def expected_game(game: Game) -> CoalitionGame:
    """The game with every reward replaced by its expectation values[S] (no outcome noise): what an
    estimator's sampling of coalitions alone costs."""
    weights = 1 << np.arange(game.n_players)
    return lambda kept, seeds: game.values[np.asarray(kept, bool) @ weights]
