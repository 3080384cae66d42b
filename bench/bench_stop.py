"""Issue 16 item 4: stop as a real decision. The learned stop (offered at every decision, `anytime`)
against the rule stop and a fixed step budget, at equal training budget, on SwarmSim with partial
credit (a stop before the answer earns 0.5 * the expected share of correct subtasks,
`trainer.sim.env`). Prints a Markdown section for bench/RESULTS.md.

    nice -n 10 .venv/bin/python bench/bench_stop.py [--budget 20000] [--seeds 5] [--eval-tasks 20]
        [--workers 2] [--json out.json]
    nice -n 10 .venv/bin/python bench/bench_stop.py --interior [--level hard] [--eval-tasks 20]

`--interior`: for scripted plans (4 solvers or 4 experts, every subtask delegated) the share of
tasks whose best stop is interior, i.e. where more work lowers the expected reward.

Per seed s (each arm `train`s with the same `budget_steps`, every re-rollout counted):

- learned: `stop="anytime"`; the stop heads' paired re-rollouts (`trainer.rl.stop.stop_targets`)
  count in the budget, as the recipe counts them.
- rule: `stop="rule"` (aggregate and stop once every subtask is delegated).
- budget: the rule policy trained to budget - S, then the step budget K (a grid) chosen on
  `--select-tasks` fresh training tasks: one play each under the rule stop plus one stop replay
  (one step) per K; S = that selection's environment steps, at most `select_tasks * (max_steps +
  len(grid))`, reserved in advance. Evaluated with SwarmSim's step limit at K (the rule stop if it
  comes first). The rule arm is the same run resumed to the full budget (the recipe's resume is
  deterministic: the same as an uninterrupted run).

Evaluation on the fixed held-out tasks `test_set(level, eval_tasks)` (never trained on), per arm:
mean expected task reward E[w_success R - w_cs CS] (SwarmSim's exact E[R] at the episode's
seed), stop regret (`trainer.rl.stop.stop_regret`, exact): the oracle is the best stopping point on
the arm's own path, its decisions up to its stop and its continuation (the same policy re-rolled at
the episode's seed with stop masked from its stop on, to `--max-steps`), every decision offered as
a stop (the `anytime` offer) and valued by a replay of the prefix then a stop; premature (the oracle
lies after the arm's stop) and late rates; episode length. Bands: 95 % t intervals over seeds.
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
from trainer.rl.stop import stop_regret, stop_value  # noqa: E402
from trainer.sim.actions import aggregate, delegate, spawn, stop  # noqa: E402
from trainer.sim.env import SimConfig, simulate  # noqa: E402
from trainer.sim.tasks import generate_task, test_set  # noqa: E402

ARMS = ("learned", "rule", "budget")
#: Reward: the task terms only (no annealed parallelism / finish shaping, which would pay for work
#: and so bias the stop); the default critical-steps weight.
WEIGHTS = {"parallelism": 0.0, "finish": 0.0, "critical_steps": 0.002}
#: Seed offset of the budget arm's selection tasks (training-task seeds the runs do not reach).
SELECT_OFFSET = 9_000_000


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


def grid(max_steps: int) -> list[int]:
    return list(range(10, max_steps + 1, 10))


def choose_budget(policy: OrchestratorPolicy, config: RunConfig, seed: int, tasks: int) -> tuple[int, int, dict]:
    """(best step budget K on fresh training tasks, environment steps spent, mean value by K)."""
    scripts = [
        Script(
            generate_task(config.level, TASK_SEED_BASE + seed * 10_000_000 + SELECT_OFFSET + k),
            EPISODE_SEED_BASE + seed * 10_000_000 + SELECT_OFFSET + k,
        )
        for k in range(tasks)
    ]
    games = play(policy, scripts, config.sim_config(), "rule", config.max_agents, record=False)
    steps = sum(g.env_steps for g in games)
    values: dict[int, list[float]] = {k: [] for k in grid(config.max_steps)}
    for game in games:
        episode = game.episode
        own = episode_reward(episode, config.reward_weights, 0.0)["expected_task"]
        for k in values:
            if k < len(episode.actions):
                values[k].append(stop_value(episode, k, config.reward_weights))
                steps += 1
            else:  # the rule stop comes first: the episode as played
                values[k].append(own)
    means = {k: float(np.mean(v)) for k, v in values.items()}
    return max(means, key=lambda k: means[k]), steps, means


def evaluate(policy: OrchestratorPolicy, config: RunConfig, mode: str, limit: int, tasks: int) -> dict[str, float]:
    """Mean figures over the held-out tasks under stop `mode` with step limit `limit`."""
    sim = SimConfig(max_steps=limit, answer_credit=config.answer_credit)
    scripts = [Script(task, 7_000 + k) for k, task in enumerate(test_set(config.level, tasks))]
    games = play(policy, scripts, sim, mode, config.max_agents, record=False)
    rows = []
    for game in games:
        outcome = stop_regret(
            game.episode,
            config.reward_weights,
            "anytime",
            policy=policy,
            mode=mode,
            config=config.sim_config(),
            max_agents=config.max_agents,
        )
        rows.append(
            {
                "expected_task": episode_reward(game.episode, config.reward_weights, 0.0)["expected_task"],
                "p_success": game.episode.p_success,
                "regret": outcome.regret,
                "premature": float(outcome.premature),
                "late": float(outcome.late),
                "length": float(len(game.episode.actions)),
                "answered": float(game.env.aggregated),
            }
        )
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


def one_seed(args: argparse.Namespace, seed: int) -> dict:
    out: dict = {"seed": seed}
    started = time.monotonic()
    learned = base_config(args, seed, "anytime", args.budget)
    with tempfile.TemporaryDirectory() as tmp:
        summary = train(learned, checkpoint_dir=Path(tmp))
        policy, _ = load_policy(Path(tmp) / "last.pt")
        out["learned"] = {**evaluate(policy, learned, "anytime", args.max_steps, args.eval_tasks)}
        out["learned"]["train_steps"] = summary["env_steps"]
    reserve = args.select_tasks * (args.max_steps + len(grid(args.max_steps)))
    with tempfile.TemporaryDirectory() as tmp:
        short = base_config(args, seed, "rule", args.budget - reserve)
        first = train(short, checkpoint_dir=Path(tmp))
        policy, _ = load_policy(Path(tmp) / "last.pt")
        k, select_steps, means = choose_budget(policy, short, seed, args.select_tasks)
        out["budget"] = {**evaluate(policy, short, "rule", min(k, args.max_steps), args.eval_tasks)}
        out["budget"].update(train_steps=first["env_steps"] + select_steps, budget_k=k, select_steps=select_steps)
        out["budget_by_k"] = means
        rule = base_config(args, seed, "rule", args.budget)
        full = train(rule, checkpoint_dir=Path(tmp), resume=True)
        policy, _ = load_policy(Path(tmp) / "last.pt")
        out["rule"] = {**evaluate(policy, rule, "rule", args.max_steps, args.eval_tasks)}
        out["rule"]["train_steps"] = full["env_steps"]
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


def band(values: list[float]) -> str:
    """mean ± 95 % t half-width over seeds."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return f"{x.mean():.3f}"
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return f"{x.mean():.3f} ± {half:.3f}"


def table(results: list[dict]) -> str:
    lines = [
        "| arm | train steps | E[task reward] | E[R] | stop regret | premature | late | length |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for arm in ARMS:
        col = {key: [r[arm][key] for r in results] for key in results[0][arm]}
        lines.append(
            f"| {arm} | {np.mean(col['train_steps']):,.0f} | {band(col['expected_task'])} | {band(col['p_success'])} | "
            f"{band(col['regret'])} | {band(col['premature'])} | {band(col['late'])} | {band(col['length'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default="hard")
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--eval-tasks", type=int, default=20)
    parser.add_argument("--select-tasks", type=int, default=16)
    parser.add_argument("--workers", type=int, default=1, help="seeds trained in parallel processes")
    parser.add_argument("--json", help="write the per-seed results here too")
    parser.add_argument("--interior", action="store_true", help="only the scripted plans' best-stop table")
    args = parser.parse_args(argv)
    if args.interior:
        print(interior_table(args.level, args.eval_tasks))
        return 0
    results = []
    with ProcessPoolExecutor(args.workers) as pool:
        runs = pool.map(one_seed, [args] * args.seeds, range(args.seeds))
        for r in runs:
            results.append(r)
            print(
                f"seed {r['seed']}: "
                + ", ".join(f"{arm} E {r[arm]['expected_task']:.3f} regret {r[arm]['regret']:.3f}" for arm in ARMS)
                + f", K {r['budget']['budget_k']}, {r['wall_s']:.0f}s",
                file=sys.stderr,
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print(table(results))
    print()
    print("per seed (E[task reward] learned / rule / budget; K):")
    for r in results:
        print(
            f"- seed {r['seed']}: {r['learned']['expected_task']:.3f} / {r['rule']['expected_task']:.3f} / "
            f"{r['budget']['expected_task']:.3f}; K = {r['budget']['budget_k']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
