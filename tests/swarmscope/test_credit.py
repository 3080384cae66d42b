"""Credit estimators (swarmscope/credit.py) on hand-computed tiny games."""

from math import lgamma, pi, sqrt

import numpy as np
import pytest

from swarmscope.credit import (
    EPSILON_MIN_SAMPLES,
    Attribution,
    bounded_score_intervals,
    coalition_game,
    design_size,
    effect_until,
    epsilon_met,
    from_samples,
    kernel_shap,
    kernel_shap_bound,
    leave_one_out,
    paired_effect,
    paired_score_interval,
    play_chunk,
    rank,
    ranked_first,
    sample_bounds,
    shapley_2additive,
    shapley_kernel_matrix,
    shapley_permutation,
    t_quantile_975,
    unpaired_effect,
    unpaired_score_interval,
    wilson_interval,
)
from swarmscope.interventions import Intervention

REMOVE_M = Intervention("remove", ("m",))


def table_rollout(control, treated):
    """A rollout whose reward at seed s is control[s] (factual) or treated[s] (any intervention)."""
    control, treated = np.asarray(control, float), np.asarray(treated, float)
    return lambda intervention, seeds: (control if intervention is None else treated)[np.asarray(seeds)]


def uniform(seed):
    return np.random.default_rng([7, int(seed)]).random()


def noisy_rollout(p_control, p_treated):
    """Bernoulli rewards with one uniform per seed shared by every intervention (CRN)."""
    return lambda intervention, seeds: np.array(
        [float(uniform(s) < (p_control if intervention is None else p_treated)) for s in seeds]
    )


def glove(kept, seeds):
    """The glove game: player 0 holds a left glove, players 1 and 2 right ones; v(S) = 1 when S
    has a pair. Shapley (2/3, 1/6, 1/6); leave-one-out (1, 0, 0)."""
    kept = np.asarray(kept, bool)
    return (kept[:, 0] & (kept[:, 1] | kept[:, 2])).astype(float)


def with_null(kept, seeds):
    """The glove game plus a null player 3."""
    return glove(np.asarray(kept)[:, :3], seeds)


GLOVE_SHAPLEY = np.array([2 / 3, 1 / 6, 1 / 6])


@pytest.mark.parametrize(
    "df, exact",
    [  # the 0.975 quantile of t(df), to 15 digits (R: qt(0.975, df))
        (1, 12.7062047361747),
        (2, 4.30265272974946),
        (3, 3.18244630528371),
        (4, 2.77644510519779),
        (7, 2.36462425159278),
        (10, 2.22813885198627),
        (30, 2.04227245630124),
    ],
)
def test_t_quantile_is_exact(df, exact):
    assert t_quantile_975(df) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("df", [2.5, 6.3, 41.7])
def test_a_fractional_t_quantile_leaves_2_5_percent_above_it(df):
    # Welch's degrees of freedom are fractional: integrate the t density from 0 to the quantile
    q = t_quantile_975(df)
    x = np.linspace(0, q, 400_001)
    density = np.exp(lgamma((df + 1) / 2) - lgamma(df / 2)) / sqrt(df * pi) * (1 + x**2 / df) ** (-(df + 1) / 2)
    assert 0.5 + np.trapezoid(density, x) == pytest.approx(0.975, abs=1e-9)


def test_t_quantile_needs_a_degree_of_freedom():
    for df in (0, 0.5, float("nan")):
        with pytest.raises(ValueError):
            t_quantile_975(df)


Z = 1.959963984540054


def score_statistic(plus, minus, n, delta):
    """Tango's Z(Δ0) with the restricted maximum-likelihood P(d = -1) found by a fine grid search
    of the trinomial log-likelihood: an independent check of the closed-form root."""
    low, high = max(0.0, -delta), (1 - delta) / 2
    q = np.linspace(low, high, 200_001)[1:-1] if high > low else np.array([low])
    with np.errstate(divide="ignore"):
        loglik = plus * np.log(q + delta) + minus * np.log(q) + (n - plus - minus) * np.log(1 - 2 * q - delta)
    q = q[np.argmax(loglik)]
    return (plus - minus - n * delta) / sqrt(n * (2 * q + delta * (1 - delta)))


@pytest.mark.parametrize("plus, minus, n", [(3, 1, 10), (5, 2, 12), (1, 6, 20), (4, 0, 8), (10, 10, 40)])
def test_paired_score_interval_ends_where_the_score_statistic_is_z(plus, minus, n):
    low, high = paired_score_interval(plus, minus, n)
    assert low < (plus - minus) / n < high
    assert score_statistic(plus, minus, n, low) == pytest.approx(Z, abs=2e-3)
    assert score_statistic(plus, minus, n, high) == pytest.approx(-Z, abs=2e-3)


def test_paired_score_interval_never_collapses():
    for n in (2, 4, 8, 100):
        bound = Z**2 / (n + Z**2)  # Wilson's bound for a proportion seen 0 times in n
        assert paired_score_interval(0, 0, n) == pytest.approx((-bound, bound), abs=1e-9)
    assert paired_score_interval(8, 0, 8)[1] == 1.0 and paired_score_interval(0, 8, 8)[0] == -1.0
    low, high = paired_score_interval(3, 1, 10)
    assert paired_score_interval(1, 3, 10) == pytest.approx((-high, -low))
    with pytest.raises(ValueError):
        paired_score_interval(5, 6, 10)


def test_paired_effect_by_hand():
    result = paired_effect(table_rollout([1, 1, 0, 1], [0, 1, 0, 0]), REMOVE_M, 4)
    # differences (1, 0, 0, 1) of 0/1 rewards: mean 1/2, Tango's score interval (b = 2, c = 0)
    assert (result.estimate, result.ci_low, result.ci_high) == pytest.approx((0.5, *paired_score_interval(2, 0, 4)))
    assert result.interval == "tango" and result.samples.tolist() == [1, 0, 0, 1]
    assert (result.n_rollouts, result.method, result.target) == (8, "paired_loo", "remove(event:m)")


def test_paired_effect_of_graded_rewards_is_a_t_interval():
    result = paired_effect(table_rollout([1, 0.5, 0, 1], [0, 0.5, 0, 0.25]), REMOVE_M, 4)
    # differences (1, 0, 0, 0.75): mean 7/16, t(3) interval
    half = t_quantile_975(3) * np.std([1, 0, 0, 0.75], ddof=1) / 2
    assert (result.estimate, result.ci_low, result.ci_high) == pytest.approx((7 / 16, 7 / 16 - half, 7 / 16 + half))
    assert result.interval == "t"


def test_equal_pairs_of_0_1_rewards_do_not_give_a_point_interval():
    result = paired_effect(table_rollout([1, 0, 1, 1, 0, 0, 1, 0], [1, 0, 1, 1, 0, 0, 1, 0]), REMOVE_M, 8)
    assert result.estimate == 0 and result.ci_low < 0 < result.ci_high  # 8 agreeing pairs: |Δ| <= 0.32


def test_paired_effect_of_a_deterministic_rollout_has_a_point_interval():
    result = paired_effect(table_rollout([1.0] * 5, [0.25] * 5), REMOVE_M, 5)
    assert (result.estimate, result.ci_low, result.ci_high) == (0.75, 0.75, 0.75)


def test_unpaired_effect_uses_other_seeds_and_welch():
    rollout = table_rollout([0.5, 0, 0.5, 0.5, 9, 9, 9, 9], [9, 9, 9, 9, 0, 0, 0.5, 0])
    result = unpaired_effect(rollout, REMOVE_M, 4)
    assert result.samples.tolist() == [[0.5, 0, 0.5, 0.5], [0, 0, 0.5, 0]]
    # equal variances 1/16 per arm: se = sqrt(1/64 + 1/64), Welch df = 2 (n - 1) = 6
    half = t_quantile_975(6) * sqrt(1 / 32)
    assert (result.estimate, result.ci_low, result.ci_high) == pytest.approx((0.25, 0.25 - half, 0.25 + half))
    assert result.n_rollouts == 8 and result.interval == "welch"


def test_unpaired_effect_of_01_rewards_gets_newcombes_interval():
    # Newcombe 1998, Table II, method 10: 56/70 - 48/80 -> [0.0524, 0.3339]; 10/10 - 0/20 -> [0.6791, 1]
    assert unpaired_score_interval(56, 70, 48, 80) == pytest.approx((0.0524, 0.3339), abs=5e-5)
    assert unpaired_score_interval(10, 10, 0, 20) == pytest.approx((0.6791, 1.0), abs=5e-5)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)
    # every control 1, every intervention 0: Welch's se is 0 (a point); Newcombe's is not
    result = unpaired_effect(table_rollout([1] * 4 + [9] * 4, [9] * 4 + [0] * 4), REMOVE_M, 4)
    assert result.interval == "newcombe" and result.estimate == 1.0
    assert result.ci_low == pytest.approx(unpaired_score_interval(4, 4, 0, 4)[0]) and 0 < result.ci_low < 0.6
    assert result.ci_high == 1.0
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_common_random_numbers_narrow_the_interval():
    rollout = noisy_rollout(0.7, 0.4)
    paired, unpaired = paired_effect(rollout, REMOVE_M, 400), unpaired_effect(rollout, REMOVE_M, 400)
    assert paired.ci_low <= 0.3 <= paired.ci_high and unpaired.ci_low <= 0.3 <= unpaired.ci_high
    assert set(paired.samples.tolist()) == {0.0, 1.0}  # CRN: u in [0.4, 0.7) or not
    assert paired.width < 0.8 * unpaired.width


def test_effect_until_stops_at_epsilon_or_at_the_cap():
    rollout = noisy_rollout(0.7, 0.4)
    narrow = effect_until(rollout, REMOVE_M, epsilon=0.2, cap=1000, batch=16)
    assert narrow.width < 0.2 and narrow.n_rollouts % 32 == 0
    assert paired_effect(rollout, REMOVE_M, narrow.n_rollouts // 2 - 16).width >= 0.2
    capped = effect_until(rollout, REMOVE_M, epsilon=0.01, cap=40, batch=16)
    assert capped.n_rollouts == 80 and capped.width >= 0.01
    assert effect_until(rollout, REMOVE_M, 0.2, 1000, 16, paired=False).method == "unpaired_loo"
    with pytest.raises(ValueError):
        effect_until(rollout, REMOVE_M, 0.1, cap=8, batch=16)


def test_the_epsilon_stop_needs_enough_samples_and_an_interval_that_did_not_collapse():
    effect = paired_effect(table_rollout([1.0] * 40, [0.5] * 40), REMOVE_M, 32)  # t, all equal: width 0
    assert effect.width == 0 and not epsilon_met(effect, 0.5, 32)
    narrow = paired_effect(noisy_rollout(0.7, 0.4), REMOVE_M, 400)
    assert epsilon_met(narrow, 0.2, 400) and not epsilon_met(narrow, 0.2, EPSILON_MIN_SAMPLES - 1)


def test_effect_until_does_not_stop_on_a_run_of_equal_pairs_of_a_real_effect():
    # Δ = 1/2, but the first 8 pairs agree: before, the stop reported Δ = 0, CI [0, 0] at n = 8
    control = np.array([1.0] * 8 + [1.0, 0.0] * 100)
    treated = np.array([1.0] * 8 + [0.0, 0.0] * 100)
    result = effect_until(table_rollout(control, treated), REMOVE_M, epsilon=0.5, cap=200, batch=8)
    assert result.n_rollouts // 2 >= EPSILON_MIN_SAMPLES and result.width > 0 and result.estimate > 0
    # a t interval (rewards not 0/1) of equal samples never stops early: it samples to the cap
    flat = effect_until(table_rollout([0.5] * 64, [0.25] * 64), REMOVE_M, epsilon=0.5, cap=64, batch=8)
    assert flat.n_rollouts == 128 and flat.width == 0


@pytest.mark.parametrize("seed", range(40))
def test_no_stopped_estimate_has_a_zero_width_interval_unless_its_samples_are_all_equal(seed):
    rng = np.random.default_rng(seed)
    p_control, p_treated = rng.uniform(0, 1, 2)
    rollout = noisy_rollout(p_control, p_treated)
    result = effect_until(rollout, REMOVE_M, epsilon=float(rng.uniform(0.05, 0.9)), cap=256, batch=8)
    assert result.width > 0 or len(set(result.samples.tolist())) == 1
    assert result.interval == "tango" and result.width > 0


def test_coalition_game_removes_the_union_of_absent_players():
    calls = []

    def rollout(intervention, seeds):
        calls.append((intervention, list(seeds)))
        return np.full(len(seeds), 0.0 if intervention is None else float(len(intervention.events)))

    game = coalition_game(rollout, [Intervention("remove", ("a",)), Intervention("remove", ("b",))])
    rewards = game(np.array([[1, 1], [0, 1], [0, 0], [1, 1]], bool), np.array([5, 6, 7, 8]))
    assert rewards.tolist() == [0, 1, 2, 0]
    assert sorted(calls, key=lambda c: c[1]) == [
        (None, [5, 8]),
        (Intervention("remove", ("a",)), [6]),
        (Intervention("remove", ("a", "b")), [7]),
    ]


def test_leave_one_out_of_the_glove_game():
    results = leave_one_out(glove, 3, 4, targets=["left", "right 1", "right 2"])
    assert [r.estimate for r in results] == [1, 0, 0]  # redundant right gloves: no single one matters
    assert [r.target for r in results] == ["left", "right 1", "right 2"]
    assert all(r.n_rollouts == 8 and r.samples.shape == (4,) for r in results)


@pytest.mark.parametrize("estimator", [shapley_permutation, kernel_shap])
def test_shapley_of_the_glove_game(estimator):
    results = estimator(glove, 3, 3000, sampling_seed=1)
    estimates = np.array([r.estimate for r in results])
    assert estimates == pytest.approx(GLOVE_SHAPLEY, abs=0.03)
    assert all(r.ci_low <= phi <= r.ci_high for r, phi in zip(results, GLOVE_SHAPLEY))
    assert estimates.sum() == pytest.approx(1.0)  # efficiency: v(N) - v(empty)
    assert estimates[1] == pytest.approx(estimates[2], abs=0.04)  # symmetry


def test_two_player_antithetic_permutations_and_paired_kernel_shap_are_exact():
    def game(kept, seeds):  # v(empty) 0, v({0}) 0.1, v({1}) 0.3, v(N) 1: Shapley (0.4, 0.6)
        kept = np.asarray(kept, bool)
        return 0.1 * kept[:, 0] + 0.3 * kept[:, 1] + 0.6 * (kept[:, 0] & kept[:, 1])

    for estimator in (shapley_permutation, kernel_shap):
        results = estimator(game, 2, 2)
        assert [r.estimate for r in results] == pytest.approx([0.4, 0.6])
        assert all(r.samples == pytest.approx(np.full(2, r.estimate)) for r in results)  # exact per sample
        # two equal samples do not show the game is deterministic: the score interval does not collapse
        assert all(r.interval == "score" and r.ci_low < r.estimate < r.ci_high for r in results)


@pytest.mark.parametrize("estimator, per_pair", [(shapley_permutation, 8), (kernel_shap, 4)])
def test_efficiency_per_sample_and_the_null_player(estimator, per_pair):
    results = estimator(with_null, 4, 50, sampling_seed=3, targets=list("abcd"))
    samples = np.stack([r.samples for r in results], axis=1)  # (pairs, players)
    assert samples.sum(axis=1) == pytest.approx(np.ones(50))
    assert abs(results[3].estimate) <= results[3].ci_high - results[3].ci_low + 1e-12
    assert results[0].n_rollouts == per_pair * 50 and [r.target for r in results] == list("abcd")


def test_permutation_sampling_gives_a_null_player_exactly_zero():
    results = shapley_permutation(with_null, 4, 20)
    assert results[3].samples.tolist() == [0.0] * 20


def constrained_variance(values, mu, low, high):
    """By hand: the variance of the maximum-likelihood distribution with mean mu on the observed
    values and the bounds (Lagrange: p_i = c_i / (n (1 + t (x_i - mu))), the root t by bisection;
    where no root keeps every weight positive, the rest of the mass at the bound mu lies towards)."""
    x, c = np.unique(values, return_counts=True)
    n, d = len(values), x - mu
    edge = high if mu > values.mean() else low  # the bound on mu's side

    def h(t):
        return float(np.sum(c * d / (1 + t * d)))

    a, b = sorted((0.0, -1.0 / (edge - mu)))  # 1 + t (edge - mu) >= 0
    a, b = a + 1e-15 * abs(b - a), b - 1e-15 * abs(b - a)
    if h(a) * h(b) > 0:  # no root: the bound takes the rest of the mass
        p = c * (edge - mu) / (n * (edge - x))
        return float(np.sum(p * d * d) + (1 - p.sum()) * (edge - mu) ** 2)
    for _ in range(200):
        m = (a + b) / 2
        a, b = (m, b) if h(m) * h(a) > 0 else (a, m)
    p = c / (n * (1 + a * d))
    return float(np.sum(p * d * d) / p.sum())


@pytest.mark.parametrize(
    "values, low, high",
    [
        ([0.0, 0.0, 0.0, 1.7], -2.2, 2.2),
        ([-0.3, -0.3, 0.0, 0.0, 0.0, 0.0, 1.7, 1.7], -2.2, 2.2),
        ([0.0, 0.5, 0.5, -1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.5], -1.0, 1.0),
        ([0.12, -0.31, 0.44, 0.05, 0.93, -0.6, 0.27], -1.0, 1.0),
    ],
)
def test_bounded_score_interval_ends_where_the_score_statistic_is_z(values, low, high):
    values = np.array(values)
    (lo,), (hi,) = bounded_score_intervals(values[:, None], low, high)
    z, n, mean = 1.959963984540054, len(values), values.mean()
    for end in (lo, hi):
        assert n * (mean - end) ** 2 == pytest.approx(z * z * constrained_variance(values, end, low, high), rel=1e-6)
    assert low < lo < mean < hi < high


def test_bounded_score_interval_is_tangos_and_wilsons_where_theirs_apply():
    for plus, minus, n in [(0, 0, 4), (3, 1, 8), (8, 0, 8), (2, 5, 20), (10, 0, 12)]:
        d = np.array([1.0] * plus + [-1.0] * minus + [0.0] * (n - plus - minus))
        (lo,), (hi,) = bounded_score_intervals(d[:, None], -1, 1)
        assert (lo, hi) == pytest.approx(paired_score_interval(plus, minus, n), abs=1e-8)
    for hits, n in [(0, 10), (3, 10), (10, 10)]:
        r = np.array([1.0] * hits + [0.0] * (n - hits))
        (lo,), (hi,) = bounded_score_intervals(r[:, None], 0, 1)
        assert (lo, hi) == pytest.approx(wilson_interval(hits, n), abs=1e-8)


def test_bounded_score_interval_never_collapses_and_checks_its_bounds():
    lows, highs = bounded_score_intervals(np.zeros((8, 3)), -1, 1, z=np.array([1.96, 2.0, 3.0]))
    assert (highs == -lows).all() and highs == pytest.approx([1.96**2 / (8 + 1.96**2), 4 / 12, 9 / 17])
    (lo,), (hi,) = bounded_score_intervals(np.ones((5, 1)), -1, 1)
    assert hi == 1.0 and 0 < lo < 1  # at the bound
    with pytest.raises(ValueError, match=r"lie in \[-1, 1\]"):
        bounded_score_intervals(np.array([[0.5], [1.5]]), -1, 1)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_kernel_shap_bound_is_the_largest_sample(n):
    """Every coalition the kernel can draw and every 0/1 reward of its four rollouts."""
    from itertools import product

    inverse = np.linalg.inv(shapley_kernel_matrix(n))
    ones = np.ones(n)
    weights = inverse @ ones / (ones @ inverse @ ones)
    project = inverse - np.outer(weights, ones @ inverse)
    largest = 0.0
    for z in product([False, True], repeat=n):
        z = np.array(z)
        if 0 < z.sum() < n:
            for v_s, v_c, v_0, v_n in product([0.0, 1.0], repeat=4):
                b = (z * (v_s - v_0) + ~z * (v_c - v_0)) / 2
                largest = max(largest, np.abs(project @ b + (v_n - v_0) * weights).max())
    assert kernel_shap_bound(n) == pytest.approx(largest)
    assert sample_bounds("kernel_shap_paired", n) == pytest.approx((-largest, largest))
    assert sample_bounds("shapley_permutation_antithetic", n) == (-1.0, 1.0)
    assert sample_bounds("shapley_2additive", n) == (-1.0, 1.0)
    assert sample_bounds("paired_loo", n) is None


def test_game_estimators_get_the_score_interval_on_rewards_in_0_1_and_t_outside():
    def rare(kept, seeds):  # player 0 adds 0.1 to a 0/1 reward (CRN): most pairs see no change
        kept = np.asarray(kept, bool)
        return (np.array([uniform(s) for s in seeds]) < 0.2 + 0.1 * kept[:, 0]).astype(float)

    for estimator in (shapley_permutation, kernel_shap):
        results = estimator(rare, 3, 4, first_seed=40, sampling_seed=1)
        assert all(r.interval == "score" and r.width > 0 for r in results)
        assert all(r.ci_low <= phi <= r.ci_high for r, phi in zip(results, (0.1, 0.0, 0.0)))
        stored = from_samples(results[0].target, results[0].method, results[0].samples, results[0].n_rollouts, 3)
        assert (stored.ci_low, stored.ci_high, stored.interval) == (results[0].ci_low, results[0].ci_high, "score")
        # rewards outside [0, 1] whose samples leave the bounds: no bound to lean on, the t interval
        scaled = estimator(lambda kept, seeds: 3 * glove(kept, seeds), 3, 4, first_seed=40, sampling_seed=1)
        assert all(r.interval == "t" for r in scaled)
    with pytest.raises(ValueError, match="number of players"):
        from_samples("p", "kernel_shap_paired", np.zeros(4), 16)


def test_shapley_of_a_noisy_game_with_crn():
    def noisy(kept, seeds):  # E[R | S] = 0.2 + 0.5 [0 in S] + 0.2 [1 in S]; player 2 null
        kept = np.asarray(kept, bool)
        u = np.array([uniform(s) for s in seeds])
        return (u < 0.2 + 0.5 * kept[:, 0] + 0.2 * kept[:, 1]).astype(float)

    for estimator in (shapley_permutation, kernel_shap):
        results = estimator(noisy, 3, 1500, sampling_seed=2)
        for r, phi in zip(results, (0.5, 0.2, 0.0)):
            assert r.ci_low - 0.01 <= phi <= r.ci_high + 0.01


def pairwise_game(kept, seeds):
    """A 2-additive game: 0.1 + 0.3 [0] + 0.2 [1 and 2] (synergy) + 0.2 [3 or 4] (redundancy).
    Shapley by hand: 0.3, the synergy halved (0.1, 0.1), the redundancy halved (0.1, 0.1)."""
    x = np.asarray(kept, bool)
    return 0.1 + 0.3 * x[:, 0] + 0.2 * (x[:, 1] & x[:, 2]) + 0.2 * (x[:, 3] | x[:, 4])


def test_2additive_is_exact_per_sample_on_a_pairwise_game():
    results = shapley_2additive(pairwise_game, 5, 6, sampling_seed=4, targets=list("abcde"))
    assert design_size(5) == 8
    for r, phi in zip(results, (0.3, 0.1, 0.1, 0.1, 0.1)):
        assert r.samples == pytest.approx(np.full(6, phi))  # other players' effects cancel exactly
        assert r.interval == "score" and r.ci_low < phi < r.ci_high  # 6 equal samples: not a point
    assert results[0].n_rollouts == 2 * 8 * 6 and results[0].method == "shapley_2additive"


def test_2additive_plays_each_complement_pair_at_its_own_seed():
    calls = []

    def game(kept, seeds):
        calls.append((np.asarray(kept).copy(), np.asarray(seeds).copy()))
        return pairwise_game(kept, seeds)

    shapley_2additive(game, 5, 3, first_seed=100)
    kept, seeds = calls[0]
    assert sorted(set(seeds.tolist())) == list(range(100, 100 + 3 * 8))
    for seed in set(seeds.tolist()):  # each seed: one coalition and its complement
        a, b = kept[seeds == seed]
        assert (a == ~b).all()


def test_2additive_gives_the_banzhaf_value_of_a_higher_order_game():
    # glove has a 3rd-order term: Banzhaf (3/4, 1/4, 1/4) by hand, not Shapley (2/3, 1/6, 1/6)
    results = shapley_2additive(glove, 3, 4000, sampling_seed=5)
    assert [r.estimate for r in results] == pytest.approx([0.75, 0.25, 0.25], abs=0.03)
    assert all(r.ci_low <= b <= r.ci_high for r, b in zip(results, (0.75, 0.25, 0.25)))


def test_2additive_on_a_noisy_game_with_crn():
    def noisy(kept, seeds):  # E[R | S] = 0.2 + 0.5 [0] + 0.2 [1]; player 2 null
        kept = np.asarray(kept, bool)
        u = np.array([uniform(s) for s in seeds])
        return (u < 0.2 + 0.5 * kept[:, 0] + 0.2 * kept[:, 1]).astype(float)

    results = shapley_2additive(noisy, 3, 400, sampling_seed=2)
    for r, phi in zip(results, (0.5, 0.2, 0.0)):
        assert r.ci_low - 0.01 <= phi <= r.ci_high + 0.01


def noisy_glove(kept, seeds):
    """The glove game with a null player 3, plus noise shared by every coalition at a seed (CRN)."""
    return with_null(kept, seeds) + 0.1 * np.array([uniform(s) for s in seeds])


@pytest.mark.parametrize(
    "estimator, options, per_sample",
    [
        (leave_one_out, {}, 1),
        (shapley_permutation, {"sampling_seed": 3}, 1),
        (kernel_shap, {"sampling_seed": 3}, 1),
        (shapley_2additive, {"sampling_seed": 3}, design_size(4)),
    ],
)
def test_chunks_play_their_samples_only_and_add_up_to_the_one_shot_estimator(estimator, options, per_sample):
    one_shot = estimator(noisy_glove, 4, 6, first_seed=10, **options)
    expected = np.stack([r.samples for r in one_shot], axis=1)  # (6 samples, 4 players)
    calls = []

    def game(kept, seeds):
        calls.append(np.asarray(seeds))
        return noisy_glove(kept, seeds)

    chunks = ([0, 1, 2], [3, 4], [5])
    values = [play_chunk(estimator, game, 4, 6, chunk, 10, per_sample, **options) for chunk in chunks]
    assert len(calls) == len(chunks)  # one game call per chunk, on its samples' seeds only
    for chunk, played, got in zip(chunks, calls, values):
        assert got.shape == (6, 4) and set((played - 10) // per_sample) == set(chunk)
        assert got[chunk] == pytest.approx(expected[chunk])
        assert not np.delete(got, chunk, axis=0).any()
    stacked = sum(values)
    for k, r in enumerate(one_shot):
        back = from_samples(r.target, r.method, stacked[:, k], r.n_rollouts, players=4)
        assert (back.estimate, back.ci_low, back.ci_high) == pytest.approx((r.estimate, r.ci_low, r.ci_high))


def test_a_chunk_of_no_samples_plays_nothing():
    calls = []
    values = play_chunk(leave_one_out, lambda kept, seeds: calls.append(seeds), 3, 4, [], 0)
    assert calls == [] and values.shape == (4, 3) and not values.any()


def test_kernel_matrix():
    assert shapley_kernel_matrix(2) == pytest.approx(np.eye(2) / 2)
    a = shapley_kernel_matrix(5)
    assert np.diag(a) == pytest.approx([0.5] * 5) and a == pytest.approx(a.T)
    with pytest.raises(ValueError):
        shapley_kernel_matrix(1)


def test_estimators_check_their_arguments():
    with pytest.raises(ValueError, match="2 targets for 3 players"):
        leave_one_out(glove, 3, 4, targets=["a", "b"])
    with pytest.raises(ValueError, match="at least 2 samples"):
        paired_effect(table_rollout([1], [0]), REMOVE_M, 1)
    with pytest.raises(ValueError, match="at least 2 samples"):
        shapley_2additive(glove, 3, 1)


def attribution(target, estimate, low):
    return Attribution(target, "paired_loo", estimate, low, estimate + 0.1, 8, np.zeros(4))


def test_ranking():
    a, b, c = attribution("a", 0.2, 0.1), attribution("b", 0.3, 0.0), attribution("c", 0.3, 0.2)
    assert [x.target for x in rank([a, b, c])] == ["c", "b", "a"]
    assert ranked_first([a, c], "c") and not ranked_first([b, c], "c") and not ranked_first([a, c], "a")


def test_attribution_to_dict():
    d = attribution("a", 0.2, 0.1).to_dict()
    assert d == {
        "target": "a",
        "method": "paired_loo",
        "estimate": 0.2,
        "ci_low": 0.1,
        "ci_high": pytest.approx(0.3),
        "n_rollouts": 8,
        "samples": [0.0] * 4,
        "interval": "t",
    }
