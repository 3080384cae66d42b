"""Cost of redaction at ingestion (swarmscope.redaction with the default SWARMSCOPE_REDACT_PATTERNS):
`redact_trace` over every trace of ../shared/data, and over a synthetic 20,000-event trace.

    .venv/bin/python bench/bench_redaction.py

Prints, per source, traces, events, content characters, matches replaced, and the best of 5 runs;
then the worst cases for a regular expression: one event whose content is a single 1 MB run of
characters a pattern may take (`x` repeated, hex, dotted) with no match in it, which must cost about
what 1 MB of prose costs (a pattern that backtracks quadratically takes minutes here).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")

from swarmscope.importers import SourceFile, read_files  # noqa: E402
from swarmscope.redaction import REDACTED, compile_patterns, redact_trace  # noqa: E402
from tests.synthetic import synthetic_trace  # noqa: E402
from webapp.config.settings import SWARMSCOPE_REDACT_PATTERNS  # noqa: E402

SHARED = Path(os.environ.get("SWARMSCOPE_SHARED_DATA", REPO.parent / "shared" / "data"))


def best_of(fn, runs=5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(name, traces, patterns):
    events = sum(len(t.events) for t in traces)
    chars = sum(len(e.content or "") for t in traces for e in t.events)
    redacted = [redact_trace(t, patterns) for t in traces]
    matches = sum((e.content or "").count(REDACTED) for t in redacted for e in t.events)
    seconds = best_of(lambda: [redact_trace(t, patterns) for t in traces])
    print(
        f"| {name} | {len(traces)} | {events:,} | {chars:,} | {matches} | {seconds * 1000:.1f} | "
        f"{events / seconds:,.0f} | {chars / seconds / 1e6:.1f} |"
    )


def main():
    patterns = compile_patterns(SWARMSCOPE_REDACT_PATTERNS)
    print("| source | traces | events | content chars | matches | best ms | events/s | MB/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    if SHARED.is_dir():
        for folder in sorted(p for p in SHARED.iterdir() if p.is_dir()):
            files = [SourceFile(str(p), p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()]
            traces = read_files(files).traces
            if traces:
                measure(folder.name, traces, patterns)
    else:
        print(f"(../shared/data not found at {SHARED}: real traces skipped)")
    measure("synthetic_trace(200, 20000)", [synthetic_trace(200, 20000, 0)], patterns)
    for name, text in (
        ("1 MB of 'x'", "x" * 1_000_000),
        ("1 MB of hex", os.urandom(500_000).hex()),
        ("1 MB of 'a.'", "a." * 500_000),
    ):
        trace = synthetic_trace(1, 3, 0)
        trace.events[0] = dataclasses.replace(trace.events[0], content=text)
        measure(f"one event: {name}", [trace], patterns)


if __name__ == "__main__":
    main()
