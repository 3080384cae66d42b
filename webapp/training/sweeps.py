"""Store a credit-diffusion sweep (bench/credit_diffusion.py's JSON) as finished external runs, so
the compare page draws each (arm, n) seed group as its mean curve with a 95 % band.

The sweep's runs of one n differ only in `credit` and `seed`, so each (arm, n) is one seed group
(`services.seed_group_of`). Each run is stored once, by name ("credit sweep n=<n> <arm> seed <s>"):
importing the same sweep again adds nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from swarmscope.credit import t_quantile_975
from webapp.accounts.models import Project

from . import services
from .models import Run

#: The metric the compare links open on: the training episodes' closed-form E[R].
SWEEP_METRIC = "expected_success"


@dataclass
class ImportedSweep:
    """`created` / `kept`: run ids stored now / found from an earlier import; `groups[n]`: arm ->
    seed group key; `compare_urls[n]`: the compare page of n's arms (at most 4 groups a page);
    `compare_all_url`: the compare page of every (arm, n) group, which adds the summary vs n."""

    created: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)
    groups: dict[int, dict[str, str]] = field(default_factory=dict)
    compare_urls: dict[int, str] = field(default_factory=dict)
    compare_all_url: str = ""


def _run_name(doc: dict[str, Any]) -> str:
    return f"credit sweep n={doc['n']} {doc['arm']} seed {doc['seed']}"


def do_import_sweep(project: Project, sweep: Any) -> ImportedSweep:
    """Store every run of `sweep` (`runs`: arm, n, seed, config, iterations, env_steps, held_out)
    in `project` as a finished external run with its iterations. Raises services.RunInputError
    naming the run and field of a malformed entry (the runs before it stay stored)."""
    if not isinstance(sweep, dict) or not isinstance(sweep.get("runs"), list):
        raise services.RunInputError("must be bench/credit_diffusion.py's JSON: an object with a list of runs", "runs")
    out = ImportedSweep()
    for i, doc in enumerate(sweep["runs"]):
        if not isinstance(doc, dict) or not all(k in doc for k in ("arm", "n", "seed", "config", "iterations")):
            raise services.RunInputError("must have arm, n, seed, config and iterations", f"runs[{i}]")
        name = _run_name(doc)
        try:
            config = services.check_config(doc["config"])
        except services.RunInputError as exc:
            raise services.RunInputError(exc.message, f"runs[{i}].{exc.field}") from None
        group = services.seed_group_of(config)
        out.groups.setdefault(int(doc["n"]), {})[str(doc["arm"])] = group
        existing = Run.objects.filter(project=project, name=name, seed_group=group, status=Run.FINISHED).first()
        if existing is not None:
            out.kept.append(existing.pk)
            continue
        run = services.do_create_run(project, config, name=name, external=True)
        try:
            for j, iteration in enumerate(doc["iterations"]):
                try:
                    services.do_record_iteration(run, {**iteration, "budget_steps": doc.get("env_steps") or None})
                except services.RunInputError as exc:
                    raise services.RunInputError(exc.message, f"runs[{i}].iterations[{j}].{exc.field}") from None
        except services.RunInputError as exc:
            services.do_finish(run, status=Run.FAILED, error=f"{exc.field}: {exc.message}")
            raise
        services.do_finish(run, summary={"env_steps": doc.get("env_steps"), "held_out": doc.get("held_out")})
        out.created.append(run.pk)
    for n, arms in out.groups.items():
        keys = list(arms.values())[:4]
        out.compare_urls[n] = "/runs/compare/?" + urlencode([("groups", k) for k in keys] + [("metric", SWEEP_METRIC)])
    every = [k for _, arms in sorted(out.groups.items()) for k in arms.values()]
    out.compare_all_url = "/runs/compare/?" + urlencode([("groups", k) for k in every] + [("metric", SWEEP_METRIC)])
    return out


# --- the summary vs n (the compare page of a whole sweep) ----------------------------------------

#: Trailing window (iterations) of the training E[R] the target is judged on, as bench/credit_diffusion.py.
SMOOTH_WINDOW = 3


def _smoothed(iterations: list[dict[str, Any]]) -> tuple[list[float], list[float], list[float]]:
    """(env steps, training E[R], its trailing mean over SMOOTH_WINDOW iterations) of the
    iterations that report expected_success, each (I,)."""
    points = [
        (float(it["env_steps"]), float(it["metrics"]["expected_success"]))
        for it in iterations
        if isinstance((it.get("metrics") or {}).get("expected_success"), (int, float))
    ]
    values = [v for _, v in points]
    windows = [values[max(0, k - SMOOTH_WINDOW + 1) : k + 1] for k in range(len(values))]
    return [x for x, _ in points], values, [sum(w) / len(w) for w in windows]


def t_band(values: list[float]) -> list[float | None]:
    """[mean, low, high] of `values` (k >= 1): the 95 % t-interval of the mean over seeds,
    mean ± t_{0.975, k-1} · s / √k (s the sample standard deviation); low and high are None for k = 1."""
    k = len(values)
    mean = sum(values) / k
    if k < 2:
        return [mean, None, None]
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (k - 1))
    half = t_quantile_975(k - 1) * sd / math.sqrt(k)
    return [mean, mean - half, mean + half]


def get_sweep_summary(snapshots: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The summary vs episode length of runs (run snapshots, services.get_snapshot) spanning at
    least two `n_subtasks` >= 1 (0, the level's own tasks, is left out), else None. Per arm
    (`credit`) and n: [mean, low, high] over its runs (t_band) of (a) the final E[R] — every run's
    stored held-out E[R] (summary.held_out) when all have one (`final` = "held_out"), else each
    run's last iteration's training E[R] ("last_iteration") — and (b) env steps until the training
    E[R] (trailing mean over 3 iterations) first reaches n's target, censored at the run's env steps
    (`censored` counts those). n's target is bench/credit_diffusion.py's: half-way from the compared
    runs' mean first-iteration E[R] to the best arm's mean final training E[R], None (no steps) when
    that gain is under 0.01. Shapes: `n` (N,) sorted; each arm's `final`, `steps` (N,) of a band or None."""
    cells: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for snap in snapshots:
        config = snap["run"].get("config") or {}
        n, arm = config.get("n_subtasks"), config.get("credit")
        if isinstance(n, int) and n >= 1 and isinstance(arm, str) and _smoothed(snap["iterations"])[0]:
            cells.setdefault((arm, n), []).append(snap)
    ns = sorted({n for _, n in cells})
    if len(ns) < 2:
        return None
    arms = list(dict.fromkeys(arm for arm, _ in cells))
    held_out = all(
        isinstance(((s["run"].get("summary") or {}).get("held_out") or {}).get("expected_success"), (int, float))
        for runs in cells.values()
        for s in runs
    )

    def final(snap: dict[str, Any]) -> float:
        if held_out:
            return float(snap["run"]["summary"]["held_out"]["expected_success"])
        return _smoothed(snap["iterations"])[1][-1]

    targets: dict[int, float | None] = {}
    for n in ns:
        mine = [s for (arm, m), runs in cells.items() if m == n for s in runs]
        start = sum(_smoothed(s["iterations"])[1][0] for s in mine) / len(mine)
        best = max(
            sum(_smoothed(s["iterations"])[2][-1] for s in runs) / len(runs)
            for (arm, m), runs in cells.items()
            if m == n
        )
        targets[n] = start + 0.5 * (best - start) if best - start >= 0.01 else None
    out_arms = []
    for arm in arms:
        finals, steps, censored, seeds = [], [], [], []
        for n in ns:
            runs = cells.get((arm, n), [])
            seeds.append(len(runs))
            finals.append(t_band([final(s) for s in runs]) if runs else None)
            target = targets[n]
            if not runs or target is None:
                steps.append(None)
                censored.append(None)
                continue
            hits, missed = [], 0
            for s in runs:
                xs, _, values = _smoothed(s["iterations"])
                reached = [x for x, v in zip(xs, values) if v >= target - 1e-12]
                if reached:
                    hits.append(reached[0])
                else:
                    total = (s["run"].get("summary") or {}).get("env_steps") or s["run"].get("env_steps") or xs[-1]
                    hits.append(float(total))
                    missed += 1
            steps.append(t_band(hits))
            censored.append(missed)
        out_arms.append({"arm": arm, "seeds": seeds, "final": finals, "steps": steps, "censored": censored})
    return {
        "n": ns,
        "final": "held_out" if held_out else "last_iteration",
        "targets": [targets[n] for n in ns],
        "arms": out_arms,
    }
