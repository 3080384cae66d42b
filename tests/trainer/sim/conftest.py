"""Tiny hand-computable tasks shared by the SwarmSim tests."""

import pytest

from trainer.sim.tasks import Subtask, Task


@pytest.fixture
def one_subtask():
    """One subtask of difficulty 0.5: a solver (skill 0.6) solves it with p = 1 - 0.5 * 0.4 = 0.8."""
    return Task("one", (Subtask(0, 0.5),))


@pytest.fixture
def chain():
    """Subtask 1 needs subtask 0; both of difficulty 0.5 (p = 0.8 each for a solver)."""
    return Task("chain", (Subtask(0, 0.5), Subtask(1, 0.5, (0,))))


@pytest.fixture
def easy():
    """One subtask of difficulty 0: always solved, so E[R] is the aggregate's probability."""
    return Task("easy", (Subtask(0, 0.0),))
