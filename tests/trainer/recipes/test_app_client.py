"""Which app run a CLI run reports to, and how its reports and ending reach the app (a fake client)."""

import argparse
import json

import pytest

pytest.importorskip("torch")

from swarmscope.client import SwarmscopeError  # noqa: E402
from trainer.recipes.app_client import AppRefused, AppReporter, app_run  # noqa: E402
from trainer.recipes.config import RunConfig  # noqa: E402


class FakeClient:
    url = "http://app"

    def __init__(self, status="running", refuse=None):
        self.status, self.refuse, self.calls = status, refuse, []

    def get_run(self, run_id):
        if self.status is None:
            raise SwarmscopeError(404, {"error": "not found"})
        return {"status": self.status}

    def create_run(self, config, *, name=""):
        self.calls.append(("create", name))
        return {"id": 7}

    def post_iteration(self, run_id, report):
        if self.refuse:
            raise SwarmscopeError(self.refuse, {"error": "closed"})
        self.calls.append(("iteration", run_id, report["iteration"]))

    def finish_run(self, run_id, *, status=None, error="", summary=None):
        self.calls.append(("finish", run_id, status, error, summary))


def args(resume=False):
    return argparse.Namespace(resume=resume, name="mine")


def test_a_new_run_is_created_and_recorded(tmp_path, capsys):
    client = FakeClient()
    assert app_run(client, tmp_path, RunConfig(), args()) == 7
    assert json.loads((tmp_path / "app_run.json").read_text()) == {"url": "http://app", "run_id": 7}
    assert client.calls == [("create", "mine")] and "streaming to http://app as run 7" in capsys.readouterr().out


@pytest.mark.parametrize("status, resumed", [("running", True), ("queued", True), ("finished", False), (None, False)])
def test_a_resume_reports_to_the_recorded_run_while_it_is_open(tmp_path, capsys, status, resumed):
    (tmp_path / "app_run.json").write_text(json.dumps({"url": "http://app", "run_id": 3}))
    assert app_run(FakeClient(status), tmp_path, RunConfig(), args(resume=True)) == (3 if resumed else 7)
    out = capsys.readouterr().out
    assert ("(resumed)" in out) == resumed
    if not resumed:
        assert f"is {status or 'gone'}: reporting as a new run" in out


def test_an_unreadable_record_reports_as_a_new_run(tmp_path, capsys):
    (tmp_path / "app_run.json").write_text("{not json")
    assert app_run(FakeClient(), tmp_path, RunConfig(), args(resume=True)) == 7
    assert "unreadable, reporting as a new run" in capsys.readouterr().out


def test_a_closed_run_is_noted_and_other_refusals_raise():
    reporter = AppReporter(FakeClient(refuse=409), 3, "http://app/")
    reporter.post_iteration({"iteration": 0})
    reporter.post_iteration({"iteration": 1})
    assert reporter.closed is not None and reporter.closed.status == 409
    with pytest.raises(AppRefused, match="the app refused iteration 0"):  # said in one line, no class name
        AppReporter(FakeClient(refuse=400), 3, "http://app/").post_iteration({"iteration": 0})


def test_finish_and_fail_reach_the_app():
    client = FakeClient()
    reporter = AppReporter(client, 3, "http://app/")
    reporter.post_iteration({"iteration": 0})
    reporter.fail(RuntimeError("boom"))
    reporter.finish({"iterations": 1})
    assert client.calls == [
        ("iteration", 3, 0),
        ("finish", 3, "failed", "RuntimeError('boom')", None),
        ("finish", 3, None, "", {"iterations": 1}),
    ]
