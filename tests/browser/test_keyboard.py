"""Keyboard-only paths on the trace page, counted in Tab presses from a fresh load: the skip links
(the first Tab stops) reach the timeline, the agent graph and the transcript within 5 presses, on a
real Who&When log and on the 33k-event, 301-agent synthetic trace (whose agent filter alone used to
put ~330 Tab stops before the timeline). In the timeline ↑ / ↓ move between lanes; in the agent
graph the arrows move a cursor between agents and Enter selects one; `?` lists the keys and Escape
closes the list."""

from __future__ import annotations

import pytest

from tests.browser.page_waits import open_trace_page as open_trace
from tests.browser.test_timeline_camera import big_trace  # noqa: F401 - a fixture

pytestmark = pytest.mark.timeout(900)

#: The issue's bound: keyboard-only reaches the timeline in at most this many Tab presses.
MOST_TABS = 5


def active(page) -> dict:
    return page.evaluate(
        "(() => { const a = document.activeElement;"
        " return {testid: a?.dataset?.testid ?? null, id: a?.id ?? null, tag: a?.tagName}; })()"
    )


#: Moves the focus to the top of the page as a fresh load has it: onto a probe before the first
#: element (tabindex -1: no Tab stop of its own), so the next Tab goes to the page's first Tab stop.
TOP_OF_PAGE_JS = """() => {
  if (document.activeElement === document.body) return;
  let probe = document.getElementById("tab-probe");
  if (!probe) {
    probe = document.createElement("span");
    probe.id = "tab-probe";
    probe.tabIndex = -1;
    document.body.prepend(probe);
  }
  probe.focus();
}"""


def tab_to(page, testid: str) -> int:
    """Press Tab from the top of the page until the element `testid` has the focus; the presses."""
    page.evaluate(TOP_OF_PAGE_JS)
    for presses in range(1, MOST_TABS + 1):
        page.keyboard.press("Tab")
        if active(page)["testid"] == testid:
            return presses
    pytest.fail(f"{testid} not reached in {MOST_TABS} Tab presses (focus on {active(page)})")


def reach(page, skip: str, target: str) -> int:
    """Tab to the skip link `skip`, press Enter: the focus must be on `target`; the Tab presses."""
    presses = tab_to(page, skip)
    assert page.get_by_test_id(skip).is_visible(), "a focused skip link is shown"
    page.keyboard.press("Enter")
    assert active(page)["testid"] == target, active(page)
    return presses


def selected_lane(page) -> int:
    """The row of the selected lane among the drawn lanes."""
    return page.locator("[data-testid=lane]").evaluate_all(
        "els => els.findIndex(e => e.classList.contains('is-selected'))"
    )


def check_paths(page) -> dict[str, int]:
    counts = {
        "timeline": reach(page, "skip-timeline", "timeline-canvas"),
        "graph": reach(page, "skip-graph", "agent-graph-canvas"),
        "transcript": reach(page, "skip-transcript", "transcript-scroll"),
    }
    assert all(n <= MOST_TABS for n in counts.values()), counts
    return counts


def test_skip_links_reach_every_view_and_the_arrow_keys_move_in_them(app, page, shared_data):
    trace_id = app.import_files(shared_data / "who-and-when" / "Hand-Crafted" / "11.json")["11.json"]
    snapshot = app.api(f"/api/traces/{trace_id}/snapshot/")
    open_trace(page, app, trace_id)
    assert check_paths(page) == {"timeline": 1, "graph": 2, "transcript": 3}

    # The timeline: → selects the first event, ↓ / ↑ the nearest event one lane down / up.
    reach(page, "skip-timeline", "timeline-canvas")
    page.keyboard.press("ArrowRight")
    first = page.evaluate("document.body.dataset.selected")
    assert first in {e["id"] for e in snapshot["events"]}
    row = selected_lane(page)
    rows = page.locator("[data-testid=lane]").count()
    assert rows >= 2 and row >= 0
    moved = []
    for key in ["ArrowDown"] * (rows - 1 - row) + ["ArrowUp"] * (rows - 1):
        before = page.evaluate("document.body.dataset.selected")
        page.keyboard.press(key)
        after = page.evaluate("document.body.dataset.selected")
        assert after != before, f"{key} from the lane at row {selected_lane(page)} selected nothing new"
        moved.append(selected_lane(page))
    assert moved == [*range(row + 1, rows), *range(rows - 2, -1, -1)], moved
    assert active(page)["testid"] == "timeline-canvas"

    # The agent graph: the arrows move the cursor (not the event selection), Enter selects it.
    reach(page, "skip-graph", "agent-graph-canvas")
    graph = page.get_by_test_id("agent-graph-canvas")
    agents = {a["name"] for a in snapshot["agents"]}
    start = graph.get_attribute("data-cursor")
    assert start in agents
    selection = page.evaluate("document.body.dataset.selected")
    visited = {start}
    for key in [
        "ArrowDown",
        "ArrowRight",
        "ArrowRight",
        "ArrowUp",
        "ArrowLeft",
        "ArrowLeft",
        "ArrowDown",
        "ArrowRight",
    ]:
        page.keyboard.press(key)
        visited.add(graph.get_attribute("data-cursor"))
    assert len(visited) >= 2, visited
    assert page.evaluate("document.body.dataset.selected") == selection, "arrows in the graph do not step events"
    cursor = graph.get_attribute("data-cursor")
    assert cursor in page.get_by_test_id("agent-graph-cursor").inner_text()
    page.keyboard.press("Enter")
    assert page.evaluate("document.body.dataset.selected") == f"agent:{cursor}"
    assert page.get_by_test_id("inspector").is_visible()

    # `?` lists the keys; Escape closes the list and the focus goes back to the graph.
    page.keyboard.press("?")
    help_dialog = page.get_by_test_id("keys-help")
    assert help_dialog.is_visible()
    text = help_dialog.inner_text().lower()
    for words in ("timeline", "agent graph", "transcript", "enter", "↑", "esc"):
        assert words in text
    page.keyboard.press("Escape")
    assert not help_dialog.is_visible()
    assert active(page)["testid"] == "agent-graph-canvas"
    assert page.evaluate("document.body.dataset.selected") == f"agent:{cursor}", "that Escape only closed the list"


def test_skip_links_on_the_33k_event_trace(app, page, big_trace):  # noqa: F811 - the fixture
    open_trace(page, app, big_trace)
    counts = check_paths(page)
    assert counts["timeline"] == 1
    reach(page, "skip-timeline", "timeline-canvas")
    page.keyboard.press("ArrowRight")
    row = selected_lane(page)
    page.keyboard.press("ArrowDown")
    assert selected_lane(page) == row + 1
    point = page.evaluate("window.swarmscope.eventClientPoint(document.body.dataset.selected)")
    assert point is not None, "the event selected one lane down is on screen"
