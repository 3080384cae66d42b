"""Fixtures of the runs tests: iteration dicts from the real recipe (trainer/recipes/
train_orchestrator.py) on a tiny budget, computed once per session (seconds on 2 cores)."""

from __future__ import annotations

import copy

import pytest

#: A real run's config that trains in seconds: SwarmSim's `tiny` level, 4 episodes per iteration.
TINY = {
    "level": "tiny",
    "algorithm": "ppo",
    "credit": "shared",
    "stop": "learned",
    "budget_steps": 600,
    "max_steps": 60,
    "episodes_per_iteration": 4,
    "group_size": 4,
    "seed": 0,
}


@pytest.fixture(scope="session")
def recorded_iterations() -> list[dict]:
    """The iteration dicts the recipe reported for TINY (at least 2)."""
    from trainer.recipes import train_orchestrator as recipe

    reports: list[dict] = []
    recipe.train(recipe.RunConfig.from_dict(TINY), on_iteration=reports.append)
    assert len(reports) >= 2, "TINY should take more than one iteration"
    return reports


@pytest.fixture
def iterations(recorded_iterations) -> list[dict]:
    return copy.deepcopy(recorded_iterations)
