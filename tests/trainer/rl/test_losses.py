"""GAE against hand-computed values, and one clipped-PPO update on a tiny batch."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer.policy import DELEGATE, FEATURES, MOVES, STOP, OrchestratorPolicy, move_probabilities  # noqa: E402
from trainer.recipes.config import RunConfig  # noqa: E402
from trainer.rl.losses import gae, ppo_update  # noqa: E402


def test_gae_with_terminal_reward():
    # lambda = 0.5, V = (0.2, 0.4), R = 1: δ = (0.2, 0.6); A_1 = 0.6, A_0 = 0.2 + 0.5 * 0.6 = 0.5
    np.testing.assert_allclose(gae(np.array([0.2, 0.4]), 1.0, 0.5), [0.5, 0.6])
    # lambda = 1: Monte Carlo, A_t = R - V_t
    np.testing.assert_allclose(gae(np.array([0.2, 0.4, 0.9]), 1.0, 1.0), [0.8, 0.6, 0.1])


def test_gae_with_per_decision_rewards():
    # lambda = 0.5, V = (0.2, 0.4), r = (-0.1, 1.1): δ = (-0.1 + 0.4 - 0.2, 1.1 - 0.4) = (0.1, 0.7);
    # A_1 = 0.7, A_0 = 0.1 + 0.5 * 0.7 = 0.45
    np.testing.assert_allclose(gae(np.array([0.2, 0.4]), np.array([-0.1, 1.1]), 0.5), [0.45, 0.7])


def test_gae_with_lambda_zero_is_the_one_step_td_error():
    # lambda = 0: A_t = δ_t; V = (0.5, 0.25, 1.0), R = 2: δ = (0.25 - 0.5, 1.0 - 0.25, 2 - 1.0)
    np.testing.assert_allclose(gae(np.array([0.5, 0.25, 1.0]), 2.0, 0.0), [-0.25, 0.75, 1.0])
    assert gae(np.array([0.3]), 1.0, 0.9).tolist() == pytest.approx([0.7])  # one decision: R - V


def tiny_batch(policy: OrchestratorPolicy) -> dict[str, torch.Tensor]:
    """6 decisions with every move legal, the last a stop whose heads are measured; `logp` is the
    policy's own (ratio 1 before the first step)."""
    features = torch.rand(6, len(FEATURES))
    masks = torch.ones(6, len(MOVES), dtype=torch.bool)
    moves = torch.tensor([0, DELEGATE, DELEGATE, 1, DELEGATE, STOP])
    with torch.no_grad():
        heads = policy(features, masks)
        _, logp_all = move_probabilities(heads.logits, heads.gain, masks, "learned")
    logp = logp_all.gather(1, torch.where(moves == STOP, 0, moves)[:, None]).squeeze(1)
    return {
        "features": features,
        "masks": masks,
        "moves": moves,
        "logp": logp,
        "advantages": torch.tensor([1.0, -1.0, 0.5, 0.0, 2.0, 3.0]),
        "returns": torch.ones(6),
        "stop_value": torch.tensor([0, 0, 0, 0, 0, 0.8]),
        "gain": torch.tensor([0, 0, 0, 0, 0, -0.1]),
        "stop_measured": torch.tensor([0, 0, 0, 0, 0, 1.0]),
    }


def test_one_full_batch_epoch_reports_the_losses_before_its_step():
    # ratio 1 (logp is the policy's own): the surrogate is the mean advantage of the 5 non-stop
    # rows, (1 - 1 + 0.5 + 0 + 2) / 5 = 0.5; no row is clipped; V and the stop heads' squared errors
    torch.manual_seed(0)
    policy = OrchestratorPolicy(8)
    batch = tiny_batch(policy)
    with torch.no_grad():
        heads = policy(batch["features"], batch["masks"])
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
    stats = ppo_update(
        policy, optimizer, batch, RunConfig(epochs=1, minibatch_size=6, hidden=8), torch.Generator().manual_seed(0)
    )
    assert stats["policy_loss"] == pytest.approx(-0.5, abs=1e-6) and stats["clip_fraction"] == 0
    assert stats["value_loss"] == pytest.approx(float(((heads.value - 1) ** 2).mean()), rel=1e-5)
    expected_stop = float((heads.stop_value[5] - 0.8) ** 2 + (heads.gain[5] + 0.1) ** 2)
    assert stats["stop_value_loss"] == pytest.approx(expected_stop, rel=1e-5)


def test_ppo_update_reports_the_last_epochs_losses_and_changes_the_network():
    torch.manual_seed(0)
    policy = OrchestratorPolicy(8)
    batch = tiny_batch(policy)
    config = RunConfig(epochs=2, minibatch_size=4, hidden=8)
    before = [p.detach().clone() for p in policy.parameters()]
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    stats = ppo_update(policy, optimizer, batch, config, torch.Generator().manual_seed(0), anneal=0.5)
    assert set(stats) == {"policy_loss", "value_loss", "stop_value_loss", "entropy", "clip_fraction"}
    assert all(isinstance(v, float) and np.isfinite(v) for v in stats.values())
    assert stats["value_loss"] >= 0 and stats["stop_value_loss"] >= 0 and stats["entropy"] > 0
    assert 0 <= stats["clip_fraction"] <= 1
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))


def test_ppo_update_is_deterministic_for_a_generator_seed():
    def once():
        torch.manual_seed(0)
        policy = OrchestratorPolicy(8)
        batch = tiny_batch(policy)
        optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
        return ppo_update(
            policy, optimizer, batch, RunConfig(epochs=3, minibatch_size=2, hidden=8), torch.Generator().manual_seed(5)
        )

    assert once() == once()
