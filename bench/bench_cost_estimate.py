"""Benchmark: how long the cost estimate of LLM jobs takes on the real Who&When Magentic-One logs.

For each Hand-Crafted log in ../shared/data/who-and-when (15 logs; the Orchestrator picks speakers,
so each re-generated turn after the fork also plans a "who speaks next" request), the backend plans
(`OpenAIRollout.plan_paired` / `plan_call`, counted chunk by chunk as
`webapp.counterfactuals.costs.estimate_cost` and `estimate_attribution_cost` count them; nothing is
sent):

- a counterfactual job: the first WebSurfer turn masked, N = 32 paired samples in chunks of
  SWARMSCOPE_ROLLOUT_CHUNK (8), plus the branch re-run of sample 0;
- an attribution's rollouts: paired leave-one-out over every message-like event (message,
  delegate, return), 8 samples. (An attribution job itself credits only `message` events, and
  these logs have one each, which `request_attribution` refuses; the message-like events give the
  planner a realistic load.)

Prints per log the events, planned requests and tokens, and the planning time (ms, wall clock,
one run each), then the median and maximum time. No database or endpoint is used.

    .venv/bin/python bench/bench_cost_estimate.py [--samples 32] [--attribution-samples 8]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402

from swarmscope.importers import SourceFile, read_files  # noqa: E402
from swarmscope.interventions import Intervention  # noqa: E402
from trainer.rollout.chat import ChatClient  # noqa: E402
from trainer.rollout.openai import OpenAIRollout  # noqa: E402
from webapp.counterfactuals import costs, services  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--attribution-samples", type=int, default=8)
    args = parser.parse_args()
    folder = ROOT.parent / "shared" / "data" / "who-and-when" / "Hand-Crafted"
    if not folder.is_dir():
        sys.exit(f"needs {folder} (the shared data folder)")
    files = sorted(folder.glob("*.json"), key=lambda f: int(f.stem) if f.stem.isdigit() else 0)
    traces = read_files([SourceFile(f.name, f.read_bytes()) for f in files]).traces
    chunk = settings.SWARMSCOPE_ROLLOUT_CHUNK
    print(
        f"# {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, chunk {chunk}"
    )
    print(
        "log | events | speaker order | counterfactual: requests, tokens, ms | attribution (loo, message-like): "
        "players, requests, tokens, ms"
    )
    times = []
    for trace in traces:
        runner = OpenAIRollout(trace, ChatClient("http://127.0.0.1:9/v1", "model"))
        target = next(e.id for e in trace.events if e.agent == "WebSurfer" and e.type in ("message", "return"))
        intervention = Intervention("mask", (target,))
        start = time.perf_counter()
        cost = costs._zero_cost()
        for first in range(0, args.samples, chunk):
            for arm in runner.plan_paired(intervention, np.arange(first, min(first + chunk, args.samples))).values():
                costs._add_cost(cost, costs._cost(arm))
        for arm in runner.plan_paired(intervention, np.arange(1)).values():
            costs._add_cost(cost, costs._cost(arm))
        counterfactual_ms = 1000 * (time.perf_counter() - start)
        players = [e.id for e in trace.events if e.type in ("message", "delegate", "return")]
        start = time.perf_counter()
        credit = costs._zero_cost()
        n = args.attribution_samples

        def planning_rollout(intervention, seeds):
            costs._add_cost(credit, costs._cost(runner.plan_call(intervention, seeds)))
            return np.zeros(len(seeds))

        for first in range(0, n, chunk):
            services.play_attribution_chunk(
                planning_rollout, "loo", players, "messages", n, 0, list(range(first, min(first + chunk, n)))
            )
        attribution_ms = 1000 * (time.perf_counter() - start)
        times.append((counterfactual_ms, attribution_ms))
        print(
            f"{trace.source_id} | {len(trace.events)} | {runner.speaker_order} | {cost['requests']}, "
            f"{cost['prompt_tokens'] + cost['completion_tokens']:,}, {counterfactual_ms:.0f} | {len(players)}, "
            f"{credit['requests']}, {credit['prompt_tokens'] + credit['completion_tokens']:,}, {attribution_ms:.0f}"
        )
    for k, name in enumerate(("counterfactual", "attribution")):
        values = [t[k] for t in times]
        print(f"{name}: median {statistics.median(values):.0f} ms, max {max(values):.0f} ms over {len(values)} logs")


if __name__ == "__main__":
    main()
