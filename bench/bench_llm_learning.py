"""Issue 31: does policy `llm` learn, and what does counterfactual credit buy over the shared outcome?
Per credit arm and seed, the recipe's own iterations (trainer.recipes.train_llm_orchestrator.LLMLearner,
as `train_orchestrator.train` runs them) to a budget of environment steps (re-rollouts counted), with
held-out evaluations along the way; beside them the MLP policy trained by its recipe to the same
budget and SwarmSim's heuristics. Prints Markdown tables for bench/RESULTS.md. Every finished run is
appended to OUT/runs.jsonl; `--report-only` rebuilds the tables from it for seeds seed0 .. seed0 +
seeds - 1, keeping the seeds every arm finished (so a cut-short benchmark still reports).

    nice -n 15 .venv/bin/python bench/bench_llm_learning.py --tiny [--seeds 5] [--budget 600]
        [--arms shared,expected,counterfactual_baseline,counterfactual_baseline_exact] [--episodes 8]
        [--group 4] [--lr 1e-2] [--eval-tasks 16] [--eval-every 1] [--workers 1] [--seed0 0]
        [--out /tmp/bench_llm_learning] [--report-only] [--curve-step 100] [--steps-at end|common]
        [--plot out.png] [--json out.json]
    nice -n 15 .venv/bin/python bench/bench_llm_learning.py --server --arms shared,counterfactual_baseline_exact
        --seeds 2 --iterations 3 --episodes 4 --group 2 --lr 1e-4      # SmolLM2 on the vLLM server

Arms (`--arms`, RunConfig.credit): `shared` (GRPO on the episode's reward), `expected` (the 0/1
outcome replaced by SwarmSim's exact E[R | actions]: the reference arm, what removing the outcome's
noise buys), `counterfactual_baseline` and `_exact` (block credit from re-rollouts replaces the
outcome; `--credit-blocks` x `--credit-samples` re-rollouts an episode, counted in env_steps).

`--tiny`: the model is the random 2-layer Llama of tests/trainer/llm_policy/tiny_lm.py, one per seed
(`tiny_lm(seed)`, saved as a model folder as tests/trainer/llm_policy/test_llm_recipe.py does, LoRA
on all its layers): this measures the algorithm (GRPO with each credit) on a policy shaped like a
language model, not what SmolLM2 learns. Without it, `--model` (default SmolLM2 as
trainer/llm_server.py builds it) with LoRA on the top `--layers` layers; `--server` samples on the
vLLM server of SWARMSCOPE_OPENAI_* (the adapter reloaded before every iteration and evaluation).

A run stops at the first iteration boundary at or past `--budget` env steps (or after `--iterations`
when given). Held-out evaluation (bench_llm_policy.held_out: `--eval-tasks` fixed tasks, seeds 900000+,
never trained on; stop mode learned) before training (iteration 0: the untrained model), after each of
the first `--eval-first` iterations, every `--eval-every` and at the end. Per episode, the figures the
MLP's evaluation uses (`trainer.rl.stop.episode_summary`: E[R] = p_success, expected task reward, stop
regret, premature and late stops by `stop_hindsight`) and whether it answered (aggregated). Intervals:
mean ± the 95 % Student t half-width over seeds (bench.credit_diffusion.t_interval; each seed's value is
its mean over the held-out tasks); differences between arms are paired by seed (same model, tasks and
episode seeds). Equal updates: every arm at the iteration count the fewest-iteration run reached; equal
environment steps: every arm at the end of its budget. The MLP rows: `train_orchestrator.train` (policy
mlp, PPO, its defaults) on the same level, step limit and agent cap with `budget_steps` = `--budget`
(it too stops at the first iteration boundary past it), played as its `evaluate` plays on the same
held-out tasks and seeds. Heuristics: single
agent, spawn-everything and the tuned fixed fan-out (`tune_fan_out` on 32 training tasks by expected
task reward) on the same held-out tasks (deterministic: their interval is over the held-out tasks).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.credit_diffusion import t_interval  # noqa: E402
from trainer.recipes.config import LLM_CREDITS, LLM_DEFAULTS, RunConfig  # noqa: E402
from trainer.rl.stop import episode_summary  # noqa: E402

#: The figures of a held-out evaluation, as (key, label, format).
FIGURES = (
    ("expected_reward", "E[R]", ".3f"),
    ("answered", "answered", ".2f"),
    ("stop_regret", "stop regret", ".3f"),
    ("premature", "premature", ".2f"),
    ("late", "late", ".2f"),
)


def summarise(episodes, weights) -> dict[str, float]:
    """Means over held-out `episodes` of E[R], expected task reward, stop regret, premature and late
    (shares of episodes; `episode_summary`) and the share that answered (aggregated)."""
    rows = [episode_summary(e, weights) for e in episodes]
    return {
        "expected_reward": float(np.mean([r["p_success"] for r in rows])),
        "expected_task": float(np.mean([r["expected_task"] for r in rows])),
        "answered": float(np.mean([any(a.kind == "aggregate" for a in e.actions) for e in episodes])),
        "stop_regret": float(np.mean([r["stop_regret"] for r in rows])),
        "premature": float(np.mean([r["premature"] for r in rows])),
        "late": float(np.mean([r["late"] for r in rows])),
        "length": float(np.mean([r["length"] for r in rows])),
    }


def run_config(args: argparse.Namespace, credit: str, seed: int, **changes) -> RunConfig:
    return RunConfig.from_dict(
        {
            **LLM_DEFAULTS,
            "policy": "llm",
            "level": args.level,
            "max_steps": args.max_steps,
            "credit": credit,
            "seed": seed,
            "episodes_per_iteration": args.episodes,
            "group_size": args.group,
            "lr": args.lr,
            "credit_blocks": args.credit_blocks,
            "credit_samples": args.credit_samples,
            "lora_rank": args.rank,
            "lora_layers": 0 if args.tiny else args.layers,
            "llm_rollouts": "server" if args.server else "local",
            "sample_episodes": 0,
            "budget_steps": args.budget,
            "threads": 1,
            **changes,
        }
    )


def llm_run(job: tuple[argparse.Namespace, str, int, str]) -> dict:
    """One (arm, seed) run of the recipe with its held-out evaluations."""
    import torch

    from bench.bench_llm_policy import held_out
    from trainer.llm_policy.play import server_chooser
    from trainer.recipes.train_llm_orchestrator import LLMLearner

    args, credit, seed, model = job
    config = run_config(args, credit, seed, llm_model=model)
    torch.set_num_threads(1)
    torch.manual_seed(seed)  # as train() does
    learner = LLMLearner(config)

    def evaluation(iteration: int, env_steps: int) -> dict:
        t0 = time.perf_counter()
        choose = None
        if learner.server:
            learner.publish(100_000 + iteration)  # the current adapter, for the evaluation
            choose = server_chooser(learner.server)
        games = held_out(
            learner.model,
            learner.tokenizer,
            config.level,
            config.sim_config(),
            args.eval_tasks,
            choose,
            config.stop,
        )
        out = {"iteration": iteration, "env_steps": env_steps, **summarise([g.episode for g in games], weights)}
        out["eval_s"] = round(time.perf_counter() - t0, 2)
        return out

    weights = config.reward_weights
    started = time.perf_counter()
    curve, evals = [], [evaluation(0, 0)]
    iteration, env_steps = 0, 0
    try:
        while env_steps < config.budget_steps and (not args.iterations or iteration < args.iterations):
            report, steps = learner.step(iteration, env_steps)
            env_steps += steps
            iteration += 1
            m = report["metrics"]
            curve.append(
                {
                    "iteration": iteration,
                    "env_steps": env_steps,
                    "train_expected_reward": m["expected_success"],
                    "train_reward": m["reward"],
                    "credit_env_steps": m["credit_env_steps"],
                    "gain": m["llm"].get("gain"),
                    "wall_s": round(time.perf_counter() - started, 1),
                }
            )
            print(f"  {credit} seed {seed}: {curve[-1]}", file=sys.stderr, flush=True)
            done = env_steps >= config.budget_steps or (args.iterations and iteration >= args.iterations)
            if done or iteration <= args.eval_first or iteration % args.eval_every == 0:
                evals.append(evaluation(iteration, env_steps))
    finally:
        learner.close()
    return {
        "policy": "llm",
        "credit": credit,
        "seed": seed,
        "curve": curve,
        "evals": evals,
        "wall_s": round(time.perf_counter() - started, 1),
    }


def mlp_run(job: tuple[argparse.Namespace, str, int, int]) -> dict:
    """The MLP recipe (policy mlp, its PPO defaults) on the same environment to `budget` env steps,
    then its held-out evaluation on the LLM runs' tasks and episode seeds."""
    import torch

    from bench.bench_llm_policy import EVAL_SEED
    from trainer.policy import Script, play
    from trainer.recipes.train_orchestrator import load_policy, train
    from trainer.sim.tasks import generate_task

    args, credit, seed, budget = job
    torch.set_num_threads(1)
    config = RunConfig.from_dict(
        {
            "policy": "mlp",
            "level": args.level,
            "max_steps": args.max_steps,
            "max_agents": LLM_DEFAULTS["max_agents"],
            "stop": "learned",
            "credit": credit,
            "seed": seed,
            "budget_steps": budget,
            "sample_episodes": 0,
            "credit_blocks": args.credit_blocks,
            "credit_samples": args.credit_samples,
        }
    )
    with tempfile.TemporaryDirectory(prefix="bench-llm-learning-mlp-") as folder:
        summary = train(config, checkpoint_dir=Path(folder))
        policy, _ = load_policy(Path(folder) / "last.pt")
    # train_orchestrator.evaluate's episodes (its summaries keep no actions, and answered needs them)
    scripts = [Script(generate_task(args.level, EVAL_SEED + i), EVAL_SEED + i) for i in range(args.eval_tasks)]
    games = play(policy, scripts, config.sim_config(), config.stop, config.max_agents, record=False)
    return {
        "policy": "mlp",
        "credit": credit,
        "seed": seed,
        "iterations": summary["iterations"],
        "env_steps": summary["env_steps"],
        **summarise([g.episode for g in games], config.reward_weights),
    }


def heuristics(args: argparse.Namespace) -> dict[str, dict]:
    """Single agent, spawn-everything and the tuned fixed fan-out on the held-out tasks: per policy
    the per-task figures (for an interval over tasks) and the policy's name."""
    from bench.bench_llm_policy import EVAL_SEED
    from trainer.rl.rewards import episode_reward
    from trainer.sim.baselines import SpawnEverything, run_policy, single_agent, tune_fan_out
    from trainer.sim.env import SwarmEnv
    from trainer.sim.tasks import generate_task

    config = run_config(args, "shared", 0)
    sim, weights = config.sim_config(), config.reward_weights
    train_tasks = [generate_task(args.level, 800_000 + i) for i in range(32)]
    tuned, _ = tune_fan_out(train_tasks, lambda e: episode_reward(e, weights, 0.0)["expected_task"], sim, seed=800_000)
    policies = {"single agent": single_agent(), "spawn-everything": SpawnEverything(), f"tuned {tuned}": tuned}
    out = {}
    for name, policy in policies.items():
        episodes = [
            run_policy(SwarmEnv(generate_task(args.level, EVAL_SEED + i), sim, EVAL_SEED + i), policy)
            for i in range(args.eval_tasks)
        ]
        out[name] = {"per_task": [summarise([e], weights) for e in episodes], **summarise(episodes, weights)}
    return out


# --- reading the runs -------------------------------------------------------------------------------


def at_iteration(run: dict, iteration: int) -> dict:
    """The run's held-out evaluation at `iteration` (the last one at or before it)."""
    return [e for e in run["evals"] if e["iteration"] <= iteration][-1]


def cell(values: list[float], fmt: str) -> str:
    mean, half = t_interval(values)
    if np.isnan(mean):
        return "–"
    return f"{mean:{fmt}}" + ("" if np.isnan(half) else f" ± {half:{fmt.lstrip('+')}}")


def tables(runs: list[dict], mlp: list[dict], heur: dict, arms: list[str], steps_at: str = "end") -> list[str]:
    """The Markdown tables of held-out figures. Equal env steps (`steps_at`): "end", each run's last
    evaluation (equal where the budget ended every run); "common", each run's last evaluation at or
    before the fewest env steps any run ended with (runs cut by `--iterations`)."""
    llm = [r for r in runs if r["policy"] == "llm"]
    k_common = min((len(r["curve"]) for r in llm), default=0)
    mark = min((r["evals"][-1]["env_steps"] for r in llm), default=0)

    def at_steps(run: dict) -> dict:
        return run["evals"][-1] if steps_at == "end" else [e for e in run["evals"] if e["env_steps"] <= mark][-1]

    where = "each run's end" if steps_at == "end" else f"each run's last evaluation at or before {mark} env steps"
    lines = [
        f"Held-out tasks: mean ± 95 % t half-width over seeds (each seed: the mean over the held-out tasks). "
        f"Equal updates: iteration {k_common} (the fewest any run reached); equal env steps: {where}.",
        "",
        "| policy | credit | seeds | iterations | env steps | " + " | ".join(label for _, label, _ in FIGURES) + " |",
        "|---|---|---:|---|---|" + "---:|" * len(FIGURES),
    ]

    def row(name, credit, chosen, iters, steps):
        cells = [cell([e[key] for e in chosen], fmt) for key, _, fmt in FIGURES]
        lines.append(f"| {name} | {credit} | {len(chosen)} | {iters} | {steps} | " + " | ".join(cells) + " |")

    first = [at_iteration(r, 0) for r in llm if r["credit"] == arms[0]]
    row("llm, untrained (iteration 0)", "–", first, "0", "0")
    for arm in arms:
        mine = [r for r in llm if r["credit"] == arm]
        at_k = [at_iteration(r, k_common) for r in mine]
        row("llm, equal updates", arm, at_k, str(k_common), cell([e["env_steps"] for e in at_k], ".0f"))
    for arm in arms:
        mine = [r for r in llm if r["credit"] == arm]
        end = [at_steps(r) for r in mine]
        iters = cell([e["iteration"] for e in end], ".1f")
        row("llm, equal env steps", arm, end, iters, cell([e["env_steps"] for e in end], ".0f"))
    for arm in arms:
        mine = [r for r in mlp if r["credit"] == arm]
        if mine:
            row(
                "mlp (its recipe)",
                arm,
                mine,
                cell([r["iterations"] for r in mine], ".1f"),
                cell([r["env_steps"] for r in mine], ".0f"),
            )
    for name, h in heur.items():
        cells = [cell([t[key] for t in h["per_task"]], fmt) for key, _, fmt in FIGURES]
        lines.append(f"| {name} | – | (over tasks) | – | – | " + " | ".join(cells) + " |")

    lines += ["", "**Change from the untrained model and difference to shared, paired by seed** (E[R]):", ""]
    lines += [
        "| credit | after − before, equal updates | after − before, equal env steps "
        "| − shared, equal updates | − shared, equal env steps |",
        "|---|---:|---:|---:|---:|",
    ]
    by_seed = {(r["credit"], r["seed"]): r for r in llm}
    for arm in arms:
        seeds = sorted(s for c, s in by_seed if c == arm)
        before = [at_iteration(by_seed[arm, s], 0)["expected_reward"] for s in seeds]
        at_k = [at_iteration(by_seed[arm, s], k_common)["expected_reward"] for s in seeds]
        end = [at_steps(by_seed[arm, s])["expected_reward"] for s in seeds]
        both = [s for s in seeds if ("shared", s) in by_seed]
        vs_k = [
            at_iteration(by_seed[arm, s], k_common)["expected_reward"]
            - at_iteration(by_seed["shared", s], k_common)["expected_reward"]
            for s in both
        ]
        vs_end = [
            at_steps(by_seed[arm, s])["expected_reward"] - at_steps(by_seed["shared", s])["expected_reward"]
            for s in both
        ]
        gained_k, gained_end = np.subtract(at_k, before).tolist(), np.subtract(end, before).tolist()
        against = "–" if arm == "shared" else None
        lines.append(
            f"| {arm} | {cell(gained_k, '+.3f')} | {cell(gained_end, '+.3f')} | "
            f"{against or cell(vs_k, '+.3f')} | {against or cell(vs_end, '+.3f')} |"
        )
    return lines


def exactly(run: dict, iteration: int) -> dict | None:
    """The run's held-out evaluation after exactly `iteration` iterations, or None."""
    return next((e for e in run["evals"] if e["iteration"] == iteration), None)


def curves(runs: list[dict], arms: list[str], step: int = 100) -> list[str]:
    """Held-out E[R] by iteration (equal updates) and by env steps (equal environment steps), mean ±
    95 % t half-width over seeds per arm, and by iteration each arm's difference to shared paired by seed."""
    llm = [r for r in runs if r["policy"] == "llm"]
    if not llm:
        return ["(no policy llm run finished)"]
    lines = [
        "**Held-out E[R] by iteration** (equal updates; mean ± 95 % t over seeds, mean env steps in brackets):",
        "",
    ]
    iters = sorted({e["iteration"] for r in llm for e in r["evals"]})
    lines += ["| credit | " + " | ".join(str(k) for k in iters) + " |", "|---|" + "---:|" * len(iters)]
    for arm in arms:
        mine = [r for r in llm if r["credit"] == arm]
        cells = []
        for k in iters:
            have = [e for e in (exactly(r, k) for r in mine) if e is not None]
            cells.append(
                f"{cell([e['expected_reward'] for e in have], '.3f')} ({np.mean([e['env_steps'] for e in have]):.0f})"
                if mine and len(have) == len(mine)
                else "–"
            )
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    by_seed = {(r["credit"], r["seed"]): r for r in llm}
    lines += ["", "**Difference to shared by iteration** (held-out E[R], paired by seed, mean ± 95 % t):", ""]
    lines += ["| credit | " + " | ".join(str(k) for k in iters[1:]) + " |", "|---|" + "---:|" * len(iters[1:])]
    for arm in arms[1:] if arms[0] == "shared" else arms:
        cells = []
        for k in iters[1:]:
            pairs = [
                (exactly(by_seed[arm, s], k), exactly(by_seed["shared", s], k))
                for c, s in by_seed
                if c == arm and ("shared", s) in by_seed
            ]
            ok = pairs and all(a is not None and b is not None for a, b in pairs)
            cells.append(cell([a["expected_reward"] - b["expected_reward"] for a, b in pairs], "+.3f") if ok else "–")
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    budget = min(r["evals"][-1]["env_steps"] for r in llm)
    marks = list(range(0, budget + 1, step))
    lines += [
        "",
        "**Held-out E[R] by environment steps** (equal environment steps: each run's last evaluation at or before "
        "the mark; mean ± 95 % t over seeds):",
        "",
    ]
    lines += ["| credit | " + " | ".join(f"{m:,}" for m in marks) + " |", "|---|" + "---:|" * len(marks)]
    for arm in arms:
        mine = [r for r in llm if r["credit"] == arm]
        cells = [
            cell([[e for e in r["evals"] if e["env_steps"] <= m][-1]["expected_reward"] for r in mine], ".3f")
            for m in marks
        ]
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="the tiny random Llama of the CPU tests, one per seed")
    parser.add_argument("--model", default="")
    parser.add_argument("--server", action="store_true")
    parser.add_argument("--arms", default=",".join(LLM_CREDITS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--seed0", type=int, default=0, help="the first seed (runs seeds seed0 .. seed0 + seeds - 1)")
    parser.add_argument("--budget", type=int, default=600, help="env steps per run, re-rollouts counted")
    parser.add_argument("--iterations", type=int, default=0, help="stop after this many iterations (0: budget only)")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--level", default="tiny")
    parser.add_argument("--max-steps", type=int, default=LLM_DEFAULTS["max_steps"])
    parser.add_argument("--credit-blocks", type=int, default=4)
    parser.add_argument("--credit-samples", type=int, default=2)
    parser.add_argument("--eval-tasks", type=int, default=16)
    parser.add_argument("--eval-every", type=int, default=1, help="evaluate every this many iterations")
    parser.add_argument("--eval-first", type=int, default=6, help="and at each of the first this many")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--no-mlp", action="store_true")
    parser.add_argument("--out", default="/tmp/bench_llm_learning", help="runs.jsonl: every finished run, appended")
    parser.add_argument("--report-only", action="store_true", help="report from OUT/runs.jsonl, run nothing")
    parser.add_argument("--curve-step", type=int, default=100, help="env steps between E[R]-by-steps marks")
    parser.add_argument(
        "--steps-at", choices=("end", "common"), default="end", help="equal env steps: each run's end, or a common mark"
    )
    parser.add_argument("--plot", help="save the E[R] curves as this PNG")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    arms = args.arms.split(",")
    for arm in arms:
        if arm not in LLM_CREDITS:
            parser.error(f"--arms: {arm!r} is not one of {', '.join(LLM_CREDITS)}")
    started = time.time()
    load_before = os.getloadavg()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    if not args.report_only:
        run_all(args, arms, log)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    wanted = range(args.seed0, args.seed0 + args.seeds)
    runs = [r for r in records if r.get("policy") == "llm" and r["credit"] in arms and r["seed"] in wanted]
    done = {s for s in {r["seed"] for r in runs} if {r["credit"] for r in runs if r["seed"] == s} >= set(arms)}
    runs = [r for r in runs if r["seed"] in done]  # seeds every arm finished (a cut-short benchmark's)
    mlp = [r for r in records if r.get("policy") == "mlp" and r["credit"] in arms and r["seed"] in wanted]
    heur = next((r["heuristics"] for r in records if "heuristics" in r), {})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, 1 torch thread, "
        f"code at {commit}; load (1/5/15 min) {load_before[0]:.2f}/{load_before[1]:.2f}/{load_before[2]:.2f} at the "
        f"start, {os.getloadavg()[0]:.2f} at the end; {time.time() - started:.0f} s wall; policy llm seeds every arm "
        f"finished: {sorted(done)}.",
        "",
        *tables(runs, mlp, heur, arms, args.steps_at),
        "",
        *curves(runs, arms, args.curve_step),
    ]
    print("\n".join(lines))
    if args.plot and runs:
        plot(runs, mlp, heur, arms, Path(args.plot))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"args": vars(args), "runs": runs, "mlp": mlp, "heuristics": heur, "markdown": lines}, indent=1)
            + "\n"
        )
    return 0


def plot(runs: list[dict], mlp: list[dict], heur: dict, arms: list[str], path: Path) -> None:
    """Held-out E[R] of each arm by updates and by environment steps (mean over seeds with the 95 %
    t band, each point at the evaluations every seed has), with the MLP recipe's mean (shared, at its
    budget) and the heuristics as horizontal lines; a PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    llm = [r for r in runs if r["policy"] == "llm"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for arm, color in zip(arms, plt.rcParams["axes.prop_cycle"].by_key()["color"]):
        mine = [r for r in llm if r["credit"] == arm]
        iters = sorted({e["iteration"] for r in mine for e in r["evals"]})
        points = [[exactly(r, k) for r in mine] for k in iters]
        points = [p for p in points if mine and all(e is not None for e in p)]
        if not points:
            continue
        mean, half = np.array([t_interval([e["expected_reward"] for e in p]) for p in points]).T
        half = np.nan_to_num(half)
        steps = [np.mean([e["env_steps"] for e in p]) for p in points]
        for ax, x in zip(axes, ([p[0]["iteration"] for p in points], steps)):
            ax.plot(x, mean, "o-", color=color, label=arm)
            ax.fill_between(x, mean - half, mean + half, color=color, alpha=0.15)
    shared_mlp = [r for r in mlp if r["credit"] == "shared"]
    lines = {}
    if shared_mlp:
        steps = np.mean([r["env_steps"] for r in shared_mlp])
        lines[f"mlp recipe, shared ({steps:.0f} steps)"] = np.mean([r["expected_reward"] for r in shared_mlp])
    lines |= {name: np.mean([t["expected_reward"] for t in h["per_task"]]) for name, h in heur.items()}
    for ax in axes:
        for (name, y), style in zip(lines.items(), ("--", "-.", ":", (0, (1, 3)))):
            ax.axhline(y, color="black", linestyle=style, linewidth=1, alpha=0.6, label=name)
        ax.set_ylabel("held-out E[R]")
        ax.set_ylim(-0.02, 1.02)  # E[R] is a probability; a t band over few seeds can pass 0 or 1
        ax.grid(alpha=0.3)
    axes[0].set_xlabel("updates (iterations)")
    axes[0].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axes[1].set_xlabel("environment steps (re-rollouts counted)")
    axes[1].legend(fontsize=7, loc="lower right")
    fig.suptitle("policy llm: held-out E[R], mean ± 95 % t over seeds", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_all(args: argparse.Namespace, arms: list[str], log: Path) -> None:
    """The heuristics, the MLP runs (budget `--budget`), then the LLM runs seed by seed, each record
    appended to `log` as it finishes (so a cut-short benchmark still reports its finished seeds)."""

    def keep(record: dict) -> None:
        with log.open("a") as f:
            f.write(json.dumps(record) + "\n")

    keep({"heuristics": heuristics(args)})
    scratch = Path(tempfile.mkdtemp(prefix="bench-llm-learning-"))
    models = {}
    for seed in range(args.seed0, args.seed0 + args.seeds):
        if args.tiny:
            from tests.trainer.llm_policy.tiny_lm import tiny_lm

            folder = scratch / f"tiny-{seed}"
            model, tokenizer = tiny_lm(seed)
            model.save_pretrained(folder)
            tokenizer.save_pretrained(folder)
            models[seed] = str(folder)
        else:
            models[seed] = args.model
    with ProcessPoolExecutor(args.workers) as pool:
        mlp_jobs = (
            []
            if args.no_mlp
            else [(args, arm, seed, args.budget) for seed in range(args.seed0, args.seed0 + args.seeds) for arm in arms]
        )
        for run in pool.map(mlp_run, mlp_jobs):
            keep(run)
        jobs = [(args, arm, seed, models[seed]) for seed in range(args.seed0, args.seed0 + args.seeds) for arm in arms]
        for run in pool.map(llm_run, jobs):
            keep(run)
            end = run["evals"][-1]
            print(
                f"# {run['credit']} seed {run['seed']}: {len(run['curve'])} iterations, {end['env_steps']} env steps, "
                f"E[R] {run['evals'][0]['expected_reward']:.3f} -> {end['expected_reward']:.3f}, {run['wall_s']} s",
                file=sys.stderr,
                flush=True,
            )
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
