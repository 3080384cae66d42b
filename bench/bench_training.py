"""Issue 6 experiments: credit schemes at equal environment-step budgets, the trained orchestrator
against the heuristic baselines, and the learned stop against running to the step limit and the
rule-based stop. Prints a Markdown section for bench/RESULTS.md.

    nice -n 19 .venv/bin/python bench/bench_training.py [--budget 150000] [--seeds 3] [--workers 2]
        [--eval-tasks 50] [--out /tmp/bench_training]

1. For each credit scheme (shared, counterfactual, shapley) and seed 0..seeds-1: `train` on the
   `long` level (>= 200 decisions per episode under SpawnEverything) with the same `budget_steps`,
   credit re-rollouts counted. The success curve is the iteration's mean closed-form E[R] of its
   training episodes (SwarmSim's `p_success`: the success rate without Bernoulli noise), smoothed
   over 3 iterations. Target of seed s: the shared run's final smoothed value (seed s); reported:
   the env steps each scheme's run of seed s first reaches it (runs that never do: censored at
   the budget, marked), mean and 95 % t interval over seeds, and the ratio to shared.
2. Held-out tasks (`trainer.sim.tasks.test_set("long")`, seeds never trained on): each trained
   policy (learned stop) vs single agent, fixed fan-out (8 solvers + a verifier) and spawn-everything
   on task reward (w_success R - w_cs CS, anneal 0), E[R], success rate and critical steps.
3. The shared runs' policies on the held-out tasks with stop modes learned / none (the step limit)
   / rule: mean episode length, success, stop regret, premature and late counts, pooled and per
   seed, and the learned stop's length cut and success difference against the step limit per seed;
   then every trained policy's critical steps per seed against fixed fan-out's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CREDITS = ("shared", "counterfactual", "shapley")
WALL_CAP_S = 420


def base_config(budget: int) -> dict:
    return {"level": "long", "budget_steps": budget, "stop": "learned", "algorithm": "ppo"}


def one_run(job: tuple[str, int, int, str]) -> dict:
    """Train one (credit, seed) run; returns its curve and where its checkpoint is."""
    import torch  # noqa: F401  (each worker process imports torch once)

    from trainer.recipes.train_orchestrator import RunConfig, train

    credit, seed, budget, out = job
    config = RunConfig.from_dict({**base_config(budget), "credit": credit, "seed": seed, "sample_episodes": 0})
    curve = []

    def record(it: dict) -> None:
        m = it["metrics"]
        curve.append(
            {
                "iteration": it["iteration"],
                "env_steps": it["env_steps"],
                "wall_s": it["wall_s"],
                "expected_success": m["expected_success"],
                "success_rate": m["success_rate"],
                "reward": m["reward"],
                "task_reward": m["task_reward"],
                "critical_steps": m["critical_steps"],
                "episode_length": m["episode_length"],
                "credit_env_steps": m["credit_env_steps"],
                "stop_regret": it["stop"]["stop_regret"],
            }
        )

    directory = Path(out) / f"{credit}-{seed}"
    started = time.monotonic()
    # a run that collapses into one-decision episodes would take ~16 steps an iteration: cap its wall time
    summary = train(
        config,
        checkpoint_dir=directory,
        on_iteration=record,
        should_stop=lambda: time.monotonic() - started > WALL_CAP_S,
    )
    return {
        "credit": credit,
        "seed": seed,
        "curve": curve,
        "summary": summary,
        "checkpoint": str(directory / "last.pt"),
        "wall_s": time.monotonic() - started,
    }


def smoothed(curve: list[dict], window: int = 3) -> tuple[np.ndarray, np.ndarray]:
    steps = np.array([c["env_steps"] for c in curve])
    values = np.array([c["expected_success"] for c in curve])
    return steps, np.array([values[max(0, k - window + 1) : k + 1].mean() for k in range(len(values))])


def t_interval(values: list[float]) -> tuple[float, float]:
    """Mean and the 95 % t half-width (swarmscope.credit's t quantile)."""
    from swarmscope.credit import t_quantile_975

    v = np.asarray(values, float)
    if len(v) < 2:
        return float(v.mean()), float("nan")
    return float(v.mean()), float(t_quantile_975(len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))


def baselines(tasks, config, seed0: int) -> dict[str, list[dict]]:
    from trainer.recipes.train_orchestrator import episode_summary
    from trainer.sim.baselines import (
        FixedFanOut,
        SpawnEverything,
        run_policy,
        single_agent,
    )
    from trainer.sim.env import SwarmEnv

    policies = {
        "single agent": single_agent(),
        "fixed fan-out (8 + verifier)": FixedFanOut(8, verifier=True),
        "spawn-everything": SpawnEverything(),
    }
    out = {}
    for name, policy in policies.items():
        out[name] = [
            episode_summary(run_policy(SwarmEnv(task, config.sim_config(), seed0 + k), policy), config.reward_weights)
            for k, task in enumerate(tasks)
        ]
    return out


def equal_updates(runs: list[dict], seeds: int) -> list[str]:
    """Each credit scheme's final smoothed E[R] against the shared run's after as many iterations
    (updates on as many factual episodes): the comparison with re-rollouts free."""
    lines = [
        "**At equal updates** (re-rollouts free: each scheme's final smoothed E[R] against the shared run "
        "of the same seed after as many iterations):",
        "",
        "| credit | iterations per seed | its E[R] per seed | shared's E[R] then | difference ± 95 % |",
        "|---|---|---|---|---:|",
    ]
    shared = {r["seed"]: smoothed(r["curve"])[1] for r in runs if r["credit"] == "shared"}
    for credit in CREDITS[1:]:
        own, then, iters = [], [], []
        for seed in range(seeds):
            r = next(x for x in runs if x["credit"] == credit and x["seed"] == seed)
            values = smoothed(r["curve"])[1]
            iters.append(len(values))
            own.append(float(values[-1]))
            then.append(float(shared[seed][min(len(values), len(shared[seed])) - 1]))
        mean, half = t_interval([a - b for a, b in zip(own, then)])
        lines.append(
            f"| {credit} | {', '.join(map(str, iters))} | {', '.join(f'{v:.3f}' for v in own)} | "
            f"{', '.join(f'{v:.3f}' for v in then)} | {mean:+.3f} ± {half:.3f} |"
        )
    return lines


def table_of(rows: dict[str, list[dict]], keys: list[tuple[str, str, str]]) -> list[str]:
    lines = ["| policy | " + " | ".join(label for label, _, _ in keys) + " |", "|---|" + "---:|" * len(keys)]
    for name, episodes in rows.items():
        cells = []
        for _, key, fmt in keys:
            cells.append(format(float(np.mean([e[key] for e in episodes])), fmt))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def ascii_curves(runs: list[dict], budget: int, width: int = 50) -> list[str]:
    """Smoothed E[R] against env steps, mean over seeds per scheme, one row per budget tenth."""
    lines = ["smoothed E[R] (mean over seeds) at each tenth of the budget; each # = 0.02", ""]
    for credit in CREDITS:
        mine = [r for r in runs if r["credit"] == credit]
        lines.append(f"{credit}:")
        for tenth in range(1, 11):
            at = budget * tenth / 10
            values = []
            for r in mine:
                steps, values_r = smoothed(r["curve"])
                done = values_r[steps <= at]
                values.append(done[-1] if len(done) else np.nan)
            value = float(np.nanmean(values)) if not np.all(np.isnan(values)) else float("nan")
            bar = "" if np.isnan(value) else "#" * int(round(value / 0.02))
            lines.append(f"  {int(at):>8,} {bar} {value:.3f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=150_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--eval-tasks", type=int, default=50)
    parser.add_argument("--out", default="/tmp/bench_training")
    parser.add_argument(
        "--report-only", action="store_true", help="skip training: report from OUT/runs.json and the checkpoints"
    )
    args = parser.parse_args()
    started = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        runs = json.loads((out / "runs.json").read_text())
        train_wall = max(r["wall_s"] for r in runs) * len(runs) / args.workers
    else:
        jobs = [(credit, seed, args.budget, str(out)) for seed in range(args.seeds) for credit in CREDITS]
        # the slowest (most re-rollouts per env step) first, so the pool ends together
        jobs.sort(key=lambda j: CREDITS.index(j[0]), reverse=True)
        with ProcessPoolExecutor(args.workers) as pool:
            runs = list(pool.map(one_run, jobs))
        (out / "runs.json").write_text(json.dumps(runs))
        train_wall = time.monotonic() - started

    import torch

    torch.set_num_threads(1)
    from trainer.recipes.train_orchestrator import evaluate, load_policy
    from trainer.sim.tasks import test_set

    # 1. steps to the shared run's final success
    lines: list[str] = []
    lines.append("## bench_training: orchestrator RL on the long level")
    lines.append("")
    load = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "trainer", "bench"], capture_output=True, text=True
    ).stdout.strip()
    lines.append(
        f"`nice -n 19 .venv/bin/python bench/bench_training.py --budget {args.budget} --seeds {args.seeds} "
        f"--workers {args.workers} --eval-tasks {args.eval_tasks}`, `date -u` = "
        f"{time.strftime('%a %b %d %H:%M UTC %Y', time.gmtime())}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs shared (load average at the end {load[0]:.1f}), Python "
        f"{platform.python_version()}, torch {torch.__version__}, code at `{commit}`"
        f"{' plus uncommitted changes' if dirty else ''}. Training {train_wall / 60:.1f} min "
        f"({args.workers} runs at a time, 1 thread each); all of it {{total}} min."
    )
    lines.append("")
    shared_final = {}
    for r in runs:
        if r["credit"] == "shared":
            _, values = smoothed(r["curve"])
            shared_final[r["seed"]] = float(values[-1])
    lines.append(
        "**Env steps to reach the shared run's final success** (E[R] of the training episodes, "
        "smoothed over 3 iterations; target per seed = the shared run's final value; `>` = never "
        "reached within the budget, counted at the budget):"
    )
    lines.append("")
    lines.append(
        "| credit | target per seed | steps per seed | mean steps ± 95 % | ratio to shared | "
        "final E[R] ± 95 % | iterations | re-rollout share of steps | factual steps to reach (re-rollouts "
        "free) ± 95 % |"
    )
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|")
    reached: dict[str, list[float]] = {}
    for credit in CREDITS:
        per_seed, cells, finals, iters, reroll, factual = [], [], [], [], [], []
        for seed in range(args.seeds):
            r = next(x for x in runs if x["credit"] == credit and x["seed"] == seed)
            steps, values = smoothed(r["curve"])
            hit = np.flatnonzero(values >= shared_final[seed] - 1e-12)
            own = steps - np.cumsum([c["credit_env_steps"] for c in r["curve"]])
            if len(hit):
                per_seed.append(float(steps[hit[0]]))
                cells.append(f"{int(steps[hit[0]]):,}")
                factual.append(float(own[hit[0]]))
            else:
                per_seed.append(float(r["summary"]["env_steps"]))
                cells.append(f">{int(r['summary']['env_steps']):,}")
            finals.append(float(values[-1]))
            iters.append(len(r["curve"]))
            reroll.append(sum(c["credit_env_steps"] for c in r["curve"]) / r["summary"]["env_steps"])
        reached[credit] = per_seed
        mean, half = t_interval(per_seed)
        fmean, fhalf = t_interval(finals)
        if len(factual) == len(per_seed):
            own_mean, own_half = t_interval(factual)
            own_cell = f"{own_mean:,.0f} ± {own_half:,.0f}"
        else:
            own_cell = f"{len(per_seed) - len(factual)} of {len(per_seed)} never reached"
        ratio = mean / np.mean(reached["shared"])
        lines.append(
            f"| {credit} | {', '.join(f'{shared_final[s]:.3f}' for s in range(args.seeds))} | "
            f"{', '.join(cells)} | {mean:,.0f} ± {half:,.0f} | {ratio:.2f} | {fmean:.3f} ± {fhalf:.3f} | "
            f"{np.mean(iters):.0f} | {np.mean(reroll):.0%} | {own_cell} |"
        )
    lines.append("")
    lines.append("```")
    lines += ascii_curves(runs, args.budget)
    lines.append("```")
    lines.append("")
    lines += equal_updates(runs, args.seeds)
    lines.append("")

    # 2. trained vs heuristic baselines on held-out tasks
    tasks = test_set("long", args.eval_tasks)
    eval_seed = 7_000_000
    rows: dict[str, list[dict]] = {}
    policies = {}
    for r in runs:
        policy, config = load_policy(Path(r["checkpoint"]))
        policies[(r["credit"], r["seed"])] = (policy, config)
    for credit in CREDITS:
        rows[f"trained, {credit} credit ({args.seeds} seeds)"] = [
            e
            for seed in range(args.seeds)
            for e in evaluate(policies[(credit, seed)][0], tasks, policies[(credit, seed)][1], seed=eval_seed)
        ]
    config = policies[("shared", 0)][1]
    rows.update(baselines(tasks, config, eval_seed))
    keys = [
        ("task reward", "task", ".3f"),
        ("E[R]", "p_success", ".3f"),
        ("success rate", "success", ".2f"),
        ("critical steps", "critical_steps", ".1f"),
        ("decisions", "length", ".1f"),
        ("stop regret", "stop_regret", ".3f"),
    ]
    lines.append(
        f"**Held-out tasks** ({args.eval_tasks} tasks of `test_set('long')`, one episode each, seeds "
        f"{eval_seed}+; trained rows pool the {args.seeds} seeds' final policies; task reward = R − "
        f"{config.reward_weights['critical_steps']} × CS):"
    )
    lines.append("")
    lines += table_of(rows, keys)
    lines.append("")

    # 3. learned stop vs the step limit vs the rule
    modes = {}
    for mode in ("learned", "none", "rule"):
        modes[f"shared-credit policy, stop = {mode}"] = [
            e
            for seed in range(args.seeds)
            for e in evaluate(policies[("shared", seed)][0], tasks, policies[("shared", seed)][1], mode, seed=eval_seed)
        ]
    keys = [
        ("decisions", "length", ".1f"),
        ("E[R]", "p_success", ".3f"),
        ("success rate", "success", ".3f"),
        ("task reward", "task", ".3f"),
        ("critical steps", "critical_steps", ".1f"),
        ("stop regret", "stop_regret", ".3f"),
        ("premature share", "premature", ".2f"),
        ("late share", "late", ".2f"),
    ]
    lines.append("**Stop decision** (the shared-credit runs' final policies, the same held-out tasks and seeds):")
    lines.append("")
    lines += table_of(modes, keys)
    per_seed = {}
    for seed in range(args.seeds):
        for mode in ("learned", "none", "rule"):
            per_seed[f"shared seed {seed}, stop = {mode}"] = evaluate(
                policies[("shared", seed)][0], tasks, policies[("shared", seed)][1], mode, seed=eval_seed
            )
    lines.append("")
    lines.append("Per seed:")
    lines.append("")
    lines += table_of(per_seed, keys)
    names = list(modes)

    def versus(learned: list[dict], limit: list[dict]) -> str:
        cut = 1 - np.mean([e["length"] for e in learned]) / np.mean([e["length"] for e in limit])
        diff = 100 * (np.mean([e["p_success"] for e in learned]) - np.mean([e["p_success"] for e in limit]))
        rate = 100 * (np.mean([e["success"] for e in learned]) - np.mean([e["success"] for e in limit]))
        return f"length cut {cut:.0%}, E[R] {diff:+.1f} points, success rate {rate:+.1f} points"

    lines.append("")
    seeds_line = "; ".join(
        f"seed {seed}: "
        + versus(per_seed[f"shared seed {seed}, stop = learned"], per_seed[f"shared seed {seed}, stop = none"])
        for seed in range(args.seeds)
    )
    lines.append(
        f"Learned stop vs the step limit, pooled: {versus(modes[names[0]], modes[names[1]])}; per seed: {seeds_line}."
    )

    def critical(credit: str, seed: int) -> float:
        policy, config = policies[(credit, seed)]
        return float(np.mean([e["critical_steps"] for e in evaluate(policy, tasks, config, seed=eval_seed)]))

    fan_out = float(np.mean([e["critical_steps"] for e in rows["fixed fan-out (8 + verifier)"]]))
    lines.append("")
    lines.append(
        f"Critical steps per seed (learned stop; fixed fan-out {fan_out:.1f}): "
        + "; ".join(
            f"{credit} " + ", ".join(f"{critical(credit, seed):.1f}" for seed in range(args.seeds))
            for credit in CREDITS
        )
        + "."
    )
    total = (time.monotonic() - started) / 60
    text = "\n".join(lines).replace("{total}", f"{total:.1f}")
    (out / "section.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
