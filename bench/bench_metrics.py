"""Benchmark: metrics of a large synthetic orchestration trace.

Generates `synthetic_trace(agents, events, seed)` (default 1,000 agents / 20,000 events), then
times building the graphs, each metric on the built graphs, and `compute_metrics` end to end.
Prints the best and median of `--repeat` runs in milliseconds. Target (docs/architecture.md "Metrics"):
`compute_metrics` well under 2 s on a slow 2-core machine.

    .venv/bin/python bench/bench_metrics.py [--agents 1000] [--events 20000] [--seed 0] [--repeat 5]
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from swarmscope import metrics  # noqa: E402
from swarmscope.graph import TraceGraph  # noqa: E402
from tests.synthetic import synthetic_trace  # noqa: E402

METRICS = (
    metrics.critical_steps,
    metrics.critical_path,
    metrics.parallelism_efficiency,
    metrics.useful_agent_utilisation,
    metrics.protocol_overhead,
    metrics.message_redundancy,
    metrics.error_amplification,
    metrics.fan_out,
    metrics.spawn_depth,
    metrics.agents_alive,
    metrics.pseudo_parallel_agents,
    metrics.serial_collapse,
)


def timed(function: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(best, median) wall time of `function()` over `repeat` calls, in milliseconds."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        runs.append((time.perf_counter() - start) * 1000)
    return min(runs), statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    start = time.perf_counter()
    trace = synthetic_trace(args.agents, args.events, args.seed)
    print(
        f"synthetic_trace({args.agents}, {args.events}, {args.seed}): "
        f"{(time.perf_counter() - start) * 1000:.0f} ms, {len(trace.events)} events, "
        f"{len(trace.edges)} edges, {len(trace.agents)} agents"
    )

    rows = [("TraceGraph.of (graphs, uncached)", lambda: TraceGraph.of(trace))]
    graph = TraceGraph.of(trace)
    rows.append(("useful_events (reverse BFS)", lambda: TraceGraph.useful_events.func(graph)))
    # each metric from scratch: the graph's memo (critical steps, work durations) cleared first
    rows += [(function.__name__, lambda f=function: (graph.memo.clear(), f(graph))) for function in METRICS]
    rows.append(("compute_metrics (end to end)", lambda: metrics.compute_metrics(trace)))
    print(f"{'step':36s} {'best ms':>9s} {'median ms':>10s}")
    for name, function in rows:
        best, median = timed(function, args.repeat)
        print(f"{name:36s} {best:9.1f} {median:10.1f}")


if __name__ == "__main__":
    main()
