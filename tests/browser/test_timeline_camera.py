"""The timeline's camera on the 33k-event, 301-agent synthetic trace (`synthetic_trace(301, 33000)`,
the case of bench_render and bench_transcript), asserted on what is drawn: screenshots of the plot
and of the lane-name column, whose pixels are counted (events are saturated colours, lane names dark
text), besides the camera's state (`window.swarmscope.timeline.debugState()`).

Zoom acts on time only and stays in the data's extent; Fit after expanding every lane keeps a
readable time axis (lanes scroll); stepping keeps the selected event on screen; clicking a folded
bin unfolds its lane; a span with a duration is a bar; "only this agent" and the overview strip.
"""

from __future__ import annotations

import base64
import json

import pytest

from tests.browser.test_trace_page import open_filters, open_trace
from tests.synthetic import synthetic_trace

pytestmark = pytest.mark.timeout(900)

#: Counts, in a PNG (base64), the pixels of saturated colour (the event colours: max - min channel
#: >= 100; the faded edges, stripes and text stay below) and of dark text (mean channel < 110).
#: Decoded in a blank page of the same browser (no PNG decoder on the Python side).
COUNT_PIXELS_JS = """
async (b64) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const bitmap = await createImageBitmap(new Blob([bytes], {type: "image/png"}));
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  const ctx = canvas.getContext("2d");
  ctx.drawImage(bitmap, 0, 0);
  const data = ctx.getImageData(0, 0, bitmap.width, bitmap.height).data;
  let colored = 0, dark = 0;
  const columns = new Set();
  for (let i = 0; i < data.length; i += 4) {
    const r = data[i], g = data[i + 1], b = data[i + 2];
    if (Math.max(r, g, b) - Math.min(r, g, b) >= 100) { colored += 1; columns.add((i / 4) % bitmap.width); }
    if ((r + g + b) / 3 < 110) dark += 1;
  }
  return {colored, dark, coloredColumns: columns.size, total: data.length / 4, width: bitmap.width};
}
"""


@pytest.fixture(scope="module")
def big_trace(app, tmp_path_factory) -> int:
    path = tmp_path_factory.mktemp("camera") / "synthetic-301a-33000e.json"
    path.write_text(json.dumps(synthetic_trace(301, 33000, 0).to_dict()), encoding="utf-8")
    return app.import_files(path)[path.name]


def pixels(page, locator=None, clip=None) -> dict:
    """Pixel counts of a screenshot of `locator` (or of the page region `clip`)."""
    png = locator.screenshot() if locator is not None else page.screenshot(clip=clip)
    decoder = page.context.new_page()
    try:
        return decoder.evaluate(COUNT_PIXELS_JS, base64.b64encode(png).decode())
    finally:
        decoder.close()


def selected_point(page):
    """Where the selected event is drawn (client px), or None."""
    return page.evaluate("window.swarmscope.eventClientPoint(document.body.dataset.selected)")


def state(page) -> dict:
    return page.evaluate("window.swarmscope.timeline.debugState()")


def plot(page):
    return page.get_by_test_id("timeline-canvas")


def lane_names(page):
    return page.locator(".lane-column")


def assert_drawn(page, what: str, min_colored: int = 150, min_text: int = 150) -> tuple[dict, dict]:
    """Events in the plot and lane names in their column, as pixels of a screenshot."""
    drawn, names = pixels(page, plot(page)), pixels(page, lane_names(page))
    assert drawn["colored"] >= min_colored, f"{what}: only {drawn['colored']} event pixels in the plot"
    assert names["dark"] >= min_text, f"{what}: only {names['dark']} lane-name pixels"
    return drawn, names


def assert_in_extent(s: dict) -> None:
    (x0, x1), (e0, e1) = s["window"], s["extent"]
    eps = (e1 - e0) * 1e-9
    assert e0 - eps <= x0 < x1 <= e1 + eps, f"window {s['window']} leaves the extent {s['extent']}"


def wheel(page, x: float, y: float, dy: float, times: int, shift: bool = False) -> None:
    page.mouse.move(x, y)
    if shift:
        page.keyboard.down("Shift")
    for _ in range(times):
        page.mouse.wheel(0, dy)
    if shift:
        page.keyboard.up("Shift")
    page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def axis_ticks(page) -> list[dict]:
    return page.locator("[data-testid=timeline-axis] .axis-tick").evaluate_all(
        "els => els.map(e => ({text: e.textContent, left: parseFloat(e.style.left)}))"
    )


def expand_all(page) -> None:
    open_filters(page)
    page.locator("[data-filter=expand-all]").click()
    page.wait_for_function("() => document.querySelectorAll('[data-testid=lane]').length === 301")


def test_zoom_into_an_empty_corner_keeps_events_and_lane_names(app, page, big_trace):
    open_trace(page, app, big_trace)
    assert page.evaluate("window.swarmscope.eventCount()") == 33000
    lanes_before = page.locator("[data-testid=lane]").count()
    before = state(page)
    assert before["laneH"] >= 18 and before["rows"] == lanes_before
    assert_drawn(page, "first render")

    # The bottom-right corner of the plot: the old camera zoomed both axes into empty rows there.
    box = plot(page).bounding_box()
    wheel(page, box["x"] + box["width"] - 5, box["y"] + box["height"] - 5, -240, 8)
    zoomed = state(page)
    assert_in_extent(zoomed)
    span = zoomed["window"][1] - zoomed["window"][0]
    full = zoomed["extent"][1] - zoomed["extent"][0]
    assert span < full / 20, f"the wheel did not zoom time: {span} of {full}"
    assert zoomed["laneH"] == before["laneH"], "the wheel changed the lane height (zoomed the lanes)"
    assert zoomed["scrollTop"] == before["scrollTop"]
    assert page.locator("[data-testid=lane]").count() == lanes_before
    drawn, _ = assert_drawn(page, "zoomed into the corner")
    # Zoomed in, the budget bins on screen are drawn as their events: bars, not bins.
    assert zoomed["drawn"]["expanded"] > 0 and zoomed["drawn"]["bars"] > 0, zoomed["drawn"]

    # Drags to the right pan towards the start, and stop at the first event, not in negative time.
    for drag in range(160):  # a wider plot pans less time per pixel
        page.mouse.move(box["x"] + 20, box["y"] + 100)
        page.mouse.down()
        page.mouse.move(box["x"] + 320, box["y"] + 100, steps=4)
        page.mouse.move(box["x"] + 1500, box["y"] + 100, steps=4)
        page.mouse.up()
        panned = state(page)
        assert_in_extent(panned)
        if drag == 0:
            assert panned["window"][0] < zoomed["window"][0], "a drag did not pan"
        if panned["window"][0] == panned["extent"][0]:
            break
    assert_in_extent(panned)
    assert panned["window"][0] == pytest.approx(panned["extent"][0])
    assert not any(t["text"].startswith("-") for t in axis_ticks(page)), axis_ticks(page)
    assert_drawn(page, "panned to the start")

    # Shift+wheel scrolls the lanes (names and plot together), not time; mid-trace, where every lane works.
    page.evaluate("window.swarmscope.timeline.setWindow(200, 260)")
    panned = state(page)
    wheel(page, box["x"] + 200, box["y"] + 200, 400, 3, shift=True)
    scrolled = state(page)
    assert scrolled["scrollTop"] > 0 and scrolled["window"] == panned["window"]
    assert page.locator(".lane-column").evaluate("el => el.scrollTop") == pytest.approx(scrolled["scrollTop"])
    assert_drawn(page, "lanes scrolled")


def test_fit_after_expanding_all_lanes_keeps_a_readable_time_axis(app, page, big_trace):
    open_trace(page, app, big_trace)
    expand_all(page)
    page.get_by_test_id("fit-timeline").click()
    s = state(page)
    assert s["rows"] == 301 and s["laneH"] >= 18, s
    assert s["window"] == pytest.approx(s["extent"])
    ticks = axis_ticks(page)
    width = plot(page).bounding_box()["width"]
    assert 3 <= len(ticks) <= 20, ticks
    gaps = [b["left"] - a["left"] for a, b in zip(ticks, ticks[1:], strict=False)]
    assert min(gaps) >= 60, f"ticks {gaps} px apart: the axis is squashed"
    assert all(0 <= t["left"] <= width for t in ticks)
    # The ticks span the trace's time (about 14 minutes), not thousands of minutes.
    last = ticks[-1]["text"]
    minutes = int(last.split(":")[0]) if ":" in last else 0
    assert minutes <= s["extent"][1] / 60 + 1, (last, s["extent"])
    drawn, names = assert_drawn(page, "301 lanes fitted")
    # The events spread over the width: coloured pixels in most columns of the plot.
    assert drawn["coloredColumns"] > 0.3 * drawn["width"], drawn

    # The lanes scroll: the last lanes are reachable, drawn, and named.
    page.locator(".lane-column").evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    bottom = state(page)
    assert bottom["visibleRows"][1] == 300, bottom
    assert page.locator("[data-testid=lane]").last.is_visible()
    assert_drawn(page, "scrolled to the last lane")


def test_stepping_keeps_the_selected_event_on_screen(app, page, big_trace):
    open_trace(page, app, big_trace)
    expand_all(page)
    # Zoom to a tenth of the first minute: the camera must follow the steps.
    page.evaluate("window.swarmscope.timeline.setWindow(0, 6)")
    page.locator("body").press("Escape")
    first = None
    moved = 0
    previous = state(page)["window"]
    for step in range(60):
        page.keyboard.press("ArrowRight")
        selected = page.evaluate("document.body.dataset.selected")
        first = first or selected
        point = page.evaluate("(id) => window.swarmscope.eventClientPoint(id)", selected)
        assert point is not None, f"step {step}: event {selected} is not on screen ({state(page)})"
        s = state(page)
        assert_in_extent(s)
        moved += s["window"] != previous
        previous = s["window"]
    # Steps through the 301 agents' events jump between lanes and later times: the camera followed.
    assert moved > 0 or state(page)["scrollTop"] > 0
    # The selection ring is drawn where the event is (dark ring pixels around its point).
    point = selected_point(page)
    ring = pixels(page, clip={"x": point["x"] - 12, "y": point["y"] - 12, "width": 24, "height": 24})
    assert ring["dark"] >= 8, ring

    # Back to the first event and one more step back: the camera stays at the start, not before it.
    page.evaluate("(id) => window.swarmscope.selectEvent(id)", first)
    page.keyboard.press("ArrowLeft")
    s = state(page)
    assert_in_extent(s)
    assert s["window"][0] >= s["extent"][0]
    assert selected_point(page)
    assert_drawn(page, "after stepping")


def test_clicking_a_folded_bin_unfolds_its_lane(app, page, big_trace):
    open_trace(page, app, big_trace)
    items = page.evaluate("window.swarmscope.timeline.drawnItems()")
    folded = [i for i in items if i["kind"] == "bin" and i["folded"] and i["width"] >= 4]
    assert folded, "no folded bin drawn on the 33k trace"
    target = max(folded, key=lambda i: i["count"])
    lane = page.locator(f'[data-testid=lane][data-agent="{target["lane"]}"] .lane-toggle')
    assert lane.get_attribute("aria-expanded") == "false"
    lanes_before = page.locator("[data-testid=lane]").count()
    page.mouse.click(target["x"], target["y"])
    page.wait_for_function("(n) => document.querySelectorAll('[data-testid=lane]').length > n", arg=lanes_before)
    assert lane.get_attribute("aria-expanded") == "true"
    s = state(page)
    assert_in_extent(s)
    assert s["window"][1] - s["window"][0] < (s["extent"][1] - s["extent"][0]) / 2, "did not zoom to the bin"
    selected = page.evaluate("document.body.dataset.selected")
    assert selected and page.evaluate("(id) => window.swarmscope.eventClientPoint(id)", selected)
    assert_drawn(page, "after unfolding")


def test_a_span_with_a_duration_is_drawn_as_a_bar(app, page, big_trace):
    open_trace(page, app, big_trace)
    expand_all(page)
    # The longest event in the first lanes (the orchestrator's and its leads').
    event = page.evaluate(
        """() => {
      const m = window.swarmscope.model, rows = new Set([...document.querySelectorAll('[data-testid=lane]')]
        .slice(0, 10).map((e) => e.dataset.agent));
      let best = null;
      for (const ev of m.events.values()) {
        if (!rows.has(ev.agent) || !(ev.t_end > ev.t)) continue;
        if (!best || ev.t_end - ev.t > best.t_end - best.t) best = ev;
      }
      return {id: best.id, t: best.t, t_end: best.t_end};
    }"""
    )
    d = event["t_end"] - event["t"]
    page.evaluate("([a, b]) => window.swarmscope.timeline.setWindow(a, b)", [event["t"] - d, event["t_end"] + d])
    page.evaluate("(id) => window.swarmscope.selectEvent(id)", event["id"])
    item = next(i for i in page.evaluate("window.swarmscope.timeline.drawnItems()") if i["eventId"] == event["id"])
    width = plot(page).bounding_box()["width"]
    assert item["width"] > 0.25 * width, (item, width)  # a third of the plot's width, not a dot
    # Along the bar's middle line, its colour fills (nearly) all of its width.
    left = item["x"] - item["width"] / 2 + 3
    row = pixels(page, clip={"x": left, "y": item["y"] - 1, "width": item["width"] - 6, "height": 2})
    assert row["colored"] >= 0.9 * row["total"], row
    assert state(page)["drawn"]["bars"] > 0


def test_only_this_agent_and_the_overview_strip(app, page, big_trace):
    open_trace(page, app, big_trace)
    lanes_before = page.locator("[data-testid=lane]").count()
    lane = page.locator("[data-testid=lane]").nth(1)
    agent = lane.get_attribute("data-agent")
    lane.hover()
    lane.get_by_test_id("lane-only").click()
    page.wait_for_function("() => document.querySelectorAll('[data-testid=lane]').length === 1")
    assert page.get_by_test_id("timeline-only").is_visible()
    assert agent in page.get_by_test_id("timeline-only").inner_text()
    count = page.evaluate("(a) => window.swarmscope.model.sequence().length", agent)
    expected = page.evaluate("(a) => window.swarmscope.model.eventsOfAgent(a).length", agent)
    assert count == expected
    assert_drawn(page, "only one agent", min_colored=30, min_text=30)
    page.get_by_test_id("timeline-only-clear").click()
    page.wait_for_function("(n) => document.querySelectorAll('[data-testid=lane]').length === n", arg=lanes_before)
    assert page.get_by_test_id("timeline-only").is_hidden()

    # The overview: a drag moves the zoomed window along the trace, inside its extent.
    page.evaluate("window.swarmscope.timeline.setWindow(0, 60)")
    strip = page.get_by_test_id("timeline-overview").bounding_box()
    assert pixels(page, page.get_by_test_id("timeline-overview"))["dark"] + 1 > 0
    y = strip["y"] + strip["height"] / 2
    page.mouse.move(strip["x"] + 5, y)
    page.mouse.down()
    page.mouse.move(strip["x"] + strip["width"] / 2, y, steps=5)
    page.mouse.move(strip["x"] + strip["width"] + 50, y, steps=5)
    page.mouse.up()
    s = state(page)
    assert_in_extent(s)
    assert s["window"][1] == pytest.approx(s["extent"][1]), s  # dragged past the end: stops at it
    assert s["window"][1] - s["window"][0] == pytest.approx(60)
    assert_drawn(page, "moved by the overview")
