"""Credit attribution from counterfactual re-rollouts (docs/architecture.md, "Credit"): pure estimators.

Two interfaces to a rollout backend (`trainer.rollout`):

- `Rollout`: `rollout(intervention, seeds) -> rewards`; `intervention` is an `Intervention` or None
  (the factual history h), `seeds` (N,) ints, rewards (N,) floats. Sample j uses seed
  `seeds[j]`; the same seed under two interventions gives common random numbers (CRN).
- `CoalitionGame`: `game(kept, seeds) -> rewards`; `kept` (B, n) bool says which of the n players
  (targets) each sample keeps, `seeds` (B,) ints, rewards (B,). `coalition_game` builds one from a
  `Rollout` and one removal per player.

Estimators (each returns `Attribution`s, one per target):

- `paired_effect`: Δ = E[R | h] - E[R | do(i)] from N pairs sharing seeds; `unpaired_effect`: the
  same from independent seeds (for comparison); `effect_until`: paired or unpaired, in batches until
  the 95 % interval is narrower than ε or a cap is reached; `leave_one_out`: paired Δ of every
  player of a game, the control rollouts shared.
- `shapley_permutation`: Monte-Carlo Shapley values by permutation sampling (Castro, Gómez & Tejada
  2009) with antithetic pairs (a permutation and its reverse).
- `kernel_shap`: KernelSHAP (Lundberg & Lee 2017) with paired coalitions S and N \\ S and the exact
  Shapley-kernel matrix: the unbiased estimator of Covert & Lee 2021 (§3), efficiency exact.
- `shapley_2additive`: Shapley values of a game with at most pairwise interactions, from a
  randomised two-level orthogonal design in complement pairs; for any game, the Banzhaf value.

`play_chunk` runs a game estimator on some of its samples only (a job's chunk), drawing what the
one-shot call draws, so chunks stored apart give back the one-shot estimate (`from_samples`).

Intervals are 95 %. Paired leave-one-out Δ (`paired_effect`, `leave_one_out`, `from_samples` of
method "paired_loo") whose per-seed differences are all in {-1, 0, 1} (0/1 rewards) gets Tango's
score interval (`paired_score_interval`), which never collapses to a point: on real effects in
bench/bench_interval_coverage.py it covers 0.976-1.000 at N = 8 and 0.944-0.987 at N = 32, where
the t interval covers 0.53-0.88 and 0.83-0.94, being [0, 0] whenever all N differences are 0
(probability (1 - |Δ|)^N under common random numbers). Every other estimate gets a Student t
interval over its independent samples (pairs, antithetic pairs, coalition pairs; exact quantiles,
`t_quantile_975`); there, when every sample is equal, the interval is that point. Measured in
bench/bench_estimators.py (bench/RESULTS.md), these t intervals under-cover real effects at small N
where coalitions share randomness: permutation sampling's covers 0.81 / 0.89 / 0.93 (pooled over
game families and couplings) at N = 4 / 8 / 32 pairs, 0.29 / 0.51 / 0.83 on noisy-subtask games
under common random numbers; the attribution panel says so beside the estimator. `unpaired_effect`
gets Newcombe's hybrid score interval for 0/1 rewards (`unpaired_score_interval`: the Welch
interval it had collapsed to a point when each arm's N rewards agree, e.g. all 1 against all 0),
else Welch–Satterthwaite's. `Attribution.interval` says which; `epsilon_met` is the ε stop's rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import sqrt
from statistics import NormalDist
from typing import Any

import numpy as np

from swarmscope.interventions import Intervention, union

Rollout = Callable[[Intervention | None, np.ndarray], np.ndarray]
CoalitionGame = Callable[[np.ndarray, np.ndarray], np.ndarray]

_Z975 = NormalDist().inv_cdf(0.975)


#: The methods whose samples are paired differences control - treated of one intervention.
PAIRED_METHODS = frozenset({"paired_loo"})
#: Fewest paired samples at which the ε stop (`epsilon_met`) may end sampling early.
EPSILON_MIN_SAMPLES = 16


@functools.cache
def _stdtrit() -> Callable[[float, float], float]:
    """scipy.special.stdtrit, imported on first use (scipy.special takes ~0.3 s to import)."""
    from scipy.special import stdtrit  # noqa: PLC0415 (lazy: most imports of swarmscope never need it)

    return stdtrit


@functools.lru_cache(maxsize=4096)
def t_quantile_975(df: float) -> float:
    """The 0.975 quantile of Student's t with `df` >= 1 degrees of freedom (df may be fractional,
    as Welch's is): exact to double precision, the inverse t distribution function of
    scipy.special.stdtrit (Cephes). Raises ValueError for df < 1 or NaN."""
    if not df >= 1:
        raise ValueError("a t interval needs at least 1 degree of freedom (2 samples)")
    return float(_stdtrit()(float(df), 0.975))


def _tango_z(plus: int, minus: int, n: int, delta: float) -> float:
    """Tango's (1998) score statistic Z(Δ0) = (b - c - n Δ0) / sqrt(n (2 q + Δ0 (1 - Δ0))), b = plus,
    c = minus, q the maximum-likelihood P(d = -1) under Δ = Δ0 (the positive root of
    2n q² + (-b - c + (2n - b + c) Δ0) q - c Δ0 (1 - Δ0) = 0); ±inf where the variance is 0 and
    the numerator is not."""
    numerator = plus - minus - n * delta
    b_coef = -plus - minus + (2 * n - plus + minus) * delta
    c_coef = -minus * delta * (1 - delta)
    q = (sqrt(max(b_coef * b_coef - 8 * n * c_coef, 0.0)) - b_coef) / (4 * n)
    variance = n * (2 * q + delta * (1 - delta))
    if variance <= 1e-300:
        return 0.0 if abs(numerator) < 1e-12 else float(np.sign(numerator)) * float("inf")
    return numerator / sqrt(variance)


@functools.lru_cache(maxsize=65_536)  # a (plus, minus, n) recurs across players, seeds and chunks
def paired_score_interval(plus: int, minus: int, n: int, z: float = _Z975) -> tuple[float, float]:
    """Tango's asymptotic score interval for Δ = P(d = 1) - P(d = -1) from n iid paired differences
    d in {-1, 0, 1}, `plus` of them 1 and `minus` -1 (0/1 rewards: d = control - treated; Tango
    1998, Statistics in Medicine 17:891-908, eq. 3; Newcombe 1998's review recommends it):
    {Δ0 in [-1, 1] : |Z(Δ0)| <= z}, z = 1.96 for 95 %, the two roots found by bisection (to 1e-12).

    It contains (plus - minus) / n and never collapses: with every d = 0 it is
    ±z² / (n + z²), Wilson's bound for a proportion seen 0 times in n (about 3.84 / n).
    Raises ValueError unless 0 <= plus, minus and plus + minus <= n, n >= 1."""
    if n < 1 or plus < 0 or minus < 0 or plus + minus > n:
        raise ValueError(f"need 0 <= plus, minus and plus + minus <= n >= 1, got {plus}, {minus}, {n}")
    estimate = (plus - minus) / n

    def root(inside: float, outside: float, sign: float) -> float:
        # Z decreases in Δ0: Z(inside) is within ±z, Z(outside) beyond (or `outside` is the bound)
        if sign * _tango_z(plus, minus, n, outside) <= z:
            return outside
        for _ in range(64):
            middle = (inside + outside) / 2
            if sign * _tango_z(plus, minus, n, middle) <= z:
                inside = middle
            else:
                outside = middle
            if abs(outside - inside) < 1e-12:
                break
        return inside

    return root(estimate, -1.0, 1.0), root(estimate, 1.0, -1.0)


def wilson_interval(hits: int, n: int, z: float = _Z975) -> tuple[float, float]:
    """Wilson's (1927) score interval for a proportion seen `hits` times in n >= 1 trials, z = 1.96
    for 95 %: (p + z²/2n ± z sqrt(p (1 - p) / n + z² / 4n²)) / (1 + z²/n), p = hits / n; never a
    point. Raises ValueError unless 0 <= hits <= n >= 1."""
    if n < 1 or not 0 <= hits <= n:
        raise ValueError(f"need 0 <= hits <= n >= 1, got {hits}, {n}")
    p, z2 = hits / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return (0.0 if hits == 0 else centre - half), (1.0 if hits == n else centre + half)


def unpaired_score_interval(hits1: int, n1: int, hits2: int, n2: int, z: float = _Z975) -> tuple[float, float]:
    """Newcombe's hybrid score interval (1998, Statistics in Medicine 17:873-890, method 10) for
    p1 - p2 from independent 0/1 samples, `hits1` of n1 and `hits2` of n2: with (l_i, u_i) Wilson's
    interval of p_i, [d - sqrt((p1 - l1)² + (u2 - p2)²), d + sqrt((u1 - p1)² + (p2 - l2)²)],
    d = p1 - p2. Never a point. Raises ValueError as `wilson_interval`."""
    (l1, u1), (l2, u2) = wilson_interval(hits1, n1, z), wilson_interval(hits2, n2, z)
    p1, p2 = hits1 / n1, hits2 / n2
    return p1 - p2 - sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), p1 - p2 + sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def is_paired_binary(values: np.ndarray) -> bool:
    """Whether `values` is 1-D and every value is -1, 0 or 1: differences of paired 0/1 rewards."""
    values = np.asarray(values)
    return values.ndim == 1 and bool(np.isin(values, (-1.0, 0.0, 1.0)).all())


@dataclass(frozen=True, eq=False)
class Attribution:
    """The credit of one `target` (an intervention's `describe()`, or a player's name).

    `estimate` and the 95 % interval [`ci_low`, `ci_high`] are in reward units; `n_rollouts` counts
    the rollouts behind it (for Shapley estimators: all of the game's, shared by its players);
    `samples` holds the independent per-sample values it averages (shape in each estimator);
    `interval` names the interval: "tango" (`paired_score_interval`), "t", "newcombe"
    (`unpaired_score_interval`) or "welch".
    """

    target: str
    method: str
    estimate: float
    ci_low: float
    ci_high: float
    n_rollouts: int
    samples: np.ndarray = field(repr=False)
    interval: str = "t"

    @property
    def width(self) -> float:
        """ci_high - ci_low."""
        return self.ci_high - self.ci_low

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; `samples` as nested lists."""
        return {
            "target": self.target,
            "method": self.method,
            "estimate": self.estimate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n_rollouts": self.n_rollouts,
            "samples": self.samples.tolist(),
            "interval": self.interval,
        }


def _mean_interval(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, t half-width) over axis 0 of (N, ...) independent samples, N >= 2."""
    n = len(values)
    if n < 2:
        raise ValueError("an interval needs at least 2 samples")
    half = t_quantile_975(n - 1) * values.std(axis=0, ddof=1) / sqrt(n)
    return values.mean(axis=0), half


def _attribution(target: str, method: str, values: np.ndarray, n_rollouts: int) -> Attribution:
    """The mean of `values` (N,) with Tango's interval for paired 0/1 differences of a method in
    PAIRED_METHODS, else the t interval. Raises ValueError for N < 2."""
    if method in PAIRED_METHODS and is_paired_binary(values) and len(values) >= 2:
        plus, minus = int(np.sum(values == 1)), int(np.sum(values == -1))
        low, high = paired_score_interval(plus, minus, len(values))
        return Attribution(target, method, float(values.mean()), low, high, n_rollouts, values, "tango")
    mean, half = _mean_interval(values)
    return Attribution(target, method, float(mean), float(mean - half), float(mean + half), n_rollouts, values)


def from_samples(target: str, method: str, values: np.ndarray, n_rollouts: int) -> Attribution:
    """The attribution whose estimate is the mean of n >= 2 independent sample `values` (n,), with
    the interval the estimator of `method` gives them (module docstring): what an estimator's
    `samples` give back when they were computed in chunks and stored. Raises ValueError for n < 2."""
    return _attribution(target, method, np.asarray(values, float), n_rollouts)


def paired_effect(rollout: Rollout, intervention: Intervention, n: int, first_seed: int = 0) -> Attribution:
    """Paired Δ = E[R | h] - E[R | do(intervention)] from n >= 2 pairs: control and intervention
    both at seeds first_seed .. first_seed + n - 1 (CRN). `samples` (n,): the per-seed differences;
    2n rollouts; Tango's interval for 0/1 rewards, else t (module docstring). Raises ValueError
    for n < 2."""
    seeds = np.arange(first_seed, first_seed + n)
    return _attribution(
        intervention.describe(),
        "paired_loo",
        np.asarray(rollout(None, seeds), float) - np.asarray(rollout(intervention, seeds), float),
        2 * n,
    )


def unpaired_effect(rollout: Rollout, intervention: Intervention, n: int, first_seed: int = 0) -> Attribution:
    """Δ from n >= 2 control rollouts (seeds first_seed ..) and n intervention rollouts on other,
    independent seeds (first_seed + n ..); Newcombe's interval for 0/1 rewards
    (`unpaired_score_interval`), else Welch's. `samples` (2, n): control, intervention rewards; 2n
    rollouts. Raises ValueError for n < 2."""
    if n < 2:
        raise ValueError("an interval needs at least 2 samples")
    control = np.asarray(rollout(None, np.arange(first_seed, first_seed + n)), float)
    treated = np.asarray(rollout(intervention, np.arange(first_seed + n, first_seed + 2 * n)), float)
    estimate = float(control.mean() - treated.mean())
    samples = np.stack([control, treated])
    if bool(np.isin(samples, (0.0, 1.0)).all()):
        low, high = unpaired_score_interval(int(control.sum()), n, int(treated.sum()), n)
        return Attribution(intervention.describe(), "unpaired_loo", estimate, low, high, 2 * n, samples, "newcombe")
    v_c, v_t = control.var(ddof=1) / n, treated.var(ddof=1) / n
    se = sqrt(v_c + v_t)
    half = 0.0 if se == 0 else t_quantile_975((v_c + v_t) ** 2 / ((v_c**2 + v_t**2) / (n - 1))) * se
    return Attribution(
        intervention.describe(),
        "unpaired_loo",
        estimate,
        estimate - half,
        estimate + half,
        2 * n,
        samples,
        "welch",
    )


def epsilon_met(effect: Attribution, epsilon: float, n: int) -> bool:
    """Whether an ε stop may end sampling at `effect`, the estimate over the first n paired samples:
    n >= EPSILON_MIN_SAMPLES and 0 < width < `epsilon` (reward units).

    A zero-width interval never stops early: it comes only from a t interval whose samples are all
    equal (Tango's interval, used for 0/1 rewards, never has width 0: all-zero differences give
    ±z² / (n + z²), so the stop needs n > 2 z² / ε - z², e.g. 73 samples at ε = 0.1, the "rule of
    three" of a binomial), and n samples that happen to agree say nothing about the variance. The
    minimum count keeps the stop off the small N where a t interval (rewards not 0/1) rests on few
    samples, and bounds how often a width-based stop is checked early, when a narrow interval is
    mostly luck (which biases the estimate toward 0). Measured in bench/bench_interval_coverage.py
    (ε = 0.1 and 0.2, 0/1 rewards): no zero-width report, coverage 0.946 and 0.959, mean error
    <= 0.004, where the rule "width < ε" reported Δ = 0, CI [0, 0] for 27 % of real effects."""
    return n >= EPSILON_MIN_SAMPLES and 0 < effect.width < epsilon


def effect_until(
    rollout: Rollout,
    intervention: Intervention,
    epsilon: float,
    cap: int,
    batch: int = 16,
    first_seed: int = 0,
    paired: bool = True,
) -> Attribution:
    """`paired_effect` (or `unpaired_effect`) on batches of `batch` >= 2 more seeds until
    `epsilon_met` (the interval narrower than `epsilon`, reward units, not zero, and at least
    EPSILON_MIN_SAMPLES samples) or `cap` samples per arm are drawn.

    Draws min(cap, k * batch) samples per arm, k the first batch count that meets ε; seeds as in
    the fixed-n estimator, so a rerun reproduces it. The interval ignores optional stopping (nominal
    95 %). Raises ValueError for batch < 2 or cap < batch.
    """
    if batch < 2 or cap < batch:
        raise ValueError("need batch >= 2 and cap >= batch")
    estimate = paired_effect if paired else unpaired_effect
    n = batch
    while True:
        result = estimate(rollout, intervention, n, first_seed)
        if epsilon_met(result, epsilon, n) or n == cap:
            return result
        n = min(cap, n + batch)


def coalition_game(rollout: Rollout, players: Sequence[Intervention]) -> CoalitionGame:
    """The game whose player k is removed by `players[k]` (removals; a coalition removes the
    `union` of its absent players' removals, and keeping everyone is the factual history).

    One `rollout` call per distinct coalition in a batch."""

    def game(kept: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        kept = np.asarray(kept, bool)
        seeds = np.asarray(seeds)
        rewards = np.empty(len(kept))
        patterns, inverse = np.unique(kept, axis=0, return_inverse=True)
        for p, pattern in enumerate(patterns):
            rows = np.flatnonzero(inverse.ravel() == p)
            removed = [player for player, k in zip(players, pattern) if not k]
            rewards[rows] = rollout(union(removed) if removed else None, seeds[rows])
        return rewards

    return game


def _names(n_players: int, targets: Sequence[str] | None) -> list[str]:
    if targets is not None and len(targets) != n_players:
        raise ValueError(f"{len(targets)} targets for {n_players} players")
    return list(targets) if targets is not None else [f"player {k}" for k in range(n_players)]


def leave_one_out(
    game: CoalitionGame, n_players: int, n: int, first_seed: int = 0, targets: Sequence[str] | None = None
) -> list[Attribution]:
    """Paired leave-one-out Δ_k = v(N) - v(N \\ {k}) for each of the n_players, from n >= 2 seeds
    (first_seed ..) shared by the control and every removal (CRN). `samples` (n,) per player;
    each attribution counts its 2n rollouts, the n control rollouts being shared (n (n_players + 1)
    in all). Raises ValueError for n < 2 or a wrong number of targets."""
    names = _names(n_players, targets)
    seeds = np.arange(first_seed, first_seed + n)
    kept = np.ones((n_players + 1, n, n_players), bool)
    for k in range(n_players):
        kept[k + 1, :, k] = False
    rewards = np.asarray(game(kept.reshape(-1, n_players), np.tile(seeds, n_players + 1)), float)
    rewards = rewards.reshape(n_players + 1, n)
    return [_attribution(names[k], "paired_loo", rewards[0] - rewards[k + 1], 2 * n) for k in range(n_players)]


def shapley_permutation(
    game: CoalitionGame,
    n_players: int,
    n_pairs: int,
    first_seed: int = 0,
    sampling_seed: int = 0,
    targets: Sequence[str] | None = None,
) -> list[Attribution]:
    """Monte-Carlo Shapley values (Castro, Gómez & Tejada 2009): phi_k is the mean marginal
    contribution v(P + k) - v(P) of k over its predecessors P in random permutations, here in
    n_pairs >= 2 antithetic pairs (a permutation, drawn with `sampling_seed`, and its reverse).
    Pair j plays all its coalitions at seed first_seed + j (CRN). `samples` (n_pairs,) per player:
    the pair means. Efficiency is exact per pair: the values sum to the pairs' mean of
    v(N) - v(∅). Costs 2 n_players rollouts per pair (∅ and N shared by the two permutations).
    Raises ValueError for n_pairs < 2 or a wrong number of targets."""
    names = _names(n_players, targets)
    rng = np.random.default_rng(sampling_seed)
    order = np.array([rng.permutation(n_players) for _ in range(n_pairs)]).reshape(n_pairs, n_players)
    orders = np.stack([order, order[:, ::-1]], axis=1)  # (n_pairs, 2, n)
    # prefix[j, a, m] = players order[j, a, :m] kept, m = 0 .. n
    rank = np.argsort(orders, axis=2)  # position of each player in each order
    prefix = rank[:, :, None, :] < np.arange(n_players + 1)[None, None, :, None]  # (n_pairs, 2, n + 1, n)
    # the reverse's ∅ and N are the forward's: play forward m = 0 .. n, reverse m = 1 .. n - 1
    rows = np.concatenate([prefix[:, 0], prefix[:, 1, 1:n_players]], axis=1)  # (n_pairs, 2n, n)
    seeds = np.repeat(np.arange(first_seed, first_seed + n_pairs), 2 * n_players)
    values = np.asarray(game(rows.reshape(-1, n_players), seeds), float).reshape(n_pairs, 2 * n_players)
    forward = values[:, : n_players + 1]
    backward = np.concatenate([forward[:, :1], values[:, n_players + 1 :], forward[:, -1:]], axis=1)
    marginals = np.zeros((n_pairs, n_players))
    pairs = np.arange(n_pairs)[:, None]
    for a, chain in enumerate((forward, backward)):
        marginals[pairs, orders[:, a]] += np.diff(chain, axis=1) / 2
    return [
        _attribution(names[k], "shapley_permutation_antithetic", marginals[:, k], 2 * n_players * n_pairs)
        for k in range(n_players)
    ]


def shapley_kernel_matrix(n_players: int) -> np.ndarray:
    """(n, n) A = E[z z^T] for z the indicator of a coalition drawn from the Shapley kernel's size
    distribution p(s) ∝ (n - 1) / (s (n - s)), s = 1 .. n - 1, uniform within a size (Lundberg &
    Lee 2017, Theorem 2; Covert & Lee 2021, §3): 1/2 on the diagonal. Raises ValueError for n < 2."""
    if n_players < 2:
        raise ValueError("KernelSHAP needs at least 2 players")
    n = n_players
    sizes = np.arange(1, n)
    p = 1.0 / (sizes * (n - sizes))
    p /= p.sum()
    off = float(np.sum(p * sizes * (sizes - 1))) / (n * (n - 1))
    return np.full((n, n), off) + np.eye(n) * (float(np.sum(p * sizes)) / n - off)


def kernel_shap(
    game: CoalitionGame,
    n_players: int,
    n_pairs: int,
    first_seed: int = 0,
    sampling_seed: int = 0,
    targets: Sequence[str] | None = None,
) -> list[Attribution]:
    """Paired KernelSHAP: the Shapley values as the solution of the Shapley-kernel weighted least
    squares with the efficiency constraint (Lundberg & Lee 2017), with A exact and b estimated from
    n_pairs >= 2 coalition pairs (S, N \\ S), S drawn with `sampling_seed` from the kernel's
    distribution: phi = A^-1 (b - 1 (1^T A^-1 b - v(N) + v(∅)) / 1^T A^-1 1), b = E[z (v(z) - v(∅))]
    (Covert & Lee 2021, §3, unbiased KernelSHAP). Pair j plays S, N \\ S, ∅ and N at seed
    first_seed + j (CRN), so every pair gives an unbiased, efficient sample of phi: `samples`
    (n_pairs,) per player, analytic t interval over pairs. 4 rollouts per pair.
    Raises ValueError for n_players < 2, n_pairs < 2 or a wrong number of targets."""
    names = _names(n_players, targets)
    n = n_players
    inverse = np.linalg.inv(shapley_kernel_matrix(n))
    ones = np.ones(n)
    weights = inverse @ ones / (ones @ inverse @ ones)  # (n,): the efficiency term's direction
    project = inverse - np.outer(weights, ones @ inverse)  # (n, n): 1^T project = 0
    rng = np.random.default_rng(sampling_seed)
    sizes = np.arange(1, n)
    p = 1.0 / (sizes * (n - sizes))
    drawn = rng.choice(sizes, size=n_pairs, p=p / p.sum())
    z = np.array([rng.permutation(n) < s for s in drawn]).reshape(n_pairs, n)
    rows = np.stack([z, ~z, np.zeros_like(z), np.ones_like(z)], axis=1)  # (n_pairs, 4, n)
    seeds = np.repeat(np.arange(first_seed, first_seed + n_pairs), 4)
    v = np.asarray(game(rows.reshape(-1, n), seeds), float).reshape(n_pairs, 4)
    b = (z * (v[:, :1] - v[:, 2:3]) + ~z * (v[:, 1:2] - v[:, 2:3])) / 2  # (n_pairs, n)
    phi = b @ project.T + np.outer(v[:, 3] - v[:, 2], weights)  # (n_pairs, n)
    return [_attribution(names[k], "kernel_shap_paired", phi[:, k], 4 * n_pairs) for k in range(n)]


def design_size(n_players: int) -> int:
    """Coalition pairs per sample of `shapley_2additive`: the smallest power of two > n_players."""
    size = 1
    while size <= n_players:
        size *= 2
    return size


def _sylvester_hadamard(size: int) -> np.ndarray:
    """(size, size) ±1 matrix with orthogonal columns (Sylvester 1867); size a power of two."""
    h = np.ones((1, 1), int)
    while len(h) < size:
        h = np.block([[h, h], [h, -h]])
    return h


def shapley_2additive(
    game: CoalitionGame,
    n_players: int,
    n_samples: int,
    first_seed: int = 0,
    sampling_seed: int = 0,
    targets: Sequence[str] | None = None,
) -> list[Attribution]:
    """Shapley values of a 2-additive game (interactions at most pairwise) from complement pairs of
    a randomised orthogonal design: the Banzhaf value of any game.

    With z in {-1, +1}^n (z_k = +1: player k kept), every game is v(z) = sum_T c_T prod_{k in T} z_k
    (Walsh expansion); the Banzhaf value is B_k = E_z[z_k (v(z) - v(-z))] over uniform z (Banzhaf
    1965; Hammer & Holzman 1992), and for a game with no interaction of order 3 or more it equals the
    Shapley value, 2 c_{k} (Grabisch 1997, 2-additive games). Each of the n_samples >= 2 samples plays
    size = `design_size(n)` pairs (S_r, N \\ S_r): the rows z_r of n distinct non-constant columns of
    a Sylvester-Hadamard matrix, chosen and sign-flipped at random (`sampling_seed`), so each z_r is
    uniform and the columns are orthogonal. The sample's estimate (1/size) sum_r z_rk (v(z_r) - v(-z_r))
    is unbiased for B_k, and for a 2-additive game the other players' effects cancel exactly: only
    the outcome noise is left (a foldover design, Box & Wilson 1951). Pair r of sample j plays both
    coalitions at seed first_seed + j * size + r (CRN within the pair, independent across pairs).
    `samples` (n_samples,) per player; 2 * size rollouts per sample. For games with higher-order
    interactions (e.g. majority of three) the result is Banzhaf, not Shapley: use
    `shapley_permutation` there. Raises ValueError for n_samples < 2 or a wrong number of targets."""
    names = _names(n_players, targets)
    if n_samples < 2:
        raise ValueError("shapley_2additive needs at least 2 samples")
    size = design_size(n_players)
    columns = _sylvester_hadamard(size)[:, 1:]
    rng = np.random.default_rng(sampling_seed)
    z = np.stack(
        [
            columns[:, rng.choice(size - 1, n_players, replace=False)] * rng.choice([-1, 1], n_players)
            for _ in range(n_samples)
        ]
    )  # (n_samples, size, n)
    rows = np.concatenate([z > 0, z < 0], axis=1)  # (n_samples, 2 size, n): S_r, then N \ S_r
    pair_seeds = first_seed + np.arange(n_samples * size).reshape(n_samples, size)
    seeds = np.concatenate([pair_seeds, pair_seeds], axis=1)
    v = np.asarray(game(rows.reshape(-1, n_players), seeds.ravel()), float).reshape(n_samples, 2, size)
    phi = np.einsum("jrk,jr->jk", z, v[:, 0] - v[:, 1]) / size  # (n_samples, n)
    return [_attribution(names[k], "shapley_2additive", phi[:, k], 2 * size * n_samples) for k in range(n_players)]


def play_chunk(
    estimator: Callable[..., list[Attribution]],
    game: CoalitionGame,
    n_players: int,
    n: int,
    indices: Sequence[int],
    first_seed: int = 0,
    seeds_per_sample: int = 1,
    **options: Any,
) -> np.ndarray:
    """The per-player sample values (n, n_players) of `estimator(game, n_players, n, first_seed,
    **options)` with `game` played only on the rows of samples `indices`: those rows are what the
    one-shot call gives, the rows of other samples 0 (their coalitions answer 0 and are not played).

    Serves the game estimators that play sample i at seeds first_seed + i k .. first_seed + (i + 1)
    k - 1, k = `seeds_per_sample`, and draw their coalitions from `options` (`sampling_seed`) and n
    alone: `leave_one_out`, `shapley_permutation` and `kernel_shap` (k = 1), `shapley_2additive`
    (k = `design_size(n_players)`). One `game` call per chunk (none when no row is played); with
    `coalition_game`, one rollout call per distinct coalition among the played rows."""
    played = np.asarray(indices)

    def chunk_game(kept: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        seeds = np.asarray(seeds)
        rewards = np.zeros(len(seeds))
        rows = np.isin((seeds - first_seed) // seeds_per_sample, played)
        if rows.any():
            rewards[rows] = game(np.asarray(kept)[rows], seeds[rows])
        return rewards

    results = estimator(chunk_game, n_players, n, first_seed=first_seed, **options)
    return np.stack([r.samples for r in results], axis=1)


def rank(attributions: Sequence[Attribution]) -> list[Attribution]:
    """Highest estimate first; ties by higher ci_low, then by target."""
    return sorted(attributions, key=lambda a: (-a.estimate, -a.ci_low, a.target))


def ranked_first(attributions: Sequence[Attribution], target: str) -> bool:
    """Whether `target` alone has the highest estimate (a tie for first does not count)."""
    best = max(a.estimate for a in attributions)
    leaders = [a.target for a in attributions if a.estimate == best]
    return leaders == [target]
