"""The recipe's CLI streams a run into a real app (pytest-django's live server) through the SDK
(`--url`/`--token`), the way a run on a cluster reports to a tracking server: the app holds the
same iterations the CLI wrote to metrics.jsonl, their episodes as traces, and the final summary."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.runs.conftest import TINY
from tests.servers import REPO
from webapp.runs.models import Run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]


def test_cli_streams_a_run_into_the_app(live_server, api_token, tmp_path, project):
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps(TINY))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "trainer.recipes.train_orchestrator", "--config", str(config),
                           "--out", str(out), "--url", live_server.url, "--token", api_token, "--name", "from the CLI"],
                          cwd=REPO, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stderr[-3000:]
    written = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    run = Run.objects.get(name="from the CLI")
    assert run.external and run.project == project and run.status == Run.FINISHED
    rows = list(run.iterations.order_by("iteration"))
    assert [(r.iteration, r.env_steps) for r in rows] == [(w["iteration"], w["env_steps"]) for w in written]
    assert [r.metrics["reward"] for r in rows] == [w["metrics"]["reward"] for w in written]
    assert all(r.episodes.count() == 1 for r in rows)
    assert run.summary["env_steps"] == run.env_steps == written[-1]["env_steps"]
    assert run.best_reward == max(w["metrics"]["reward"] for w in written)


def test_cli_with_a_bad_token_fails_clearly(live_server, tmp_path):
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps(TINY))
    done = subprocess.run([sys.executable, "-m", "trainer.recipes.train_orchestrator", "--config", str(config),
                           "--out", str(tmp_path / "out"), "--url", live_server.url, "--token", "ssk_wrong"],
                          cwd=REPO, capture_output=True, text=True, timeout=150)
    assert done.returncode != 0 and "401" in done.stderr
    assert not Run.objects.exists()
