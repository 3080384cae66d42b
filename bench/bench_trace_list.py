"""Trace list with facets at 1,000, 10,000 and 100,000 traces, on SQLite (or DATABASE_URL).

    .venv/bin/python bench/bench_trace_list.py [--sizes 1000 10000 100000] [--runs 5]

Grows one project's traces to each size (bulk insert, not timed: 60 % imported, 10 % streamed,
15 % branch traces of earlier traces, 15 % training episodes of 20 runs; 8 formats, 12 systems,
labels on 1 in 9, rewards on half), then times, as a logged-in member sees it through Django's
test client (median and max of `--runs`): the list page (default, a deep page, each sort, facet
filters, branches of one parent) — the whole view: count, page, derived-trace chips and every
facet's counts — and `services.list_facets` alone (the facets' GROUP BYs).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("SWARMSCOPE_DATA_DIR", tempfile.mkdtemp(prefix="swarmscope-bench-trace-list-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
os.environ["SWARMSCOPE_IGNORE_EMBEDDED_REDIS"] = "1"

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from webapp.accounts.services import do_add_member, do_get_or_create_project  # noqa: E402
from webapp.traces import facets, services  # noqa: E402
from webapp.traces.models import Trace, outcome_of  # noqa: E402

FORMATS = ("native", "whowhen", "otlp", "langfuse", "langsmith", "claude_code", "api", "mast")
SYSTEMS = tuple(f"system-{i}" for i in range(12))


def kind_of(i: int) -> str:
    slot = i % 20
    return "imported" if slot < 12 else "streamed" if slot < 14 else "branch" if slot < 17 else "episode"


def grow(project, start: int, stop: int) -> None:
    rows = []
    for i in range(start, stop):
        kind = kind_of(i)
        reward = None if i % 2 else (i % 3) / 2 - 0.25
        derived = f"trace:{project_first + (i % max(1, start or 50))}" if kind == "branch" else ""
        derived = f"run:{i % 20}" if kind == "episode" else derived
        rows.append(
            Trace(
                project=project,
                identity_key=f"bench:{i}",
                source_format="api" if kind == "streamed" else FORMATS[i % len(FORMATS)],
                source_id=str(i),
                name=f"trace {i} of {SYSTEMS[i % 12]}",
                system=SYSTEMS[i % 12],
                kind=kind,
                derived_from=derived,
                event_count=(i * 7) % 5000,
                agent_count=i % 40,
                total_tokens=(i * 13) % 100_000,
                duration_s=(i % 900) / 3,
                reward=reward,
                outcome=outcome_of(reward, {}),
                label_summary="mistake_agent=WebSurfer" if i % 9 == 0 else "",
            )
        )
    Trace.objects.bulk_create(rows, batch_size=5000)


def timed(fn, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times)


def get(client: Client, url: str):
    def fetch():
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)

    return fetch


project_first = 0


def main() -> None:
    global project_first
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    project = do_get_or_create_project("Bench")
    user = get_user_model().objects.create_user("bench", password="bench-password")
    do_add_member(project, user)
    client = Client()
    client.force_login(user)
    have = 0
    print("| traces | what | URL | median ms | max ms |")
    print("|---:|---|---|---:|---:|")
    for size in sorted(args.sizes):
        start = time.perf_counter()
        if not have:
            grow(project, 0, 1)
            project_first = Trace.objects.filter(project=project).order_by("pk").values_list("pk", flat=True).first()
            have = 1
        grow(project, have, size)
        have = size
        print(f"<!-- grew to {size} traces in {time.perf_counter() - start:.1f} s (not timed) -->", file=sys.stderr)
        if connection.vendor == "postgresql":
            # what autovacuum does after a bulk load; SQLite gathers no statistics by itself (none here)
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE traces_trace")
        listed = services.list_traces([project.pk], filters=services.ListFilters()).count()
        pages = max(1, listed // 50)
        parent = project_first
        cases = [
            ("list, default (derived hidden)", "/"),
            ("list, deep page", f"/?page={pages // 2}"),
            ("list, last page", f"/?page={pages}"),
            ("sort by events", "/?sort=-events"),
            ("sort by reward", "/?sort=-reward"),
            ("sort by name", "/?sort=name"),
            ("facets: format + label", "/?format=whowhen&label=yes"),
            ("facets: system + outcome", "/?system=system-3&outcome=success"),
            ("kind=branch", "/?kind=branch"),
            ("branches of one parent", f"/?from=trace%3A{parent}"),
            ("search", "/?q=WebSurfer"),
        ]
        for what, url in cases:
            median, worst = timed(get(client, url), args.runs)
            print(f"| {size:,} | {what} | `{url}` | {median:.1f} | {worst:.1f} |")
        for what, filters in (
            ("list_facets, default", services.ListFilters()),
            ("list_facets, format + label", services.ListFilters(formats=("whowhen",), label="yes")),
            ("list_facets, kind=branch", services.ListFilters(kinds=("branch",))),
        ):
            median, worst = timed(lambda f=filters: services.list_facets([project.pk], f), args.runs)
            print(f"| {size:,} | {what} | (query only) | {median:.1f} | {worst:.1f} |")
        for what, filters in (
            ("facet_counts, default", services.ListFilters()),
            ("facet_counts, search", services.ListFilters(query="WebSurfer")),
        ):
            counted = facets.facet_counts([project.pk], filters)
            median, worst = timed(lambda f=filters: facets.facet_counts([project.pk], f), args.runs)
            source = f"{counted.source}, {counted.cells} cells"
            print(f"| {size:,} | {what} | ({source}) | {median:.1f} | {worst:.1f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
