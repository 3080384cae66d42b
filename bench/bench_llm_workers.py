"""Issue 31 item 2: SwarmSim with language-model workers (trainer.sim.llm_workers) on a real model:
does the orchestrator's choice change what the workers get right?

For `--tasks` tasks of each `--levels` level (seeds 700000+), a fixed orchestration per arm: spawn
one worker of the arm's role (`solver`: a short instruction; `expert`: also a worked example),
optionally a verifier (`+verifier`: SwarmSim's catch and one retry), delegate every subtask in order,
aggregate, stop; `--seeds` episode seeds per task. Reports per arm and level: the share of solve
attempts answered right (one-digit and two-digit operands apart), the share of episodes whose every
subtask is right, the reward (SwarmSim's, the aggregate drawn as there), requests, seconds per
request, with the machine's load. A role that does not change accuracy gives the policy nothing to
learn from spawning it: reported as plainly as one that does.

    export $(cat var/llm/server.env)
    .venv/bin/python bench/bench_llm_workers.py [--levels tiny,small] [--tasks 8] [--seeds 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer.rollout.chat import ChatClient  # noqa: E402
from trainer.sim import actions as act  # noqa: E402
from trainer.sim.env import SimConfig  # noqa: E402
from trainer.sim.llm_workers import TWO_DIGITS, LLMWorkerEnv, chat_worker  # noqa: E402
from trainer.sim.tasks import generate_task  # noqa: E402

ARMS = ("solver", "expert", "solver+verifier", "expert+verifier")


def play(task, worker, seed: int, arm: str):
    role, _, verifier = arm.partition("+")
    env = LLMWorkerEnv(task, SimConfig(max_steps=400), seed, worker=worker)
    env.step(act.spawn(role))
    if verifier:
        env.step(act.spawn("verifier"))
    for sub in task.subtasks:
        env.step(act.delegate(sub.id, f"{role}_1"))
    env.step(act.aggregate())
    env.step(act.stop())
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="tiny,small")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args()
    worker = chat_worker(ChatClient.from_env(timeout_s=600))
    header = {
        "machine": f"{platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "model": os.environ.get("SWARMSCOPE_OPENAI_MODEL"),
        "started_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_before": os.getloadavg(),
    }
    rows = []
    for level in args.levels.split(","):
        tasks = [generate_task(level, 700_000 + k) for k in range(args.tasks)]
        for arm in ARMS:
            attempts = {"one_digit": [0, 0], "two_digit": [0, 0]}
            all_right = rewards = episodes = 0
            sent, started = worker.requests, time.monotonic()
            for task in tasks:
                for seed in range(args.seeds):
                    env = play(task, worker, seed, arm)
                    episode = env.episode()
                    results = [e for e in episode.trace.events if e.type == "tool_result"]
                    for event in results:
                        i = event.attributes["subtask"]
                        kind = "two_digit" if task.subtasks[i].difficulty >= TWO_DIGITS else "one_digit"
                        attempts[kind][0] += bool(event.attributes["correct"])
                        attempts[kind][1] += 1
                    all_right += all(env.answers.get(s.id) == env.truth[s.id] for s in task.subtasks)
                    rewards += episode.reward
                    episodes += 1
            seconds, requests = time.monotonic() - started, worker.requests - sent
            row = {
                "level": level,
                "arm": arm,
                "episodes": episodes,
                **{f"{k}_right": f"{r}/{n}" for k, (r, n) in attempts.items()},
                "all_subtasks_right": all_right / episodes,
                "mean_reward": rewards / episodes,
                "requests": requests,
                "s_per_request": seconds / max(1, requests),
                "load": os.getloadavg()[0],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {**header, "rows": rows, "load_after": os.getloadavg()}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
