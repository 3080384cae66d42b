"""Fixed benchmark suites of SwarmSim, defined in code so every machine builds the same episodes.

**pivot-12** (the credit benchmark): 200 traces (`pivot12()`), trace k seeded PIVOT12_SEED + k.
Each is a task of 2-4 x 1-3 subtasks of difficulty 0 (so every subtask succeeds: p_subtasks = 1)
solved by 2-4 solvers, with 12 candidate messages from solvers to the orchestrator, sent at random
points before the aggregate. Their items `fact/0` .. `fact/11` carry, in a random order per trace,
planted effects on the aggregate's success probability (`trainer.sim.effects`):

- one pivotal (+0.30): leave-one-out effect +0.30;
- a redundant pair (+0.20 if either is kept): removing one changes nothing, removing both costs 0.20;
- a synergistic pair (+0.25 only when both are kept);
- one harmful (-0.20): removing it gains 0.20;
- six null.

So E[R | S] = PIVOT12_BASE + 0.30 [p in S] + 0.20 [r1 in S or r2 in S] + 0.25 [s1, s2 in S]
- 0.20 [h in S] exactly (the closed form `exact.aggregate_coalition_values`), with PIVOT12_BASE =
0.2375 = E[R | no message]: the mean of E[R | S] over all 2^12 coalitions is 0.5, the base success
probability of the suite, and every E[R | S] stays in [0.0375, 0.9875], so no clipping.
The exact Shapley values (Shapley 1953) follow: pivotal 0.30, each redundant 0.10, each
synergistic 0.125, harmful -0.20, null 0.

**long**: `long_trace(seed)`, a `long`-level task (120 subtasks) under `SpawnEverything`:
243 orchestrator decisions per episode (>= 200, for training on long traces).

**envelope**: `envelope_actions(seed)`, the scale Kimi K2.6 reports: 300 sub-agents (299 solvers
and a verifier) and 4,000 orchestrator actions (1,200 delegations, 2,498 messages) in one episode.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from trainer.sim.actions import (
    ORCHESTRATOR,
    Action,
    aggregate,
    delegate,
    message,
    spawn,
    stop,
)
from trainer.sim.baselines import SpawnEverything, run_policy
from trainer.sim.effects import harmful, null, pivotal, redundant, synergistic
from trainer.sim.env import Episode, SimConfig, SwarmEnv, simulate
from trainer.sim.episode_interventions import message_indices, message_item
from trainer.sim.exact import aggregate_coalition_values, leave_one_out, shapley_values
from trainer.sim.tasks import Level, Task, generate_task

PIVOT12_SEED = 12_000
PIVOT12_SIZE = 200
PIVOT12_BASE = 0.2375
#: Planted kinds of the 12 candidate messages, before each trace's shuffle.
PIVOT12_KINDS = ("pivotal", "redundant", "redundant", "synergistic", "synergistic", "harmful") + ("null",) * 6
ENVELOPE_AGENTS = 300
ENVELOPE_STEPS = 4000


@dataclass
class Pivot12Case:
    """One pivot-12 trace: the episode, and per candidate message k (in action order) its planted
    `kinds[k]`; `values` (4096,) E[R | coalition] by bitmask, `shapley` (12,), `loo` (12,)."""

    episode: Episode
    candidates: list[int]
    kinds: tuple[str, ...]
    values: np.ndarray
    shapley: np.ndarray
    loo: np.ndarray


def pivot12_case(k: int) -> Pivot12Case:
    """Trace k (0 <= k < PIVOT12_SIZE) of pivot-12, as the module docstring defines it."""
    seed = PIVOT12_SEED + k
    rng = random.Random(seed)
    task = generate_task(Level(rng.randint(2, 4), rng.randint(1, 3), (0.0, 0.0)), seed, f"pivot-12/{k}")
    kinds = list(PIVOT12_KINDS)
    rng.shuffle(kinds)
    items = [f"fact/{j}" for j in range(12)]
    of = {kind: [item for item, planted in zip(items, kinds) if planted == kind] for kind in set(kinds)}
    effects = (
        pivotal(of["pivotal"][0], 0.30),
        redundant(tuple(of["redundant"]), 0.20),
        synergistic(tuple(of["synergistic"]), 0.25),
        harmful(of["harmful"][0], 0.20),
        *(null(item) for item in of["null"]),
    )
    solvers = [f"solver_{j}" for j in range(1, rng.randint(2, 4) + 1)]
    work: list[Action] = [delegate(s.id, solvers[s.id % len(solvers)]) for s in task.subtasks]
    sent = [message(rng.choice(solvers), ORCHESTRATOR, item) for item in items]
    slots = sorted(rng.sample(range(len(work) + len(sent)), len(sent)))
    body, w, m = [], iter(work), iter(sent)
    for position in range(len(work) + len(sent)):
        body.append(next(m) if position in slots else next(w))
    actions = [spawn("solver") for _ in solvers] + body + [aggregate(), stop()]
    config = SimConfig(aggregate_base=PIVOT12_BASE, effects=effects)
    episode = simulate(task, actions, config, seed)
    candidates = message_indices(episode.actions)
    planted = dict(zip(items, kinds))
    values = aggregate_coalition_values(episode, candidates)
    return Pivot12Case(
        episode,
        candidates,
        tuple(planted[message_item(episode.actions[c])] for c in candidates),
        values,
        shapley_values(values),
        leave_one_out(values),
    )


def pivot12(n: int = PIVOT12_SIZE) -> list[Pivot12Case]:
    """The first n traces of pivot-12 (all 200 by default)."""
    return [pivot12_case(k) for k in range(n)]


def long_trace(seed: int = 0) -> Episode:
    """An episode of the long-trace level: >= 200 orchestrator decisions."""
    return run_policy(SwarmEnv(generate_task("long", seed), seed=seed), SpawnEverything())


def envelope_actions(seed: int = 0) -> tuple[Task, list[Action]]:
    """The envelope episode's task (300 x 4 subtasks) and its 4,000 actions (see module docstring)."""
    rng = random.Random(seed)
    task = generate_task(Level(ENVELOPE_AGENTS, 4, (0.0, 0.3)), seed, f"envelope-{seed}")
    solvers = [f"solver_{j}" for j in range(1, ENVELOPE_AGENTS)]
    actions = [spawn("solver") for _ in solvers] + [spawn("verifier")]
    n_messages = ENVELOPE_STEPS - len(actions) - len(task.subtasks) - 2
    for s in task.subtasks:
        actions.append(delegate(s.id, solvers[s.id % len(solvers)]))
        for _ in range(n_messages * (s.id + 1) // len(task.subtasks) - n_messages * s.id // len(task.subtasks)):
            sender, receiver = rng.sample(solvers, 2)
            actions.append(message(sender, receiver, f"note/{len(actions)}"))
    return task, actions + [aggregate(), stop()]
