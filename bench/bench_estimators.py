"""Benchmark: credit estimators against exact answers on game families that can make them fail (issue 16).

Games: `trainer.sim.games` (many distinct SwarmSim episodes per family, 6-8 candidate messages):
`pairwise` (interactions at most pairwise, varied sizes), `synergy3` / `synergy4` (one 3- or
4-way synergy), `redundancy` (a redundant triple), `noisy` (subtasks that may fail, effects on
subtasks and on the aggregate, re-simulated downstream of the fork). Coupling rho in COUPLINGS:
the probability that a counterfactual rollout reuses the factual rollout's draw of each outcome
after the fork (1: SwarmSim's common random numbers; 0: regenerated, as LLM re-rollouts are).

Estimators (`swarmscope.credit`), each against its own exact target (`trainer.sim.exact`):
`loo paired` (`leave_one_out`, N seeds shared by the control and every removal: N (n + 1)
rollouts) and `loo unpaired` (`unpaired_effect` per player, independent seeds: 2 N n; rho does not
apply) against leave-one-out Δ; `shapley permutation` (antithetic pairs: 2 n per pair),
`kernel shap` (paired coalitions: 4 per pair) and `2-additive` (orthogonal design: 2
`design_size(n)` per sample) against Shapley values.

Per estimator x family x rho, over a ladder of budgets (rollouts per game, each estimator taking
as many samples as fit, at least 2): the mean over games of the mean |estimate - exact| over the
players, and the rollouts at which it first reaches 0.05 (log-log interpolation between rungs);
at the reference budget: the share of games with max |error| <= 0.05, top-1 accuracy (the player
ranked first has the largest exact value; ties for the largest count as right) and the 95 %
interval's coverage of the exact value for one player per game of each kind, "real" (|exact| >
1e-9) and "null" (exact = 0), with Wilson intervals (games are independent). Then, per family and
coupling, coverage of real effects and the null-flag rate (the share of runs whose interval for a
player with exact value 0 excludes 0, a null message called real) at N = 2, 4, 8, 16, 32, 64
samples, on `reps` independent seed blocks per game (a scored player drawn anew for each), with
their Monte-Carlo error ±1.96 sqrt(p (1 - p) / runs) and the mean width of the real effects'
intervals. The full default run writes the numbers the attribution panel's estimator guide shows
(`static/js/panels/estimator_bench.js`, with the date and command) unless `--no-guide`: per N,
coverage and null-flag rate per coupling, the worst family of each, and the cells significantly
off nominal (Wilson interval wholly below 0.95, or wholly above 0.05 for null flags).

    .venv/bin/python bench/bench_estimators.py [--profile full|ci] [--workers 2] [--reps 2] [--no-guide]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from swarmscope.credit import (  # noqa: E402
    Attribution,
    design_size,
    kernel_shap,
    leave_one_out,
    shapley_2additive,
    shapley_permutation,
    t_quantile_975,
    unpaired_effect,
)
from swarmscope.interventions import Intervention  # noqa: E402
from trainer.sim.games import COUPLINGS, FAMILIES, Game, coupled_game, coupled_rollout, make_game  # noqa: E402

ESTIMATORS = ("loo paired", "loo unpaired", "shapley permutation", "kernel shap", "2-additive")
#: The exact value each estimator estimates: leave-one-out Δ or the Shapley value.
TARGETS = {
    "loo paired": "loo",
    "loo unpaired": "loo",
    "shapley permutation": "shapley",
    "kernel shap": "shapley",
    "2-additive": "shapley",
}
#: The app's method name of each estimator (webapp/counterfactuals/services.py ESTIMATORS).
METHODS = {"loo paired": "loo", "shapley permutation": "shapley", "kernel shap": "kernelshap", "2-additive": "shapley2"}
TARGET_ERROR = 0.05
NS = (2, 4, 8, 16, 32, 64)
#: The intervals' nominal coverage, and the null-flag rate it implies.
NOMINAL = 0.95
NULL_NOMINAL = 0.05  # 1 - NOMINAL
SEED_STRIDE = 1_000_000  # game g's rollouts use seeds from g * SEED_STRIDE
REP_STRIDE = 20_000  # seed block r of the coverage by N starts r * REP_STRIDE after block 0
Z = NormalDist().inv_cdf(0.975)
GUIDE = ROOT / "static" / "js" / "panels" / "estimator_bench.js"


@dataclass(frozen=True)
class Profile:
    """A benchmark size: `games` per family, the budget `ladder` (rollouts per game), the
    `reference` budget of the accuracy and coverage columns, `ns` (sample counts of the coverage
    table), `reps` (independent seed blocks per game at each of them), `families` and `couplings`.
    Raises ValueError unless the reference is a rung."""

    games: int
    ladder: tuple[int, ...]
    reference: int
    ns: tuple[int, ...] = NS
    families: tuple[str, ...] = FAMILIES
    couplings: tuple[float, ...] = COUPLINGS
    reps: int = 1

    def __post_init__(self):
        if self.reference not in self.ladder:
            raise ValueError(f"the reference budget {self.reference} is not on the ladder {self.ladder}")


PROFILES = {
    "full": Profile(games=160, ladder=(64, 128, 256, 512, 1024, 2048, 4096, 8192), reference=1024, reps=2),
    "ci": Profile(games=12, ladder=(128, 512, 2048), reference=512, ns=(2, 4, 8, 32)),
}


def per_sample(estimator: str, n_players: int) -> int:
    """Rollouts one sample of `estimator` costs on a game of n_players."""
    return {
        "loo paired": n_players + 1,
        "loo unpaired": 2 * n_players,
        "shapley permutation": 2 * n_players,
        "kernel shap": 4,
        "2-additive": 2 * design_size(n_players),
    }[estimator]


def run_estimator(
    estimator: str, game: Game, play: Callable, rollout: Callable, samples: int, seed: int
) -> list[Attribution]:
    """`samples` >= 2 samples of `estimator` on `game` (coalition game `play`, `rollout` for the
    unpaired one), seeds from `seed`; one attribution per player."""
    n = game.n_players
    if estimator == "loo paired":
        return leave_one_out(play, n, samples, seed, game.players)
    if estimator == "loo unpaired":
        return [
            unpaired_effect(rollout, Intervention("remove", (p,)), samples, seed + 2 * samples * j)
            for j, p in enumerate(game.players)
        ]
    function = {"shapley permutation": shapley_permutation, "kernel shap": kernel_shap, "2-additive": shapley_2additive}
    return function[estimator](play, n, samples, seed, sampling_seed=seed, targets=game.players)


def scored_players(exact: np.ndarray, rng: np.random.Generator) -> dict[str, int]:
    """One player per kind, drawn with `rng`: "real" (|exact| > 1e-9) and "null" (|exact| <= 1e-12),
    where the game has one."""
    chosen = {}
    real, zero = np.flatnonzero(np.abs(exact) > 1e-9), np.flatnonzero(np.abs(exact) <= 1e-12)
    if len(real):
        chosen["real"] = int(rng.choice(real))
    if len(zero):
        chosen["null"] = int(rng.choice(zero))
    return chosen


def covers(attribution: Attribution, truth: float) -> bool:
    """Whether the 95 % interval holds `truth` (1e-12 slack for rounding)."""
    return attribution.ci_low - 1e-12 <= truth <= attribution.ci_high + 1e-12


def coverage_hits(attributions: list[Attribution], exact: np.ndarray, chosen: dict[str, int]) -> dict[str, bool]:
    """kind -> whether player chosen[kind]'s interval covers its exact value."""
    return {kind: covers(attributions[k], float(exact[k])) for kind, k in chosen.items()}


def t_covers(attribution: Attribution, truth: float) -> bool:
    """Whether the Student t 95 % interval of `attribution`'s samples holds `truth` (what the game
    estimators reported before the bounded score interval)."""
    samples = np.asarray(attribution.samples, float)
    mean, half = samples.mean(), t_quantile_975(len(samples) - 1) * samples.std(ddof=1) / np.sqrt(len(samples))
    return bool(mean - half - 1e-12 <= truth <= mean + half + 1e-12)


def top1(attributions: list[Attribution], exact: np.ndarray) -> bool:
    """Whether the player with the highest estimate (first on ties) has the largest exact value."""
    first = int(np.argmax([a.estimate for a in attributions]))
    return bool(exact[first] >= exact.max() - 1e-9)


def unequal_zero_width(attributions: list[Attribution]) -> int:
    """How many of `attributions` have a zero-width interval though their samples are not all equal."""
    return sum(a.width == 0 and np.ptp(np.asarray(a.samples, float)) > 0 for a in attributions)


def score_game(task: tuple[str, int, Profile]) -> dict[str, Any]:
    """Every measurement of one game (module docstring), by (estimator, rho): plain lists."""
    family, g, profile = task
    game = make_game(family, g)
    seed = g * SEED_STRIDE
    out: dict[str, Any] = {"family": family, "game": g, "n": game.n_players, "cells": {}}
    for rho in profile.couplings:
        play, rollout = coupled_game(game, rho), coupled_rollout(game, rho)
        for estimator in ESTIMATORS:
            if estimator == "loo unpaired" and rho != profile.couplings[0]:
                continue  # independent seeds: the coupling does not apply
            exact = game.loo if TARGETS[estimator] == "loo" else game.shapley
            chosen = scored_players(exact, np.random.default_rng([g, ESTIMATORS.index(estimator)]))
            cell: dict[str, Any] = {"mean": [], "max": [], "rollouts": [], "zero": 0}
            for budget in profile.ladder:
                samples = max(2, budget // per_sample(estimator, game.n_players))
                result = run_estimator(estimator, game, play, rollout, samples, seed)
                error = np.abs(np.array([a.estimate for a in result]) - exact)
                cell["zero"] += unequal_zero_width(result)
                cell["mean"].append(float(error.mean()))
                cell["max"].append(float(error.max()))
                cell["rollouts"].append(samples * per_sample(estimator, game.n_players))
                if budget == profile.reference:
                    cell["top1"] = top1(result, exact)
                    cell["pass"] = bool(error.max() <= TARGET_ERROR)
                    cell["ref_mean"] = float(error.mean())
                    cell["coverage"] = coverage_hits(result, exact, chosen)
            cell["by_n"] = {}
            for r in range(profile.reps):
                # rep 0 scores the players above; each further seed block draws its own
                scored = (
                    chosen
                    if r == 0
                    else scored_players(exact, np.random.default_rng([g, ESTIMATORS.index(estimator), r]))
                )
                for n in profile.ns:
                    result = run_estimator(estimator, game, play, rollout, n, seed + SEED_STRIDE // 2 + r * REP_STRIDE)
                    cell["zero"] += unequal_zero_width(result)
                    hits = coverage_hits(result, exact, scored)
                    if "real" in scored:
                        hits["width"] = result[scored["real"]].width
                    if result[0].interval == "score":  # the t interval these samples got before (issue 30)
                        hits |= {f"{kind} t": t_covers(result[k], float(exact[k])) for kind, k in scored.items()}
                    cell["by_n"].setdefault(n, []).append(hits)
            out["cells"][f"{estimator}|{rho}"] = cell
    return out


def wilson(hits: int, n: int) -> tuple[float, float]:
    """Wilson's 95 % interval of a proportion hits / n (Wilson 1927); NaNs for n = 0."""
    if n == 0:
        return float("nan"), float("nan")
    p, z2 = hits / n, Z * Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return float(centre - half), float(centre + half)


def share(hits: int, n: int) -> str:
    low, high = wilson(hits, n)
    return f"{hits / n:.3f} [{low:.2f}, {high:.2f}]" if n else "—"


def needed(errors: list[float], rollouts: list[float]) -> float:
    """Rollouts at which the error first reaches TARGET_ERROR, interpolating log-log between rungs;
    the first rung when it starts below; inf when it never does."""
    for i, value in enumerate(errors):
        if value <= TARGET_ERROR:
            if i == 0:
                return float(rollouts[0])
            x0, x1 = np.log(rollouts[i - 1]), np.log(rollouts[i])
            y0, y1 = np.log(errors[i - 1]), np.log(max(value, 1e-12))
            return float(np.exp(x0 + (np.log(TARGET_ERROR) - y0) * (x1 - x0) / (y1 - y0)))
    return float("inf")


def summarise(scores: list[dict[str, Any]], profile: Profile) -> dict[str, dict[str, Any]]:
    """Per "estimator|family|rho": rollouts to error, mean error per rung, pass share, top-1,
    coverage counts at the reference budget and by N, unequal zero-width intervals."""
    table: dict[str, dict[str, Any]] = {}
    for score in scores:
        for name, cell in score["cells"].items():
            estimator, rho = name.split("|")
            row = table.setdefault(
                f"{estimator}|{score['family']}|{rho}",
                {"mean": [], "rollouts": [], "pass": 0, "top1": 0, "games": 0, "zero": 0, "ref_mean": []}
                | {"coverage": {}, "by_n": {}, "widths": {}},
            )
            row["mean"].append(cell["mean"])
            row["rollouts"].append(cell["rollouts"])
            row["ref_mean"].append(cell["ref_mean"])
            row["games"] += 1
            row["pass"] += cell["pass"]
            row["top1"] += cell["top1"]
            row["zero"] += cell["zero"]
            for kind, hit in cell["coverage"].items():
                hits, count = row["coverage"].get(kind, (0, 0))
                row["coverage"][kind] = (hits + hit, count + 1)
            for n, reps in cell["by_n"].items():
                for kinds in reps if isinstance(reps, list) else [reps]:
                    for kind, hit in kinds.items():
                        if kind == "width":
                            row["widths"].setdefault(int(n), []).append(hit)
                            continue
                        hits, count = row["by_n"].get((int(n), kind), (0, 0))
                        row["by_n"][(int(n), kind)] = (hits + hit, count + 1)
    for row in table.values():
        mean = np.mean(row.pop("mean"), axis=0)
        rollouts = np.mean(row.pop("rollouts"), axis=0)
        row["ladder"] = [(float(r), float(e)) for r, e in zip(rollouts, mean)]
        row["needed"] = needed(list(mean), list(rollouts))
        row["ref_mean"] = float(np.mean(row["ref_mean"]))
        row["widths"] = {n: float(np.mean(w)) for n, w in row["widths"].items()}
    return table


def markdown(table: dict[str, dict[str, Any]], profile: Profile) -> str:
    """The RESULTS tables: the main one, then coverage by N."""
    lines = [
        f"| estimator | family | ρ | rollouts to mean err ≤ {TARGET_ERROR} | mean err at {profile.reference:,} | "
        f"max err ≤ {TARGET_ERROR} at {profile.reference:,} | top-1 at {profile.reference:,} | "
        "coverage, real | coverage, null |",
        "|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for key, row in table.items():
        estimator, family, rho = key.split("|")
        needed_ = "> {:,.0f}".format(row["ladder"][-1][0]) if row["needed"] == float("inf") else f"{row['needed']:,.0f}"
        lines.append(
            f"| {estimator} | {family} | {'—' if estimator == 'loo unpaired' else rho} | {needed_} | "
            f"{row['ref_mean']:.3f} | {row['pass'] / row['games']:.2f} | {row['top1'] / row['games']:.2f} | "
            f"{share(*row['coverage'].get('real', (0, 0)))} | {share(*row['coverage'].get('null', (0, 0)))} |"
        )
    runs = f"{profile.games} games x {profile.reps} seed blocks per family and coupling"
    before = {key: row for key, row in table.items() if any(kind == "real t" for _, kind in row["by_n"])}
    lines += [
        "",
        f"Real-effect coverage by N ({runs}; bold: Wilson interval wholly below {NOMINAL}):",
        "",
        *by_n_table(table, profile, "real"),
        "",
        f"Null-flag rate by N (interval excludes 0 for an exact-0 player; bold: wholly above {NULL_NOMINAL:.2f}):",
        "",
        *by_n_table(table, profile, "null"),
        "",
        "Before: the Student t interval on the same samples, real-effect coverage:",
        "",
        *by_n_table(before, profile, "real t"),
        "",
        "Before: the Student t interval on the same samples, null-flag rate:",
        "",
        *by_n_table(before, profile, "null t"),
        "",
        "Mean width of the real effects' intervals (reward units):",
        "",
    ]
    lines += [
        "| estimator | family | ρ | " + " | ".join(f"N = {n}" for n in profile.ns) + " |",
        "|---|---|---:|" + "---:|" * len(profile.ns),
    ]
    for key, row in table.items():
        estimator, family, rho = key.split("|")
        widths = [f"{row['widths'][n]:.3f}" if n in row["widths"] else "—" for n in profile.ns]
        lines.append(
            f"| {estimator} | {family} | {'—' if estimator == 'loo unpaired' else rho} | " + " | ".join(widths) + " |"
        )
    return "\n".join(lines)


def mc(hits: int, n: int) -> str:
    """A share with its Monte-Carlo error, p ± 1.96 sqrt(p (1 - p) / n)."""
    if not n:
        return "—"
    p = hits / n
    return f"{p:.3f} ± {Z * np.sqrt(p * (1 - p) / n):.3f}"


def by_n_table(table: dict[str, dict[str, Any]], profile: Profile, kind: str) -> list[str]:
    """Markdown rows by estimator, family and coupling: real-effect coverage (kind "real") or the
    null-flag rate (kind "null": 1 - coverage of players with exact value 0) at each N, with their
    Monte-Carlo errors; a cell off nominal (Wilson interval wholly below 0.95, or wholly above 0.05
    for the null-flag rate) in bold."""
    lines = [
        "| estimator | family | ρ | " + " | ".join(f"N = {n}" for n in profile.ns) + " |",
        "|---|---|---:|" + "---|" * len(profile.ns),
    ]
    for key, row in table.items():
        estimator, family, rho = key.split("|")
        cells = []
        for n in profile.ns:
            hits, count = row["by_n"].get((n, kind), (0, 0))
            shown = hits if kind.startswith("real") else count - hits
            text = mc(shown, count)
            cells.append(f"**{text}**" if count and off_nominal(hits, count) else text)
        lines.append(
            f"| {estimator} | {family} | {'—' if estimator == 'loo unpaired' else rho} | " + " | ".join(cells) + " |"
        )
    return lines


def off_nominal(hits: int, count: int) -> bool:
    """Whether coverage hits / count is significantly below NOMINAL: its Wilson interval lies wholly
    below it (for a null player, the null-flag rate's lies wholly above NULL_NOMINAL)."""
    return bool(count) and wilson(hits, count)[1] < NOMINAL


def guide(table: dict[str, dict[str, Any]], profile: Profile, command: str) -> dict[str, Any]:
    """The numbers of the attribution panel's estimator guide (static/js/panels/estimator_guide.js),
    per app method: by family and coupling, rollouts to mean error <= TARGET_ERROR (null: not
    reached on the ladder), mean error, the share of games with max error <= TARGET_ERROR and top-1
    at the reference budget; by N, real-effect coverage and the null-flag rate pooled (with Wilson
    intervals), per coupling (pooled over families, with the worst family) and in the worst cell, and
    the cells significantly off nominal (`off_nominal`)."""
    methods: dict[str, Any] = {}
    for estimator, method in METHODS.items():
        families: dict[str, Any] = {}
        for family in profile.families:
            families[family] = {}
            for rho in profile.couplings:
                row = table[f"{estimator}|{family}|{rho}"]
                families[family][str(rho)] = {
                    "rollouts_to_error": None if row["needed"] == float("inf") else round(row["needed"]),
                    "mean_error": round(row["ref_mean"], 4),
                    "max_error_pass": round(row["pass"] / row["games"], 3),
                    "top1": round(row["top1"] / row["games"], 3),
                }
        coverage: dict[str, Any] = {}
        for n in profile.ns:
            coverage[str(n)] = coverage_at(table, profile, estimator, n)
        methods[method] = {"estimator": estimator, "families": families, "coverage": coverage}
    return {
        "measured": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "games_per_family": profile.games,
        "reps": profile.reps,
        "target_error": TARGET_ERROR,
        "reference_budget": profile.reference,
        "nominal": NOMINAL,
        "null_nominal": NULL_NOMINAL,
        "methods": methods,
    }


def coverage_at(table: dict[str, dict[str, Any]], profile: Profile, estimator: str, n: int) -> dict[str, Any]:
    """`guide`'s coverage entry of `estimator` at N = n: "real" and "null_flag" pooled over every
    family and coupling, "real_worst" / "null_flag_worst" and their cells ("family rho"),
    "couplings": per rho the shares pooled over families, their runs, worst family and the real
    effects' mean interval width, and "under" / "over_null": the cells off nominal (`off_nominal`)."""

    def counts(kind: str, family: str | None = None, rho: float | None = None) -> tuple[int, int]:
        cells = [
            table[f"{estimator}|{f}|{r}"]["by_n"].get((n, kind), (0, 0))
            for f in profile.families
            for r in profile.couplings
            if (family is None or f == family) and (rho is None or r == rho)
        ]
        return sum(h for h, _ in cells), sum(c for _, c in cells)

    def flags(kind: str, family: str | None = None, rho: float | None = None) -> tuple[int, int]:
        hits, count = counts(kind, family, rho)
        return (hits, count) if kind == "real" else (count - hits, count)

    def worst(kind: str, rho: float | None = None) -> tuple[str, float]:
        cells = [
            (f, r, *flags(kind, f, r)) for f in profile.families for r in profile.couplings if rho is None or r == rho
        ]
        cells = [c for c in cells if c[3]]
        if not cells:
            return "", float("nan")
        pick = min if kind == "real" else max
        f, r, hits, count = pick(cells, key=lambda c: c[2] / c[3])
        return f"{f} {r}", round(hits / count, 3)

    def share_of(hits: int, count: int) -> float | None:
        return round(hits / count, 3) if count else None

    out: dict[str, Any] = {}
    for kind, name in (("real", "real"), ("null", "null_flag")):
        hits, count = flags(kind)
        cell, value = worst(kind)
        out |= {name: share_of(hits, count), f"{name}_worst": None if not count else value, f"{name}_worst_cell": cell}
    out["couplings"] = {}
    for rho in profile.couplings:
        entry: dict[str, Any] = {}
        for kind, name in (("real", "real"), ("null", "null_flag")):
            hits, count = flags(kind, rho=rho)
            cell, value = worst(kind, rho)
            entry |= {
                name: share_of(hits, count),
                f"{name}_runs": count,
                f"{name}_worst": None if not count else value,
                f"{name}_worst_family": cell.split(" ")[0],
            }
        widths = [table[f"{estimator}|{f}|{rho}"]["widths"].get(n) for f in profile.families]
        widths = [w for w in widths if w is not None]
        entry["real_width"] = round(float(np.mean(widths)), 3) if widths else None
        out["couplings"][str(rho)] = entry
    out["under"] = [
        f"{f} {r}" for f in profile.families for r in profile.couplings if off_nominal(*counts("real", f, r))
    ]
    out["over_null"] = [
        f"{f} {r}" for f in profile.families for r in profile.couplings if off_nominal(*counts("null", f, r))
    ]
    return out


def compact_json(value: Any, indent: int = 0) -> str:
    """`value` as JSON: an object or list holding only scalars and lists of scalars on one line,
    others one member a line (the guide file stays small and diffs by cell)."""
    pad, inner = "  " * indent, "  " * (indent + 1)

    def flat(v: Any) -> bool:
        return not isinstance(v, (dict, list)) or (
            isinstance(v, list) and not any(isinstance(x, (dict, list)) for x in v)
        )

    if isinstance(value, dict) and not all(flat(v) for v in value.values()):
        members = [f"{inner}{json.dumps(k)}: {compact_json(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(members) + f"\n{pad}}}"
    if isinstance(value, list) and not flat(value):
        return "[\n" + ",\n".join(f"{inner}{compact_json(v, indent + 1)}" for v in value) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False)


def write_guide(data: dict[str, Any]) -> None:
    """Write `data` (`guide`) to GUIDE as the ES module the estimator guide imports."""
    GUIDE.write_text(
        "// Written by bench/bench_estimators.py (the numbers of its bench/RESULTS.md section); do not edit.\n"
        f"export const ESTIMATOR_BENCH = {compact_json(data)};\n"
    )


def run(profile: Profile, workers: int = 1) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Score every game of `profile` (in `workers` processes when > 1): (per-game scores, summary)."""
    tasks = [(family, g, profile) for family in profile.families for g in range(profile.games)]
    if workers > 1:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            scores = list(pool.imap(score_game, tasks, chunksize=4))
    else:
        scores = [score_game(task) for task in tasks]
    return scores, summarise(scores, profile)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="full")
    parser.add_argument("--games", type=int, help="games per family (default: the profile's)")
    parser.add_argument("--reps", type=int, help="seed blocks per game for the coverage by N (default: the profile's)")
    parser.add_argument("--workers", type=int, default=2, help="processes (1: none)")
    parser.add_argument("--no-guide", action="store_true", help=f"do not write {GUIDE.relative_to(ROOT)}")
    args = parser.parse_args()
    profile = PROFILES[args.profile]
    if args.games or args.reps:
        profile = replace(profile, games=args.games or profile.games, reps=args.reps or profile.reps)
    start = time.perf_counter()
    scores, table = run(profile, args.workers)
    print(markdown(table, profile))
    zero = sum(row["zero"] for row in table.values())
    print(f"\nzero-width intervals over samples not all equal: {zero}")
    print(f"\n{len(scores)} games, {time.perf_counter() - start:.0f} s wall")
    if args.no_guide or args.profile != "full" or args.games or args.reps:
        print(f"{GUIDE.relative_to(ROOT)} not written (only the full default run writes it)")
    else:
        command = "python bench/bench_estimators.py " + " ".join(sys.argv[1:])
        write_guide(guide(table, profile, command.strip()))
        print(f"wrote {GUIDE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
