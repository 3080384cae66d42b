"""The recipe's CLI streams a run into a real app (pytest-django's live server) through the SDK
(`--url`/`--token`), the way a run on a cluster reports to a tracking server: the app holds the
same iterations the CLI wrote to metrics.jsonl, their episodes as traces, and the final summary."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.servers import REPO
from tests.training.conftest import TINY
from webapp.training import services
from webapp.training.models import Run

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.services,
    pytest.mark.processes,
    pytest.mark.timeout(180),
]


def test_cli_streams_a_run_into_the_app(live_server, api_token, tmp_path, project):
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps(TINY))
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer.recipes.train_orchestrator",
            "--config",
            str(config),
            "--out",
            str(out),
            "--url",
            live_server.url,
            "--token",
            api_token,
            "--name",
            "from the CLI",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=150,
    )
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
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer.recipes.train_orchestrator",
            "--config",
            str(config),
            "--out",
            str(tmp_path / "out"),
            "--url",
            live_server.url,
            "--token",
            "ssk_wrong",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode != 0 and "401" in done.stderr
    assert not Run.objects.exists()


def _config(tmp_path, budget):
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({**TINY, "budget_steps": budget}))
    return path


def cli(tmp_path, url, token, *extra, budget=TINY["budget_steps"]):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer.recipes.train_orchestrator",
            "--config",
            str(_config(tmp_path, budget)),
            "--out",
            str(tmp_path / "out"),
            "--url",
            url,
            "--token",
            token,
            *extra,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=150,
    )


def test_a_resumed_cli_run_reports_to_the_same_app_run(live_server, api_token, tmp_path):
    first = cli(tmp_path, live_server.url, api_token, budget=TINY["budget_steps"] // 2)
    assert first.returncode == 0, first.stderr[-3000:]
    run = Run.objects.get()
    done_before = run.iterations.count()
    # the first process finished its run; a resume with a larger budget reports as a new run ...
    second = cli(tmp_path, live_server.url, api_token, "--resume")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "is finished: reporting as a new run" in second.stdout and Run.objects.count() == 2
    resumed = Run.objects.latest("pk")
    assert min(resumed.iterations.values_list("iteration", flat=True)) == done_before
    # ... while one whose app run is still open (a killed process) goes on reporting to it
    Run.objects.filter(pk=resumed.pk).update(status=Run.RUNNING)
    third = cli(tmp_path, live_server.url, api_token, "--resume", budget=TINY["budget_steps"] * 2)
    assert third.returncode == 0, third.stderr[-3000:]
    assert f"as run {resumed.pk} (resumed)" in third.stdout and Run.objects.count() == 2
    resumed.refresh_from_db()
    assert resumed.status == Run.FINISHED and resumed.env_steps >= TINY["budget_steps"] * 2


def interrupted_cli(tmp_path, url, token, interrupt) -> tuple[int, str]:
    """Start an endless CLI run, call `interrupt(process)` once the app holds its first iteration;
    returns its exit code and stderr."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainer.recipes.train_orchestrator",
            "--config",
            str(_config(tmp_path, 10**9)),
            "--out",
            str(tmp_path / "out"),
            "--url",
            url,
            "--token",
            token,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not Run.objects.filter(iterations__isnull=False).exists():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.2)
        interrupt(process)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    return process.returncode, err


def test_a_cli_run_cancelled_in_the_app_stops_and_keeps_its_checkpoint(live_server, api_token, tmp_path):
    # what Cancel on the run page does
    code, err = interrupted_cli(
        tmp_path, live_server.url, api_token, lambda process: services.do_request_cancel(Run.objects.get())
    )
    assert code == 1 and "was closed in the app" in err, err[-3000:]
    assert Run.objects.get().status == Run.CANCELLED and (tmp_path / "out" / "last.pt").exists()


def test_ctrl_c_leaves_the_app_run_open_for_resume(live_server, api_token, tmp_path):
    code, err = interrupted_cli(
        tmp_path, live_server.url, api_token, lambda process: process.send_signal(signal.SIGINT)
    )
    run = Run.objects.get()
    assert code == 130 and "Traceback" not in err and f"reporting to run {run.pk}" in err, err[-3000:]
    assert run.status == Run.RUNNING
    again = cli(tmp_path, live_server.url, api_token, "--resume", budget=run.env_steps + 1)
    assert again.returncode == 0 and f"as run {run.pk} (resumed)" in again.stdout, again.stderr[-3000:]
    assert Run.objects.get().status == Run.FINISHED


def test_cli_with_an_unreachable_app_fails_in_one_line(tmp_path):
    done = cli(tmp_path, "http://127.0.0.1:9", "ssk_any")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "http://127.0.0.1:9" in done.stderr


def test_two_cli_runs_with_the_same_seed_and_another_credit_both_finish(live_server, api_token, tmp_path):
    """The ablation from the CLI: same level and seed, another credit scheme, each its own app run;
    their sample episodes are stored per run, so neither conflicts with the other's."""
    for k, config in enumerate([TINY, {**TINY, "credit": "counterfactual", "budget_steps": 2000}]):
        path = tmp_path / f"cfg-{k}.json"
        path.write_text(json.dumps(config))
        done = subprocess.run(
            [sys.executable, "-m", "trainer.recipes.train_orchestrator", "--config", str(path)]
            + ["--out", str(tmp_path / f"out-{k}"), "--url", live_server.url, "--token", api_token],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=150,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    runs = list(Run.objects.order_by("pk"))
    assert [r.status for r in runs] == [Run.FINISHED, Run.FINISHED] and all(r.iterations_done >= 2 for r in runs)
