"""Stop hindsight on hand-built SwarmSim episodes, and the stop heads' paired targets."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from swarmscope.metrics import critical_steps  # noqa: E402
from trainer.policy import AGGREGATE, DELEGATE, STOP, OrchestratorPolicy, Script, play  # noqa: E402
from trainer.recipes.config import DEFAULT_REWARD_WEIGHTS, RunConfig  # noqa: E402
from trainer.rl.rewards import episode_reward  # noqa: E402
from trainer.rl.stop import episode_summary, stop_hindsight, stop_targets  # noqa: E402
from trainer.sim.actions import ORCHESTRATOR, aggregate, delegate, message, spawn, stop  # noqa: E402
from trainer.sim.env import simulate  # noqa: E402
from trainer.sim.tasks import Subtask, Task  # noqa: E402

TINY = {
    "level": "small",
    "budget_steps": 400,
    "episodes_per_iteration": 4,
    "group_size": 2,
    "max_steps": 40,
    "sample_episodes": 2,
}
EASY = Task("easy-2", (Subtask(0, 0.0), Subtask(1, 0.0)))
WEIGHTS = {**DEFAULT_REWARD_WEIGHTS, "success": 1.0, "critical_steps": 0.001, "parallelism": 0.0, "finish": 0.0}


def test_stopping_right_after_the_answer_has_no_regret():
    outcome = stop_hindsight(
        simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate(), stop()]),
        WEIGHTS,
    )
    assert outcome.regret == 0 and outcome.best_point == 3 and not outcome.premature and not outcome.late


def test_stopping_late_costs_the_extra_critical_steps():
    base = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate(), stop()])
    late = simulate(
        EASY,
        [
            spawn("solver"),
            delegate(0, "solver_1"),
            delegate(1, "solver_1"),
            aggregate(),
            message(ORCHESTRATOR, "solver_1", "x"),
            message(ORCHESTRATOR, "solver_1", "y"),
            stop(),
        ],
    )
    outcome = stop_hindsight(late, WEIGHTS)
    assert critical_steps(late.trace) > critical_steps(base.trace)
    assert outcome.regret == pytest.approx(0.001 * (critical_steps(late.trace) - critical_steps(base.trace)))
    assert outcome.late and not outcome.premature


def test_answering_before_every_subtask_is_delegated_is_premature():
    episode = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), aggregate(), stop()])
    outcome = stop_hindsight(episode, WEIGHTS)
    assert episode.p_success == 0.0
    completed = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate(), stop()])
    expected = (1.0 - 0.001 * critical_steps(completed.trace)) - (0.0 - 0.001 * critical_steps(episode.trace))
    assert outcome.premature and not outcome.late
    assert outcome.best_point == 3 and outcome.achieved_point == 2
    assert outcome.regret == pytest.approx(expected)


def test_a_doomed_answer_is_best_stopped_at_once():
    # difficulty 1 and a solver of skill 0.6: p = 0.6 per subtask, E[R] = 0.36; with w_success 0.01
    # answering cannot pay for its critical steps, so the best stop is the first decision
    hard = Task("hard-2", (Subtask(0, 1.0), Subtask(1, 1.0)))
    episode = simulate(hard, [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate(), stop()])
    outcome = stop_hindsight(episode, {**WEIGHTS, "success": 0.01, "critical_steps": 0.01})
    assert outcome.best_point == 0 and outcome.late and outcome.regret > 0


def test_episode_summary_adds_length_and_hindsight_to_the_reward_terms():
    episode = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), aggregate(), stop()])
    summary = episode_summary(episode, WEIGHTS)
    outcome = stop_hindsight(episode, WEIGHTS)
    assert {k: summary[k] for k in episode_reward(episode, WEIGHTS, 0.0)} == episode_reward(episode, WEIGHTS, 0.0)
    assert summary["length"] == 4 and summary["p_success"] == 0.0
    assert summary["stop_regret"] == outcome.regret and summary["premature"] == 1.0 and summary["late"] == 0.0


def test_stop_targets_measure_the_exact_cost_of_going_on_after_the_answer():
    # spawn, delegate both, aggregate, stop; the stop's continuation runs on to the step limit (12)
    # with the answer already given: its gain is minus the cost of 8 more orchestrator events
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    config = RunConfig.from_dict(
        {
            **TINY,
            "max_steps": 12,
            "stop_points": 3,
            "reward_weights": {"critical_steps": 0.01, "finish": 0.0, "parallelism": 0.0},
        }
    )
    factual = (0, DELEGATE, DELEGATE, AGGREGATE, STOP)
    game = play(policy, [Script(EASY, 4, factual, (True,) * 5)], config.sim_config(), "learned")[0]
    game.moves = list(factual)  # the record stop_targets reads, as if every decision had been sampled
    game.masks = [np.array([True] * 6 + [t >= 2]) for t in range(5)]  # stop legal from the first delegation

    def reward_of(episode):
        return episode_reward(episode, config.reward_weights, 0.0)["total"]

    reward = reward_of(game.episode)
    values, gains, steps = stop_targets(policy, game, reward, config, reward_of, np.random.default_rng(0))
    assert values[4] == reward and gains[4] == pytest.approx(-0.08)
    # stopping at decisions 2 and 3 (before the answer) gives R = 0: going on gains the outcome
    actions = [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1")]
    for s in (2, 3):
        assert values[s] == pytest.approx(reward_of(simulate(EASY, actions[:s] + [stop()], config.sim_config(), 4)))
        assert gains[s] == pytest.approx(reward - values[s]) and gains[s] > 0.9
    assert np.isnan(values[:2]).all() and steps == (12 - 4) + 2  # the continuation after its fork + 2 stops


def test_stop_targets_measure_nothing_unless_the_stop_is_learned():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    config = RunConfig.from_dict({**TINY, "stop": "rule"})
    game = play(policy, [Script(EASY, 4)], config.sim_config(), "rule")[0]
    values, gains, steps = stop_targets(policy, game, 1.0, config, lambda e: 0.0, np.random.default_rng(0))
    assert len(values) == len(gains) == len(game.moves) and np.isnan(values).all() and np.isnan(gains).all()
    assert steps == 0
