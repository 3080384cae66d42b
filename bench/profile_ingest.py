"""Profile of the API's ingest path on PostgreSQL: where the time of one batch goes.

In this process (no Daphne, no network), Django's test client posts the batches of bench_api
(`synthetic_trace(events / 20, events)`, `--batch` events each) into a new trace of a fresh
database `swarmscope_bench_profile` (dropped at the end). Prints batch latency by quarter of the
stream (growth means a per-batch cost that grows with the stored trace), then the wall time per
batch of the write path's parts, in ms; the parts nest (a fetch runs inside `do_ingest`), so
they do not add up. `--cprofile N` prints cProfile's top N functions by cumulative time instead.

    .venv/bin/python bench/profile_ingest.py [--events 20000] [--batch 500] [--cprofile 40]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import functools
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import psycopg  # noqa: E402
from bench_api import encode_batches  # noqa: E402

from tests.synthetic import synthetic_trace  # noqa: E402

DATABASE = "swarmscope_bench_profile"
SERVICE_PARTS = (
    "do_ingest",
    "_read_stored",
    "plan_batch",
    "_known_event_ids",
    "_find_or_create_trace",
    "broadcast_trace_delta",
)


class PartTimer:
    """Wall time and calls of wrapped callables, by label."""

    def __init__(self):
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.calls: collections.Counter = collections.Counter()

    def wrap(self, owner, name: str, label) -> None:
        """Replace `owner.name` by a timed wrapper; `label` is a string or a function of the args."""
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                key = label(args) if callable(label) else label
                self.seconds[key] += time.perf_counter() - start
                self.calls[key] += 1

        setattr(owner, name, timed)


def instrument(timer: PartTimer) -> None:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.models.query import QuerySet

    from webapp.traces import api, ingest
    from webapp.web import api as web_api

    timer.wrap(QuerySet, "bulk_create", lambda a: f"bulk_create {a[0].model.__name__}")
    timer.wrap(QuerySet, "_fetch_all", lambda a: f"read {a[0].model.__name__} ({a[0]._iterable_class.__name__})")
    timer.wrap(BaseDatabaseWrapper, "commit", "commit")
    for name in SERVICE_PARTS:
        timer.wrap(ingest, name, f"ingest.{name}")
    for name in ("_fragment_from_batch", "parse_body"):  # as traces.api calls them
        timer.wrap(api, name, f"api.{name}")
    timer.wrap(web_api, "check_token", "web.api.check_token")


def setup_django(database_url: str, data_dir: str) -> str:
    """Start Django on `database_url`, migrate, and return a raw API token of a new superuser."""
    os.environ.update(
        DATABASE_URL=database_url,
        REDIS_URL=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9"),
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="bench-only-secret",
        SECURE_SSL_REDIRECT="0",
        SWARMSCOPE_LOG_LEVEL="WARNING",
        SWARMSCOPE_DATA_DIR=data_dir,
        DJANGO_SETTINGS_MODULE="webapp.config.settings",
    )
    import django
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    from webapp.accounts.services import (
        do_add_member,
        do_create_token,
        do_get_or_create_project,
    )

    user = get_user_model().objects.create_superuser("admin", "admin@localhost", "bench-password")
    project = do_get_or_create_project()
    do_add_member(project, user)
    return do_create_token(user, project, "profile")[1]


def stream(client, batches: list[tuple[bytes, int]], name: str) -> list[float]:
    """Post every batch into a new trace; the latency of each, in seconds."""
    created = client.post("/api/traces/", json.dumps({"name": name}), content_type="application/json")
    trace_id = created.json()["trace"]["id"]
    latencies = []
    for body, count in batches:
        start = time.perf_counter()
        response = client.post(f"/api/traces/{trace_id}/events/", body, content_type="application/json")
        latencies.append(time.perf_counter() - start)
        if response.status_code != 200 or response.json()["events_added"] != count:
            raise RuntimeError(f"batch answered {response.status_code}: {response.content[:300]!r}")
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cprofile", type=int, default=0, metavar="N", help="print cProfile's top N instead")
    args = parser.parse_args()

    server = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
    batches = encode_batches(synthetic_trace(max(1, args.events // 20), args.events, args.seed), args.batch)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    try:
        with tempfile.TemporaryDirectory(prefix="swarmscope-profile-") as tmp:
            token = setup_django(f"{server}/{DATABASE}", tmp)
            from django.db import connections
            from django.test import Client

            client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
            stream(client, batches[:2], "warm-up")
            if args.cprofile:
                profile = cProfile.Profile()
                profile.enable()
                stream(client, batches, "profiled")
                profile.disable()
                pstats.Stats(profile).sort_stats("cumulative").print_stats(args.cprofile)
            else:
                timer = PartTimer()
                instrument(timer)
                latencies = stream(client, batches, "profiled")
                quarter = max(1, len(latencies) // 4)
                by_quarter = [
                    sum(latencies[i : i + quarter]) * 1000 / len(latencies[i : i + quarter])
                    for i in range(0, quarter * 4, quarter)
                ]
                print(
                    f"{len(batches)} batches of {args.batch}: {sum(latencies):.2f} s, "
                    f"{args.events / sum(latencies):.0f} events/s; mean ms per batch by quarter of the stream: "
                    + ", ".join(f"{ms:.0f}" for ms in by_quarter)
                )
                print(f"{'part':48s} {'ms/batch':>8s} {'calls':>6s}")
                for label, seconds in sorted(timer.seconds.items(), key=lambda item: -item[1]):
                    print(f"{label:48s} {seconds * 1000 / len(batches):8.1f} {timer.calls[label]:6d}")
            connections.close_all()
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


if __name__ == "__main__":
    main()
