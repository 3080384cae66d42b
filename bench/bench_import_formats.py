"""Benchmark: `read_files` (decode, detect, map, validate; in memory, no database) per source format
on the real files of ../shared/data, and events per second.

One row per folder: the files read together (as one upload or `import_traces FOLDER` reads them, so
Claude Code subagent files, Codex child rollouts and OTel chunks join their trace), best and median
of `--repeat` runs, and the traces, events and bytes they gave. Needs ../shared/data (or
SWARMSCOPE_SHARED_DATA).

    .venv/bin/python bench/bench_import_formats.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from swarmscope.importers import SourceFile, read_files  # noqa: E402
from swarmscope.importers.files import iter_files  # noqa: E402

SHARED = Path(os.environ.get("SWARMSCOPE_SHARED_DATA", REPO.parent / "shared" / "data"))
FOLDERS = (
    "claude-code",
    "codex-cli",
    "langfuse-exports",
    "otel-monocle-agent-framework",
    "otel-agntcy-a2a",
    "who-and-when",
    "mast",
    "survey-trace-schema",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"{SHARED}: not found (set SWARMSCOPE_SHARED_DATA)")
    print(f"# {platform.node()} · {os.cpu_count()} CPUs · Python {platform.python_version()} · load {os.getloadavg()}")
    print("| folder | formats | files | MiB | traces | events | best s | median s | events/s (best) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for folder in FOLDERS:
        paths = list(iter_files([SHARED / folder]))
        sources = [SourceFile(str(p), p.read_bytes()) for p in paths]
        times, result = [], None
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = read_files(sources)
            times.append(time.perf_counter() - start)
        assert result is not None
        formats = sorted({f.format for f in result.files if f.format})
        events = sum(len(t.events) for t in result.traces)
        mib = sum(len(s.data) for s in sources) / 2**20
        best = min(times)
        print(
            f"| {folder} | {', '.join(formats)} | {len(sources)} | {mib:.2f} | {len(result.traces)} | {events:,} "
            f"| {best:.3f} | {statistics.median(times):.3f} | {events / best:,.0f} |"
        )


if __name__ == "__main__":
    main()
