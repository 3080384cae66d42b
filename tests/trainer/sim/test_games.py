"""Benchmark game families (trainer/sim/games.py): exact values, interaction orders, coupling."""

from itertools import permutations
from math import factorial

import numpy as np
import pytest

from swarmscope.credit import coalition_game, shapley_2additive
from swarmscope.interventions import Intervention, InterventionError
from trainer.rollout.sim import AggregateRollout, SimRollout
from trainer.sim import actions as act
from trainer.sim.env import SimConfig, simulate
from trainer.sim.exact import enumerate_expected_reward
from trainer.sim.games import (
    FAMILIES,
    Game,
    coupled_game,
    coupled_rollout,
    draw_table,
    expected_game,
    interaction_order,
    make_game,
)
from trainer.sim.rng import key_hash, uniforms
from trainer.sim.tasks import Subtask, Task


def small_game(family, most=6):
    """The first game of `family` with at most `most` players."""
    return next(game for game in (make_game(family, g) for g in range(50)) if game.n_players <= most)


def brute_force_shapley(values, n):
    """Shapley values as the mean marginal contribution over all n! orders (Shapley 1953)."""
    phi = np.zeros(n)
    for order in permutations(range(n)):
        mask = 0
        for player in order:
            phi[player] += values[mask | 1 << player] - values[mask]
            mask |= 1 << player
    return phi / factorial(n)


@pytest.mark.parametrize("family", ["noisy", "synergy4", "redundancy"])
def test_exact_values_agree_with_enumerating_every_outcome(family):
    game = small_game(family)
    episode = game.episode
    rng = np.random.default_rng(0)
    for mask in [0, len(game.values) - 1, *rng.choice(len(game.values), 10, replace=False)]:
        removed = {c for k, c in enumerate(game.candidates) if not mask >> k & 1}
        kept = [a for i, a in enumerate(episode.actions) if i not in removed]
        assert game.values[mask] == pytest.approx(enumerate_expected_reward(episode.task, kept, episode.config))
    assert game.shapley == pytest.approx(brute_force_shapley(game.values, game.n_players))
    full = len(game.values) - 1
    assert game.loo == pytest.approx([game.values[full] - game.values[full & ~(1 << k)] for k in range(game.n_players)])
    # the draw table's reward is the product of its outcomes' probabilities
    assert np.prod(game.draws.p, axis=1) == pytest.approx(game.values)


def test_interaction_order_by_hand():
    # players 0, 1, 2; v(S) = 0.2 [0 in S] + 0.3 [1, 2 in S]: order 2; the unanimity game of 3: order 3
    masks = np.arange(8)
    assert interaction_order(0.2 * (masks & 1) + 0.3 * ((masks & 6) == 6)) == 2
    assert interaction_order((masks == 7).astype(float)) == 3
    assert interaction_order(np.full(8, 0.4)) == 0
    assert interaction_order(0.1 * (masks & 1) - 0.2 * (masks >> 2 & 1)) == 1
    with pytest.raises(ValueError):
        interaction_order(np.zeros(6))


def test_families_have_their_planted_interaction_order_and_are_distinct():
    planted = {"pairwise": 2, "synergy3": 3, "synergy4": 4, "redundancy": 3}
    for family, order in planted.items():
        games = [make_game(family, g) for g in range(8)]
        assert [game.order for game in games] == [order] * 8
        assert len({round(float(game.values[-1]), 9) for game in games}) == 8  # not one game relabelled
        assert all(0 < game.values.min() and game.values.max() < 1 for game in games)  # nothing clipped
    noisy = [make_game("noisy", g) for g in range(8)]
    assert all(game.episode.p_subtasks < 1 for game in noisy)
    assert all(any(e.target is not None and e.kind != "null" for e in game.episode.config.effects) for game in noisy)


@pytest.mark.parametrize("family", ["pairwise", "noisy"])
def test_perfect_coupling_is_swarmsims_common_random_numbers(family):
    game = make_game(family, 3)
    rng = np.random.default_rng(1)
    kept = rng.random((200, game.n_players)) < 0.6
    seeds = rng.integers(0, 10**6, 200)
    slow = coalition_game(SimRollout(game.episode), [Intervention("remove", (p,)) for p in game.players])
    assert coupled_game(game, 1.0)(kept, seeds).tolist() == slow(kept, seeds).tolist()
    if family == "pairwise":
        assert (
            coupled_game(game, 1.0)(kept, seeds).tolist() == AggregateRollout(game.episode).game()(kept, seeds).tolist()
        )


def test_coupling_keeps_the_marginals_and_sets_the_joint():
    # an aggregate game has one outcome, drawn after every message: the intervention arm reuses the
    # control's uniform with probability rho, so P(both 1) = rho min(v_N, v_S) + (1 - rho) v_N v_S
    game = make_game("pairwise", 0)
    full = len(game.values) - 1
    k = int(np.argmax(np.abs(game.loo)))
    removal = full & ~(1 << k)
    v_n, v_s = game.values[full], game.values[removal]
    n = 40_000
    seeds = np.arange(n)
    for rho in (1.0, 0.5, 0.0):
        rollout = coupled_rollout(game, rho)
        control = rollout(None, seeds)
        treated = rollout(Intervention("remove", (game.players[k],)), seeds)
        joint = rho * min(v_n, v_s) + (1 - rho) * v_n * v_s
        assert abs(control.mean() - v_n) < 4 * np.sqrt(v_n * (1 - v_n) / n)
        assert abs(treated.mean() - v_s) < 4 * np.sqrt(v_s * (1 - v_s) / n)
        assert abs(np.mean(control * treated) - joint) < 4 * np.sqrt(joint * (1 - joint) / n)


def test_draws_before_the_fork_stay_shared_without_coupling():
    # subtask 0 (p = 0.6) is solved before the only message; removing the message at rho = 0 redraws the
    # aggregate but not subtask 0's solve: whenever the control fails at subtask 0, so does the intervention
    task = Task("fork", (Subtask(0, 1.0),))
    actions = [act.spawn("solver"), act.spawn("solver"), act.delegate(0, "solver_1")]
    actions += [act.message("solver_2", "orchestrator", "m"), act.aggregate(), act.stop()]
    config = SimConfig(aggregate_base=0.5, effects=())
    episode = simulate(task, actions, config, 0)
    values, table = draw_table(episode, [3])
    assert table.keys == ("solve/0/0", "aggregate") and table.at.tolist() == [2, 4]
    assert values.tolist() == pytest.approx([0.6 * 0.5, 0.6 * 0.5])  # p_solve = 1 - 1.0 * (1 - 0.6)
    built = Game("custom", 0, episode, [3], ["message:m"], ("null",), values, np.zeros(1), np.zeros(1), 0, table)
    seeds = np.arange(4000)
    control = coupled_game(built, 0.0)(np.ones((4000, 1), bool), seeds)
    treated = coupled_game(built, 0.0)(np.zeros((4000, 1), bool), seeds)
    solve = SimRollout(episode)  # subtask 0's outcome at each seed is the control's
    assert control.tolist() == solve(None, seeds).tolist()
    solved = (_uniforms(seeds, "solve/0/0") < 0.6).astype(float)
    assert np.all(treated <= solved)  # never succeeds where subtask 0 failed
    assert 0.05 < np.mean(control != treated) < 0.4  # but the aggregate is redrawn


def _uniforms(seeds, key):
    return uniforms(seeds, np.full(len(seeds), key_hash(key), np.uint64))


def test_two_additive_estimator_is_exact_on_pairwise_games_and_biased_on_synergies():
    # without outcome noise the orthogonal design cancels every other effect of a 2-additive game
    # exactly, sample by sample; on a 4-way synergy of size a it estimates the Banzhaf value, a / 8
    # per member (a 4-way product of design columns can alias a main effect, so only on average),
    # where the Shapley value is a / 4
    for g in range(3):
        game = make_game("pairwise", g)
        estimate = [a.estimate for a in shapley_2additive(expected_game(game), game.n_players, 4)]
        assert estimate == pytest.approx(game.shapley, abs=1e-12)
        game = make_game("synergy4", g)
        results = shapley_2additive(expected_game(game), game.n_players, 2000, sampling_seed=g)
        synergy = next(e for e in game.episode.config.effects if e.kind == "synergistic")
        members = [k for k, kind in enumerate(game.kinds) if kind == "synergistic"]
        assert len(members) == 4
        assert game.shapley[members] == pytest.approx(synergy.amount / 4)
        for k in members:
            assert results[k].ci_low <= synergy.amount / 8 <= results[k].ci_high
            assert results[k].ci_high < synergy.amount / 4


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="unknown game family"):
        make_game("vibes", 0)
    with pytest.raises(ValueError):
        make_game("pairwise", -1)
    game = make_game("pairwise", 0)
    with pytest.raises(ValueError, match="rho"):
        coupled_game(game, 1.5)
    with pytest.raises(InterventionError):
        coupled_rollout(game, 1.0)(Intervention("remove", agents=("solver_1",)), np.arange(3))
    with pytest.raises(InterventionError):
        coupled_rollout(game, 1.0)(Intervention("remove", ("message:nope",)), np.arange(3))
    task = Task("v", (Subtask(0, 0.5),))
    actions = [act.spawn("solver"), act.spawn("verifier"), act.delegate(0, "solver_1")]
    actions += [act.message("solver_1", "orchestrator", "m"), act.aggregate(), act.stop()]
    with pytest.raises(ValueError, match="verifier"):
        draw_table(simulate(task, actions, SimConfig(), 0), [3])
    assert set(FAMILIES) == {"pairwise", "synergy3", "synergy4", "redundancy", "noisy"}
