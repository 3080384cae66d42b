"""The credit arms differ only in credit (issue 16 item 5): the same critic, per-decision costs and
value targets in every arm; block credit and the redistributed rewards by their definitions; the
oracle's credit at SwarmSim's exact E[R], checked by enumerating every outcome."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer.policy import AGGREGATE, DELEGATE, SPAWN_EXPERT, SPAWN_SOLVER, OrchestratorPolicy, Script, play  # noqa: E402
from trainer.recipes.config import RunConfig  # noqa: E402
from trainer.recipes.train_orchestrator import credit_advantages_of, update_batch  # noqa: E402
from trainer.rl.credit import (  # noqa: E402
    blocks_of,
    credit_rewards,
    decision_credit,
    rerolled,
    spread_of,
)
from trainer.rl.losses import gae, ppo_update  # noqa: E402
from trainer.rl.rewards import episode_reward  # noqa: E402
from trainer.sim.exact import enumerate_expected_reward  # noqa: E402
from trainer.sim.tasks import Subtask, Task, generate_task  # noqa: E402

#: Two independent subtasks hard enough that solves fail often (E[R] well inside (0, 1)).
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
            "epochs": 1,
            "minibatch_size": 4096,
            **extra,
        }
    )


def played(config: RunConfig, policy: OrchestratorPolicy, task: Task = HARD2, n: int = 4):
    games = play(policy, [Script(task, 40 + k) for k in range(n)], config.sim_config(), config.stop, config.max_agents)
    terms = [episode_reward(g.episode, config.reward_weights, 1.0) for g in games]
    return games, terms


def test_arms_share_the_critic_the_costs_and_every_loss_term_but_the_policy_gradient():
    torch.manual_seed(0)
    policy = OrchestratorPolicy(16)
    shared, oracle = config_of("shared"), config_of("oracle")
    assert {k: v for k, v in shared.to_dict().items() if k != "credit"} == {
        k: v for k, v in oracle.to_dict().items() if k != "credit"
    }
    games, terms = played(shared, policy)
    adv_shared, _, steps_shared = credit_advantages_of(policy, games, terms, shared, 1.0)
    adv_oracle, credits, steps_oracle = credit_advantages_of(policy, games, terms, oracle, 1.0)
    assert steps_shared == 0 < steps_oracle
    for game, a, b, credit in zip(games, adv_shared, adv_oracle, credits):
        n = len(game.moves)
        spread = spread_of(credit, blocks_of(n, 2, 4))
        paid = spread - spread.mean()  # zero-sum: reward moves between the decisions
        # GAE is linear in (V, r): the critic and the per-decision costs cancel in the difference,
        # which is the redistribution alone (no critic, no cost)
        np.testing.assert_allclose(b - a, gae(np.zeros(n), paid, shared.gae_lambda), atol=1e-12)
        assert np.abs(spread).sum() > 0 or np.allclose(credit, 0)

    rewards = np.array([t["total"] for t in terms])
    nan = [np.full(len(g.moves), np.nan) for g in games]  # no stop targets under the rule stop
    batch_a = update_batch(games, rewards, adv_shared, nan, nan, shared)
    batch_b = update_batch(games, rewards, adv_oracle, nan, nan, oracle)
    for key in batch_a:
        if key != "advantages":
            assert torch.equal(batch_a[key], batch_b[key]), key
    assert not torch.equal(batch_a["advantages"], batch_b["advantages"])

    # one epoch in one minibatch: the losses are those of the update's first forward pass
    losses = []
    for config, batch in ((shared, batch_a), (oracle, batch_b)):
        twin = copy.deepcopy(policy)
        optimizer = torch.optim.Adam(twin.parameters(), lr=config.lr)
        losses.append(ppo_update(twin, optimizer, batch, config, torch.Generator().manual_seed(0)))
    for key in ("value_loss", "stop_value_loss", "entropy"):
        assert losses[0][key] == losses[1][key], key
    assert losses[0]["policy_loss"] != losses[1]["policy_loss"]


def test_blocks_of_a_fixed_size_grow_with_the_episode():
    assert blocks_of(7, 3, 4).tolist() == [0, 0, 0, 1, 1, 1, 2]
    assert blocks_of(7, 0, 2).tolist() == [0, 0, 0, 0, 1, 1, 1]  # size 0: the fixed number of blocks
    assert blocks_of(40, 8, 4).max() + 1 == 5 and blocks_of(80, 8, 4).max() + 1 == 10


def test_spread_and_redistributed_rewards_by_hand():
    spread = spread_of(np.array([0.6, 0.6, 0.6, -0.2, -0.2]), blocks_of(5, 3, 1))
    np.testing.assert_allclose(spread, [0.2, 0.2, 0.2, -0.1, -0.1])
    weights = {"critical_steps": 0.01}
    # -0.01 per decision, the spread less its mean (0.08), and the outcome (1 + 0.05) at the end
    np.testing.assert_allclose(credit_rewards(1.0, spread, weights), [0.11, 0.11, 0.11, -0.19, -0.19 + 1.05])
    assert credit_rewards(1.0, spread, weights).sum() == pytest.approx(1.0)
    np.testing.assert_allclose(credit_rewards(1.0, np.zeros(5), weights), [-0.01] * 4 + [1.0 + 0.04])


def test_counterfactual_block_credit_of_a_hand_made_episode_is_its_definition():
    torch.manual_seed(1)
    policy = OrchestratorPolicy(16)
    config = config_of("counterfactual", credit_samples=3)
    # a hand-made episode: an expert and a solver, two delegations, then the rule's aggregate and stop
    moves = (SPAWN_EXPERT, SPAWN_SOLVER, DELEGATE, DELEGATE, AGGREGATE)
    [game] = play(policy, [Script(HARD2, 5, moves, (True,) * len(moves))], config.sim_config(), config.stop)
    assert [a.kind for a in game.env.actions] == ["spawn", "spawn", "delegate", "delegate", "aggregate", "stop"]

    def reward_of(episode):
        return episode.reward

    found, steps = decision_credit(policy, game, game.episode.reward, config, reward_of)
    blocks = blocks_of(6, 2, 4)
    expected, rollout_steps = [], 0
    for k in range(3):  # Δ_k = R(h) - mean over the 3 redraws (salts 1, 2, 3) of R(h with block k redrawn)
        kept = np.ones((3, 3), bool)
        kept[:, k] = False
        redrawn = rerolled(policy, game, blocks, kept, [1, 2, 3], config)
        rollout_steps += sum(p.env_steps for p in redrawn)
        expected.append(game.episode.reward - np.mean([p.episode.reward for p in redrawn]))
    np.testing.assert_allclose(found, np.repeat(expected, 2))
    assert steps == rollout_steps


def test_oracle_credit_is_the_leave_one_out_of_exact_expected_rewards():
    torch.manual_seed(2)
    policy = OrchestratorPolicy(16)
    weights = {"success": 1.0, "parallelism": 0.0, "finish": 0.0, "critical_steps": 0.0}
    config = config_of("oracle", reward_weights=weights)
    games, terms = played(config, policy, n=2)
    _, credits, _ = credit_advantages_of(policy, games, terms, config, 1.0)
    exact_values = []
    for game, credit in zip(games, credits):
        n = len(game.moves)
        blocks = blocks_of(n, 2, 4)
        players = int(blocks.max()) + 1

        def exact(episode):  # E[R] by enumerating every outcome branch (trainer.sim.exact)
            return enumerate_expected_reward(episode.task, episode.actions, episode.config)

        factual = exact(game.episode)
        expected = []
        for k in range(players):
            kept = np.ones((2, players), bool)
            kept[:, k] = False
            redrawn = rerolled(policy, game, blocks, kept, [1, 2], config)
            values = [exact(p.episode) for p in redrawn]
            exact_values += values
            expected.append(factual - np.mean(values))
        np.testing.assert_allclose(credit, np.array(expected)[blocks], atol=1e-12)
    assert len(set(np.round(exact_values, 9))) > 1  # the redraws are not all alike: a real check


def test_n_subtasks_sets_the_task_size_and_is_checked():
    config = RunConfig.from_dict({"level": "long", "n_subtasks": 16})
    task = generate_task(config.task_level(), 3)
    assert len(task.subtasks) == 16 and max(s.deps and max(s.deps) or 0 for s in task.subtasks) < 12
    assert len(generate_task(RunConfig.from_dict({"n_subtasks": 4}).task_level(), 3).subtasks) == 4
    with pytest.raises(ValueError, match="n_subtasks: must be a multiple of level long's 4 layers, got 6"):
        RunConfig.from_dict({"level": "long", "n_subtasks": 6})
    with pytest.raises(ValueError, match="credit_block_size"):
        RunConfig.from_dict({"credit_block_size": -1})
