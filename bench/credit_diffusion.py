"""Issue 30 item 7: the credit-diffusion experiment (survey P1) — does per-decision credit that
replaces the shared outcome buy what removing the outcome's noise buys, and does it grow with the
episode's length?

    nice -n 10 .venv/bin/python bench/credit_diffusion.py --pilot [--workers 2]    # power, first
    nice -n 10 .venv/bin/python bench/credit_diffusion.py [--seeds S] [--workers 2] [--out bench/figures]
    nice -n 10 .venv/bin/python bench/credit_diffusion.py --time-rerollouts        # fast path vs full

Arms (`trainer.recipes.train_orchestrator.credit_advantages_of`), all PPO with the same critic
network, GAE(1, 0.95), per-decision cost w_cs = 0.002 per critical step, seeds and tasks:

- `shared`: the 0/1 outcome R at the last decision (GAE on the critic);
- `expected` (the reference): R replaced by its exact expectation E[R | actions] (SwarmSim's
  closed form): every bit of outcome noise removed, nothing else changed;
- `counterfactual_baseline`: the outcome's part of the advantage replaced by the decision's block
  credit Δ_k = R(h) - mean_j R(h with block k redrawn) (COMA's counterfactual baseline with a block
  of `BLOCK_SIZE` decisions as the agent; 2 redraws at the episode's seed, common random numbers:
  the outcome minus a baseline from the re-rollouts, which share its random draws); the critic and
  GAE carry the costs only;
- `counterfactual_baseline_exact`: the same with Y = E[R | actions] in place of R (the credit without
  outcome noise; the redraws' own noise stays).

Equal updates at every n (`iterations`), 8 episodes an update in groups of 4; rule stop (no stop
re-rollouts), no auxiliary terms, no entropy bonus. Measure: the final policy's E[R] on
`eval_tasks` held-out tasks (closed form, one episode each), paired by seed against `shared` and
against `expected`; 95 % t intervals over seeds. Re-rollouts are reported as what they are, an
overhead in environment steps and wall time per update (the fast path: re-rollouts build no trace,
`trainer.policy.play(build=False)`), not as a learning result.

Power, up front (`--pilot`): `shared` and `expected` on `pilot_seeds` seeds (other seeds than the
sweep's); per n the seed-to-seed SD of the paired held-out difference, and the seeds a paired t
test needs to detect the pilot's mean gain at 80 % power, two-sided 5 % (noncentral t). The sweep
reads the pilot's file and reports, at its own seed count, the smallest gain it can detect at 80 %
power: the target the runs can reach.

Baselines on the same held-out tasks: `FixedFanOut(8, "expert", verifier=True)` and the tuned
fan-out (`trainer.sim.baselines.tune_fan_out` on `tune_tasks` training-like tasks). Writes
OUT/credit_diffusion.json (runs, curves, summary, pilot), OUT/credit_diffusion.png and
OUT/credit_diffusion.md (the RESULTS.md section); `webapp/training/management/commands/
import_credit_sweep.py` stores the runs in the app.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ARMS = ("shared", "expected", "counterfactual_baseline", "counterfactual_baseline_exact")
#: The arms of the pilot (the power calculation is for the reference's gain over shared).
PILOT_ARMS = ("shared", "expected")
BLOCK_SIZE = 8
EVAL_SEED = 7_000_000
#: Seeds of the tuning tasks (training-like tasks, neither the recipe's training nor the test seeds).
TUNE_SEED = 3_000_000_000
#: The pilot's run seeds: not the sweep's (0 ..), so the power calculation does not pick its own data.
PILOT_SEED = 100
#: Power of the calculation (paired two-sided t test at 5 %).
POWER = 0.8
PROFILES: dict[str, dict[str, Any]] = {
    "full": {
        "n": (4, 16, 64),
        "seeds": 10,
        "iterations": 20,
        "eval_tasks": 64,
        "tune_tasks": 16,
        "pilot_seeds": 4,
    },
    "quick": {"n": (4,), "seeds": 2, "iterations": 3, "eval_tasks": 4, "tune_tasks": 2, "pilot_seeds": 2},
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
#: Relative cost of one run per arm (to start the long runs first).
COST = {"shared": 1, "expected": 1, "counterfactual_baseline": 8, "counterfactual_baseline_exact": 8}


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
    cpu = time.process_time()
    summary = train(config, checkpoint_dir=directory, on_iteration=record, should_stop=lambda: len(curve) >= iterations)
    cpu = time.process_time() - cpu
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
        "cpu_s": round(cpu, 2),
        "held_out": {
            "expected_success": float(np.mean([s["p_success"] for s in scores])),
            "task_reward": float(np.mean([s["expected_task"] for s in scores])),
            "critical_steps": float(np.mean([s["critical_steps"] for s in scores])),
        },
    }


# --- statistics -------------------------------------------------------------------------------


def t_interval(values) -> tuple[float, float]:
    """Mean and the 95 % t half-width over `values` (nan half-width for fewer than 2)."""
    from swarmscope.credit import t_quantile_975

    v = np.asarray(values, float)
    if len(v) < 2:
        return float(v.mean()) if len(v) else float("nan"), float("nan")
    return float(v.mean()), float(t_quantile_975(len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))


def paired_power(effect: float, sd: float, seeds: int) -> float:
    """Power of the two-sided paired t test at 5 % to detect a mean difference `effect` with a
    seed-to-seed SD `sd` of the differences from `seeds` >= 2 pairs: P(|T| > t_.975) with T
    noncentral t (df seeds - 1, noncentrality effect sqrt(seeds) / sd)."""
    from scipy import stats

    df = seeds - 1
    critical = stats.t.ppf(0.975, df)
    nc = abs(effect) * np.sqrt(seeds) / sd
    return float(stats.nct.sf(critical, df, nc) + stats.nct.cdf(-critical, df, nc))


def seeds_needed(effect: float, sd: float, power: float = POWER, most: int = 10_000) -> int | None:
    """The fewest seeds (>= 2) at which `paired_power` reaches `power`; None past `most` (or for
    no effect)."""
    if not effect or not np.isfinite(effect) or not sd > 0:
        return None
    for seeds in range(2, most + 1):
        if paired_power(effect, sd, seeds) >= power:
            return seeds
    return None


def detectable(sd: float, seeds: int, power: float = POWER) -> float:
    """The smallest mean difference the paired t test detects at `power` with `seeds` pairs (the
    minimum detectable effect), by bisection on `paired_power`."""
    if seeds < 2 or not sd > 0:
        return float("nan")
    low, high = 0.0, 20 * sd
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if paired_power(middle, sd, seeds) < power else (low, middle)
    return high


def paired(runs: list[dict[str, Any]], arm: str, against: str, n: int) -> list[float]:
    """Held-out E[R] of `arm` minus `against`'s, per seed both ran at n."""
    other = {r["seed"]: r["held_out"]["expected_success"] for r in runs if r["n"] == n and r["arm"] == against}
    mine = sorted((r for r in runs if r["n"] == n and r["arm"] == arm), key=lambda r: r["seed"])
    return [r["held_out"]["expected_success"] - other[r["seed"]] for r in mine if r["seed"] in other]


def power_table(runs: list[dict[str, Any]], ns, seeds: int | None = None) -> dict[str, Any]:
    """Per n, from the pilot's runs: the gain of `expected` over `shared` (mean, 95 %), the SD of
    the paired difference, the seeds needed to detect that gain at `POWER`, and (with `seeds`) the
    smallest gain detectable with that many seeds."""
    out: dict[str, Any] = {}
    for n in ns:
        diff = paired(runs, "expected", "shared", n)
        if len(diff) < 2:
            continue
        sd = float(np.std(diff, ddof=1))
        mean = float(np.mean(diff))
        out[str(n)] = {
            "pilot_seeds": len(diff),
            "gain": t_interval(diff),
            "sd": sd,
            "seeds_needed": seeds_needed(mean, sd),
            "detectable_at_sweep_seeds": detectable(sd, seeds) if seeds else None,
        }
    return out


def smoothed(run: dict[str, Any], window: int = 3) -> np.ndarray:
    """(I,) training E[R] as a trailing mean over `window` iterations."""
    values = np.array([it["metrics"]["expected_success"] for it in run["iterations"]])
    return np.array([values[max(0, k - window + 1) : k + 1].mean() for k in range(len(values))])


def summarise(runs: list[dict[str, Any]], profile: dict[str, Any]) -> dict[str, Any]:
    """Per n: the untrained policy's training E[R] (`start`) and per arm the mean ± 95 % of
    `final_held_out`, `minus_shared` and `minus_expected` (paired by seed), `final_training`,
    `env_steps_per_update`, `cpu_s_per_update`, the re-rollout share, and the seeds' values."""
    out: dict[str, Any] = {}
    for n in profile["n"]:
        mine = [r for r in runs if r["n"] == n]
        if not mine:
            continue
        arms = [a for a in ARMS if any(r["arm"] == a for r in mine)]
        start = float(np.mean([r["iterations"][0]["metrics"]["expected_success"] for r in mine]))
        per_arm: dict[str, Any] = {}
        for arm in arms:
            rs = sorted((r for r in mine if r["arm"] == arm), key=lambda r: r["seed"])
            held = [r["held_out"]["expected_success"] for r in rs]
            updates = [len(r["iterations"]) for r in rs]
            credit = [sum(it["metrics"]["credit_env_steps"] for it in r["iterations"]) / r["env_steps"] for r in rs]
            per_arm[arm] = {
                "seeds": len(rs),
                "updates": sorted(set(updates)),
                "final_held_out": t_interval(held),
                "minus_shared": t_interval(paired(runs, arm, "shared", n)) if arm != "shared" else None,
                "minus_expected": t_interval(paired(runs, arm, "expected", n)) if arm != "expected" else None,
                "final_held_out_task_reward": t_interval([r["held_out"]["task_reward"] for r in rs]),
                "final_training": t_interval([float(smoothed(r)[-1]) for r in rs]),
                "env_steps_per_update": t_interval([r["env_steps"] / u for r, u in zip(rs, updates)]),
                "cpu_s_per_update": t_interval([r.get("cpu_s", r["wall_s"]) / u for r, u in zip(rs, updates)]),
                "credit_share": float(np.mean(credit)),
                "values": {"held_out": held, "seeds": [r["seed"] for r in rs]},
            }
        out[str(n)] = {"start": start, "arms": per_arm}
    return out


# --- figure -----------------------------------------------------------------------------------

COLORS = {
    "shared": "#4263eb",
    "expected": "#ae3ec9",
    "counterfactual_baseline": "#e8590c",
    "counterfactual_baseline_exact": "#2f9e44",
}


def figure(runs: list[dict[str, Any]], summary: dict[str, Any], base: dict[str, Any], path: Path) -> None:
    """Top: final held-out E[R] against n per arm (baselines dashed), each arm minus shared paired by
    seed, and env steps per update (the re-rollout overhead), with 95 % bands. Bottom: training
    E[R] against updates per n, mean of the seeds with a 95 % band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [int(n) for n in summary]
    columns = max(3, len(ns))
    fig, axes = plt.subplots(2, columns, figsize=(5 * columns, 8.5), squeeze=False)
    panels = (
        ("final_held_out", "final E[R], held-out tasks (equal updates)", False),
        ("minus_shared", "held-out E[R] minus shared's, paired by seed", False),
        ("env_steps_per_update", "env steps per update (re-rollouts counted)", True),
    )
    for ax, (key, title, log) in zip(axes[0], panels):
        for arm, color in COLORS.items():
            xs = [n for n in ns if arm in summary[str(n)]["arms"] and summary[str(n)]["arms"][arm][key] is not None]
            if not xs:
                continue
            mean = np.array([summary[str(n)]["arms"][arm][key][0] for n in xs])
            half = np.nan_to_num(np.array([summary[str(n)]["arms"][arm][key][1] for n in xs]))
            ax.plot(xs, mean, "o-", color=color, label=arm)
            ax.fill_between(xs, mean - half, mean + half, color=color, alpha=0.15)
        if key == "final_held_out":
            for name, style in (("fixed fan-out (8 experts + verifier)", "s--"), ("tuned fan-out", "^:")):
                if all(str(n) in base for n in ns):
                    ax.plot(
                        ns,
                        [np.mean(base[str(n)][name]["expected_success"]) for n in ns],
                        style,
                        color="#495057",
                        label=name,
                    )
            ax.plot(
                ns, [summary[str(n)]["start"] for n in ns], "x:", color="#adb5bd", label="untrained (training E[R])"
            )
        if key == "minus_shared":
            ax.axhline(0.0, color="#868e96", lw=0.8)
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
            length = min(len(r["iterations"]) for r in rs)
            ys = np.array([smoothed(r)[:length] for r in rs])
            mean = ys.mean(axis=0)
            half = np.nan_to_num(np.array([t_interval(col)[1] for col in ys.T])) if len(rs) > 1 else np.zeros_like(mean)
            done = np.arange(1, length + 1)
            ax.plot(done, mean, color=color, label=arm)
            ax.fill_between(done, mean - half, mean + half, color=color, alpha=0.15)
        ax.set_xlabel("updates")
        ax.set_title(f"n = {n}: training E[R] (trailing mean of 3)", fontsize=10)
        ax.legend(fontsize=7)
    for ax in axes[1][len(ns) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- report -----------------------------------------------------------------------------------


def fmt(pair, spec: str = ".3f") -> str:
    if pair is None:
        return "–"
    mean, half = pair
    return f"{mean:{spec}} ± {half:{spec.lstrip('+')}}" if np.isfinite(half) else f"{mean:{spec}}"


def power_lines(power: dict[str, Any], seeds: int | None) -> list[str]:
    lines = [
        "| n | pilot seeds | expected − shared, held-out E[R] ± 95 % | SD of the paired difference | "
        "seeds for 80 % power | smallest gain detectable at 80 % with the sweep's seeds |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n, p in power.items():
        found = p["detectable_at_sweep_seeds"]
        lines.append(
            f"| {n} | {p['pilot_seeds']} | {fmt(p['gain'], '+.3f')} | {p['sd']:.3f} | "
            f"{p['seeds_needed'] if p['seeds_needed'] is not None else '> 10,000 or no gain'} | "
            + (f"{found:.3f} ({seeds} seeds)" if found is not None else "–")
            + " |"
        )
    return lines


def markdown(
    summary: dict[str, Any],
    base: dict[str, Any],
    power: dict[str, Any],
    profile: dict[str, Any],
    args: argparse.Namespace,
    argv: list[str],
    wall_min: float,
) -> str:
    load = os.getloadavg()[0]
    lines = [
        "## Issue 30 item 7: credit that replaces the outcome, against the exact-expectation reference "
        "(bench/credit_diffusion.py)",
        "",
        f"`{' '.join(['nice -n 10 .venv/bin/python bench/credit_diffusion.py', *argv])}`, "
        f"`date -u` = {time.strftime('%a %b %d %H:%M UTC %Y', time.gmtime())}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs shared, 1-minute load at the end {load:.1f}, Python {platform.python_version()}, "
        f"{args.workers} runs at a time (1 thread each), {wall_min:.1f} min in all; {profile['iterations']} updates "
        f"at every n. Figure: `bench/figures/credit_diffusion.png`; runs: `bench/figures/credit_diffusion.json`.",
        "",
        "Power (the pilot, other seeds than the sweep's):",
        "",
        *power_lines(power, profile["seeds"]),
        "",
        "| n | arm | seeds | final E[R] held-out ± 95 % | minus shared's (paired) | minus expected's (paired) | "
        "task reward held-out | training E[R], last 3 updates | env steps per update | CPU s per update | "
        "re-rollout share |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, s in summary.items():
        for arm, a in s["arms"].items():
            lines.append(
                f"| {n} | {arm} | {a['seeds']} | {fmt(a['final_held_out'])} | {fmt(a['minus_shared'], '+.3f')} | "
                f"{fmt(a['minus_expected'], '+.3f')} | {fmt(a['final_held_out_task_reward'])} | "
                f"{fmt(a['final_training'])} | {fmt(a['env_steps_per_update'], ',.0f')} | "
                f"{fmt(a['cpu_s_per_update'], '.2f')} | {a['credit_share']:.0%} |"
            )
    lines += [
        "",
        "Untrained policy's training E[R] (first update's episodes): "
        + "; ".join(f"n = {n}: {s['start']:.3f}" for n, s in summary.items())
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


# --- the fast re-rollout ------------------------------------------------------------------------


def time_rerollouts(n: int = 64, episodes: int = 4, repeats: int = 3) -> dict[str, Any]:
    """CPU seconds of one episode's block credit at n (an untrained policy's episodes, block size
    `BLOCK_SIZE`, 2 redraws): through the full path (every re-rollout's episode built: trace,
    critical path, rewards) and the fast path (`outcome_credit`: none built); best of `repeats`,
    and whether the credit is identical."""
    import torch

    from trainer.policy import OrchestratorPolicy, play
    from trainer.recipes.config import RunConfig
    from trainer.recipes.train_orchestrator import iteration_scripts
    from trainer.rl.credit import decision_credit, outcome_credit

    torch.set_num_threads(1)
    config = RunConfig.from_dict(run_config("counterfactual_baseline", n, 0))
    torch.manual_seed(0)
    policy = OrchestratorPolicy(config.hidden)
    games = play(policy, iteration_scripts(config, 0), config.sim_config(), config.stop, config.max_agents)[:episodes]
    decision_credit(policy, games[0], 1.0, config, lambda e: e.reward)  # imports, caches
    full_s, fast_s, same = [], [], True
    for _ in range(repeats):
        started = time.process_time()
        full = [decision_credit(policy, g, g.episode.reward, config, lambda e: e.reward)[0] for g in games]
        full_s.append(time.process_time() - started)
        started = time.process_time()
        fast = [outcome_credit(policy, g, config, exact=False)[0] for g in games]
        fast_s.append(time.process_time() - started)
        same &= all(np.array_equal(a, b) for a, b in zip(full, fast))
    return {
        "n": n,
        "episodes": episodes,
        "decisions": float(np.mean([len(g.moves) for g in games])),
        "full_s_per_episode": min(full_s) / episodes,
        "fast_s_per_episode": min(fast_s) / episodes,
        "identical": bool(same),
    }


# --- main -------------------------------------------------------------------------------------


def run_jobs(jobs: list[tuple], workers: int, sink_path: Path) -> None:
    """Run `jobs` (`one_run`'s) on `workers` processes, appending each finished run to `sink_path`."""
    sink_path.parent.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(workers) as pool, sink_path.open("a") as sink:
        for future in as_completed([pool.submit(one_run, job) for job in jobs]):
            sink.write(json.dumps(future.result()) + "\n")
            sink.flush()


def read_runs(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the test profile: n = 4, 2 seeds, 3 updates")
    parser.add_argument("--pilot", action="store_true", help="run the pilot (shared, expected) and its power table")
    parser.add_argument("--seeds", type=int, help="seeds per (arm, n) (default: the profile's)")
    parser.add_argument("--n", type=int, nargs="+", help="task sizes (default: the profile's)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "figures"))
    parser.add_argument("--scratch", default="/tmp/credit_diffusion", help="checkpoints and runs.jsonl")
    parser.add_argument(
        "--report-only", action="store_true", help="no training: report the runs finished so far (SCRATCH/runs.jsonl)"
    )
    parser.add_argument("--time-rerollouts", action="store_true", help="time the fast re-rollout path against the full")
    args = parser.parse_args(argv)
    if args.time_rerollouts:
        timing = time_rerollouts()
        print(json.dumps(timing))
        return timing
    profile = dict(PROFILES["quick" if args.quick else "full"])
    if args.seeds:
        profile["seeds"] = args.seeds
    if args.n:
        profile["n"] = tuple(args.n)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(args.scratch)
    started = time.monotonic()
    pilot_path = scratch / "pilot.jsonl"
    if args.pilot:
        pilot_path.parent.mkdir(parents=True, exist_ok=True)
        pilot_path.write_text("")
        jobs = [
            (arm, n, PILOT_SEED + seed, profile["iterations"], profile["eval_tasks"], str(scratch / "pilot"))
            for seed in range(profile["pilot_seeds"])
            for n in sorted(profile["n"], reverse=True)
            for arm in PILOT_ARMS
        ]
        run_jobs(jobs, args.workers, pilot_path)
        power = power_table(read_runs(pilot_path), profile["n"])
        result = {"pilot": power, "runs": read_runs(pilot_path), "wall_min": (time.monotonic() - started) / 60}
        (out / "credit_diffusion_pilot.json").write_text(json.dumps(result))
        print("\n".join(power_lines(power, None)))
        return result
    done = scratch / "runs.jsonl"
    if not args.report_only:
        done.parent.mkdir(parents=True, exist_ok=True)
        done.write_text("")
        jobs = [
            (arm, n, seed, profile["iterations"], profile["eval_tasks"], str(scratch))
            for seed in range(profile["seeds"])
            for n in profile["n"]
            for arm in ARMS
        ]
        # seed by seed, the long runs first: a sweep cut short has every arm and n at the same seeds
        jobs.sort(key=lambda j: (j[2], -COST[j[0]] * j[1]))
        run_jobs(jobs, args.workers, done)
    runs = read_runs(done)
    runs.sort(key=lambda r: (r["n"], ARMS.index(r["arm"]), r["seed"]))
    # a seed counts only where every arm of its n finished (a sweep cut short)
    complete = {
        (n, s)
        for n in profile["n"]
        for s in {r["seed"] for r in runs}
        if {r["arm"] for r in runs if r["n"] == n and r["seed"] == s} == set(ARMS)
    }
    runs = [r for r in runs if (r["n"], r["seed"]) in complete]
    profile["n"] = tuple(n for n in profile["n"] if any(r["n"] == n for r in runs))
    seeds = len({r["seed"] for r in runs})
    pilot_runs = read_runs(pilot_path)
    power = power_table(pilot_runs, profile["n"], seeds)
    base = {str(n): baselines(n, profile["eval_tasks"], profile["tune_tasks"]) for n in profile["n"]}
    summary = summarise(runs, profile)
    result = {
        "profile": "quick" if args.quick else "full",
        "settings": {**profile, "block_size": BLOCK_SIZE, "arms": ARMS, "seeds_complete": seeds},
        "pilot": power,
        "summary": summary,
        "baselines": base,
        "runs": runs,
    }
    (out / "credit_diffusion.json").write_text(json.dumps(result))
    figure(runs, summary, base, out / "credit_diffusion.png")
    text = markdown(
        summary,
        base,
        power,
        {**profile, "seeds": seeds},
        args,
        sys.argv[1:] if argv is None else argv,
        (time.monotonic() - started) / 60,
    )
    (out / "credit_diffusion.md").write_text(text + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
