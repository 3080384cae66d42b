"""The reward terms of one episode, their spread over decisions, and the anneal."""

import numpy as np
import pytest

pytest.importorskip("torch")

from swarmscope.metrics import critical_steps  # noqa: E402
from trainer.rl.rewards import (  # noqa: E402
    anneal_factor,
    critical_steps_of,
    decision_rewards,
    episode_reward,
    reward_to_go,
)
from trainer.sim.actions import aggregate, delegate, spawn, stop  # noqa: E402
from trainer.sim.env import simulate  # noqa: E402
from trainer.sim.tasks import Subtask, Task  # noqa: E402

EASY = Task("easy-2", (Subtask(0, 0.0), Subtask(1, 0.0)))


def test_decision_rewards_pay_each_decision_its_critical_step_and_keep_the_return():
    weights = {"critical_steps": 0.01}
    r = decision_rewards(0.5, 4, weights)
    np.testing.assert_allclose(r, [-0.01, -0.01, -0.01, 0.5 + 0.03])
    assert r.sum() == pytest.approx(0.5)
    np.testing.assert_allclose(reward_to_go(0.5, 4, weights), np.cumsum(r[::-1])[::-1])


def test_one_decision_gets_the_whole_reward():
    np.testing.assert_allclose(decision_rewards(0.7, 1, {"critical_steps": 0.5}), [0.7])
    np.testing.assert_allclose(reward_to_go(0.7, 3, {"critical_steps": 0.1}), [0.7, 0.8, 0.9])


def test_episode_reward_terms():
    episode = simulate(
        EASY, [spawn("solver"), spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_2"), aggregate(), stop()]
    )
    weights = {"success": 1.0, "parallelism": 0.2, "finish": 0.1, "critical_steps": 0.01, "parallel_target": 4.0}
    terms = episode_reward(episode, weights, anneal=0.5)
    cs = critical_steps(episode.trace)
    assert terms["success"] == 1.0 and terms["critical_steps"] == cs
    assert terms["r_parallel"] == 0.5  # 2 working sub-agents / target 4
    assert terms["r_finish"] == 1.0
    assert terms["task"] == pytest.approx(1.0 - 0.01 * cs)
    assert terms["total"] == pytest.approx(1.0 - 0.01 * cs + 0.5 * (0.2 * 0.5 + 0.1 * 1.0))


def test_critical_steps_of_an_episode_match_the_trace_metric():
    episode = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate(), stop()])
    assert critical_steps_of(episode) == critical_steps(episode.trace)


def test_anneal_fades_linearly_over_its_fraction_of_the_budget():
    assert anneal_factor(0, 1000, 1.0) == 1.0
    assert anneal_factor(250, 1000, 1.0) == pytest.approx(0.75)
    assert anneal_factor(250, 1000, 0.5) == pytest.approx(0.5)
    assert anneal_factor(500, 1000, 0.5) == 0.0 and anneal_factor(900, 1000, 0.5) == 0.0  # clipped at 0
