"""Benchmark: do the 95 % intervals of paired leave-one-out Δ cover 95 % of the time?

Many distinct SwarmSim games (not one relabelled), from `trainer.sim.games` (family `mixed`, game
g seeded 31,000 + g): a random task of 2-4 x 1-3 subtasks solved by 2-4 solvers, with 4-8
candidate messages to the orchestrator carrying randomly drawn planted effects on the aggregate
(`trainer.sim.effects`): one pivotal (+U(0.02, 0.45)), one harmful (-U(0.02, 0.40)), a
synergistic pair (+U(0.02, 0.40) together), a redundant pair (+U(0.02, 0.30) for either) when
there is room, the rest null; the aggregate's base success probability is U(0.05, 0.70). The
exact Δ of every message is `trainer.sim.exact.leave_one_out` of the exact coalition values; per
game one message with a real effect (|Δ| > 1e-9: pivotal, harmful, synergistic) and one with none
(Δ = 0 exactly: null or redundant) are scored.

Families (how the two arms of a pair share randomness):

- `crn`: SwarmSim's common random numbers, `trainer.rollout.sim.AggregateRollout` (perfect
  coupling: every paired difference has the sign of Δ or is 0, the hardest case for a t interval);
- `half`: the intervention arm reuses the control's aggregate draw on half the seeds and draws its
  own on the others (partial coupling, as LLM re-rollouts share some of their randomness:
  `trainer.sim.games.coupled_rollout`, rho = 0.5);
- `none`: independent draws in the two arms (no coupling, rho = 0), still paired by seed;
- `resim`: `trainer.rollout.sim.SimRollout` re-simulating every rollout on tasks whose subtasks
  may fail (family `mixed-resim`, difficulty U(0.1, 0.4)), exact values from the closed form;
- `graded`: rewards that are not 0/1, as an LLM verifier's scores: the mean of 4 aggregate draws
  (R in {0, 1/4, .., 1}, E[R] = v(S) still), CRN in both arms; `paired_effect` reports a t
  interval here (the differences are not all in {-1, 0, 1});
- `pivot12`: the audit's suite (`trainer.sim.suites.pivot12_case`, 200 traces, each on 5 seed
  blocks), CRN.

For each game, N = 4, 8, 16, 32 pairs (the first N seeds, as a job's leading samples), both
intervals computed from the same differences: `t` (Student t, exact quantiles: what every job
reported before) and what `paired_effect` reports now (Tango's score interval,
`swarmscope.credit.paired_score_interval`, for 0/1 rewards; t otherwise). Coverage is the share
of games whose interval holds the exact Δ, with its Wilson 95 % interval (games are independent).
Then the ε stop, as `maybe_finish_job` runs it (checked after every chunk of 8 samples, cap 256),
before (t interval, stop when width < ε) and now (`swarmscope.credit.epsilon_met` on Tango's
interval): how often it reports a zero-width interval, its coverage, its mean error and the samples
it draws.

    .venv/bin/python bench/bench_interval_coverage.py [--games 2000] [--resim-games 300]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from swarmscope.credit import epsilon_met, paired_effect, t_quantile_975  # noqa: E402
from swarmscope.interventions import Intervention  # noqa: E402
from trainer.rollout.sim import AggregateRollout, SimRollout  # noqa: E402
from trainer.sim.games import Game, coupled_rollout, make_game  # noqa: E402
from trainer.sim.rng import key_hash, uniforms  # noqa: E402

NS = (4, 8, 16, 32)
SEED_STRIDE = 1_000_000  # game g's rollouts use seeds from g * SEED_STRIDE
CHUNK, CAP, EPSILONS = 8, 256, (0.1, 0.2)
Z = NormalDist().inv_cdf(0.975)


def graded_rollout(game: Game, draws: int = 4):
    """A Rollout over `game`'s exact values whose reward is the share of `draws` aggregate draws
    below v(S) (each keyed by seed, the same in both arms): E[R | S] = v(S), R not 0/1."""
    keys = [key_hash(f"aggregate/{j}") for j in range(draws)]
    bit = {player: 1 << k for k, player in enumerate(game.players)}

    def rollout(intervention: Intervention | None, seeds: np.ndarray) -> np.ndarray:
        seeds = np.asarray(seeds)
        mask = len(game.values) - 1
        for event in intervention.events if intervention is not None else ():
            mask &= ~bit[event]
        u = np.stack([uniforms(seeds, np.full(len(seeds), key, np.uint64)) for key in keys])
        return (u < game.values[mask]).mean(axis=0)

    return rollout


def rollout_of(game: Game, family: str):
    if family == "graded":
        return graded_rollout(game)
    if family in ("crn", "pivot12"):
        return AggregateRollout(game.episode)
    if family == "resim":
        return SimRollout(game.episode)
    return coupled_rollout(game, {"half": 0.5, "none": 0.0}[family])


def targets(game: Game, rng: np.random.Generator) -> dict[str, int]:
    """One scored message per kind: "real" (|Δ| > 1e-9) and "null" (Δ = 0), where the game has one."""
    real = np.flatnonzero(np.abs(game.loo) > 1e-9)
    zero = np.flatnonzero(np.abs(game.loo) <= 1e-12)
    chosen = {}
    if len(real):
        chosen["real"] = int(rng.choice(real))
    if len(zero):
        chosen["null"] = int(rng.choice(zero))
    return chosen


def t_interval(differences: np.ndarray) -> tuple[float, float]:
    """The Student t 95 % interval of the mean of `differences` (N,), exact quantiles."""
    mean = float(differences.mean())
    half = t_quantile_975(len(differences) - 1) * float(differences.std(ddof=1)) / np.sqrt(len(differences))
    return mean - half, mean + half


def wilson(hits: int, n: int) -> tuple[float, float]:
    """Wilson's 95 % interval of a proportion hits / n (Wilson 1927)."""
    if n == 0:
        return float("nan"), float("nan")
    p, z2 = hits / n, Z * Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return centre - half, centre + half


def cell(hits: int, n: int) -> str:
    low, high = wilson(hits, n)
    return f"{hits / n:.3f} [{low:.3f}, {high:.3f}]" if n else "—"


def coverage(games: list[Game], family: str, repeats: int = 1) -> tuple[dict, dict]:
    """hits[(interval, kind, N)] and counts[(kind, N)] over `games`, each scored on `repeats`
    independent seed blocks (a new target drawn each time); also zero-width counts."""
    hits: dict = {}
    counts: dict = {}
    rng = np.random.default_rng(7)
    for g, game in enumerate(games):
        rollout = rollout_of(game, family)
        for r in range(repeats):
            for kind, k in targets(game, rng).items():
                intervention = Intervention("remove", (game.players[k],))
                truth = game.loo[k]
                seed = g * SEED_STRIDE + r * 1000
                for n in NS:
                    effect = paired_effect(rollout, intervention, n, seed)
                    low, high = t_interval(effect.samples)
                    for name, (a, b) in (("t", (low, high)), ("reported", (effect.ci_low, effect.ci_high))):
                        key = (name, kind, n)
                        hits[key] = hits.get(key, 0) + int(a - 1e-12 <= truth <= b + 1e-12)
                    used = ("tango used", kind, n)
                    hits[used] = hits.get(used, 0) + int(effect.interval == "tango")
                    if effect.interval == "t":  # coverage of the t interval where it is the one reported
                        hits[("t reported", kind, n)] = hits.get(("t reported", kind, n), 0) + 1
                        covered = effect.ci_low - 1e-12 <= truth <= effect.ci_high + 1e-12
                        hits[("t reported hit", kind, n)] = hits.get(("t reported hit", kind, n), 0) + int(covered)
                    zero = ("zero-width t", kind, n)
                    hits[zero] = hits.get(zero, 0) + int(high - low == 0)
                    counts[(kind, n)] = counts.get((kind, n), 0) + 1
    return hits, counts


def epsilon_stop(games: list[Game], epsilon: float) -> dict[str, dict[str, float]]:
    """The ε stop on each game's real-effect message (crn family), before and now."""
    rng = np.random.default_rng(11)
    rows: dict[str, list] = {"before (t, width < ε)": [], "now (epsilon_met, Tango)": []}
    for g, game in enumerate(games):
        chosen = targets(game, rng)
        if "real" not in chosen:
            continue
        k = chosen["real"]
        rollout = AggregateRollout(game.episode)
        intervention = Intervention("remove", (game.players[k],))
        seed = g * SEED_STRIDE
        control = rollout(None, np.arange(seed, seed + CAP))
        treated = rollout(intervention, np.arange(seed, seed + CAP))
        differences = control - treated
        for name in rows:
            n = CHUNK
            while True:
                if name.startswith("before"):
                    low, high = t_interval(differences[:n])
                    stop_now = high - low < epsilon
                else:
                    effect = paired_effect(
                        lambda i, s: control[s - seed] if i is None else treated[s - seed], intervention, n, seed
                    )
                    low, high = effect.ci_low, effect.ci_high
                    stop_now = epsilon_met(effect, epsilon, n)
                if stop_now or n == CAP:
                    break
                n += CHUNK
            estimate = float(differences[:n].mean())
            rows[name].append(
                (
                    high - low == 0,
                    estimate == 0 and high == low == 0,
                    low <= game.loo[k] <= high,
                    estimate - game.loo[k],
                    n,
                )
            )
    out = {}
    for name, r in rows.items():
        a = np.array(r, float)
        out[name] = {
            "games": len(a),
            "zero-width": int(a[:, 0].sum()),
            "Δ = 0, CI [0, 0]": int(a[:, 1].sum()),
            "covered": int(a[:, 2].sum()),
            "mean error": float(a[:, 3].mean()),
            "mean n": float(a[:, 4].mean()),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000, help="games per aggregate family")
    parser.add_argument("--resim-games", type=int, default=300, help="games of the re-simulated family")
    parser.add_argument("--epsilon-games", type=int, default=1000)
    parser.add_argument("--pivot12", type=int, default=200, help="pivot-12 traces (5 seed blocks each)")
    args = parser.parse_args()
    start = time.perf_counter()
    games = [make_game("mixed", g) for g in range(args.games)]
    resim = [make_game("mixed-resim", g) for g in range(args.resim_games)]
    pivot = [make_game("pivot12", k) for k in range(args.pivot12)]
    real = np.concatenate([np.abs(game.loo[np.abs(game.loo) > 1e-9]) for game in games])
    print(
        f"{len(games)} aggregate games ({time.perf_counter() - start:.0f} s to build); real |Δ|: "
        f"quartiles {np.quantile(real, [0.25, 0.5, 0.75]).round(3).tolist()}, max {real.max():.3f}"
    )
    print(
        "\n| family | kind | N | t (exact quantiles) | reported now | Tango share | t where reported | t zero-width |"
        "\n|---|---|---:|---|---|---:|---|---:|"
    )
    families = (
        ("crn", games, 1),
        ("half", games, 1),
        ("none", games, 1),
        ("resim", resim, 1),
        ("graded", games, 1),
        ("pivot12", pivot, 5),
    )
    for family, pool, repeats in families:
        if not pool:
            continue
        t0 = time.perf_counter()
        hits, counts = coverage(pool, family, repeats)
        for kind in ("real", "null"):
            for n in NS:
                c = counts.get((kind, n), 0)
                print(
                    f"| {family} | {kind} | {n} | {cell(hits.get(('t', kind, n), 0), c)} | "
                    f"{cell(hits.get(('reported', kind, n), 0), c)} | "
                    f"{hits.get(('tango used', kind, n), 0) / max(c, 1):.2f} | "
                    f"{cell(hits.get(('t reported hit', kind, n), 0), hits.get(('t reported', kind, n), 0))} | "
                    f"{hits.get(('zero-width t', kind, n), 0) / max(c, 1):.3f} |"
                )
        print(f"<!-- {family}: {time.perf_counter() - t0:.0f} s -->")
    for epsilon in EPSILONS if args.epsilon_games else ():
        print(
            f"\nε stop at ε = {epsilon} (crn, real effects, chunks of {CHUNK}, cap {CAP}):\n\n"
            "| rule | games | zero-width | Δ = 0, CI [0, 0] | coverage | mean error | mean n |\n"
            "|---|---:|---:|---:|---|---:|---:|"
        )
        for name, row in epsilon_stop(games[: args.epsilon_games], epsilon).items():
            print(
                f"| {name} | {row['games']} | {row['zero-width']} | {row['Δ = 0, CI [0, 0]']} | "
                f"{cell(row['covered'], row['games'])} | {row['mean error']:+.4f} | {row['mean n']:.1f} |"
            )
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
