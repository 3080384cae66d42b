"""Benchmark: credit estimators against SwarmSim's exact answers on the pivot-12 suite.

Every trace of pivot-12 (200 by default, `--traces`) has 12 candidate messages with planted effects
and exact leave-one-out Δ and Shapley values (`trainer.sim.suites`). Rewards are 0/1 outcomes.
Rollouts go through `trainer.rollout.sim.AggregateRollout`: the closed-form coalition values with
the aggregate's Bernoulli outcome drawn from (seed, "aggregate"), which is exactly what
re-simulating gives on this suite (every subtask succeeds surely; tested in
tests/trainer/rollout/test_sim.py, and re-checked here against `SimRollout` on `--check` traces).

1. RMSE of leave-one-out Δ against the exact Δ over all traces x 12 messages, paired (control and
   intervention share seeds) vs unpaired (independent seeds), by rollouts per message (2N for N
   pairs); the rollouts needed for RMSE 0.05. Target: paired needs >= 5x fewer.
2. The pivotal message ranked first (alone) by paired Δ with 32 and 64 pairs per message.
   Target: >= 95 % of traces with <= 64 paired rollouts per message.
3. Shapley values with about 2,000 rollouts per trace: permutation sampling with antithetic pairs
   (83 pairs x 24 rollouts), paired KernelSHAP (500 pairs x 4 rollouts) and the 2-additive
   orthogonal-design estimator (62 samples x 32 rollouts; exact in expectation here because
   pivot-12's planted effects interact at most pairwise); share of traces whose max abs error over
   the 12 messages is <= 0.05. Target: >= 90 %. Also with rewards replaced by
   their expectation E[R | coalition] (no outcome noise: the estimators' sampling error alone), and
   the Bernoulli budget sweep.
4. Redundant and synergistic pairs, where leave-one-out and Shapley disagree.

    .venv/bin/python bench/credit_efficiency.py [--traces 200] [--check 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from swarmscope.credit import (  # noqa: E402
    coalition_game,
    design_size,
    kernel_shap,
    leave_one_out,
    ranked_first,
    shapley_2additive,
    shapley_permutation,
    unpaired_effect,
)
from swarmscope.interventions import Intervention  # noqa: E402
from trainer.rollout.sim import AggregateRollout, SimRollout  # noqa: E402
from trainer.sim.suites import pivot12_case  # noqa: E402

PAIRS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
TARGET_RMSE = 0.05
SHAPLEY_BUDGETS = (500, 1_000, 2_000, 4_000, 8_000, 16_000)
SEED_STRIDE = 1_000_000  # trace k's rollouts use seeds from k * SEED_STRIDE


def estimates(results) -> np.ndarray:
    return np.array([r.estimate for r in results])


def loo_rmse(cases, fast) -> dict[str, list[float]]:
    """RMSE of paired and unpaired Δ over every trace and message, per N in PAIRS."""
    rmse: dict[str, list[float]] = {"paired": [], "unpaired": []}
    for n in PAIRS:
        errors = {"paired": [], "unpaired": []}
        for k, (case, rollout) in enumerate(zip(cases, fast)):
            seed = k * SEED_STRIDE
            errors["paired"].append(estimates(leave_one_out(rollout.game(), 12, n, seed)) - case.loo)
            errors["unpaired"].append(
                estimates(
                    [
                        unpaired_effect(rollout, Intervention("remove", (p,)), n, seed + 2 * n * j)
                        for j, p in enumerate(rollout.players)
                    ]
                )
                - case.loo
            )
        for name, e in errors.items():
            rmse[name].append(float(np.sqrt(np.mean(np.square(e)))))
    return rmse


def needed(rmse: list[float]) -> float:
    """Rollouts per message (2N) at which RMSE first reaches TARGET_RMSE, interpolating log-log
    between the grid's points; inf beyond the grid."""
    for i, value in enumerate(rmse):
        if value <= TARGET_RMSE:
            if i == 0:
                return 2.0 * PAIRS[0]
            x0, x1, y0, y1 = np.log(2 * PAIRS[i - 1]), np.log(2 * PAIRS[i]), np.log(rmse[i - 1]), np.log(value)
            return float(np.exp(x0 + (np.log(TARGET_RMSE) - y0) * (x1 - x0) / (y1 - y0)))
    return float("inf")


def expected_game(rollout: AggregateRollout):
    """The game with each reward replaced by its expectation E[R | S] (no outcome noise)."""
    weights = 1 << np.arange(len(rollout.candidates))
    return lambda kept, seeds: rollout.values[np.asarray(kept, bool) @ weights]


def shapley_share(cases, games, budget: int) -> dict[str, float]:
    """Share of traces with max |error| <= 0.05, for each Shapley estimator at `budget` rollouts."""
    ok = {"permutation (antithetic)": [], "KernelSHAP (paired)": [], "2-additive (orthogonal design)": []}
    per_sample = 2 * design_size(12)
    for k, (case, game) in enumerate(zip(cases, games)):
        seed = k * SEED_STRIDE
        perm = estimates(shapley_permutation(game, 12, budget // 24, seed, sampling_seed=k))
        kern = estimates(kernel_shap(game, 12, budget // 4, seed, sampling_seed=k))
        ok["permutation (antithetic)"].append(np.abs(perm - case.shapley).max() <= 0.05)
        design = estimates(shapley_2additive(game, 12, budget // per_sample, seed, sampling_seed=k))
        ok["KernelSHAP (paired)"].append(np.abs(kern - case.shapley).max() <= 0.05)
        ok["2-additive (orthogonal design)"].append(np.abs(design - case.shapley).max() <= 0.05)
    return {name: float(np.mean(v)) for name, v in ok.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--check", type=int, default=5, help="traces re-checked against SimRollout")
    args = parser.parse_args()
    start = time.perf_counter()
    cases = [pivot12_case(k) for k in range(args.traces)]
    fast = [AggregateRollout(case.episode) for case in cases]

    for k in range(args.check):  # the fast path is the re-simulation, rollout for rollout
        slow = coalition_game(SimRollout(cases[k].episode), [Intervention("remove", (p,)) for p in fast[k].players])
        a = shapley_permutation(slow, 12, 20, k * SEED_STRIDE, sampling_seed=k)
        b = shapley_permutation(fast[k].game(), 12, 20, k * SEED_STRIDE, sampling_seed=k)
        assert all(x.samples.tolist() == y.samples.tolist() for x, y in zip(a, b))
    print(f"fast path identical to re-simulation on {args.check} traces (20 antithetic pairs each)")

    rmse = loo_rmse(cases, fast)
    print("\n| rollouts per message (2N) | paired RMSE | unpaired RMSE |\n|---:|---:|---:|")
    for n, p, u in zip(PAIRS, rmse["paired"], rmse["unpaired"]):
        print(f"| {2 * n} | {p:.4f} | {u:.4f} |")
    paired_needed, unpaired_needed = needed(rmse["paired"]), needed(rmse["unpaired"])
    print(
        f"\nrollouts per message for RMSE {TARGET_RMSE}: paired {paired_needed:.0f}, unpaired "
        f"{unpaired_needed:.0f}, ratio {unpaired_needed / paired_needed:.1f}x (target >= 5x)"
    )

    for n in (32, 64):
        first = [
            ranked_first(
                leave_one_out(r.game(), 12, n, k * SEED_STRIDE, r.players), r.players[c.kinds.index("pivotal")]
            )
            for k, (c, r) in enumerate(zip(cases, fast))
        ]
        print(
            f"pivotal ranked first, {n} pairs ({2 * n} rollouts) per message: {np.mean(first):.1%} "
            f"of {len(cases)} (target >= 95 % with <= 64)"
        )

    print(
        "\n| rewards | rollouts per trace | permutation (antithetic) | KernelSHAP (paired) | "
        "2-additive (orthogonal design) |\n|---|---:|---:|---:|---:|"
    )
    noisy = [r.game() for r in fast]
    for budget in SHAPLEY_BUDGETS:
        share = shapley_share(cases, noisy, budget)
        print(
            f"| 0/1 outcomes (CRN) | {budget:,} | {share['permutation (antithetic)']:.1%} | "
            f"{share['KernelSHAP (paired)']:.1%} | {share['2-additive (orthogonal design)']:.1%} |"
        )
    share = shapley_share(cases, [expected_game(r) for r in fast], 2_000)
    print(
        f"| E[R given coalition] | 2,000 | {share['permutation (antithetic)']:.1%} | "
        f"{share['KernelSHAP (paired)']:.1%} | {share['2-additive (orthogonal design)']:.1%} |"
    )

    print(
        "\n| planted kind | exact LOO | paired LOO, 64 pairs: mean (sd) | exact Shapley | "
        "permutation Shapley, 2,000: mean (sd) |\n|---|---:|---:|---:|---:|"
    )
    loo, shap = [], []
    for k, (_case, rollout) in enumerate(zip(cases, fast)):
        loo.append(estimates(leave_one_out(rollout.game(), 12, 64, k * SEED_STRIDE)))
        shap.append(estimates(shapley_permutation(rollout.game(), 12, 83, k * SEED_STRIDE, sampling_seed=k)))
    kinds = np.array([case.kinds for case in cases])
    exact_loo, exact_shap = np.array([c.loo for c in cases]), np.array([c.shapley for c in cases])
    for kind in ("pivotal", "redundant", "synergistic", "harmful", "null"):
        at = kinds == kind
        print(
            f"| {kind} | {exact_loo[at].mean():+.3f} | {np.array(loo)[at].mean():+.3f} "
            f"({np.array(loo)[at].std():.3f}) | {exact_shap[at].mean():+.3f} | "
            f"{np.array(shap)[at].mean():+.3f} ({np.array(shap)[at].std():.3f}) |"
        )
    print(f"\n{len(cases)} traces, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
