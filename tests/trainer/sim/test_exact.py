"""Ground truth (trainer/sim/exact.py): Shapley values and coalition values by hand."""

import numpy as np
import pytest

from trainer.sim import actions as act
from trainer.sim.effects import pivotal, redundant, synergistic
from trainer.sim.env import SimConfig, simulate
from trainer.sim.exact import (
    aggregate_coalition_values,
    coalition_values,
    leave_one_out,
    shapley_values,
)


def test_shapley_of_a_hand_computed_game():
    # players 0, 1, 2 by bitmask; v: {}=0, {0}=1, {1}=2, {0,1}=4, {2}=0, {0,2}=1, {1,2}=2, {0,1,2}=7
    values = np.array([0, 1, 2, 4, 0, 1, 2, 7], dtype=float)
    # phi_0 = 1/3 (1) + 1/6 (2) + 1/6 (1) + 1/3 (5) = 5/2; phi_1 = 1/3 (2) + 1/6 (3 + 2) + 1/3 (6) = 7/2;
    # phi_2 = 1/3 (0) + 1/6 (0 + 0) + 1/3 (3) = 1
    phi = shapley_values(values)
    assert phi == pytest.approx([5 / 2, 7 / 2, 1])
    assert phi.sum() == pytest.approx(values[-1] - values[0])
    assert leave_one_out(values) == pytest.approx([5, 6, 3])


def test_shapley_needs_a_power_of_two():
    with pytest.raises(ValueError):
        shapley_values(np.zeros(6))


def episode_with(easy, effects, items):
    """`easy` (E[R] = aggregate probability) with messages carrying `items` to the orchestrator."""
    actions = [act.spawn("solver"), act.delegate(0, "solver_1")]
    actions += [act.message("solver_1", "orchestrator", item) for item in items]
    return simulate(easy, actions + [act.aggregate(), act.stop()], SimConfig(aggregate_base=0.4, effects=effects))


def test_removing_a_pivotal_message_lowers_expected_reward_by_its_amount(easy):
    episode = episode_with(easy, (pivotal("key", 0.3),), ["key", "noise"])
    values = coalition_values(episode)
    assert values == pytest.approx([0.4, 0.7, 0.4, 0.7])
    assert leave_one_out(values) == pytest.approx([0.3, 0.0])
    assert shapley_values(values) == pytest.approx([0.3, 0.0])


def test_redundant_pair_zero_leave_one_out_nonzero_shapley(easy):
    episode = episode_with(easy, (redundant(("a", "b"), 0.2), synergistic(("c", "d"), 0.25)), "abcd")
    values = coalition_values(episode)
    assert values[-1] == pytest.approx(0.85) and values[0] == pytest.approx(0.4)
    assert values[0b1100] == pytest.approx(0.85 - 0.2)  # both redundant (bits 0, 1) removed
    assert leave_one_out(values) == pytest.approx([0.0, 0.0, 0.25, 0.25])
    assert shapley_values(values) == pytest.approx([0.1, 0.1, 0.125, 0.125])


def test_closed_form_equals_resimulation(easy):
    episode = episode_with(easy, (redundant(("a", "b"), 0.2), pivotal("c", 0.3)), "abcd")
    assert aggregate_coalition_values(episode) == pytest.approx(coalition_values(episode))


def test_closed_form_rejects_subtask_effects_and_too_many_messages(easy):
    with pytest.raises(ValueError):
        aggregate_coalition_values(episode_with(easy, (pivotal("a", 0.1, target=0),), "a"))
    with pytest.raises(ValueError):
        coalition_values(episode_with(easy, (), [f"m{i}" for i in range(13)]))
