"""Orchestrator actions (survey §3, sub-decisions O1-O5): spawn, despawn, delegate, message, aggregate, stop.

An `Action` is a frozen value; an episode's actions, its task, config and seed determine its trace.
Agents are named by role and spawn order (`solver_1`, `solver_2`, `verifier_1`, ...); the
orchestrator is `orchestrator`. A message carries an `item`: the key of a planted effect
(`trainer.sim.effects`) or any other string (no effect: a null message).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

ORCHESTRATOR = "orchestrator"
ACTION_KINDS = ("spawn", "despawn", "delegate", "message", "aggregate", "stop")


@dataclass(frozen=True)
class Action:
    """One orchestrator action; only the fields of its `kind` are set (see the constructors)."""

    kind: str
    role: str | None = None
    agent: str | None = None
    subtask: int | None = None
    item: str | None = None
    to: str | None = None

    def describe(self) -> str:
        """A one-line human-readable form, e.g. `delegate(3 -> solver_1)`."""
        if self.kind == "spawn":
            return f"spawn({self.role})"
        if self.kind == "despawn":
            return f"despawn({self.agent})"
        if self.kind == "delegate":
            return f"delegate({self.subtask} -> {self.agent})"
        if self.kind == "message":
            return f"message({self.agent} -> {self.to}: {self.item})"
        return f"{self.kind}()"

    def to_dict(self) -> dict[str, str | int]:
        """The JSON form: `kind` and the fields its kind sets."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Action:
        """Inverse of `to_dict`. Raises ValueError for an unknown kind."""
        if data.get("kind") not in ACTION_KINDS:
            raise ValueError(f"action kind must be one of {ACTION_KINDS}, got {data.get('kind')!r}")
        return cls(**data)


def spawn(role: str, name: str | None = None) -> Action:
    """Spawn an agent of `role`, named `name` or else `<role>_<n>` (n-th of its role)."""
    return Action("spawn", role=role, agent=name)


def despawn(agent: str) -> Action:
    return Action("despawn", agent=agent)


def delegate(subtask: int, agent: str) -> Action:
    return Action("delegate", agent=agent, subtask=subtask)


def message(sender: str, receiver: str, item: str) -> Action:
    return Action("message", agent=sender, to=receiver, item=item)


def aggregate() -> Action:
    return Action("aggregate")


def stop() -> Action:
    return Action("stop")
