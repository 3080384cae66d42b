"""Reporting a CLI training run to the app over its runs API (`swarmscope.client`), the way a run on
a cluster reports to a tracking server: which app run to report to (a resumed one or a new one), each
iteration, and how the run ended."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from swarmscope.client import SwarmscopeClient, SwarmscopeError
from trainer.recipes.config import RunConfig


def app_run(client: Any, out: Path, config: RunConfig, args: argparse.Namespace) -> int:
    """The app run this process reports to: with --resume, the one recorded in OUT/app_run.json
    for the same URL while it is still open; else a new one (recorded there). Raises SwarmscopeError
    or OSError when the app refuses or cannot be reached."""
    record = out / "app_run.json"
    if args.resume and record.exists():
        try:
            known = json.loads(record.read_text())
            known = known if isinstance(known, dict) and isinstance(known.get("run_id"), int) else {}
        except ValueError:
            known = {}
        if not known:
            print(f"{record}: unreadable, reporting as a new run", flush=True)
        elif known.get("url") == client.url:
            try:
                status = client.get_run(known["run_id"])["status"]
            except SwarmscopeError as exc:
                if exc.status != 404:
                    raise
                status = "gone"
            if status in ("queued", "running"):
                print(f"streaming to {client.url} as run {known['run_id']} (resumed)", flush=True)
                return known["run_id"]
            print(f"run {known['run_id']} in the app is {status}: reporting as a new run", flush=True)
    run_id = client.create_run(config.to_dict(), name=args.name)["id"]
    record.write_text(json.dumps({"url": client.url, "run_id": run_id}))
    print(f"streaming to {client.url} as run {run_id}", flush=True)
    return run_id


class AppRefused(Exception):  # noqa: N818 - named for what the user reads: the app refused
    """The app refused an iteration (HTTP 4xx other than 409): `str()` says which and why in one
    line, e.g. "the app refused iteration 3: episodes[0]: must be a trace object"."""


def refusal(exc: SwarmscopeError) -> str:
    """The app's reason in `exc` (its JSON answer {"error", "field"}) as "field: error"."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") or (exc.body if isinstance(exc.body, str) and exc.body else f"HTTP {exc.status}")
    return f"{body['field']}: {error}" if body.get("field") else str(error)


class AppReporter:
    """One app run this process reports to (`run_id`, at `url` as given on the command line).
    `closed`: the app's answer (HTTP 409) once the run was closed there (cancelled), else None."""

    def __init__(self, client: Any, run_id: int, url: str):
        self.client, self.run_id, self.url = client, run_id, url
        self.closed: SwarmscopeError | None = None

    @classmethod
    def connect(cls, args: argparse.Namespace, out: Path, config: RunConfig) -> AppReporter:
        """Reach the app at `args.url` with `args.token` and pick the run (`app_run`). Raises
        SwarmscopeError or OSError (URLError, refused, timed out)."""
        client = SwarmscopeClient(args.url, args.token, retries=2)
        return cls(client, app_run(client, out, config, args), args.url)

    def post_iteration(self, report: dict) -> None:
        """Send one iteration dict; a 409 (the run was closed in the app) sets `closed`, another
        4xx raises AppRefused naming the iteration and the app's reason, a 5xx (after the client's
        retries) SwarmscopeError."""
        try:
            self.client.post_iteration(self.run_id, report)
        except SwarmscopeError as exc:
            if exc.status == 409:
                if self.closed is None:
                    self.closed = exc
                return
            if 400 <= exc.status < 500:
                raise AppRefused(f"the app refused iteration {report.get('iteration')}: {refusal(exc)}") from exc
            raise

    def fail(self, exc: BaseException) -> None:
        """Mark the run failed with the reason: an AppRefused's message, else `repr(exc)`; says so on
        stderr when the app cannot be told."""
        try:
            self.client.finish_run(
                self.run_id, status="failed", error=str(exc) if isinstance(exc, AppRefused) else repr(exc)
            )
        except (SwarmscopeError, OSError) as report_error:
            print(f"{self.url}: could not mark run {self.run_id} failed: {report_error}", file=sys.stderr)

    def finish(self, summary: dict[str, Any]) -> None:
        """Mark the run finished with the recipe's `summary`."""
        self.client.finish_run(self.run_id, summary=summary)
