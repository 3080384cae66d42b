"""Benchmark: importing large synthetic orchestration traces from native JSON files on SQLite.

Writes `synthetic_trace(300, 4000)` and `synthetic_trace(1000, 20000)` as native JSON files to a
temporary folder, then times, `--repeat` times each, in seconds:

* `manage.py import_traces FILE` end to end (a subprocess: Django start-up, parsing, storing and
  the metrics refresh, which runs eagerly without Redis) into a fresh SQLite data folder
  (SWARMSCOPE_DATA_DIR), migrated first and not timed;
* the in-process service call `do_import_sources(project, [SourceFile])`, with reading the file
  (`read_files`: decode, detect, validate) also timed alone;
* a re-import of the same file, which must be a no-op: the trace's seq and its event, edge and
  agent counts stay as they were (checked; a change exits with status 1).

Targets (brief): the end-to-end import under 5 s for 4,000 events and under 20 s for 20,000.

    .venv/bin/python bench/bench_import.py [--repeat 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.servers import app_env, manage  # noqa: E402
from tests.synthetic import synthetic_trace  # noqa: E402

#: (agents, events, end-to-end target in seconds)
SIZES = ((300, 4000, 5.0), (1000, 20000, 20.0))
#: Import of 20,000 events takes seconds; a hung one must still end.
COMMAND_TIMEOUT_S = 600


def quiet_env(data_dir: Path) -> dict[str, str]:
    """The app's environment on SQLite in `data_dir`, no Redis (so Celery runs eagerly), logs at WARNING."""
    return app_env(data_dir, SWARMSCOPE_LOG_LEVEL="WARNING")


def stored_counts(database: Path) -> tuple[int, int, int, int]:
    """(max trace seq, events, edges, agents) read straight from the SQLite file."""
    with sqlite3.connect(database) as db:
        return tuple(
            db.execute(f"SELECT {q}").fetchone()[0]
            for q in (
                "COALESCE(MAX(seq), 0) FROM traces_trace",
                "COUNT(*) FROM traces_event",
                "COUNT(*) FROM traces_edge",
                "COUNT(*) FROM traces_agent",
            )
        )


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def summary(runs: list[float]) -> tuple[float, float]:
    return statistics.median(runs), min(runs)


def check(condition: bool, message: str) -> None:
    if not condition:
        print(f"FAILED: {message}", flush=True)
        sys.exit(1)


def run_import_command(path: Path, env: dict[str, str]) -> None:
    result = manage("import_traces", str(path), env=env, timeout=COMMAND_TIMEOUT_S)
    check(result.returncode == 0, f"import_traces {path.name} exited {result.returncode}:\n{result.stderr[-2000:]}")


def bench_command(path: Path, work: Path, repeat: int) -> dict[str, list[float]]:
    """`manage.py import_traces` into a fresh, migrated data folder per run; then re-imports."""
    runs: dict[str, list[float]] = {"import_traces (subprocess)": [], "re-import (subprocess)": []}
    for rep in range(repeat):
        data_dir = work / f"cli-{path.stem}-{rep}"
        env = quiet_env(data_dir)
        migrated = manage("migrate", "--verbosity", "0", env=env, timeout=COMMAND_TIMEOUT_S)
        check(migrated.returncode == 0, f"migrate exited {migrated.returncode}:\n{migrated.stderr[-2000:]}")
        runs["import_traces (subprocess)"].append(timed(lambda: run_import_command(path, env)))
    database = data_dir / "swarmscope.sqlite3"
    before = stored_counts(database)
    for _ in range(repeat):
        runs["re-import (subprocess)"].append(timed(lambda: run_import_command(path, env)))
        check(
            stored_counts(database) == before,
            f"re-import of {path.name} changed (seq, events, edges, agents) {before} -> {stored_counts(database)}",
        )
    return runs


def bench_service(path: Path, repeat: int) -> dict[str, list[float]]:
    """`read_files` alone, `do_import_sources` into a fresh trace, then re-imports (in this process)."""
    from swarmscope.importers import SourceFile, read_files
    from webapp.accounts.services import do_get_or_create_project
    from webapp.traces.ingest import do_import_sources
    from webapp.traces.models import Trace

    source = SourceFile(name=path.name, data=path.read_bytes())
    project = do_get_or_create_project(f"bench {path.stem}")
    runs: dict[str, list[float]] = {
        "read_files (parse only)": [],
        "do_import_sources": [],
        "re-import (do_import_sources)": [],
    }

    def import_once() -> Trace:
        (outcome,) = do_import_sources(project, [source])
        check(outcome.error is None and len(outcome.traces) == 1, f"import of {path.name}: {outcome.lines}")
        return outcome.traces[0]

    def counts(trace: Trace) -> tuple[int, int, int, int]:
        row = Trace.objects.get(pk=trace.pk)
        return row.seq, row.events.count(), row.edges.count(), row.agents.count()

    trace = None
    for _ in range(repeat):
        runs["read_files (parse only)"].append(timed(lambda: read_files([source])))
        if trace is not None:
            Trace.objects.filter(pk=trace.pk).delete()  # each run imports into a fresh trace
        start = time.perf_counter()
        trace = import_once()
        runs["do_import_sources"].append(time.perf_counter() - start)
    before = counts(trace)
    for _ in range(repeat):
        runs["re-import (do_import_sources)"].append(timed(import_once))
        check(
            counts(trace) == before,
            f"re-import of {path.name} changed (seq, events, edges, agents) {before} -> {counts(trace)}",
        )
    return runs


def setup_django(data_dir: Path) -> None:
    """Configure this process like `quiet_env`, then start Django and migrate (not timed)."""
    for name in ("REDIS_URL", "DATABASE_URL", "CELERY_BROKER_URL", "SWARMSCOPE_IGNORE_EMBEDDED_REDIS"):
        os.environ.pop(name, None)
    os.environ.update(
        SWARMSCOPE_DATA_DIR=str(data_dir),
        SWARMSCOPE_LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="webapp.config.settings",
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, SQLite "
        f"{sqlite3.sqlite_version}; {args.repeat} runs each",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="swarmscope-bench-import-") as tmp:
        work = Path(tmp)
        setup_django(work / "in-process")
        for agents, events, target in SIZES:
            trace = synthetic_trace(agents, events, args.seed)
            path = work / f"synthetic-{agents}a-{events}e.json"
            path.write_text(json.dumps(trace.to_dict()), encoding="utf-8")
            print(
                f"\n{path.name}: {len(trace.agents)} agents, {len(trace.events)} events, {len(trace.edges)} edges, "
                f"{path.stat().st_size / 2**20:.1f} MiB; end-to-end target < {target:.0f} s",
                flush=True,
            )
            rows = {**bench_command(path, work, args.repeat), **bench_service(path, args.repeat)}
            print(f"{'step':32s} {'median s':>9s} {'min s':>7s}  target")
            for name, runs in rows.items():
                median, best = summary(runs)
                verdict = ""
                if name == "import_traces (subprocess)":
                    verdict = f"< {target:.0f} s: {'met' if median < target else 'MISSED'}"
                elif name.startswith("re-import"):
                    verdict = "no-op: checked"
                print(f"{name:32s} {median:9.2f} {best:7.2f}  {verdict}", flush=True)


if __name__ == "__main__":
    main()
