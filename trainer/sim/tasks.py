"""Decomposable tasks: a DAG of subtasks with difficulties and dependencies, by level.

A task's subtasks sit in `depth` layers of `width` subtasks; each subtask of layer d > 0 depends
on one or two subtasks of layer d - 1. Difficulty is in [0, 1] (0: any agent solves it; 1: only a
fully skilled one). The team succeeds when the final aggregate over every subtask is correct
(`trainer.sim.env`). `test_set(level)` is a fixed-seed list: the same tasks on every machine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Subtask:
    """Subtask `id` (its index in the task), `difficulty` in [0, 1], `deps`: ids it needs as input."""

    id: int
    difficulty: float
    deps: tuple[int, ...] = ()


@dataclass(frozen=True)
class Task:
    """A DAG of subtasks in topological order (every dep id is smaller than its subtask's id)."""

    id: str
    subtasks: tuple[Subtask, ...]
    level: str = "custom"

    def to_dict(self) -> dict:
        """The JSON form: `id`, `level`, `subtasks` as [id, difficulty, [deps]] triples."""
        return {
            "id": self.id,
            "level": self.level,
            "subtasks": [[s.id, s.difficulty, list(s.deps)] for s in self.subtasks],
        }

    @classmethod
    def from_dict(cls, data: dict) -> Task:
        """Inverse of `to_dict`."""
        return cls(data["id"], tuple(Subtask(i, d, tuple(deps)) for i, d, deps in data["subtasks"]), data["level"])


@dataclass(frozen=True)
class Level:
    """A generator level: `width` subtasks per layer, `depth` layers, difficulty drawn in `difficulty`."""

    width: int
    depth: int
    difficulty: tuple[float, float]


#: Levels by name. `long` gives >= 200 orchestrator decisions per episode under `SpawnEverything`
#: (one spawn and one delegate per subtask, plus aggregate and stop).
LEVELS = {
    "tiny": Level(width=2, depth=1, difficulty=(0.1, 0.3)),
    "small": Level(width=3, depth=2, difficulty=(0.1, 0.5)),
    "medium": Level(width=5, depth=3, difficulty=(0.2, 0.6)),
    "hard": Level(width=8, depth=4, difficulty=(0.4, 0.9)),
    "long": Level(width=30, depth=4, difficulty=(0.0, 0.3)),
}
#: Base seed of the fixed test sets (`test_set`).
TEST_SET_SEED = 20260501


def generate_task(level: str | Level, seed: int, task_id: str | None = None) -> Task:
    """A random task of `level` (a name of LEVELS or a Level); the same seed gives the same task.

    Raises KeyError for an unknown level name.
    """
    spec = LEVELS[level] if isinstance(level, str) else level
    rng = random.Random(seed)
    subtasks: list[Subtask] = []
    for layer in range(spec.depth):
        below = range((layer - 1) * spec.width, layer * spec.width) if layer else range(0)
        for _ in range(spec.width):
            deps = tuple(sorted(rng.sample(below, min(len(below), rng.randint(1, 2))))) if layer else ()
            subtasks.append(Subtask(len(subtasks), round(rng.uniform(*spec.difficulty), 3), deps))
    name = level if isinstance(level, str) else "custom"
    return Task(task_id or f"{name}-{seed}", tuple(subtasks), name)


def test_set(level: str, n: int = 100) -> list[Task]:
    """The fixed test set of `level`: n tasks from seeds TEST_SET_SEED + i."""
    return [generate_task(level, TEST_SET_SEED + i, f"{level}-test-{i}") for i in range(n)]


test_set.__dict__["__test__"] = False  # not a pytest test (a function attribute mypy does not model)
