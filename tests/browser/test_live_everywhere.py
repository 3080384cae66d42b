"""Live beyond the timeline, in Chromium against the real app with a real Celery worker: a real
Who&When log streamed into a trace batch by batch (the REST API, as a running swarm sends it) while
its page and the trace list are open. The metrics panel and the agents-alive chart, recomputed by
the worker and pushed on the socket, end equal to a fresh page load's; the trace list's row counts
the events; once the stream goes idle (SWARMSCOPE_LIVE_IDLE_S, 30 s here) the Live badges clear on
both pages without a reload, and at once when the sender closes its stream (POST
/api/traces/<id>/close/). A run created after the runs list loaded appears in it and follows its
run; new review activity appears on the project's review page and the projects page. Waits are on
page state, never on sleeps alone."""

from __future__ import annotations

import time

import pytest

import swarmscope
from tests.browser.page_waits import open_trace_page as open_trace
from tests.browser.page_waits import wait_until
from tests.servers import stop
from tests.stream_batches import stream_batches

pytestmark = pytest.mark.timeout(600)

WHOWHEN = ("who-and-when", "Hand-Crafted", "11.json")  # 130 events, 4 agents
#: The app's idle time (SWARMSCOPE_LIVE_IDLE_S default) plus room for a loaded machine.
IDLE_WAIT_S = 90

#: What the metrics panel shows: each card's value and reason, the failure modes, the chart's data.
PANEL_JS = """() => {
  const panel = document.querySelector("[data-testid=metrics-panel]");
  const cards = {};
  for (const card of panel.querySelectorAll(".metric-card")) {
    cards[card.dataset.metric] = [...card.querySelectorAll("dd")].map((d) => d.textContent);
  }
  const modes = {};
  for (const li of panel.querySelectorAll("[data-failure-mode]")) modes[li.dataset.failureMode] = li.textContent;
  const chart = panel.querySelector("[data-testid=agents-alive-chart]");
  return {cards, modes, alive: JSON.parse(chart?.dataset.points ?? "null")};
}"""


@pytest.fixture
def metrics_worker(app, tmp_path):
    """A worker of the default queue, where the live metrics are recomputed."""
    log = tmp_path / "default-worker.log"
    process = app.start_worker("default", log)
    yield process, log
    stop(process)


def panel(page) -> dict:
    return page.evaluate(PANEL_JS)


def test_metrics_and_live_badges_follow_a_stream(app, page, shared_data, metrics_worker):
    (recorded,) = swarmscope.read_traces(shared_data.joinpath(*WHOWHEN))
    batches = stream_batches(recorded, 6)
    trace = app.api("/api/traces/", {"name": "Who&When 11, streamed", "system": "live-everywhere"})["trace"]
    app.api(f"/api/traces/{trace['id']}/events/", batches[0])

    listing = page.context.new_page()
    listing.goto(app.url + "/")
    wait_until(listing, "() => document.body.dataset.listSocket === 'open'", timeout_s=30)
    open_trace(page, app, trace["id"])
    wait_until(page, "() => document.querySelector('[data-testid=live-badge]').dataset.state === 'live'")
    first_paint = panel(page)
    assert first_paint["cards"], "the first batch has metrics"
    page.evaluate("window.__sameDocument = true")

    for batch in batches[1:]:
        seq = app.api(f"/api/traces/{trace['id']}/events/", batch)["seq"]
        time.sleep(0.3)  # a swarm's pace: batches a little apart, within one debounce period
    wait_until(page, "(seq) => document.body.dataset.seq === String(seq)", seq, timeout_s=30)
    # the worker's recomputation at the last seq reaches the page (SWARMSCOPE_LIVE_METRICS_S after it)
    wait_until(page, "(seq) => document.body.dataset.metricsSeq === String(seq)", seq, timeout_s=60)
    live = panel(page)
    assert page.evaluate("window.__sameDocument") is True

    fresh = page.context.new_page()
    open_trace(fresh, app, trace["id"])
    reloaded = panel(fresh)
    assert live == reloaded
    assert live != first_paint, "the panel changed while the trace streamed"
    events = sum(len(b["events"]) for b in batches)
    assert live["cards"]["total_steps"] != first_paint["cards"]["total_steps"]
    assert live["alive"] != first_paint["alive"], "the agents-alive chart follows the stream"

    row = listing.locator(f"tr[data-trace-id='{trace['id']}']")
    assert row.locator("[data-col=event_count]").inner_text() == str(events)
    assert row.get_by_test_id("row-live").is_visible()

    # idle: both badges clear by themselves, no reload
    wait_until(
        page,
        "() => document.querySelector('[data-testid=live-badge]').dataset.state === 'static'",
        timeout_s=IDLE_WAIT_S,
    )
    row.get_by_test_id("row-live").wait_for(state="detached", timeout=IDLE_WAIT_S * 1000)
    assert page.evaluate("window.__sameDocument") is True
    assert page.get_by_test_id("live-badge").inner_text() == "Recorded"
    # and a fresh load agrees that the trace is no longer live
    again = page.context.new_page()
    open_trace(again, app, trace["id"])
    assert again.get_by_test_id("live-badge").get_attribute("data-state") == "static"


#: A run config the runs API takes (tests/training/conftest.py TINY): an external run reports to it.
RUN_CONFIG = {
    "level": "tiny",
    "algorithm": "ppo",
    "credit": "shared",
    "stop": "learned",
    "budget_steps": 600,
    "max_steps": 60,
    "episodes_per_iteration": 4,
    "group_size": 4,
    "seed": 0,
}


def test_the_runs_list_follows_an_external_run(app, page):
    run = app.api("/api/runs/", {"name": "reported from a cluster", "config": RUN_CONFIG})
    page.goto(app.url + "/runs/")
    row = page.locator(f"tr[data-run-id='{run['id']}']")
    wait_until(
        page, "(id) => document.querySelector(`tr[data-run-id='${id}']`)?.dataset.runSeq !== undefined", run["id"]
    )
    assert row.get_attribute("data-status") == "running"
    page.evaluate("window.__sameDocument = true")

    app.api(f"/api/runs/{run['id']}/iterations/", {"iteration": 0, "env_steps": 300, "metrics": {"reward": 0.25}})
    row.locator("[data-col=steps]", has_text="300 / 600").wait_for(timeout=30_000)
    assert row.locator("[data-col=best_reward]").inner_text() == "0.250"
    assert row.locator("[data-col=progress]").evaluate("p => [p.value, p.max]") == [300, 600]

    app.api(f"/api/runs/{run['id']}/finish/", {"summary": {"status": "finished"}})
    wait_until(
        page, "(id) => document.querySelector(`tr[data-run-id='${id}']`)?.dataset.status === 'finished'", run["id"]
    )
    assert row.locator("[data-col=status]").inner_text() == "finished"
    assert page.evaluate("window.__sameDocument") is True
    fresh = page.context.new_page()
    fresh.goto(app.url + "/runs/")
    again = fresh.locator(f"tr[data-run-id='{run['id']}']")
    for column in ("status", "steps", "best_reward"):
        assert again.locator(f"[data-col={column}]").inner_text() == row.locator(f"[data-col={column}]").inner_text()
    # its page, once the socket's snapshot is drawn, says it finished (a success, not a red "Ended")
    fresh.goto(f"{app.url}/runs/{run['id']}/")
    wait_until(fresh, "() => document.getElementById('run-app').dataset.seq !== undefined")
    badge = fresh.get_by_test_id("live-badge")
    assert (badge.get_attribute("data-state"), badge.inner_text()) == ("finished", "Finished")


def test_a_run_created_after_the_runs_list_loaded_appears_and_follows_its_run(app, page):
    app.api("/api/runs/", {"name": "already there", "config": RUN_CONFIG})  # the table, not the empty state
    page.goto(app.url + "/runs/")
    wait_until(page, "() => document.body.dataset.runListSocket === 'open'", timeout_s=30)
    page.evaluate("window.__sameDocument = true")

    run = app.api("/api/runs/", {"name": "started after the page loaded", "config": {**RUN_CONFIG, "seed": 5}})
    row = page.locator(f"tr[data-run-id='{run['id']}']")
    row.wait_for(timeout=30_000)
    assert page.locator("[data-testid=run-table] tbody tr").first.get_attribute("data-run-id") == str(run["id"])
    assert row.locator("a").first.inner_text() == "started after the page loaded"
    assert row.locator("[data-col=status]").inner_text() == "running"
    assert row.locator("[data-col=steps]").inner_text() == "0 / 600"

    # the new row listens to its run like the rows the page rendered
    app.api(f"/api/runs/{run['id']}/iterations/", {"iteration": 0, "env_steps": 120, "metrics": {"reward": 0.5}})
    row.locator("[data-col=steps]", has_text="120 / 600").wait_for(timeout=30_000)
    assert row.locator("[data-col=best_reward]").inner_text() == "0.500"
    app.api(f"/api/runs/{run['id']}/finish/", {"summary": {"status": "finished"}})
    wait_until(
        page, "(id) => document.querySelector(`tr[data-run-id='${id}']`)?.dataset.status === 'finished'", run["id"]
    )
    assert page.evaluate("window.__sameDocument") is True
    assert page.locator(f"tr[data-run-id='{run['id']}']").count() == 1
    fresh = page.context.new_page()
    fresh.goto(app.url + "/runs/")
    again = fresh.locator(f"tr[data-run-id='{run['id']}']")
    for column in ("status", "steps", "best_reward"):
        assert again.locator(f"[data-col={column}]").inner_text() == row.locator(f"[data-col={column}]").inner_text()


#: Well under SWARMSCOPE_LIVE_IDLE_S (30 s): a badge that clears within this was cleared by the close.
CLOSE_WAIT_S = 15


def test_the_live_badges_clear_right_after_the_stream_is_closed(app, page):
    trace = app.api("/api/traces/", {"name": "closed by its sender", "system": "live-everywhere"})["trace"]
    app.api(f"/api/traces/{trace['id']}/events/", [{"id": "e1", "t": 0.0, "type": "message", "agent": "a"}])
    listing = page.context.new_page()
    listing.goto(app.url + "/")
    wait_until(listing, "() => document.body.dataset.listSocket === 'open'", timeout_s=30)
    row = listing.locator(f"tr[data-trace-id='{trace['id']}']")
    row.get_by_test_id("row-live").wait_for(timeout=30_000)
    open_trace(page, app, trace["id"])
    wait_until(page, "() => document.querySelector('[data-testid=live-badge]').dataset.state === 'live'")
    page.evaluate("window.__sameDocument = true")

    closed = app.api(f"/api/traces/{trace['id']}/close/", {})
    assert closed["closed"] is True and closed["trace"]["live"] is False
    wait_until(
        page,
        "() => document.querySelector('[data-testid=live-badge]').dataset.state === 'static'",
        timeout_s=CLOSE_WAIT_S,
    )
    wait_until(page, "(seq) => document.body.dataset.seq === String(seq)", closed["seq"], timeout_s=CLOSE_WAIT_S)
    row.get_by_test_id("row-live").wait_for(state="detached", timeout=CLOSE_WAIT_S * 1000)
    assert page.get_by_test_id("live-badge").inner_text() == "Recorded"
    assert page.evaluate("window.__sameDocument") is True
    assert app.api(f"/api/traces/{trace['id']}/close/", {})["closed"] is False  # a second close: nothing to end


def test_new_review_activity_appears_on_the_review_page_and_the_projects_page(app, page):
    trace = app.api("/api/traces/", {"name": "reviewed live", "system": "live-everywhere"})["trace"]
    project = trace["project"]
    page.goto(f"{app.url}/projects/{project}/review/")
    wait_until(page, "() => document.querySelector('[data-testid=activity]').dataset.feedState === 'open'")
    projects = page.context.new_page()
    projects.goto(app.url + "/projects/")
    wait_until(projects, "() => document.querySelector('[data-testid=recent-activity]').dataset.feedState === 'open'")
    page.evaluate("window.__sameDocument = true")
    projects.evaluate("window.__sameDocument = true")

    body = f"live review note on trace {trace['id']}"
    app.api("/api/review/comments/", {"kind": "trace", "id": trace["id"], "body": body})
    expected = f"trace {trace['id']}"
    feed = page.get_by_test_id("activity")
    feed.locator("li", has_text=expected).first.wait_for(timeout=30_000)
    item = feed.locator("li").first
    assert "commented on" in item.inner_text() and item.locator("a").get_attribute("href") == f"/traces/{trace['id']}/"
    recent = projects.get_by_test_id("recent-activity")
    recent.locator("li", has_text=expected).first.wait_for(timeout=30_000)
    assert recent.locator("li").first.inner_text().endswith(f"commented on {expected}")
    assert page.evaluate("window.__sameDocument") is True and projects.evaluate("window.__sameDocument") is True
    # a reload renders the same first item
    fresh = page.context.new_page()
    fresh.goto(f"{app.url}/projects/{project}/review/")
    assert fresh.get_by_test_id("activity").locator("li").first.get_attribute("data-activity-id") == (
        item.get_attribute("data-activity-id")
    )
