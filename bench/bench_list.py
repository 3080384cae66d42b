"""Trace list at 100,000 traces: server-side pagination and search, on SQLite (or DATABASE_URL).

    .venv/bin/python bench/bench_list.py [--traces 100000]

Creates the rows in a temporary data folder (bulk insert, not timed), then times the list page as a
logged-in user sees it: first page, a deep page, a search, and the JSON API's list. Median of 5.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("SWARMSCOPE_DATA_DIR", tempfile.mkdtemp(prefix="swarmscope-bench-list-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
os.environ["SWARMSCOPE_IGNORE_EMBEDDED_REDIS"] = "1"

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from webapp.accounts.services import do_add_member, do_get_or_create_project  # noqa: E402
from webapp.traces.models import Trace  # noqa: E402


def timed(client: Client, url: str, runs: int = 5) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return statistics.median(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=100_000)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    project = do_get_or_create_project("Bench")
    user = get_user_model().objects.create_user("bench", password="bench-password")
    do_add_member(project, user)
    start = time.perf_counter()
    systems = ("AG2", "Magentic-One", "MetaGPT", "ChatDev", "OpenManus")
    Trace.objects.bulk_create(
        [
            Trace(
                project=project,
                identity_key=f"bench:{i}",
                source_format="native",
                source_id=str(i),
                name=f"run {i} of the {systems[i % 5]} swarm",
                system=systems[i % 5],
                event_count=i % 500,
                agent_count=i % 30,
                label_summary="mistake_agent=WebSurfer" if i % 97 == 0 else "",
            )
            for i in range(args.traces)
        ],
        batch_size=5000,
    )
    print(f"created {args.traces} traces in {time.perf_counter() - start:.1f} s (not timed below)")
    client = Client()
    client.force_login(user)
    pages = args.traces // 50
    for label, url in (
        ("first page", "/"),
        ("middle page", f"/?page={pages // 2}"),
        ("last page", f"/?page={pages}"),
        ("search by label", "/?q=WebSurfer"),
        ("search by system", "/?q=MetaGPT&page=3"),
        ("API list", "/api/traces/?page=2&page_size=50"),
    ):
        median, worst = timed(client, url)
        print(f"{label:18s} {url:40s} median {median:7.1f} ms   max {worst:7.1f} ms")


if __name__ == "__main__":
    main()
