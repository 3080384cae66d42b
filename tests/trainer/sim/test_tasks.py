"""Task DAG generator (trainer/sim/tasks.py)."""

import pytest

from trainer.sim.tasks import LEVELS, generate_task, test_set


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_levels_give_topologically_ordered_dags(level):
    spec = LEVELS[level]
    task = generate_task(level, seed=1)
    assert len(task.subtasks) == spec.width * spec.depth
    for subtask in task.subtasks:
        assert all(dep < subtask.id for dep in subtask.deps)
        assert spec.difficulty[0] <= subtask.difficulty <= spec.difficulty[1]
        assert bool(subtask.deps) == (subtask.id >= spec.width)


def test_fixed_seed_test_sets():
    assert test_set("small", 5) == test_set("small", 5)
    assert len({task.id for task in test_set("small", 5)}) == 5
    assert generate_task("small", 1) != generate_task("small", 2)


def test_unknown_level():
    with pytest.raises(KeyError):
        generate_task("galactic", 0)
