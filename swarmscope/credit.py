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
(probability (1 - |Δ|)^N under common random numbers). The game estimators (`shapley_permutation`,
`kernel_shap`, `shapley_2additive`: SCORE_METHODS) get the bounded score interval over their
independent samples (`bounded_score_intervals`, Student's t quantile with N - 1 degrees of
freedom): every reward lies in REWARD_RANGE = [0, 1], so each sample lies in known bounds
(`sample_bounds`), and like Tango's (which it equals on {-1, 0, 1}) it never collapses to a point.
On the same samples the Student t interval they had covered real effects 0.27-0.69 at N = 4 pairs
under common random numbers (being [0, 0] whenever every sample was 0), and KernelSHAP's called a
null player real in up to 26 % of runs at N = 8 (skewed samples). With the score interval neither
estimator has a game family and coupling significantly below 0.95 coverage, nor significantly above
a 0.05 null-flag rate, at N = 2-64 (bench/bench_estimators.py, bench/RESULTS.md "Issue 30 item 6";
the 2-additive estimator's bias shows at N = 64 on higher-order games), at a price in width where N
is small (permutation pairs: 1.44 at N = 4, 0.45-0.51 at N = 16). The attribution panel states
those figures beside the estimator. Samples outside the bounds (rewards outside [0, 1]) fall back to
the Student t interval (exact quantiles, `t_quantile_975`), as every other estimate gets; there,
when every sample is equal, the interval is that point. `unpaired_effect`
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
    `interval` names the interval: "tango" (`paired_score_interval`), "score"
    (`bounded_score_intervals`), "t", "newcombe" (`unpaired_score_interval`) or "welch".
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


#: The range of every reward a rollout backend returns (`trainer.rollout`: 0/1 outcomes, exact
#: match, a verifier's score in [0, 1]); the score intervals of the game estimators rest on it.
REWARD_RANGE = (0.0, 1.0)
#: The game estimators whose samples get the bounded score interval (`bounded_score_intervals`).
SCORE_METHODS = frozenset({"shapley_permutation_antithetic", "kernel_shap_paired", "shapley_2additive"})


def kernel_shap_bound(n_players: int) -> float:
    """The largest |value| one paired-KernelSHAP sample (`kernel_shap`) can give a player when every
    reward lies in REWARD_RANGE: with A^-1 = a I + b 1 1^T, a sample is
    (a / 2) (z_k - s / n) (v(S) - v(N \\ S)) + (v(N) - v(∅)) / n for a coalition S of size s, so the
    bound is a (n - 1) / (2n) + 1 / n (1 at n = 2, 2.24 at n = 7, 3.17 at n = 16). Raises
    ValueError for n_players < 2."""
    inverse = np.linalg.inv(shapley_kernel_matrix(n_players))
    a = float(inverse[0, 0] - inverse[0, 1])
    span = REWARD_RANGE[1] - REWARD_RANGE[0]
    return span * (a * (n_players - 1) / (2 * n_players) + 1 / n_players)


def sample_bounds(method: str, n_players: int) -> tuple[float, float] | None:
    """[low, high] that one sample of `method` (an Attribution's method) lies in when every reward
    lies in REWARD_RANGE, for the methods of SCORE_METHODS; None for the others. A permutation pair's
    sample is the mean of two marginal contributions, each a difference of two rewards; a 2-additive
    sample the mean of ±(v(S) - v(N \\ S)) over its design's pairs."""
    span = REWARD_RANGE[1] - REWARD_RANGE[0]
    if method in ("shapley_permutation_antithetic", "shapley_2additive"):
        return -span, span
    if method == "kernel_shap_paired":
        bound = kernel_shap_bound(n_players)
        return -bound, bound
    return None


def _constrained_variance(
    x: np.ndarray, c: np.ndarray, n: np.ndarray, mu: np.ndarray, high: np.ndarray, t0: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row (values x (R, K) with counts c, n = their sum, a bound `high` above them, a mean mu
    (R,) in [the row's mean, high)): the variance V(mu) of the maximum-likelihood distribution on
    the row's values and `high` whose mean is mu, dV/dmu, and its multiplier t (the next call's
    start, `t0`).

    The distribution is p_i = c_i / (n (1 + t (x_i - mu))), t in (-1 / (high - mu), 0] the root of
    sum c_i (x_i - mu) / (1 + t (x_i - mu)) (Owen's empirical likelihood), or, where no root is
    there (mu beyond what the observed values can reach), p_i = c_i (high - mu) / (n (high - x_i))
    with the rest of the mass at `high` (the root's limit). Newton's method on t, kept in its
    bracket; dV/dmu by implicit differentiation."""
    d = x - mu[:, None]
    room = high - mu
    gap = high[:, None] - x
    open_gap = gap > 0
    w = np.where(open_gap, c / (n[:, None] * np.where(open_gap, gap, 1.0)), 0.0)  # p_i / room
    p_bound = w * room[:, None]
    boundary = ~((c > 0) & ~open_gap).any(axis=1) & ((p_bound * d).sum(axis=1) <= 0)
    rest = 1 - p_bound.sum(axis=1)
    v_bound = (p_bound * d * d).sum(axis=1) + rest * room * room
    dv_bound = (-w * d * d - 2 * p_bound * d).sum(axis=1) + w.sum(axis=1) * room * room - 2 * rest * room
    low_t = -1.0 / np.where(room > 0, room, 1e-300)
    high_t = np.zeros_like(mu)
    t = np.where((t0 > low_t) & (t0 <= 0), t0, 0.0)
    active = ~boundary
    for _ in range(200):
        if not active.any():
            break
        den = 1 + t[:, None] * d
        h = (c * d / den).sum(axis=1)
        slope = -(c * d * d / (den * den)).sum(axis=1)
        high_t = np.where(h <= 0, t, high_t)
        low_t = np.where(h > 0, t, low_t)
        step = h / np.where(slope < 0, slope, -1.0)
        new = t - step
        done = (np.abs(step) <= 1e-13 * np.maximum(1.0, np.abs(t))) | (h == 0)
        new = np.where(done, t, np.where((new > low_t) & (new < high_t), new, (low_t + high_t) / 2))
        t = np.where(active, new, t)
        active &= ~done
    den = 1 + t[:, None] * d
    p = c / (n[:, None] * den)
    v_root = (p * d * d).sum(axis=1)
    s0, s2 = (c / (den * den)).sum(axis=1), (c * d * d / (den * den)).sum(axis=1)
    dt = -s0 / np.where(s2 > 0, s2, 1.0)
    dden = dt[:, None] * d - t[:, None]
    dv_root = ((c / n[:, None]) * (-2 * d / den - d * d * dden / (den * den))).sum(axis=1)
    return np.where(boundary, v_bound, v_root), np.where(boundary, dv_bound, dv_root), np.where(boundary, 0.0, t)


def _upper_score_ends(x: np.ndarray, c: np.ndarray, high: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The upper end of each row's score interval (`bounded_score_intervals`; rows: values x (R, K),
    counts c, bound `high` (R,), quantile z (R,)): the root above the mean of
    n (mu - mean)^2 = z^2 V(mu), by Newton's method kept in a bracket (within 1e-12)."""
    n = c.sum(axis=1)
    mean = (c * x).sum(axis=1) / n
    active = mean < high
    inside, outside = mean.copy(), high.copy()
    t = np.zeros_like(mean)
    # start at the Wald end of the sample variance, or Wilson's end of the bound where it is 0
    spread = (c * (x - mean[:, None]) ** 2).sum(axis=1) / n
    span = high - mean
    mu = mean + np.maximum(z * np.sqrt(spread / n), z * z * span / (n + z * z))
    mu = np.where(active, np.minimum(mu, mean + 0.999 * span), mean)
    tol = 1e-12 * np.maximum(np.abs(high), 1.0)
    end = np.where(active, np.nan, high)
    for _ in range(200):
        if not active.any():
            break
        v, dv, t = _constrained_variance(x, c, n, mu, high, t)
        g = n * (mu - mean) ** 2 - z * z * v
        slope = 2 * n * (mu - mean) - z * z * dv
        inside = np.where(active & (g <= 0), mu, inside)
        outside = np.where(active & (g > 0), mu, outside)
        newton = mu - g / np.where(slope > 0, slope, 1.0)
        ok = (slope > 0) & (newton > inside) & (newton < outside)
        converged = ((slope > 0) & (np.abs(newton - mu) < tol)) | (g == 0)
        done = active & (converged | (outside - inside < tol))
        root = np.clip(np.where(g == 0, mu, newton), inside, outside)
        end = np.where(done, np.where(converged, root, inside), end)
        mu = np.where(active, np.where(ok, newton, (inside + outside) / 2), mu)
        active &= ~done
    end = np.where(np.isnan(end), inside, end)
    return np.where(mean >= high, high, end)


def bounded_score_intervals(
    values: np.ndarray, low: float, high: float, z: float | np.ndarray = _Z975
) -> tuple[np.ndarray, np.ndarray]:
    """The score interval of the mean of each column of `values` (N, P), N >= 1 independent samples
    known to lie in [low, high]: {mu0 : n (mean - mu0)^2 <= z^2 V(mu0)}, V(mu0) the variance of the
    maximum-likelihood distribution with mean mu0 supported on the observed values and the two
    bounds (Owen's empirical likelihood, 1988, with the bounds added as unobserved support points).
    z = 1.96 for 95 %, or one quantile per column.

    It is Tango's interval (`paired_score_interval`) on samples in {-1, 0, 1} with bounds [-1, 1],
    and Wilson's on samples in {0, 1} with bounds [0, 1]; like them it never collapses to a point:
    where every sample is equal, mu0 beyond them keeps the variance of mass at the bound (N equal
    samples at 0 with bounds ±1 give ±z² / (N + z²)), where a t interval is that point. For large N
    it is the t interval's width. Returns (lows (P,), highs (P,)), within [low, high]; raises
    ValueError unless low < high and every value lies in [low, high]."""
    y = np.asarray(values, float)
    if y.ndim != 2 or len(y) < 1:
        raise ValueError("values must be (N, P) with N >= 1")
    if not low < high or y.min() < low or y.max() > high:
        raise ValueError(f"the values must lie in [{low}, {high}]")
    n, players = y.shape
    distinct, index = np.unique(y, return_inverse=True)
    if len(distinct) <= n:  # a few values (0/1 rewards): one column per distinct value, with counts
        counts = np.zeros((players, len(distinct)))
        np.add.at(counts, (np.broadcast_to(np.arange(players), (n, players)), index.reshape(n, players)), 1.0)
        x = np.broadcast_to(distinct, (players, len(distinct)))
    else:
        x, counts = y.T, np.ones((players, n))
    # the lower end is the upper end of the negated samples
    zs = np.broadcast_to(np.asarray(z, float), (players,))
    ends = _upper_score_ends(
        np.concatenate([x, -x]),
        np.concatenate([counts, counts]),
        np.concatenate([np.full(players, float(high)), np.full(players, -float(low))]),
        np.concatenate([zs, zs]),
    )
    return np.maximum(-ends[players:], low), np.minimum(ends[:players], high)


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


def score_quantile(n: int) -> float:
    """The quantile of the game estimators' score intervals over n independent samples: Student's
    t with n - 1 degrees of freedom at 0.975 (`t_quantile_975`)."""
    return t_quantile_975(n - 1)


def _game_attributions(
    names: Sequence[str],
    method: str,
    values: np.ndarray,
    n_rollouts: int,
    n_players: int | None = None,
) -> list[Attribution]:
    """One attribution per column of a game estimator's independent samples `values` (N, columns),
    N >= 2, on a game of `n_players` (default: one per column): the mean, with the bounded score
    interval (`bounded_score_intervals` at `score_quantile(N)`) for a method of SCORE_METHODS whose
    samples lie within `sample_bounds`, else the interval `_attribution` gives (the game's rewards
    must lie in REWARD_RANGE for the bounds to hold; only the samples are seen here, as
    `from_samples` sees them). Raises ValueError for N < 2."""
    values = np.asarray(values, float)
    n, players = values.shape
    if n < 2:
        raise ValueError("an interval needs at least 2 samples")
    bounds = sample_bounds(method, n_players or players) if method in SCORE_METHODS else None
    slack = 1e-9
    if bounds is None or values.min() < bounds[0] - slack or values.max() > bounds[1] + slack:
        return [_attribution(names[k], method, values[:, k], n_rollouts) for k in range(players)]
    low, high = bounds
    lows, highs = bounded_score_intervals(np.clip(values, low, high), low, high, score_quantile(n))
    means = [float(values[:, k].mean()) for k in range(players)]  # each column's own sum, as `from_samples` sums it
    return [
        Attribution(
            names[k],
            method,
            means[k],
            float(min(lows[k], means[k])),
            float(max(highs[k], means[k])),
            n_rollouts,
            values[:, k],
            "score",
        )
        for k in range(players)
    ]


def from_samples(
    target: str, method: str, values: np.ndarray, n_rollouts: int, players: int | None = None
) -> Attribution:
    """The attribution whose estimate is the mean of n >= 2 independent sample `values` (n,), with
    the interval the estimator of `method` gives them (module docstring): what an estimator's
    `samples` give back when they were computed in chunks and stored. `players`, the game's number
    of players, sets the bounds of a KernelSHAP sample (`sample_bounds`). Raises ValueError for
    n < 2, or for KernelSHAP samples without `players`."""
    values = np.asarray(values, float)
    if method in SCORE_METHODS:
        if players is None and method == "kernel_shap_paired":
            raise ValueError(f"{method} samples need the game's number of players")
        return _game_attributions([target], method, values.reshape(-1, 1), n_rollouts, players)[0]
    return _attribution(target, method, values, n_rollouts)


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
    return _game_attributions(names, "shapley_permutation_antithetic", marginals, 2 * n_players * n_pairs, n_players)


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
    (n_pairs,) per player, the bounded score interval over pairs (module docstring). 4 rollouts per
    pair.
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
    return _game_attributions(names, "kernel_shap_paired", phi, 4 * n_pairs, n)


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
    return _game_attributions(names, "shapley_2additive", phi, 2 * size * n_samples, n_players)


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
