"""Run every benchmark in turn and print its output: `make bench`, or

    .venv/bin/python bench/run_all.py [--only bench_import,bench_api]

bench_api needs PostgreSQL and Redis on loopback (see its docstring). Exits 1 when any benchmark
failed (a failed check, a crash or its timeout); a missed target is printed, not a failure.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = ("bench_metrics", "bench_import", "bench_api", "bench_render", "bench_live")
#: Wall-clock limit of one benchmark, in seconds; each takes about a minute on 2 slow cores.
TIMEOUT_S = 1200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated benchmark names")
    args = parser.parse_args()

    failed = []
    for name in args.only.split(","):
        print(f"=== {name} ===", flush=True)
        start = time.perf_counter()
        process = subprocess.Popen([sys.executable, str(HERE / f"{name}.py")])
        try:
            code = process.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.terminate()  # SIGTERM: the benchmark stops its servers in `finally`
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            code = "timeout"
        print(
            f"=== {name}: {'ok' if code == 0 else f'FAILED ({code})'} in {time.perf_counter() - start:.0f} s\n",
            flush=True,
        )
        if code != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
