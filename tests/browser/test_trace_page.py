"""The trace debugger in headless Chromium, on real traces from ../shared/data and on a live stream.

Waits are on sequence numbers and visible state (`body[data-seq]`, `data-event-count`), never sleeps.
"""

import threading

import pytest

MONOCLE = "otel-monocle-agent-framework"
HANDOFF = "monocle_trace_okahu_demos_ms_openai_handoff_travel_a262a1005533d3dc6fd375c37d31ee95"
GROUPCHAT = (
    "monocle_trace_okahu_demos_ms_openai_groupchat_travel_309ea6131cbf6f3baa63342285812aa3_2026-06-11_15.02.54.json"
)

pytestmark = pytest.mark.timeout(300)


def open_trace(page, app, trace_id):
    page.goto(f"{app.url}/traces/{trace_id}/")
    page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined", timeout=60_000)
    page.evaluate("window.swarmscope.ready")


def open_filters(page):
    """The filter column starts folded to a rail (issue 32): unfold it."""
    toggle = page.get_by_test_id("toggle-filters")
    if toggle.get_attribute("aria-expanded") == "false":
        toggle.click()


def click_event(page, event_id):
    """Click where the timeline draws `event_id`, as a person would."""
    point = page.evaluate("(id) => window.swarmscope.eventClientPoint(id)", event_id)
    assert point is not None, f"event {event_id} is not drawn on screen"
    page.mouse.click(point["x"], point["y"])
    page.wait_for_function("(id) => document.body.dataset.selected === id", arg=event_id)


def lanes(page):
    return page.locator("[data-testid=lane]").evaluate_all("els => els.map(e => e.dataset.agent)")


def test_whowhen_lanes_and_mistake_step_in_the_inspector(app, page, shared_data):
    ids = app.import_files(shared_data / "who-and-when" / "Hand-Crafted" / "1.json")
    trace_id = ids["1.json"]
    snapshot = app.api(f"/api/traces/{trace_id}/snapshot/")
    open_trace(page, app, trace_id)
    assert sorted(lanes(page)) == sorted(a["name"] for a in snapshot["agents"])

    step = next(lb for lb in snapshot["labels"] if lb["key"] == "mistake_step")
    event = next(e for e in snapshot["events"] if e["id"] == step["event_id"])
    click_event(page, event["id"])
    inspector = page.get_by_test_id("inspector")
    assert inspector.is_visible()
    assert event["content"].strip()[:60] in page.get_by_test_id("inspector-content").inner_text()
    mistake = page.get_by_test_id("inspector-mistake")
    assert mistake.is_visible() and "mistake" in mistake.inner_text().lower()
    assert page.locator(f'[data-testid=lane][data-agent="{event["agent"]}"]').get_attribute("class").count("mistake")
    page.keyboard.press("Escape")
    assert not inspector.is_visible()


def test_handoff_triage_agent_hands_off_to_visa_agent(app, page, shared_data):
    folder = shared_data / MONOCLE
    ids = app.import_files(*sorted(folder.glob(HANDOFF + "*.json")))
    trace_id = next(iter(ids.values()))
    open_trace(page, app, trace_id)
    assert {"triage_agent", "visa_agent"} <= set(lanes(page))
    assert page.evaluate("window.swarmscope.model.parentOf('visa_agent')") == "triage_agent"
    snapshot = app.api(f"/api/traces/{trace_id}/snapshot/")
    handoff = next(
        e
        for e in snapshot["events"]
        if e["type"] == "delegate" and e["agent"] == "triage_agent" and e.get("to") == "visa_agent"
    )
    open_filters(page)
    page.get_by_role("radio", name="Step").check()  # the spawn and the hand-off share a timestamp: one step each
    click_event(page, handoff["id"])
    meta = page.get_by_test_id("inspector").inner_text()
    assert "delegate" in meta and "visa_agent" in meta


def test_group_chat_orchestrator_delegates_to_three_agents(app, page, shared_data):
    ids = app.import_files(shared_data / MONOCLE / GROUPCHAT)
    open_trace(page, app, ids[GROUPCHAT])
    children = page.evaluate("window.swarmscope.model.childrenOf('group_chat_orchestrator')")
    assert set(children) == {"Planner", "BudgetHawk", "Reviewer"}
    assert {"group_chat_orchestrator", "Planner", "BudgetHawk", "Reviewer"} <= set(lanes(page))
    pairs = page.evaluate("window.swarmscope.model.agentEdges().map(e => [e.from ?? e.source, e.to ?? e.target])")
    assert {("group_chat_orchestrator", name) for name in children} <= {tuple(p) for p in pairs}


def test_streamed_events_arrive_in_order_live(app, page):
    trace = app.api("/api/traces/", {"name": "live stream", "system": "browser-test"})["trace"]
    open_trace(page, app, trace["id"])
    total, batch = 2000, 100
    errors = []

    def stream():
        try:
            for start in range(0, total, batch):
                events = [
                    {
                        "id": f"s{i}",
                        "t": i * 0.01,
                        "type": "message",
                        "agent": f"worker-{i % 7}",
                        "to": "orchestrator",
                        "content": f"message {i}",
                    }
                    for i in range(start, start + batch)
                ]
                app.api(f"/api/traces/{trace['id']}/events/", events)
        except Exception as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)

    sender = threading.Thread(target=stream)
    sender.start()
    page.wait_for_function(f"() => Number(document.body.dataset.eventCount) === {total}", timeout=120_000)
    sender.join(timeout=60)
    assert errors == []
    assert page.evaluate("window.swarmscope.lastSeq()") == total // batch + 1  # creation, then one per batch
    order = page.evaluate("window.swarmscope.model.timeOrder.map(e => e.id ?? e)")
    assert order == [f"s{i}" for i in range(total)]
    assert page.get_by_test_id("live-badge").get_attribute("data-state") == "live"


def test_trace_list_search_and_compare_two_traces(app, page, fixtures):
    ids = app.import_files(fixtures / "whowhen_hand_crafted.json", fixtures / "native_small.json")
    page.goto(app.url + "/")
    page.keyboard.press("/")
    page.keyboard.type("Hand-written")
    page.keyboard.press("Enter")
    page.wait_for_url("**/?q=Hand-written")
    assert page.get_by_test_id("trace-table").locator("tbody tr").count() == 1
    page.goto(app.url + "/")
    for trace_id in ids.values():
        page.locator(f"input[name=compare][value='{trace_id}']").check()
    page.get_by_test_id("compare-form").locator("button").click()
    page.wait_for_url("**/traces/compare/**")
    page.wait_for_function("() => Number(document.body.dataset.compareRows) > 0")
    assert page.get_by_test_id("compare-row").count() > 0
