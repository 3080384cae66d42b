"""Policies, baselines and the batched environment (trainer/sim/baselines.py)."""

import numpy as np
import pytest

from trainer.sim.baselines import (
    AGGREGATE,
    DELEGATE,
    SPAWN,
    BatchedFanOut,
    BatchedSwarmEnv,
    FixedFanOut,
    RandomPolicy,
    RuleBasedStop,
    SpawnEverything,
    legal_actions,
    run_policy,
    single_agent,
)
from trainer.sim.env import SwarmEnv
from trainer.sim.tasks import generate_task


@pytest.mark.parametrize("policy, agents", [(single_agent(), 1), (FixedFanOut(3), 3), (SpawnEverything(), 6 + 1)])
def test_baselines_finish_with_the_rule_based_stop(policy, agents):
    task = generate_task("small", 4)
    episode = run_policy(SwarmEnv(task, seed=1), policy)
    kinds = [a.kind for a in episode.actions]
    assert kinds[-2:] == ["aggregate", "stop"] and kinds.count("delegate") == len(task.subtasks)
    assert kinds.count("spawn") == agents
    assert episode.p_success > 0


def test_rule_based_stop_masks_early_stops():
    task = generate_task("small", 4)
    for seed in range(5):
        episode = run_policy(SwarmEnv(task, seed=seed), RuleBasedStop(RandomPolicy()))
        assert [a.kind for a in episode.actions].count("delegate") == len(task.subtasks)
        assert episode.actions[-1].kind == "stop"


def test_random_policy_distribution_sums_to_one_and_includes_stop():
    env = SwarmEnv(generate_task("tiny", 0))
    choices = RandomPolicy().distribution(env.observe())
    assert sum(p for _, p in choices) == pytest.approx(1.0)
    assert {a.kind for a, _ in choices} == {"spawn", "aggregate", "stop"}
    assert len(legal_actions(env.observe())) == len(choices)


def test_policy_sampling_is_reproducible():
    task = generate_task("small", 4)
    runs = [run_policy(SwarmEnv(task, seed=3), RandomPolicy()).actions for _ in range(2)]
    assert runs[0] == runs[1]


@pytest.mark.parametrize("verifier", [False, True])
def test_batched_env_matches_the_single_episode_env(verifier):
    tasks = [generate_task("medium", seed) for seed in range(16)]
    env = BatchedSwarmEnv(tasks, np.arange(16))
    policy = BatchedFanOut(3, verifier=verifier)
    total = np.zeros(16)
    while not env.done.all():
        reward, _ = env.step(*policy.act(env))
        total += reward
    episodes = [
        run_policy(SwarmEnv(task, seed=seed), FixedFanOut(3, verifier=verifier)) for seed, task in enumerate(tasks)
    ]
    assert env.p_success == pytest.approx([e.p_success for e in episodes])
    assert total.tolist() == [e.reward for e in episodes]
    assert env.steps.tolist() == [len(e.actions) for e in episodes]
    assert not env.invalid.any()


def test_batched_env_counts_invalid_actions():
    env = BatchedSwarmEnv([generate_task("tiny", 0)] * 3, np.arange(3))
    env.step(np.array([DELEGATE, AGGREGATE, SPAWN]), np.array([0, 0, 7]), np.array([0, 0, 0]))
    assert env.invalid.tolist() == [1, 0, 1]  # no agent to delegate to; no role 7
    assert env.n_agents.tolist() == [0, 0, 0]
    with pytest.raises(ValueError):
        BatchedSwarmEnv([generate_task("tiny", 0), generate_task("small", 0)], np.arange(2))
