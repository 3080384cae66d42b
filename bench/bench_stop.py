"""Issue 30 item 8 (after issue 16 item 4): stop as a real decision, with the stop isolated from the
action policy. Every stop rule is applied to the SAME trained action policy (so a difference between
two rules is the stop's alone), and the gap between the learned-stop run and the rule-stop run is
split into the action policy's part and the stop's. SwarmSim with partial credit (a stop before the
answer earns 0.5 * the expected share of correct subtasks, `trainer.sim.env`). Prints a Markdown
section for bench/RESULTS.md.

    nice -n 10 .venv/bin/python bench/bench_stop.py [--budget 20000] [--seeds 5] [--eval-tasks 40]
        [--select-tasks 32] [--workers 2] [--json out.json]
    nice -n 10 .venv/bin/python bench/bench_stop.py --interior [--level hard] [--eval-tasks 20]

`--interior`: for scripted plans (4 solvers or 4 experts, every subtask delegated) the share of
tasks whose best stop is interior, i.e. where more work lowers the expected reward.

Per seed s, three trained action policies (`train`, every re-rollout counted in the budget):

- anytime: trained with `stop="anytime"` (the learned stop offered at every decision) to
  `--budget` environment steps; its stop heads' paired re-rollouts (`trainer.rl.stop.stop_targets`)
  count in the budget, so it gets fewer PPO updates (iterations) than a rule run.
- rule@updates: trained with `stop="rule"` for as many iterations (updates) as anytime had.
- rule@steps: the same run resumed to `--budget` environment steps (the recipe's resume is
  deterministic: the same as an uninterrupted run); the issue-16 rule arm.

Stop rules, each applied to each policy on the same held-out episodes (same task, same episode seed:
common random numbers):

- learned: the policy's own learned stop (`anytime`; only the anytime policy has trained stop heads).
- fixed-K: stop after exactly K delegations (a partial answer; K = n answers first: the rule),
  `Script.stop_after`. K in 1..n is tuned per policy on `--select-tasks` fresh TRAINING tasks
  (`trainer.rl.stop.tune_fixed_k`: one rule play each, every K valued by a one-step replay; the
  highest mean expected task reward, ties to the smaller K), never on the held-out tasks.
- rule: aggregate and stop once every subtask is delegated (`stop="rule"`).
- oracle: the best stopping point in hindsight on the policy's rule path (its decisions under the
  rule stop, which are also the fixed-K episodes' up to their stop): every decision before the
  stop, stopped there (`stop_value`, exact), or the rule's own end (`stop_regret(.., "anytime")` on
  the rule episode). An upper bound for fixed-K and rule on that path; the learned stop plays its own
  path (its stop probabilities change the draws' mapping), so it can land above it.

Evaluation on the fixed held-out tasks `test_set(level, eval_tasks)` (never trained or tuned on):
mean expected task reward E[w_success R - w_cs CS] at SwarmSim's exact E[R] for the episode's draws,
E[R], length, answered share; for the learned stop also its issue-16 regret over reachable stops on
its own path with its continuation (`stop_regret` with the policy). Bands: 95 % t intervals over
seeds; differences are paired by seed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer.policy import OrchestratorPolicy, Script, play  # noqa: E402
from trainer.recipes.config import RunConfig  # noqa: E402
from trainer.recipes.train_orchestrator import EPISODE_SEED_BASE, TASK_SEED_BASE, load_policy, train  # noqa: E402
from trainer.rl.rewards import episode_reward  # noqa: E402
from trainer.rl.stop import best_k, stop_regret, stop_value, tune_fixed_k  # noqa: E402
from trainer.sim.actions import aggregate, delegate, spawn, stop  # noqa: E402
from trainer.sim.env import SimConfig, simulate  # noqa: E402
from trainer.sim.tasks import generate_task, test_set  # noqa: E402

#: The trained action policies (module docstring).
POLICIES = ("anytime", "rule@updates", "rule@steps")
#: Stop rules; the learned one only on the policy whose stop heads were trained.
STOPS = ("learned", "fixed-K", "rule", "oracle")
#: Reward: the task terms only (no annealed parallelism / finish shaping, which would pay for work
#: and so bias the stop); the default critical-steps weight.
WEIGHTS = {"parallelism": 0.0, "finish": 0.0, "critical_steps": 0.002}
#: Seed offset of the K-tuning tasks (training-task seeds the runs do not reach).
SELECT_OFFSET = 9_000_000
#: Episode seeds of the held-out evaluation (task k plays at EVAL_SEED + k under every stop).
EVAL_SEED = 7_000


def base_config(args: argparse.Namespace, seed: int, stop: str, budget: int) -> RunConfig:
    return RunConfig.from_dict(
        {
            "level": args.level,
            "stop": stop,
            "answer_credit": "partial",
            "budget_steps": budget,
            "seed": seed,
            "max_steps": args.max_steps,
            "episodes_per_iteration": 16,
            "group_size": 4,
            "sample_episodes": 0,
            "reward_weights": WEIGHTS,
        }
    )


def tuning_scripts(config: RunConfig, seed: int, tasks: int) -> list[Script]:
    """Fresh training-like tasks (the training generator, seeds the runs do not reach)."""
    return [
        Script(
            generate_task(config.level, TASK_SEED_BASE + seed * 10_000_000 + SELECT_OFFSET + k),
            EPISODE_SEED_BASE + seed * 10_000_000 + SELECT_OFFSET + k,
        )
        for k in range(tasks)
    ]


def row_of(episode, weights) -> dict[str, float]:
    return {
        "expected_task": episode_reward(episode, weights, 0.0)["expected_task"],
        "p_success": episode.p_success,
        "length": float(len(episode.actions)),
        "answered": float(any(a.kind == "aggregate" for a in episode.actions)),
    }


def mean_rows(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


def evaluate(policy: OrchestratorPolicy, config: RunConfig, k: int, tasks: int, learned: bool) -> dict[str, dict]:
    """Mean figures over the held-out tasks under each stop rule (module docstring), same seeds."""
    sim, weights = config.sim_config(), config.reward_weights
    scripts = [Script(task, EVAL_SEED + j) for j, task in enumerate(test_set(config.level, tasks))]
    out: dict[str, dict] = {}
    rule = play(policy, scripts, sim, "rule", config.max_agents, record=False)
    out["rule"] = mean_rows([row_of(g.episode, weights) for g in rule])
    fixed = play(
        policy, [Script(s.task, s.seed, stop_after=k) for s in scripts], sim, "rule", config.max_agents, record=False
    )
    out["fixed-K"] = {**mean_rows([row_of(g.episode, weights) for g in fixed]), "k": k}
    oracle = []
    for game in rule:
        outcome = stop_regret(game.episode, weights, "anytime")
        value = episode_reward(game.episode, weights, 0.0)["expected_task"] + outcome.regret
        oracle.append({"expected_task": value, "before_answer": float(outcome.regret > 0)})
    out["oracle"] = mean_rows(oracle)
    if learned:
        games = play(policy, scripts, sim, "anytime", config.max_agents, record=False)
        rows = []
        for game in games:
            outcome = stop_regret(
                game.episode,
                weights,
                "anytime",
                policy=policy,
                mode="anytime",
                config=sim,
                max_agents=config.max_agents,
            )
            rows.append(
                {
                    **row_of(game.episode, weights),
                    "regret": outcome.regret,
                    "premature": float(outcome.premature),
                    "late": float(outcome.late),
                }
            )
        out["learned"] = mean_rows(rows)
    return out


def assess(policy_path: Path, config: RunConfig, args: argparse.Namespace, seed: int, learned: bool) -> dict:
    policy, _ = load_policy(policy_path)
    n = len(generate_task(config.level, 0).subtasks)
    tuned = tune_fixed_k(
        policy,
        tuning_scripts(config, seed, args.select_tasks),
        config.sim_config(),
        config.reward_weights,
        list(range(1, n + 1)),
        config.max_agents,
    )
    return {
        "stops": evaluate(policy, config, tuned.k, args.eval_tasks, learned),
        "k": tuned.k,
        "k_means": tuned.means,
        "tuning_steps": tuned.env_steps,
    }


def one_seed(args: argparse.Namespace, seed: int) -> dict:
    out: dict = {"seed": seed}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        learned = base_config(args, seed, "anytime", args.budget)
        summary = train(learned, checkpoint_dir=Path(tmp))
        out["anytime"] = assess(Path(tmp) / "last.pt", learned, args, seed, learned=True)
        out["anytime"].update(train_steps=summary["env_steps"], updates=summary["iterations"])
    updates = summary["iterations"]
    with tempfile.TemporaryDirectory() as tmp:
        rule = base_config(args, seed, "rule", args.budget)
        done = [0]
        equal = train(
            rule,
            checkpoint_dir=Path(tmp),
            on_iteration=lambda _: done.__setitem__(0, done[0] + 1),
            should_stop=lambda: done[0] >= updates,
        )
        out["rule@updates"] = assess(Path(tmp) / "last.pt", rule, args, seed, learned=False)
        out["rule@updates"].update(train_steps=equal["env_steps"], updates=equal["iterations"])
        full = train(rule, checkpoint_dir=Path(tmp), resume=True)
        out["rule@steps"] = assess(Path(tmp) / "last.pt", rule, args, seed, learned=False)
        out["rule@steps"].update(train_steps=full["env_steps"], updates=full["iterations"])
    out["wall_s"] = time.monotonic() - started
    return out


def interior_table(level: str, tasks: int) -> str:
    """Where the best stop lies for scripted plans (k workers of one role, every subtask delegated
    round-robin, aggregate, stop) under partial credit: the share of tasks whose best stopping point
    on the plan (`stop_regret`, exact, no continuation) is interior (before the answer, after
    decision 0), and the mean regret of stopping after the answer."""
    lines = [
        "| plan | w_cs | best stop before the answer | at decision 0 | regret of answering | E[R] |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for role, k in (("solver", 4), ("expert", 4)):
        for w_cs in (0.001, 0.002, 0.003):
            weights = {**RunConfig().reward_weights, **WEIGHTS, "critical_steps": w_cs}
            rows = []
            for j in range(tasks):
                task = generate_task(level, TASK_SEED_BASE + SELECT_OFFSET + j)
                plan = [spawn(role) for _ in range(k)]
                plan += [delegate(i, f"{role}_{i % k + 1}") for i in range(len(task.subtasks))] + [aggregate(), stop()]
                episode = simulate(task, plan, SimConfig(answer_credit="partial"), j)
                outcome = stop_regret(episode, weights)
                rows.append(
                    (
                        0 < outcome.best_point < outcome.achieved_point,
                        outcome.best_point == 0,
                        outcome.regret,
                        episode.p_success,
                    )
                )
            interior, zero, regret, p = (np.mean(c) for c in zip(*rows))
            lines.append(f"| {k} {role}s | {w_cs} | {interior:.2f} | {zero:.2f} | {regret:.3f} | {p:.3f} |")
    return "\n".join(lines)


def scripted_fixed_k_table(level: str, select_tasks: int, eval_tasks: int) -> str:
    """The fixed-K stop where the team is fixed by a script (k workers of one role, every subtask
    delegated round-robin, aggregate, stop; the `--interior` plans) at the bench's weights: K
    tuned on `select_tasks` training tasks (`best_k` over K = 1..n, the plan's prefix up to the
    K-th delegation then a stop), then on the held-out tasks: E[task reward] of the rule stop
    (the whole plan), of fixed-K and of the oracle (the best stop on the plan, `stop_regret`)."""
    weights = {**RunConfig().reward_weights, **WEIGHTS}
    sim = SimConfig(answer_credit="partial")

    def plan_of(task, role: str, k: int) -> list:
        plan = [spawn(role) for _ in range(k)]
        return plan + [delegate(i, f"{role}_{i % k + 1}") for i in range(len(task.subtasks))] + [aggregate(), stop()]

    def values(task, seed: int, role: str, k: int, ks: list[int]) -> tuple[dict[int, float], float]:
        episode = simulate(task, plan_of(task, role, k), sim, seed)
        own = episode_reward(episode, weights, 0.0)["expected_task"]
        n = len(task.subtasks)
        by_k = {K: (stop_value(episode, k + K, weights) if K < n else own) for K in ks}
        return by_k, own + stop_regret(episode, weights).regret

    lines = [
        "| plan | K chosen on training tasks | rule stop | fixed-K | oracle on the plan "
        "| fixed-K − rule (95 % over held-out tasks) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for role, k in (("solver", 4), ("expert", 4)):
        n = len(generate_task(level, 0).subtasks)
        ks = list(range(1, n + 1))
        train: dict[int, list[float]] = {K: [] for K in ks}
        for j in range(select_tasks):
            task = generate_task(level, TASK_SEED_BASE + SELECT_OFFSET + 500 + j)
            by_k, _ = values(task, task_seed(j), role, k, ks)
            for K, v in by_k.items():
                train[K].append(v)
        chosen = best_k(train)
        held_out = [values(task, EVAL_SEED + j, role, k, ks) for j, task in enumerate(test_set(level, eval_tasks))]
        rule = np.array([by_k[n] for by_k, _ in held_out])
        fixed = np.array([by_k[chosen] for by_k, _ in held_out])
        best = np.array([oracle for _, oracle in held_out])
        lines.append(
            f"| {k} {role}s | {chosen} | {rule.mean():.3f} | {fixed.mean():.3f} | {best.mean():.3f} | "
            f"{band(list(fixed - rule))} |"
        )
    return "\n".join(lines)


def task_seed(j: int) -> int:
    return EPISODE_SEED_BASE + SELECT_OFFSET + 500 + j


def band(values: list[float]) -> str:
    """mean ± 95 % t half-width over seeds."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return f"{x.mean():.3f}"
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return f"{x.mean():.3f} ± {half:.3f}"


def value(r: dict, policy: str, stop_rule: str, key: str = "expected_task") -> float:
    return r[policy]["stops"][stop_rule][key]


def table(results: list[dict]) -> str:
    """(a): every stop rule on every action policy."""
    lines = [
        "| action policy | updates | train steps | stop | K | E[task reward] | E[R] | length | answered |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for policy in POLICIES:
        updates = np.mean([r[policy]["updates"] for r in results])
        steps = np.mean([r[policy]["train_steps"] for r in results])
        for stop_rule in STOPS:
            if stop_rule not in results[0][policy]["stops"]:
                continue
            col = lambda key: [value(r, policy, stop_rule, key) for r in results]  # noqa: E731
            k = (
                "–"
                if stop_rule != "fixed-K"
                else f"{min(r[policy]['k'] for r in results)}–{max(r[policy]['k'] for r in results)}"
            )
            if stop_rule == "oracle":
                rest = "| – | – | – |"
            else:
                rest = f"| {band(col('p_success'))} | {band(col('length'))} | {band(col('answered'))} |"
            lines.append(
                f"| {policy} | {updates:.1f} | {steps:,.0f} | {stop_rule} | {k} | {band(col('expected_task'))} " + rest
            )
    return "\n".join(lines)


#: (b): the gap and its parts, each a paired per-seed difference of E[task reward]:
#: (label, (policy, stop) minuend, (policy, stop) subtrahend).
SPLIT = (
    ("gap: rule@steps + rule stop − anytime + learned stop", ("rule@steps", "rule"), ("anytime", "learned")),
    ("stop part: anytime + rule stop − anytime + learned stop", ("anytime", "rule"), ("anytime", "learned")),
    ("action part: rule@steps − anytime, both under the rule stop", ("rule@steps", "rule"), ("anytime", "rule")),
    ("… of it, more updates: rule@steps − rule@updates (rule stop)", ("rule@steps", "rule"), ("rule@updates", "rule")),
    (
        "… of it, trained under the learned stop: rule@updates − anytime (equal updates, rule stop)",
        ("rule@updates", "rule"),
        ("anytime", "rule"),
    ),
    ("anytime: fixed-K − learned stop", ("anytime", "fixed-K"), ("anytime", "learned")),
    ("anytime: oracle − learned stop", ("anytime", "oracle"), ("anytime", "learned")),
    ("anytime: fixed-K − rule stop", ("anytime", "fixed-K"), ("anytime", "rule")),
    ("anytime: oracle − fixed-K", ("anytime", "oracle"), ("anytime", "fixed-K")),
    ("rule@steps: fixed-K − rule stop", ("rule@steps", "fixed-K"), ("rule@steps", "rule")),
    ("rule@steps: oracle − rule stop", ("rule@steps", "oracle"), ("rule@steps", "rule")),
)


def split_table(results: list[dict]) -> str:
    lines = ["| difference of E[task reward] | mean ± 95 % | seeds > 0 |", "|---|---:|---:|"]
    for label, (p1, s1), (p2, s2) in SPLIT:
        diffs = [value(r, p1, s1) - value(r, p2, s2) for r in results]
        lines.append(f"| {label} | {band(diffs)} | {sum(d > 1e-12 for d in diffs)}/{len(diffs)} |")
    return "\n".join(lines)


def k_curve(results: list[dict], ks: tuple[int, ...] = (4, 8, 12, 16, 20, 24, 28, 31, 32)) -> str:
    """Mean tuning value by K (training tasks), over seeds, per policy."""
    lines = ["| action policy | " + " | ".join(f"K={k}" for k in ks) + " |", "|---|" + "---:|" * len(ks)]
    for policy in POLICIES:
        means = [{int(k): v for k, v in r[policy]["k_means"].items()} for r in results]  # JSON keys are str
        cells = [np.mean([m[k] for m in means]) for k in ks]
        lines.append(f"| {policy} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return "\n".join(lines)


def report(results: list[dict]) -> str:
    parts = [
        table(results),
        "",
        split_table(results),
        "",
        "Tuning value by K (training tasks, mean over seeds):",
        "",
        k_curve(results),
    ]
    learned = [r["anytime"]["stops"]["learned"] for r in results]
    parts += [
        "",
        "Learned stop on its own path (issue-16 regret over reachable stops, with its continuation): "
        f"regret {band([x['regret'] for x in learned])}, premature {band([x['premature'] for x in learned])}, "
        f"late {band([x['late'] for x in learned])}.",
        "",
        "Per seed, E[task reward] anytime learned / fixed-K (K) / rule / oracle; rule@updates rule; rule@steps rule:",
    ]
    for r in results:
        parts.append(
            f"- seed {r['seed']}: {value(r, 'anytime', 'learned'):.3f} / {value(r, 'anytime', 'fixed-K'):.3f} "
            f"({r['anytime']['k']}) / {value(r, 'anytime', 'rule'):.3f} / {value(r, 'anytime', 'oracle'):.3f}; "
            f"{value(r, 'rule@updates', 'rule'):.3f}; {value(r, 'rule@steps', 'rule'):.3f} "
            f"(updates {r['anytime']['updates']} / {r['rule@steps']['updates']}; {r['wall_s']:.0f} s)"
        )
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default="hard")
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--eval-tasks", type=int, default=40)
    parser.add_argument("--select-tasks", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1, help="seeds trained in parallel processes")
    parser.add_argument("--json", help="write the per-seed results here too (after each seed)")
    parser.add_argument("--from-json", help="only print the report of these per-seed results")
    parser.add_argument("--interior", action="store_true", help="only the scripted plans' best-stop table")
    args = parser.parse_args(argv)
    if args.interior:
        print(interior_table(args.level, args.eval_tasks))
        print()
        print(scripted_fixed_k_table(args.level, args.select_tasks, args.eval_tasks))
        return 0
    if args.from_json:
        print(report(json.loads(Path(args.from_json).read_text())))
        return 0
    results = []
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    with ProcessPoolExecutor(args.workers) as pool:
        for r in pool.map(one_seed, [args] * args.seeds, seeds):
            results.append(r)
            print(
                f"seed {r['seed']}: "
                + ", ".join(f"{p} {s} {value(r, p, s):.3f}" for p in POLICIES for s in r[p]["stops"])
                + f", K {r['anytime']['k']}, {r['wall_s']:.0f}s",
                file=sys.stderr,
                flush=True,
            )
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=2))
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
