"""Planted causal effects of messages, and planted free-riders and pseudo-parallel spawns.

A message's effect is an additive change to the success probability of its *target*: a subtask's
solve attempt (`target` = subtask id) or the final aggregate (`target` = None). It counts when
the message reaches the agent that later works on the target before it does (`trainer.sim.env`).
With K the set of message items that arrived, an effect adds to its target's probability:

- pivotal      +a if its one member is in K (the outcome hinges on it);
- redundant    +a if any member is in K (either one suffices);
- synergistic  +a if all members are in K (helps only together);
- harmful      -a if its one member is in K (misleading);
- null          0.

The target's probability is clipped to [0, 1] after summing, so E[R | K] has a closed form
(`trainer.sim.exact`).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import reduce
from typing import Any

from trainer.sim.actions import ORCHESTRATOR, Action, message, spawn

EFFECT_KINDS = ("pivotal", "redundant", "synergistic", "harmful", "null")


@dataclass(frozen=True)
class Effect:
    """A planted effect: `kind` of EFFECT_KINDS, `amount` >= 0 (probability units), message
    `members` (item keys), `target` subtask id (None: the final aggregate)."""

    kind: str
    amount: float
    members: tuple[str, ...]
    target: int | None = None

    def __post_init__(self):
        if self.kind not in EFFECT_KINDS:
            raise ValueError(f"effect kind must be one of {EFFECT_KINDS}, got {self.kind!r}")
        single = self.kind in ("pivotal", "harmful", "null")
        if (len(self.members) != 1) if single else (len(self.members) < 2):
            raise ValueError(f"a {self.kind} effect needs {'one member' if single else '>= 2 members'}")
        if self.amount < 0:
            raise ValueError("amount must be >= 0 (harmful effects subtract it)")

    def gain(self, arrived: Mapping[str, Any]) -> Any:
        """This effect's change to its target's probability. `arrived` maps item -> whether it reached
        the target: a bool, or a bool array (one entry per coalition, giving an array); absent: False."""
        if self.kind == "null":
            return 0.0
        flags = [arrived.get(member, False) for member in self.members]
        hit = reduce(operator.or_ if self.kind == "redundant" else operator.and_, flags)
        return (-self.amount if self.kind == "harmful" else self.amount) * hit


def gain(effects: Iterable[Effect], arrived: Mapping[str, Any]) -> Any:
    """Sum of `Effect.gain` over `effects` (callers pass the effects of one target)."""
    return sum((effect.gain(arrived) for effect in effects), 0.0)


def pivotal(key: str, amount: float, target: int | None = None) -> Effect:
    return Effect("pivotal", amount, (key,), target)


def redundant(keys: tuple[str, ...], amount: float, target: int | None = None) -> Effect:
    return Effect("redundant", amount, keys, target)


def synergistic(keys: tuple[str, ...], amount: float, target: int | None = None) -> Effect:
    return Effect("synergistic", amount, keys, target)


def harmful(key: str, amount: float, target: int | None = None) -> Effect:
    return Effect("harmful", amount, (key,), target)


def null(key: str, target: int | None = None) -> Effect:
    return Effect("null", 0.0, (key,), target)


def free_riders(n: int, messages_each: int = 2) -> list[Action]:
    """Actions planting `n` free-riders (role `free_rider`, skill 0): each sends `messages_each`
    null messages to the orchestrator, so it acts but its removal changes nothing."""
    actions = [spawn("free_rider") for _ in range(n)]
    actions += [
        message(f"free_rider_{i}", ORCHESTRATOR, f"chatter/{i}/{j}")
        for i in range(1, n + 1)
        for j in range(messages_each)
    ]
    return actions


def pseudo_parallel(n: int) -> list[Action]:
    """Actions planting `n` >= 2 pseudo-parallel spawns (role `scout`): each messages the next in a
    ring and none of them is ever given work, so nothing downstream consumes their output."""
    if n < 2:
        raise ValueError("pseudo-parallel spawns come at least in pairs")
    actions = [spawn("scout") for _ in range(n)]
    actions += [message(f"scout_{i}", f"scout_{i % n + 1}", f"scratch/{i}") for i in range(1, n + 1)]
    return actions
