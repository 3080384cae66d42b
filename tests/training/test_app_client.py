"""The CLI's reporter (trainer/recipes/app_client.py) on a refused iteration: one line naming the
iteration and the app's reason, the app run marked failed with it, no exception class or repr."""

from __future__ import annotations

from swarmscope.client import SwarmscopeError
from trainer.recipes import app_client, train_orchestrator


class RefusingClient:
    """A client whose app refuses every iteration with `status` and `body`; records finish_run."""

    url = "http://app.example"

    def __init__(self, status: int, body: dict):
        self.status, self.body = status, body
        self.finished: list[dict] = []

    def post_iteration(self, run_id, report):
        raise SwarmscopeError(self.status, self.body)

    def finish_run(self, run_id, **fields):
        self.finished.append(fields)


def test_a_refused_iteration_says_why_in_one_line_and_fails_the_app_run(tmp_path, monkeypatch, capsys):
    client = RefusingClient(400, {"error": "conflicts with the stored trace x", "field": "episodes[0]"})
    reporter = app_client.AppReporter(client, 7, client.url)
    monkeypatch.setattr(app_client.AppReporter, "connect", classmethod(lambda cls, args, out, config: reporter))
    config = tmp_path / "cfg.json"
    config.write_text('{"level": "tiny", "budget_steps": 60, "max_steps": 60, "episodes_per_iteration": 4}')
    code = train_orchestrator.main(
        ["--config", str(config), "--out", str(tmp_path / "out"), "--url", client.url, "--token", "ssk_x"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "SwarmscopeError" not in err
    assert "the app refused iteration 0: episodes[0]: conflicts with the stored trace x" in err
    assert "run 7 marked failed" in err
    assert client.finished == [
        {"status": "failed", "error": "the app refused iteration 0: episodes[0]: conflicts with the stored trace x"}
    ]


def test_a_closed_run_is_not_a_refusal():
    reporter = app_client.AppReporter(RefusingClient(409, {"error": "the run is cancelled"}), 7, "u")
    reporter.post_iteration({"iteration": 3})
    assert reporter.closed is not None and reporter.closed.status == 409


def test_refusal_reads_the_apps_answer():
    assert app_client.refusal(SwarmscopeError(400, {"error": "must be finite", "field": "metrics.reward"})) == (
        "metrics.reward: must be finite"
    )
    assert app_client.refusal(SwarmscopeError(413, "too large")) == "too large"
