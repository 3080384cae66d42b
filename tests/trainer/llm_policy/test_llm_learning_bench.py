"""The held-out figures of bench/bench_llm_learning.py (issue 31's learning benchmark): an episode's
E[R], answered share, stop regret and premature / late stops are the MLP evaluation's
(`trainer.rl.stop.episode_summary`), and a run is read at an iteration by its last evaluation."""

from __future__ import annotations

import pytest

from bench.bench_llm_learning import at_iteration, summarise
from trainer.recipes.config import DEFAULT_REWARD_WEIGHTS
from trainer.rl.stop import episode_summary
from trainer.sim.actions import stop
from trainer.sim.baselines import run_policy, single_agent
from trainer.sim.env import SimConfig, SwarmEnv
from trainer.sim.tasks import generate_task


def test_summarise_means_the_mlp_evaluations_figures_and_counts_answers():
    weights = dict(DEFAULT_REWARD_WEIGHTS)
    tasks = [generate_task("tiny", 900_000 + i) for i in range(2)]
    answered = run_policy(SwarmEnv(tasks[0], SimConfig(max_steps=12), 1), single_agent())
    quitter = SwarmEnv(tasks[1], SimConfig(max_steps=12), 2)
    quitter.step(stop())
    quit_early = quitter.episode()
    out = summarise([answered, quit_early], weights)
    rows = [episode_summary(answered, weights), episode_summary(quit_early, weights)]
    assert out["answered"] == 0.5
    assert out["expected_reward"] == pytest.approx((answered.p_success + quit_early.p_success) / 2)
    assert quit_early.p_success == 0.0 and answered.p_success > 0.5
    for key in ("stop_regret", "premature", "late", "expected_task", "length"):
        assert out[key] == pytest.approx((rows[0][key] + rows[1][key]) / 2)
    # stopping before delegating anything forgoes the task: a premature stop with positive regret
    assert rows[1]["premature"] == 1.0 and rows[1]["stop_regret"] > 0


def test_a_run_is_read_at_an_iteration_by_its_last_evaluation_at_or_before_it():
    run = {"evals": [{"iteration": 0, "v": "a"}, {"iteration": 2, "v": "b"}, {"iteration": 4, "v": "c"}]}
    assert [at_iteration(run, k)["v"] for k in (0, 1, 2, 3, 4, 9)] == ["a", "a", "b", "b", "c", "c"]
