"""From a click to Δ: a SwarmSim trace, "What if removed?" on its pivotal message, 32 paired samples
on a real Celery worker (the app's embedded Redis as broker), Δ with its interval, the branch trace
side by side."""

import json
import sys
from pathlib import Path

import pytest

from tests.browser.test_trace_page import click_event, open_trace
from tests.servers import start, stop
from trainer.sim.suites import pivot12_case

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def rollout_worker(app, tmp_path):
    """A worker of the app's `rollouts-cpu` queue, with the app's environment (data folder, Redis)."""
    redis_url = (Path(app.env["SWARMSCOPE_DATA_DIR"]) / "redis" / "url").read_text().strip()
    log = tmp_path / "worker.log"
    process = start([sys.executable, "-m", "celery", "-A", "webapp.config.celery", "worker", "-Q", "rollouts-cpu",
                     "-P", "solo", "--without-heartbeat", "--without-gossip", "--without-mingle", "-l", "INFO"],
                    {**app.env, "REDIS_URL": redis_url}, log)
    yield process, log
    stop(process)


def test_what_if_removed_runs_32_samples_and_opens_the_branch(app, page, rollout_worker, tmp_path):
    case = pivot12_case(0)
    path = tmp_path / "swarmsim-pivot-12-0.json"
    path.write_text(json.dumps(case.episode.trace.to_dict()))
    trace_id = app.import_files(path)[path.name]
    pivotal = next(f"message:{case.episode.actions[c].item}" for c, k in zip(case.candidates, case.kinds)
                   if k == "pivotal")
    open_trace(page, app, trace_id)
    click_event(page, pivotal)
    page.get_by_test_id("what-if").click()
    dialog = page.get_by_test_id("what-if-dialog")
    assert dialog.is_visible()
    page.keyboard.press("Escape")
    assert not dialog.is_visible() and page.get_by_test_id("inspector").is_visible()
    page.get_by_test_id("what-if").click()
    dialog.locator("input[name=n]").fill("32")
    dialog.locator("input[name=n]").press("Enter")
    job = page.get_by_test_id("job")
    job.wait_for()
    delta = page.get_by_test_id("job-delta")
    try:
        delta.wait_for(timeout=60_000)
    except Exception:
        pytest.fail(f"no Δ; job {job.get_attribute('data-status')}:\n" + rollout_worker[1].read_text()[-3000:])
    assert job.get_attribute("data-status") == "done"
    assert page.get_by_test_id("job-progress").evaluate("p => [p.value, p.max]") == [32, 32]
    text = delta.inner_text()
    assert text.startswith("Δ = ") and "95 %" in text and "64 rollouts" in text
    assert page.get_by_test_id("job-samples").locator("li").count() == 32
    page.get_by_test_id("open-branch").click()
    page.wait_for_url(f"{app.url}/traces/compare/?left={trace_id}&right=*")
    assert "remove(event:" in page.content()


def test_attribute_this_trace_ranks_the_messages_and_paints_the_timeline(app, page, rollout_worker, tmp_path):
    case = pivot12_case(0)
    path = tmp_path / "swarmsim-pivot-12-0-attribution.json"
    document = case.episode.trace.to_dict()
    document["source_id"] = f"{document.get('source_id')}-attribution"
    path.write_text(json.dumps(document))
    trace_id = app.import_files(path)[path.name]
    pivotal = next(f"message:{case.episode.actions[c].item}" for c, k in zip(case.candidates, case.kinds)
                   if k == "pivotal")
    open_trace(page, app, trace_id)
    page.get_by_test_id("attribute").click()
    panel = page.get_by_test_id("attribution-panel")
    assert panel.is_visible()
    assert page.evaluate("document.activeElement.name") == "method"
    page.keyboard.press("Tab")  # to the budget: 32 seeds of 12 messages and the shared control
    page.keyboard.press("Control+a")
    page.keyboard.type(str(13 * 32))
    page.keyboard.press("Enter")
    table = page.get_by_test_id("attribution-table")
    try:
        table.wait_for(timeout=60_000)
    except Exception:
        pytest.fail("no attribution table:\n" + rollout_worker[1].read_text()[-3000:])
    assert page.get_by_test_id("attribution-status").get_attribute("data-status") == "done"
    assert page.get_by_test_id("attribution-progress").evaluate("p => [p.value, p.max]") == [32, 32]
    rows = page.get_by_test_id("attribution-row")
    assert rows.count() == 12
    assert rows.first.get_attribute("data-target") == f"event:{pivotal}"
    assert page.get_by_test_id("credit-legend").is_visible()
    rows.nth(1).click()
    assert page.evaluate("document.body.dataset.selected") == rows.nth(1).get_attribute("data-target")[len("event:"):]
    rows.first.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"document.body.dataset.selected === {json.dumps(pivotal)}")
    listed = app.api(f"/api/traces/{trace_id}/attributions/")["results"]
    assert len(listed) == 12 and {a["method"] for a in listed} == {"paired_loo"}
