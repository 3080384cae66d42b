"""Issue 30 item 7: the arms where credit replaces the outcome (`counterfactual_baseline`,
`..._exact`) and the exact-expectation reference (`expected`); the fast re-rollout path (no trace
built) gives exactly the full path's outcome, E[R] and credit on fixed seeds."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer.policy import OrchestratorPolicy, Script, play  # noqa: E402
from trainer.recipes.config import RunConfig  # noqa: E402
from trainer.recipes.train_orchestrator import arm_reward, credit_advantages_of, iteration_scripts  # noqa: E402
from trainer.rl.credit import block_credit, blocks_of, decision_credit, outcome_credit, rerolled  # noqa: E402
from trainer.rl.losses import gae  # noqa: E402
from trainer.rl.rewards import decision_rewards, episode_reward  # noqa: E402
from trainer.sim.tasks import Subtask, Task  # noqa: E402

HARD2 = Task("hard-2", (Subtask(0, 0.8), Subtask(1, 0.7)))


def config_of(credit: str, **extra) -> RunConfig:
    return RunConfig.from_dict(
        {
            "level": "tiny",
            "credit": credit,
            "stop": "rule",
            "credit_block_size": 2,
            "episodes_per_iteration": 4,
            "group_size": 2,
            "max_steps": 12,
            **extra,
        }
    )


def test_unbuilt_re_rollouts_give_the_built_ones_reward_and_expected_reward():
    torch.manual_seed(3)
    policy = OrchestratorPolicy(16)
    config = RunConfig.from_dict(
        {"level": "long", "n_subtasks": 16, "stop": "rule", "max_steps": 88, "episodes_per_iteration": 8}
    )
    scripts = iteration_scripts(config, 0)
    [factual] = play(policy, scripts[:1], config.sim_config(), config.stop, config.max_agents)
    blocks = blocks_of(len(factual.moves), 8, 4)
    kept = np.ones((blocks.max() + 1, blocks.max() + 1), bool)
    np.fill_diagonal(kept, False)
    salts = list(range(1, len(kept) + 1))
    full = rerolled(policy, factual, blocks, kept, salts, config)
    fast = rerolled(policy, factual, blocks, kept, salts, config, build=False)
    assert [p.episode.reward for p in full] == [p.env.score for p in fast]
    assert [p.episode.p_success for p in full] == [p.env.p_success for p in fast]
    assert [p.env_steps for p in full] == [p.env_steps for p in fast]
    assert len({p.episode.p_success for p in full}) > 1  # the redraws differ: a real check
    assert not hasattr(fast[0], "episode")


@pytest.mark.parametrize(
    ("credit", "field"), [("counterfactual_baseline", "reward"), ("counterfactual_baseline_exact", "p_success")]
)
def test_outcome_credit_equals_the_full_path_leave_one_out(credit, field):
    torch.manual_seed(4)
    policy = OrchestratorPolicy(16)
    config = config_of(credit, credit_samples=3)
    games = play(policy, [Script(HARD2, 40 + k) for k in range(6)], config.sim_config(), config.stop)
    found_any = False
    for game in games:
        fast, steps = outcome_credit(policy, game, config, exact=credit.endswith("_exact"))
        full, full_steps = decision_credit(
            policy, game, getattr(game.episode, field), config, lambda episode: getattr(episode, field)
        )
        np.testing.assert_array_equal(fast, full)
        assert steps == full_steps > 0
        found_any |= bool(np.any(fast != 0))
    assert found_any


def test_baseline_arm_advantage_is_gae_on_the_costs_plus_the_block_credit():
    torch.manual_seed(5)
    policy = OrchestratorPolicy(16)
    config = config_of("counterfactual_baseline")
    games = play(policy, [Script(HARD2, 60 + k) for k in range(4)], config.sim_config(), config.stop)
    terms = [episode_reward(g.episode, config.reward_weights, 0.0) for g in games]
    advantages, credits, steps = credit_advantages_of(policy, games, terms, config, 0.0)
    assert steps > 0
    w = config.reward_weights
    for game, term, advantage, credit in zip(games, terms, advantages, credits):
        n = len(game.moves)
        cost = term["total"] - w["success"] * term["success"]  # no outcome in the critic's reward
        assert arm_reward(term, game.episode, config) == pytest.approx(cost)
        expected_credit, _ = block_credit(
            policy, game, game.episode.reward, config, lambda p: p.episode.reward, build=True
        )
        np.testing.assert_array_equal(credit, expected_credit)
        rest = gae(np.array(game.values), decision_rewards(cost, n, w), config.gae_lambda)
        np.testing.assert_allclose(advantage, rest + w["success"] * credit)


def test_expected_arm_replaces_the_outcome_by_its_exact_expectation():
    torch.manual_seed(6)
    policy = OrchestratorPolicy(16)
    shared, expected = config_of("shared"), config_of("expected")
    games = play(policy, [Script(HARD2, 80 + k) for k in range(4)], shared.sim_config(), shared.stop)
    terms = [episode_reward(g.episode, shared.reward_weights, 0.0) for g in games]
    a_shared, _, s0 = credit_advantages_of(policy, games, terms, shared, 0.0)
    a_expected, _, s1 = credit_advantages_of(policy, games, terms, expected, 0.0)
    assert s0 == s1 == 0
    differs = False
    for game, term, a, b in zip(games, terms, a_shared, a_expected):
        gap = game.episode.p_success - game.episode.reward
        assert arm_reward(term, game.episode, expected) == pytest.approx(term["total"] + gap)
        # GAE is linear in the rewards: the arms differ by the outcome gap, paid at the last decision
        lam = shared.gae_lambda
        np.testing.assert_allclose(b - a, gap * lam ** np.arange(len(a))[::-1], atol=1e-12)
        differs |= gap != 0
    assert differs


@pytest.mark.parametrize("credit", ["counterfactual_baseline", "counterfactual_baseline_exact"])
def test_baseline_arms_refuse_grpo_at_the_credit_field(credit):
    with pytest.raises(ValueError, match=rf"^credit: {credit} under policy mlp .* ppo has and grpo does not"):
        config_of(credit, algorithm="grpo")
    assert config_of(credit, algorithm="ppo").credit == credit
