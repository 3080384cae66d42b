"""The environment (trainer/sim/env.py): hand-computed probabilities, traces, costs, errors."""

import numpy as np
import pytest

from swarmscope.metrics import compute_metrics
from swarmscope.model import trace_from_dict, validate_trace
from trainer.sim import actions as act
from trainer.sim.effects import free_riders, pivotal, pseudo_parallel
from trainer.sim.env import (
    InvalidAction,
    SimConfig,
    SwarmEnv,
    simulate,
    solve_probability,
)
from trainer.sim.exact import enumerate_expected_reward
from trainer.sim.tasks import generate_task


def plan(task, *extra, verifier=False):
    spawns = [act.spawn("solver")] + ([act.spawn("verifier")] if verifier else [])
    return (
        spawns + list(extra) + [act.delegate(s.id, "solver_1") for s in task.subtasks] + [act.aggregate(), act.stop()]
    )


def test_solve_probability():
    assert solve_probability(0.6, 0.5) == pytest.approx(0.8)
    assert solve_probability(1.0, 0.9) == 1.0
    assert solve_probability(0.0, 0.5, 0.9) == 1.0  # clipped
    assert solve_probability(np.array([0.0, 0.5]), 1.0).tolist() == [0.0, 0.5]


def test_hand_computed_probabilities(one_subtask, chain):
    config = SimConfig(aggregate_base=0.9)
    # one subtask: 0.8 * 0.9
    assert simulate(one_subtask, plan(one_subtask), config).p_success == pytest.approx(0.72)
    # a verifier (catch 0.8) adds a second attempt: q = 0.8 + 0.2 * 0.8 * 0.8 = 0.928
    assert simulate(one_subtask, plan(one_subtask, verifier=True), config).p_success == pytest.approx(0.928 * 0.9)
    # a chain of two: 0.8 * 0.8 * 0.9; out of order, subtask 1 lacks its input: 0
    assert simulate(chain, plan(chain), config).p_success == pytest.approx(0.576)
    backwards = [
        act.spawn("solver"),
        act.delegate(1, "solver_1"),
        act.delegate(0, "solver_1"),
        act.aggregate(),
        act.stop(),
    ]
    assert simulate(chain, backwards, config).p_success == 0.0
    # a planted effect on subtask 0 raises its p to 0.9
    planted = SimConfig(aggregate_base=0.9, effects=(pivotal("hint", 0.1, target=0),))
    hinted = plan(chain, act.spawn("expert"), act.message("expert_1", "solver_1", "hint"))
    assert simulate(chain, hinted, planted).p_success == pytest.approx(0.9 * 0.8 * 0.9)


@pytest.mark.parametrize("verifier", [False, True])
def test_enumeration_equals_closed_form(chain, verifier):
    config = SimConfig(aggregate_base=0.7, effects=(pivotal("hint", 0.15, target=1),))
    actions = plan(chain, act.message("orchestrator", "solver_1", "hint"), verifier=verifier)
    assert enumerate_expected_reward(chain, actions, config) == pytest.approx(
        simulate(chain, actions, config).p_success
    )


def test_monte_carlo_mean_matches_closed_form(chain):
    actions = plan(chain, verifier=True)
    rewards = [simulate(chain, actions, seed=seed).reward for seed in range(3000)]
    expected = simulate(chain, actions).p_success
    assert abs(np.mean(rewards) - expected) < 4 * np.sqrt(expected * (1 - expected) / 3000)


def test_wrong_results_propagate_unless_caught(chain):
    wrong_first = {"solve/0/0": False, "solve/1/0": True, "aggregate": True}
    episode = simulate(chain, plan(chain), outcomes=wrong_first)
    correct = {e.id: e.attributes["correct"] for e in episode.trace.events if e.type == "tool_result"}
    assert correct == {"result:0:0": False, "result:1:0": False} and episode.reward == 0.0
    assert compute_metrics(episode.trace)["error_amplification"] == 1.0
    caught = simulate(chain, plan(chain, verifier=True), outcomes={**wrong_first, "verify/0": True, "solve/0/1": True})
    assert caught.reward == 1.0
    assert [e.attributes["verdict"] for e in caught.trace.events if e.tool == "verify"] == ["reject", "accept"]


def test_trace_is_valid_and_has_metrics_costs_and_rewards():
    task = generate_task("medium", 3)
    actions = [act.spawn("solver"), act.spawn("solver"), act.spawn("verifier"), *free_riders(1), *pseudo_parallel(2)]
    actions += [act.delegate(s.id, f"solver_{s.id % 2 + 1}") for s in task.subtasks]
    episode = simulate(task, actions + [act.aggregate(), act.stop()], seed=4)
    trace = episode.trace
    validate_trace(trace)
    assert trace_from_dict(trace.to_dict()) == trace
    metrics = compute_metrics(trace)
    assert metrics["final_answer"] == "stop" and metrics["flags"]["backward_edges"] == 0
    assert metrics["failure_modes"]["pseudo_parallel_agents"] == ["scout_1", "scout_2"]
    assert metrics["critical_steps"] < metrics["total_steps"]
    assert trace.costs["tool_calls"] == sum(e.type == "tool_call" for e in trace.events)
    assert trace.costs["messages"] == 4 and trace.costs["tokens"] > 0 and trace.costs["wall_clock_s"] > 0
    assert set(trace.rewards) >= {"outcome", "process", "tool", "orchestration", "hybrid"}
    assert trace.attributes["p_success"] == episode.p_success
    types = {e.type for e in trace.events}
    assert types == {"spawn", "delegate", "message", "tool_call", "tool_result", "return", "aggregate", "stop"}


def test_same_seed_same_trace():
    task = generate_task("small", 0)
    actions = plan(task, verifier=True)
    assert simulate(task, actions, seed=9).trace == simulate(task, actions, seed=9).trace


@pytest.mark.parametrize(
    "action",
    [
        act.delegate(0, "solver_9"),
        act.delegate(5, "solver_1"),
        act.delegate(0, "verifier_1"),
        act.spawn("wizard"),
        act.message("solver_1", "solver_1", "x"),
        act.despawn("orchestrator"),
    ],
)
def test_invalid_actions_raise(one_subtask, action):
    env = SwarmEnv(one_subtask)
    env.step(act.spawn("solver"))
    env.step(act.spawn("verifier"))
    with pytest.raises(InvalidAction):
        env.step(action)


def test_despawned_agents_cannot_work_and_stopped_episodes_refuse(one_subtask):
    env = SwarmEnv(one_subtask)
    env.step(act.spawn("solver"))
    env.step(act.despawn("solver_1"))
    with pytest.raises(InvalidAction):
        env.step(act.delegate(0, "solver_1"))
    assert env.step(act.stop())
    with pytest.raises(InvalidAction):
        env.step(act.spawn("solver"))
    assert env.episode().reward == 0.0 and env.episode().trace.agent("solver_1").despawned_at is not None


def test_max_steps_stops(one_subtask):
    episode = simulate(one_subtask, [act.spawn("solver")] * 10, SimConfig(max_steps=3))
    assert len(episode.actions) == 3 and episode.trace.events[-1].type == "stop"
