"""A live restart (the trace emptied in place and streamed again, webapp.traces.datacare.do_reset_trace,
as the live samples' restart does) replaces the open page's transcript and timeline, not only its
metrics: the old events and lanes go, the new ones come, without a reload. Waits are on page state."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.page_waits import open_trace_page, wait_until
from tests.servers import manage

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

RESET = """
from webapp.traces import datacare
from webapp.traces.models import Trace
datacare.do_reset_trace(Trace.objects.get(pk=%d))
"""


def event(id_, t, agent, content):
    return {"id": id_, "t": t, "type": "message", "agent": agent, "content": content}


def test_a_live_restart_replaces_the_transcript_and_the_timeline(app, page):
    first = [event(f"old{i}", i, "old_agent", f"old message {i}") for i in range(4)]
    trace_id = app.api("/api/traces/", {"name": "restart test", "events": first})["trace"]["id"]
    open_trace_page(page, app, trace_id)
    rows = page.locator("[data-testid=transcript-row]")
    expect(rows).to_have_count(4)
    expect(page.locator('[data-testid=lane][data-agent="old_agent"]')).to_have_count(1)
    page.evaluate("(id) => window.swarmscope.selectEvent(id)", "old2")

    result = manage("shell", "-c", RESET % trace_id, env=app.env)
    assert result.returncode == 0, result.stderr
    fresh = [event("new0", 0, "new_agent", "first after the restart"), event("new1", 1, "new_agent", "second")]
    app.api(f"/api/traces/{trace_id}/events/", fresh)

    # No reload: the rebuild's snapshot replaced the model, then the new batch arrived as a delta.
    expect(rows).to_have_count(2, timeout=30_000)
    wait_until(page, "() => document.body.dataset.rebuilds === '1'", timeout_s=30)
    assert [rows.nth(i).get_attribute("data-event-id") for i in range(2)] == ["new0", "new1"]
    expect(page.locator('[data-testid=lane][data-agent="new_agent"]')).to_have_count(1)
    expect(page.locator('[data-testid=lane][data-agent="old_agent"]')).to_have_count(0)
    assert page.evaluate("() => window.swarmscope.model.events.has('old2')") is False
    assert page.evaluate("() => document.body.dataset.selected ?? ''") in ("", "agent:")  # the gone event
