"""Honest actions and closed loops, in Chromium: on a Who&When trace with no LLM endpoint configured
(the browser tests' app runs `sim` only) *Attribute this trace* and *What if removed?* are disabled
with the reason as visible text and a link to the README section, which the app serves; on a
SwarmSim trace the sim What-if still runs; a deep link `?event=` selects the event; a branch trace's
page links back to its parent and job, and its compare page opens aligned by event id."""

import json

import pytest

from tests.browser.test_counterfactual import rollout_worker  # noqa: F401 - a fixture
from tests.browser.test_trace_page import click_event, open_trace
from trainer.sim.suites import pivot12_case

pytestmark = pytest.mark.timeout(300)


def test_whowhen_without_an_llm_says_what_is_needed_and_deep_links_select(app, page, shared_data):
    trace_id = app.import_files(shared_data / "who-and-when" / "Hand-Crafted" / "1.json")["1.json"]
    snapshot = app.api(f"/api/traces/{trace_id}/snapshot/")
    open_trace(page, app, trace_id)

    attribute = page.get_by_test_id("attribute")
    assert attribute.is_disabled()
    note = page.get_by_test_id("actions-unavailable")
    assert note.is_visible()
    note.locator("summary strong").click()  # one line until opened (issue 32)
    text = note.inner_text()
    assert "are off" in text and "SWARMSCOPE_OPENAI_BASE_URL" in text and "not a SwarmSim episode" in text
    assert "KeyError" not in page.content() and "at least 2 messages" not in text
    docs = page.get_by_test_id("actions-docs")
    assert docs.get_attribute("href") == "/help/what-if/#what-if-needs-a-backend"

    delegate = next(e for e in snapshot["events"] if e["type"] == "delegate")
    click_event(page, delegate["id"])
    what_if = page.get_by_test_id("what-if")
    assert what_if.is_visible() and what_if.is_disabled()
    reason = page.get_by_test_id("what-if-reason")
    assert reason.is_visible() and "SWARMSCOPE_OPENAI_BASE_URL" in reason.inner_text()
    assert page.get_by_test_id("what-if-reason-docs").get_attribute("href") == docs.get_attribute("href")

    docs.click()
    page.wait_for_url(f"{app.url}/help/what-if/#what-if-needs-a-backend")
    section = page.get_by_test_id("help-what-if")
    assert "SWARMSCOPE_OPENAI_BASE_URL" in section.inner_text() and "SwarmSim" in section.inner_text()

    # A deep link selects its event on load (what attribution rows link to).
    step = next(lb for lb in snapshot["labels"] if lb["key"] == "mistake_step")
    page.goto(f"{app.url}/traces/{trace_id}/?event={step['event_id']}")
    page.wait_for_function("(id) => document.body.dataset.selected === id", arg=step["event_id"], timeout=60_000)
    assert page.get_by_test_id("inspector").is_visible()


def test_swarmsim_what_if_runs_and_its_branch_links_back(app, page, rollout_worker, tmp_path):  # noqa: F811
    case = pivot12_case(1)
    path = tmp_path / "swarmsim-pivot-12-1.json"
    path.write_text(json.dumps(case.episode.trace.to_dict()))
    trace_id = app.import_files(path)[path.name]
    message = f"message:{case.episode.actions[case.candidates[0]].item}"
    open_trace(page, app, trace_id)
    assert page.get_by_test_id("actions-unavailable").count() == 0
    assert page.get_by_test_id("attribute").is_enabled()
    click_event(page, message)
    page.get_by_test_id("what-if").click()
    dialog = page.get_by_test_id("what-if-dialog")
    assert dialog.locator("select[name=backend]").input_value() == "sim"
    # the LLM backend is listed, off, with its reason
    assert "SWARMSCOPE_OPENAI_BASE_URL" in dialog.get_by_test_id("what-if-backend-note").inner_text()
    dialog.locator("input[name=n]").fill("4")
    dialog.locator("input[name=n]").press("Enter")
    done = page.locator("[data-testid=job][data-status=done]")
    try:
        done.wait_for(timeout=60_000)
    except Exception:
        pytest.fail("the sim job did not finish:\n" + rollout_worker[1].read_text()[-3000:])
    job_id = int(done.get_attribute("data-job-id"))
    branch = app.api(f"/api/jobs/{job_id}/")["branch_trace"]

    page.goto(f"{app.url}/traces/{branch}/")
    banner = page.get_by_test_id("origin-banner")
    assert banner.is_visible() and f"job {job_id}" in banner.inner_text()
    page.get_by_test_id("origin-compare").click()
    page.wait_for_url(f"{app.url}/traces/compare/?left={trace_id}&right={branch}")
    page.wait_for_function("() => document.body.dataset.compareRows !== undefined", timeout=60_000)
    assert page.get_by_test_id("align-id").is_checked()
    page.go_back()
    page.get_by_test_id("origin-job").click()
    page.wait_for_url(f"{app.url}/traces/{trace_id}/?job={job_id}")
    page.locator(f"[data-testid=job][data-job-id='{job_id}']").wait_for(timeout=60_000)
    page.goto(f"{app.url}/traces/{branch}/")
    page.get_by_test_id("origin-parent").click()
    page.wait_for_url(f"{app.url}/traces/{trace_id}/")
