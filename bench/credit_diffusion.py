"""Issue 16 item 5: the credit-diffusion experiment (survey P1) — does per-decision credit beat the
shared reward as episodes get longer?

    nice -n 10 .venv/bin/python bench/credit_diffusion.py [--quick] [--workers 2] [--out bench/figures]

Arms (`trainer.rl.credit`): shared, counterfactual (paired leave-one-out per block), shapley
(antithetic permutation Shapley values of the blocks) and oracle (the leave-one-out at SwarmSim's
exact E[R], no outcome noise). They differ only in credit: the same critic on the same targets,
the same per-decision cost, the same GAE, the same seeds; credit per fixed-size block of
`BLOCK_SIZE` decisions (their number grows with the episode), `credit_samples` 2. Setup that
keeps anything else from depending on the arm: the stop is the rule (aggregate and stop once every
subtask is delegated, so no stop re-rollouts), no auxiliary reward terms and no entropy bonus (their
anneal follows env steps, which the re-rollouts change), reward = R - 0.002 CS.

Sweep: tasks of n subtasks (the `long` level's 4 layers, difficulty 0-0.3; n = 4 is a chain),
`seeds` seeds per (arm, n), a fixed number of updates per n (the profile's `iterations`: equal
updates), 8 episodes an iteration in groups of 4. Reported per (arm, n), mean and 95 % t interval
over seeds:

- at equal updates: the final policy's E[R] on `eval_tasks` held-out tasks (fixed seeds, one
  episode each, closed-form E[R]) and its task reward;
- at equal environment steps (credit re-rollouts counted): env steps until the training E[R]
  (smoothed over 3 iterations) first reaches the target of n — half-way from the untrained policy's
  E[R] to the best arm's final one — censored at the run's end; and the training E[R] at the env
  steps the shared arm's runs took in all (each run's curve interpolated there, or its last value
  if it stopped short).

Baselines on the same held-out tasks: `FixedFanOut(8, "expert", verifier=True)` and the tuned
heuristic (`trainer.sim.baselines.tune_fan_out`: the best fixed fan-out over k x role x verifier
on `tune_tasks` training tasks by expected task reward). Writes OUT/credit_diffusion.json (curves and
summary), OUT/credit_diffusion.png and OUT/credit_diffusion.md (the RESULTS.md section).
`webapp/training/management/commands/import_credit_sweep.py` stores the runs in the app, where the
compare page draws each (arm, n) seed group with its 95 % band.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ARMS = ("shared", "counterfactual", "shapley", "oracle")
BLOCK_SIZE = 8
EVAL_SEED = 7_000_000
#: Seeds of the tuning tasks (training-like tasks, neither the recipe's training nor the test seeds).
TUNE_SEED = 3_000_000_000
PROFILES: dict[str, dict[str, Any]] = {
    # Sized to ~40 min on 2 shared cores (the machine ran at a load of 12-19 from other jobs, so
    # one run took 5-9x its CPU time). n = 64 and 256 are left out: a counterfactual iteration
    # takes ~9 s at n = 64 and ~170 s at n = 256 on this machine (8 episodes of ~140 / ~360
    # decisions, 17 / 45 blocks x 2 re-rollouts each), so 10 seeds x 2 re-rolling arms would take
    # ~1 h and ~9 h of CPU at only 6 updates. Shapley (2 antithetic permutation pairs: twice the
    # re-rollouts of the leave-one-out, forking earlier) only at n = 4. The updates fall with n for
    # the same reason (a counterfactual iteration: ~0.5 s at n = 4, ~1.8 s at 16, ~3.5 s at 32).
    "full": {
        "n": (4, 16, 32),
        "seeds": 10,
        "iterations": {4: 12, 16: 8, 32: 6},
        "eval_tasks": 32,
        "tune_tasks": 16,
        "shapley_max_n": 4,
    },
    "quick": {"n": (4,), "seeds": 2, "iterations": {4: 3}, "eval_tasks": 4, "tune_tasks": 2, "shapley_max_n": 4},
}
#: The iteration metrics kept in the JSON (and stored in the app by import_credit_sweep).
KEPT_METRICS = (
    "reward",
    "expected_success",
    "success_rate",
    "task_reward",
    "critical_steps",
    "episode_length",
    "credit_env_steps",
    "entropy",
    "policy_loss",
    "value_loss",
    "parallelism_efficiency",
    "tokens_per_episode",
)


def run_config(arm: str, n: int, seed: int) -> dict[str, Any]:
    """The RunConfig dict of one run: configs of one n differ only in `credit` and `seed`."""
    return {
        "level": "long",
        "n_subtasks": n,
        "algorithm": "ppo",
        "credit": arm,
        "credit_block_size": BLOCK_SIZE,
        "credit_samples": 2,
        "stop": "rule",
        "seed": seed,
        "episodes_per_iteration": 8,
        "group_size": 4,
        "max_steps": 3 * n + 40,
        "budget_steps": 10**12,  # the runs stop after the profile's iterations (equal updates)
        "entropy_coef": 0.0,
        "reward_weights": {"parallelism": 0.0, "finish": 0.0},
        "sample_episodes": 0,
    }


def held_out_tasks(config, count: int):
    from trainer.sim.tasks import TEST_SET_SEED, generate_task

    return [
        generate_task(config.task_level(), TEST_SET_SEED + i, f"n{config.n_subtasks}-test-{i}") for i in range(count)
    ]


def one_run(job: tuple[str, int, int, int, int, str]) -> dict[str, Any]:
    """Train one (arm, n, seed) run for `iterations` updates (checkpoint under `scratch`); its
    curve, its config and its final policy's scores on the held-out tasks."""
    import torch

    from trainer.recipes.train_orchestrator import RunConfig, evaluate, load_policy, train

    torch.set_num_threads(1)
    arm, n, seed, iterations, eval_tasks, scratch = job
    config = RunConfig.from_dict(run_config(arm, n, seed))
    curve: list[dict[str, Any]] = []

    def record(it: dict) -> None:
        curve.append(
            {
                "iteration": it["iteration"],
                "env_steps": it["env_steps"],
                "wall_s": round(it["wall_s"], 3),
                "metrics": {k: round(float(it["metrics"][k]), 6) for k in KEPT_METRICS},
            }
        )

    directory = Path(scratch) / f"{arm}-n{n}-seed{seed}"
    summary = train(config, checkpoint_dir=directory, on_iteration=record, should_stop=lambda: len(curve) >= iterations)
    policy, _ = load_policy(directory / "last.pt")
    scores = evaluate(policy, held_out_tasks(config, eval_tasks), config, seed=EVAL_SEED)
    return {
        "arm": arm,
        "n": n,
        "seed": seed,
        "config": config.to_dict(),
        "iterations": curve,
        "env_steps": summary["env_steps"],
        "wall_s": round(summary["wall_s"], 2),
        "held_out": {
            "expected_success": float(np.mean([s["p_success"] for s in scores])),
            "task_reward": float(np.mean([s["expected_task"] for s in scores])),
            "critical_steps": float(np.mean([s["critical_steps"] for s in scores])),
        },
    }


def baselines(n: int, eval_tasks: int, tune_tasks: int) -> dict[str, Any]:
    """FixedFanOut(8, expert, verifier) and the tuned fan-out on the held-out tasks of n: per task
    E[R], expected task reward and critical steps; the tuned one's knobs."""
    from trainer.recipes.config import RunConfig
    from trainer.rl.rewards import episode_reward
    from trainer.sim.baselines import FixedFanOut, run_policy, tune_fan_out
    from trainer.sim.env import SwarmEnv
    from trainer.sim.tasks import generate_task

    config = RunConfig.from_dict(run_config("shared", n, 0))
    weights = config.reward_weights

    def expected_task(episode) -> float:
        return episode_reward(episode, weights, 0.0)["expected_task"]

    tuning = [generate_task(config.task_level(), TUNE_SEED + i, f"n{n}-tune-{i}") for i in range(tune_tasks)]
    tuned, table = tune_fan_out(tuning, expected_task, config.sim_config(), seed=TUNE_SEED)
    out: dict[str, Any] = {"tuned_knobs": {"k": tuned.k, "role": tuned.role, "verifier": tuned.verifier}}
    out["tuned_grid_best5"] = [
        [f"k={p.k} {p.role}{' + verifier' if p.verifier else ''}", round(v, 4)]
        for p, v in sorted(table.items(), key=lambda item: -item[1])[:5]
    ]
    tasks = held_out_tasks(config, eval_tasks)
    for name, policy in (
        ("fixed fan-out (8 experts + verifier)", FixedFanOut(8, "expert", True)),
        ("tuned fan-out", tuned),
    ):
        episodes = [
            run_policy(SwarmEnv(task, config.sim_config(), EVAL_SEED + i), policy) for i, task in enumerate(tasks)
        ]
        out[name] = {
            "expected_success": [e.p_success for e in episodes],
            "task_reward": [expected_task(e) for e in episodes],
            "critical_steps": [episode_reward(e, weights, 0.0)["critical_steps"] for e in episodes],
        }
    return out


# --- summary ----------------------------------------------------------------------------------


def t_interval(values) -> tuple[float, float]:
    """Mean and the 95 % t half-width over `values` (nan half-width for fewer than 2)."""
    from swarmscope.credit import t_quantile_975

    v = np.asarray(values, float)
    if len(v) < 2:
        return float(v.mean()) if len(v) else float("nan"), float("nan")
    return float(v.mean()), float(t_quantile_975(len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))


def smoothed(run: dict[str, Any], window: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(env steps (I,), training E[R] (I,) as a trailing mean over `window` iterations)."""
    steps = np.array([it["env_steps"] for it in run["iterations"]], float)
    values = np.array([it["metrics"]["expected_success"] for it in run["iterations"]])
    return steps, np.array([values[max(0, k - window + 1) : k + 1].mean() for k in range(len(values))])


def value_at(run: dict[str, Any], x: float) -> float:
    """The run's smoothed training E[R] at env steps `x` (linear; its last value past its end)."""
    steps, values = smoothed(run)
    return float(np.interp(x, steps, values))


def summarise(runs: list[dict[str, Any]], profile: dict[str, Any]) -> dict[str, Any]:
    """Per n: the target, the env-step grid for equal steps, and per arm the mean ± 95 % of each
    measure (`final_held_out`, `held_out_minus_shared` paired by seed, `final_training`,
    `steps_to_target` with its censored count,
    `at_equal_steps`, `env_steps`, `credit_share`) and the seeds' values."""
    out: dict[str, Any] = {}
    for n in profile["n"]:
        mine = [r for r in runs if r["n"] == n]
        arms = [a for a in ARMS if any(r["arm"] == a for r in mine)]
        start = float(np.mean([r["iterations"][0]["metrics"]["expected_success"] for r in mine]))
        finals = {a: np.mean([smoothed(r)[1][-1] for r in mine if r["arm"] == a]) for a in arms}
        best = max(finals.values())
        target = start + 0.5 * (best - start) if best - start >= 0.01 else None
        equal_x = float(np.mean([r["env_steps"] for r in mine if r["arm"] == "shared"]))
        per_arm: dict[str, Any] = {}
        shared_held = {r["seed"]: r["held_out"]["expected_success"] for r in mine if r["arm"] == "shared"}
        for arm in arms:
            rs = sorted((r for r in mine if r["arm"] == arm), key=lambda r: r["seed"])
            held = [r["held_out"]["expected_success"] for r in rs]
            task = [r["held_out"]["task_reward"] for r in rs]
            final = [float(smoothed(r)[1][-1]) for r in rs]
            hits, censored = [], 0
            for r in rs:
                steps, values = smoothed(r)
                reached = np.flatnonzero(values >= target - 1e-12) if target is not None else []
                if len(reached):
                    hits.append(float(steps[reached[0]]))
                else:
                    hits.append(float(r["env_steps"]))
                    censored += 1
            equal = [value_at(r, equal_x) for r in rs]
            credit = [sum(it["metrics"]["credit_env_steps"] for it in r["iterations"]) / r["env_steps"] for r in rs]
            paired = [
                r["held_out"]["expected_success"] - shared_held[r["seed"]] for r in rs if r["seed"] in shared_held
            ]
            per_arm[arm] = {
                "seeds": len(rs),
                "held_out_minus_shared": t_interval(paired),
                "final_held_out": t_interval(held),
                "final_held_out_task_reward": t_interval(task),
                "final_training": t_interval(final),
                "steps_to_target": t_interval(hits) if target is not None else (float("nan"), float("nan")),
                "censored": censored if target is not None else len(rs),
                "at_equal_steps": t_interval(equal),
                "env_steps": t_interval([r["env_steps"] for r in rs]),
                "credit_share": float(np.mean(credit)),
                "values": {"held_out": held, "steps_to_target": hits, "at_equal_steps": equal},
            }
        out[str(n)] = {
            "iterations": profile["iterations"][n],
            "start": start,
            "target": target,
            "equal_steps": equal_x,
            "arms": per_arm,
        }
    return out


# --- figure -----------------------------------------------------------------------------------

COLORS = {"shared": "#4263eb", "counterfactual": "#e8590c", "shapley": "#2f9e44", "oracle": "#ae3ec9"}


def figure(runs: list[dict[str, Any]], summary: dict[str, Any], base: dict[str, Any], path: Path) -> None:
    """Top: final held-out E[R] (equal updates), env steps to the target and training E[R] at
    equal env steps, against n, per arm with 95 % bands (baselines dashed). Bottom: training E[R]
    against env steps per n, mean of the seeds with a 95 % band (what the compare page draws)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [int(n) for n in summary]
    fig, axes = plt.subplots(2, max(3, len(ns)), figsize=(5 * max(3, len(ns)), 8.5), squeeze=False)
    panels = (
        ("final_held_out", "final E[R], held-out tasks\n(equal updates)", False),
        ("steps_to_target", "env steps to the target E[R]\n(re-rollouts counted)", True),
        ("at_equal_steps", "training E[R] at the shared arm's\nenv steps (equal env steps)", False),
    )
    for ax, (key, title, log) in zip(axes[0], panels):
        for arm, color in COLORS.items():
            xs = [n for n in ns if arm in summary[str(n)]["arms"]]
            if not xs:
                continue
            mean = np.array([summary[str(n)]["arms"][arm][key][0] for n in xs])
            half = np.nan_to_num(np.array([summary[str(n)]["arms"][arm][key][1] for n in xs]))
            ax.plot(xs, mean, "o-", color=color, label=arm)
            ax.fill_between(xs, mean - half, mean + half, color=color, alpha=0.15)
        if key == "final_held_out":
            for name, style in (("fixed fan-out (8 experts + verifier)", "s--"), ("tuned fan-out", "^:")):
                means = [np.mean(base[str(n)][name]["expected_success"]) for n in ns]
                ax.plot(ns, means, style, color="#495057", label=name)
        ax.set_xscale("log", base=2)
        if log:
            ax.set_yscale("log")
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.set_xlabel("n subtasks")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    for ax in axes[0][len(panels) :]:
        ax.axis("off")
    for ax, n in zip(axes[1], ns):
        for arm, color in COLORS.items():
            rs = [r for r in runs if r["n"] == n and r["arm"] == arm]
            if not rs:
                continue
            grid = np.unique(np.concatenate([smoothed(r)[0] for r in rs]))
            grid = grid[grid <= min(r["env_steps"] for r in rs)]
            ys = np.array([np.interp(grid, *smoothed(r)) for r in rs])
            mean = ys.mean(axis=0)
            half = np.array([t_interval(col)[1] for col in ys.T]) if len(rs) > 1 else np.zeros_like(mean)
            ax.plot(grid, mean, color=color, label=arm)
            ax.fill_between(grid, mean - half, mean + half, color=color, alpha=0.15)
        target = summary[str(n)]["target"]
        if target is not None:
            ax.axhline(target, color="#868e96", lw=0.8, ls="--", label="target")
        ax.set_xscale("log")
        ax.set_xlabel("env steps (re-rollouts counted)")
        ax.set_title(f"n = {n}: training E[R], {summary[str(n)]['iterations']} updates", fontsize=10)
        ax.legend(fontsize=7)
    for ax in axes[1][len(ns) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- report -----------------------------------------------------------------------------------


def fmt(pair: tuple[float, float], spec: str = ".3f") -> str:
    mean, half = pair
    return f"{mean:{spec}} ± {half:{spec.lstrip('+')}}" if np.isfinite(half) else f"{mean:{spec}}"


def markdown(
    summary: dict[str, Any], base: dict[str, Any], args: argparse.Namespace, argv: list[str], wall_min: float
) -> str:
    load = os.getloadavg()[0]
    lines = [
        "## Issue 16 item 5: the credit-diffusion sweep (bench/credit_diffusion.py)",
        "",
        f"`{' '.join(['nice -n 10 .venv/bin/python bench/credit_diffusion.py', *argv])}`, "
        f"`date -u` = {time.strftime('%a %b %d %H:%M UTC %Y', time.gmtime())}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs shared, 1-minute load at the end {load:.1f}, Python {platform.python_version()}, "
        f"{args.workers} runs at a time (1 thread each), {wall_min:.1f} min in all. Figure: "
        f"`bench/figures/credit_diffusion.png`; curves: `bench/figures/credit_diffusion.json`.",
        "",
        "| n | arm | seeds | updates | final E[R] held-out ± 95 % | minus shared's, paired by seed | task reward "
        "held-out | env steps to target ± 95 % (censored) | E[R] at equal env steps | env steps in all | "
        "re-rollout share |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, s in summary.items():
        for arm, a in s["arms"].items():
            lines.append(
                f"| {n} | {arm} | {a['seeds']} | {s['iterations']} | {fmt(a['final_held_out'])} | "
                f"{fmt(a['held_out_minus_shared'], '+.3f') if arm != 'shared' else '–'} | "
                f"{fmt(a['final_held_out_task_reward'])} | {fmt(a['steps_to_target'], ',.0f')} ({a['censored']}) | "
                f"{fmt(a['at_equal_steps'])} | {fmt(a['env_steps'], ',.0f')} | {a['credit_share']:.0%} |"
            )
    lines += [
        "",
        "Targets (half-way from the untrained policy's training E[R] to the best arm's final one) and "
        "the equal-steps point (the shared runs' mean env steps in all): "
        + "; ".join(
            f"n = {n}: start {s['start']:.3f}, target "
            + (f"{s['target']:.3f}" if s["target"] is not None else "none (no arm improved by 0.01)")
            + f", {s['equal_steps']:,.0f} steps"
            for n, s in summary.items()
        )
        + ".",
        "",
        "| n | baseline (same held-out tasks) | E[R] ± 95 % over tasks | task reward | critical steps |",
        "|---:|---|---:|---:|---:|",
    ]
    for n, b in base.items():
        for name in ("fixed fan-out (8 experts + verifier)", "tuned fan-out"):
            knobs = b["tuned_knobs"]
            label = (
                name
                if name != "tuned fan-out"
                else f"tuned fan-out (k={knobs['k']} {knobs['role']}{' + verifier' if knobs['verifier'] else ''})"
            )
            lines.append(
                f"| {n} | {label} | {fmt(t_interval(b[name]['expected_success']))} | "
                f"{np.mean(b[name]['task_reward']):.3f} | {np.mean(b[name]['critical_steps']):.1f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the test profile: n = 4, 2 seeds, 3 updates")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "figures"))
    parser.add_argument("--scratch", default="/tmp/credit_diffusion", help="checkpoints of the runs")
    parser.add_argument(
        "--report-only", action="store_true", help="no training: report the runs finished so far (SCRATCH/runs.jsonl)"
    )
    args = parser.parse_args(argv)
    profile = PROFILES["quick" if args.quick else "full"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    jobs = [
        (arm, n, seed, profile["iterations"][n], profile["eval_tasks"], args.scratch)
        for n in profile["n"]
        for arm in ARMS
        if arm != "shapley" or n <= profile["shapley_max_n"]
        for seed in range(profile["seeds"])
    ]
    cost = {"shared": 1, "counterfactual": 5, "oracle": 5, "shapley": 9}
    # by n, then seed by seed across the arms: a sweep cut short still has every arm at the same seeds
    jobs.sort(key=lambda j: (j[1], j[2], -cost[j[0]]))
    done = Path(args.scratch) / "runs.jsonl"
    done.parent.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        done.write_text("")
        with ProcessPoolExecutor(args.workers) as pool, done.open("a") as sink:
            for finished in pool.map(one_run, jobs):
                sink.write(json.dumps(finished) + "\n")
                sink.flush()
    runs = [json.loads(line) for line in done.read_text().splitlines() if line.strip()]
    finished_n = {r["n"] for r in runs}
    profile = {**profile, "n": tuple(n for n in profile["n"] if n in finished_n)}
    runs.sort(key=lambda r: (r["n"], ARMS.index(r["arm"]), r["seed"]))
    base = {str(n): baselines(n, profile["eval_tasks"], profile["tune_tasks"]) for n in profile["n"]}
    summary = summarise(runs, profile)
    result = {
        "profile": "quick" if args.quick else "full",
        "settings": {**{k: v for k, v in profile.items() if k != "iterations"}, "block_size": BLOCK_SIZE},
        "iterations": {str(n): u for n, u in profile["iterations"].items()},
        "summary": summary,
        "baselines": base,
        "runs": runs,
    }
    (out / "credit_diffusion.json").write_text(json.dumps(result))
    figure(runs, summary, base, out / "credit_diffusion.png")
    text = markdown(summary, base, args, sys.argv[1:] if argv is None else argv, (time.monotonic() - started) / 60)
    (out / "credit_diffusion.md").write_text(text + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
