"""Reward channels (trainer/sim/rewards.py) on hand-built episodes."""

import pytest

from trainer.sim import actions as act
from trainer.sim.env import simulate
from trainer.sim.rewards import hybrid, individual_rewards, reward_channels


def test_channels_of_a_hand_built_episode(chain):
    # subtask 0 is solved wrong and caught, re-solved right; subtask 1 right; aggregate right
    actions = [
        act.spawn("solver"),
        act.spawn("verifier"),
        act.delegate(0, "solver_1"),
        act.delegate(1, "solver_1"),
        act.aggregate(),
        act.stop(),
    ]
    outcomes = {"solve/0/0": False, "verify/0": True, "solve/0/1": True, "solve/1/0": True, "aggregate": True}
    trace = simulate(chain, actions, outcomes=outcomes).trace
    channels = reward_channels(trace)
    assert channels["outcome"] == 1.0
    assert channels["process"] == 1.0  # both subtasks' final results correct
    # tool calls: solve 0/0 (wrong), verify 0 (rightly rejects), solve 0/1, solve 1/0, verify 1 (accepts)
    assert channels["tool"] == pytest.approx(4 / 5)
    assert individual_rewards(trace) == {"solver_1": pytest.approx(2 / 3)}
    assert channels["split_correctness"] == 1.0 and channels["aggregation_quality"] == 1.0
    assert channels["parallel_speedup"] >= 1.0
    assert trace.rewards["hybrid"] == pytest.approx(1.0 + 0.1 + 0.1)
    assert trace.agent("solver_1").attributes["individual_reward"] == pytest.approx(2 / 3)


def test_split_correctness_and_no_aggregate(chain):
    actions = [act.spawn("solver"), act.delegate(1, "solver_1"), act.delegate(0, "solver_1"), act.stop()]
    channels = reward_channels(simulate(chain, actions, outcomes={"solve/0/0": True}).trace)
    assert channels["split_correctness"] == 0.5  # subtask 1 went out before its input
    assert channels["outcome"] == 0.0 and channels["aggregation_quality"] == 0.0
    assert channels["process"] == 0.5


def test_hybrid_weights():
    assert hybrid({"outcome": 1.0, "tool": 0.5}, {"outcome": 2.0, "tool": 1.0}) == 2.5
    with pytest.raises(KeyError):
        hybrid({"outcome": 1.0}, {"speed": 1.0})
