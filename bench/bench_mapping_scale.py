"""Benchmark: how the OTel mapping's cost (spans -> orchestration trace, `otel.build_trace`) grows
with the trace, in one process, no store.

For each size, a fan-out trace of about that many spans (`otlp_cases.fanout`: an orchestrator
delegating through tool calls to 300 workers per round, each worker with LLM and tool spans) is
decoded from OTLP/protobuf once, then mapped `--repeats` times; reported: spans, the median wall
seconds and microseconds per span of the mapping alone. A rule that looks across the trace per
span shows as µs/span growing with size. Prints a Markdown table.

    .venv/bin/python bench/bench_mapping_scale.py --sizes 3300,10000,33000 --repeats 3
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from otlp_cases import fanout, requests  # noqa: E402

from swarmscope.importers import otlp  # noqa: E402
from swarmscope.importers.otel import build_trace  # noqa: E402

WORKERS = 300
TOOL_CALLS = 4


def spans_of(size: int) -> tuple[str, list]:
    """The spans of a fan-out case of about `size` spans (one trace)."""
    per_round = 3301  # spans per round of 300 workers with 4 tool calls each
    case = fanout(f"fanout-{size}", 7, WORKERS, max(1, round(size / per_round)), TOOL_CALLS)
    spans: dict[str, list] = {}
    for request in requests(case, 500):
        for trace_id, batch in otlp.decode_protobuf(request.SerializeToString()).items():
            spans.setdefault(trace_id, []).extend(batch)
    ((trace_id, found),) = spans.items()
    return trace_id, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="3300,10000,33000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| spans | mapping s (median) | µs per span |\n|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        trace_id, spans = spans_of(size)
        runs = []
        for _ in range(args.repeats):
            gc.collect()
            start = time.perf_counter()
            build_trace(spans, source_format="otlp", trace_id=trace_id)
            runs.append(time.perf_counter() - start)
        median = statistics.median(runs)
        print(f"| {len(spans):,} | {median:.2f} | {median / len(spans) * 1e6:.1f} |", flush=True)


if __name__ == "__main__":
    main()
