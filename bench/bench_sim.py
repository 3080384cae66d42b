"""Benchmark: SwarmSim episode speed at the Kimi K2.6 envelope, and batched environment steps/s.

1. One episode of `suites.envelope_actions` (300 sub-agents, 4,000 orchestrator actions): the
   dynamics alone (`rollout`) and end to end (`simulate`: trace, costs, rewards incl. critical
   steps). Target: end to end under 0.5 s on one core.
2. `BatchedSwarmEnv`: `--batch` episodes of the `long` level (120 subtasks) under `BatchedFanOut(8)`
   with a verifier, stepped together until all stop (tasks generated beforehand). Target: >= 50,000 environment steps/s.
3. For reference, `run_policy` on one `long` episode (steps/s of the per-episode API).

The process pins itself to one CPU (`--cpu`, default the first it may use). Prints best and
median of `--repeat` runs.

    .venv/bin/python bench/bench_sim.py [--repeat 5] [--batch 4096] [--cpu N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer.sim.baselines import (  # noqa: E402
    BatchedFanOut,
    BatchedSwarmEnv,
    FixedFanOut,
    run_policy,
)
from trainer.sim.env import SwarmEnv, rollout, simulate  # noqa: E402
from trainer.sim.suites import envelope_actions  # noqa: E402
from trainer.sim.tasks import generate_task  # noqa: E402


def timed(function: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(best, median) wall time of `function()` over `repeat` calls, in seconds."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        runs.append(time.perf_counter() - start)
    return min(runs), statistics.median(runs)


def batched_run(tasks: list) -> int:
    """Build a `BatchedSwarmEnv` of `tasks` and step it to the end; returns the steps taken."""
    env = BatchedSwarmEnv(tasks, np.arange(len(tasks)))
    policy = BatchedFanOut(8, verifier=True)
    while not env.done.all():
        env.step(*policy.act(env))
    return int(env.steps.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--cpu", type=int, default=min(os.sched_getaffinity(0)))
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    print(f"python {platform.python_version()} on {platform.machine()}, pinned to CPU {args.cpu} of {os.cpu_count()}")

    task, actions = envelope_actions(0)
    episode = simulate(task, actions)
    print(
        f"envelope: {len(actions)} actions, {len(episode.trace.agents) - 1} sub-agents, "
        f"{len(episode.trace.events)} events, {len(episode.trace.edges)} edges"
    )
    for name, function in (
        ("rollout (dynamics only)", lambda: rollout(task, actions)),
        ("simulate (trace, costs, rewards)", lambda: simulate(task, actions)),
    ):
        best, median = timed(function, args.repeat)
        print(f"  {name:34s} best {best * 1000:7.1f} ms  median {median * 1000:7.1f} ms")

    tasks = [generate_task("long", seed) for seed in range(args.batch)]
    steps = batched_run(tasks)
    best, median = timed(lambda: batched_run(tasks), args.repeat)
    print(
        f"batched: {args.batch} long episodes, {steps} steps (building the env included): "
        f"best {steps / best:,.0f} steps/s, median {steps / median:,.0f} steps/s"
    )

    single = generate_task("long", 0)
    steps = len(run_policy(SwarmEnv(single), FixedFanOut(8, verifier=True)).actions)
    best, median = timed(lambda: run_policy(SwarmEnv(single), FixedFanOut(8, verifier=True)), args.repeat)
    print(
        f"run_policy, one long episode: {steps} steps, best {steps / best:,.0f} steps/s, "
        f"median {steps / median:,.0f} steps/s"
    )


if __name__ == "__main__":
    main()
