"""The transcript beside the timeline (static/js/panels/transcript.js) in headless Chromium.

On a real Who&When Hand-Crafted log (../shared/data) the labelled mistake step is read in one
action from the page as it opens; on hand-written traces (tests/fixtures, or written here) the
panel's sync with the timeline, keyboard, search, tool pairing, folding, Markdown safety and live
appends are driven as a person would. Waits are on visible state, never sleeps.
"""

from __future__ import annotations

import copy
import json
import re

import pytest

pytestmark = pytest.mark.timeout(300)

WHOWHEN_FILE = "8.json"  # the longest Hand-Crafted log (129 turns, 165 kB of content)


def open_trace(page, app, trace_id):
    page.goto(f"{app.url}/traces/{trace_id}/")
    page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined", timeout=60_000)
    page.evaluate("window.swarmscope.ready")
    page.get_by_test_id("transcript-row").first.wait_for()


def row(page, event_id):
    return page.locator(f'[data-testid=transcript-row][data-event-id="{event_id}"]')


def words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z0-9]{4,}", text)}


def in_view(page, event_id) -> bool:
    """Whether the row's top is inside the transcript's scroll box (its start is readable)."""
    return page.evaluate(
        """(id) => {
          const box = document.querySelector('[data-testid=transcript-scroll]').getBoundingClientRect();
          const el = document.querySelector(`[data-testid=transcript-row][data-event-id="${id}"]`);
          if (!el) return false;
          const r = el.getBoundingClientRect();
          return r.top >= box.top - 1 && r.top < box.bottom - 20 && r.height > 0;
        }""",
        event_id,
    )


def test_whowhen_mistake_step_read_from_the_transcript_in_one_action(app, page, shared_data):
    path = shared_data / "who-and-when" / "Hand-Crafted" / WHOWHEN_FILE
    record = json.loads(path.read_text())
    trace_id = app.import_files(path)[WHOWHEN_FILE]
    snapshot = app.api(f"/api/traces/{trace_id}/snapshot/")
    step = next(lb for lb in snapshot["labels"] if lb["key"] == "mistake_step")
    event = next(e for e in snapshot["events"] if e["id"] == step["event_id"])
    open_trace(page, app, trace_id)

    # Without any action: the header names the question, ground truth, outcome and the mistake.
    facts = page.get_by_test_id("trace-facts")
    assert record["question"].split("\n")[0][:40] in facts.inner_text()
    assert page.get_by_test_id("fact-ground-truth").inner_text() == str(record["ground_truth"]).strip()
    assert page.get_by_test_id("fact-outcome").inner_text()
    mistake = page.get_by_test_id("fact-mistake").inner_text()
    assert record["mistake_agent"].lower() in mistake.lower() and record["mistake_reason"][:40] in mistake
    assert page.get_by_test_id("transcript-count").inner_text() == f"{len(record['history'])} events"
    assert not in_view(page, event["id"])  # step 8 of 129: below the first screen

    # Action 1: the button. The step is selected everywhere, scrolled to, unfolded and readable.
    page.get_by_test_id("transcript-mistake").click()
    page.wait_for_function("(id) => document.body.dataset.selected === id", arg=event["id"])
    target = row(page, event["id"])
    page.wait_for_function(
        """(id) => { const r = document.querySelector(`[data-testid=transcript-row][data-event-id="${id}"]`);
                     return r && r.classList.contains('selected') && r.classList.contains('expanded'); }""",
        arg=event["id"],
    )
    assert in_view(page, event["id"])
    assert target.get_by_test_id("transcript-mistake-flag").is_visible()
    assert record["mistake_reason"][:40] in target.inner_text()
    body = target.get_by_test_id("transcript-content")
    assert "folded" not in body.get_attribute("class")
    expected = words(event["content"])
    shown = words(body.inner_text())
    assert len(expected & shown) >= 0.95 * len(expected), sorted(expected - shown)[:20]
    assert page.get_by_test_id("inspector-title").inner_text() == event["id"]


def test_transcript_and_timeline_select_each_other(app, page, fixtures):
    trace_id = app.import_files(fixtures / "native_small.json")["native_small.json"]
    open_trace(page, app, trace_id)
    events = app.api(f"/api/traces/{trace_id}/snapshot/")["events"]
    order = [e["id"] for e in sorted(events, key=lambda e: e["t"])]
    rows = page.get_by_test_id("transcript-row").evaluate_all("els => els.map(e => e.dataset.eventId)")
    assert sorted(rows, key=order.index) == order  # every event, in time order

    # Timeline -> transcript: a click on the drawn event highlights its row.
    point = page.evaluate("(id) => window.swarmscope.eventClientPoint(id)", "e7")
    page.mouse.click(point["x"], point["y"])
    page.wait_for_function("() => document.body.dataset.selected === 'e7'")
    assert "selected" in row(page, "e7").get_attribute("class")

    # Transcript -> timeline and inspector: a click on a row (its text) selects it.
    row(page, "e4").get_by_test_id("transcript-content").click()
    page.wait_for_function("() => document.body.dataset.selected === 'e4'")
    assert page.get_by_test_id("inspector-title").inner_text() == "e4"
    assert "selected" not in row(page, "e7").get_attribute("class")

    # Keyboard: right after a click on a row (the row has the focus), j steps to the next one.
    row(page, "e4").click()
    page.keyboard.press("j")
    page.wait_for_function("(id) => document.body.dataset.selected === id", arg=order[order.index("e4") + 1])
    row(page, "e4").get_by_test_id("transcript-content").click()
    page.wait_for_function("() => document.body.dataset.selected === 'e4'")

    # Keyboard: Tab-reachable, j / k and the arrows step through the rows in order.
    page.get_by_test_id("transcript-scroll").focus()
    page.keyboard.press("j")
    nxt = order[order.index("e4") + 1]
    page.wait_for_function("(id) => document.body.dataset.selected === id", arg=nxt)
    page.keyboard.press("ArrowDown")
    page.wait_for_function("(id) => document.body.dataset.selected === id", arg=order[order.index("e4") + 2])
    page.keyboard.press("k")
    page.wait_for_function("(id) => document.body.dataset.selected === id", arg=nxt)
    assert page.evaluate("document.activeElement.dataset.testid") == "transcript-scroll"

    # The tool call and its result link to each other (tool_dependency e5 -> e6).
    assert (
        "e6" in row(page, "e5").get_by_test_id("transcript-pair").inner_text()
        or row(page, "e5").get_by_test_id("transcript-pair").locator("button").get_attribute("data-goto") == "e6"
    )
    row(page, "e6").get_by_test_id("transcript-pair").locator("button").click()
    page.wait_for_function("() => document.body.dataset.selected === 'e5'")


def test_fixture_mistake_search_and_safe_markdown(app, page, fixtures, tmp_path):
    # The hand-written Who&When log: the mistake step in one action, without ../shared.
    trace_id = app.import_files(fixtures / "whowhen_hand_crafted.json")["whowhen_hand_crafted.json"]
    open_trace(page, app, trace_id)
    assert "6 times 7" in page.get_by_test_id("fact-question").inner_text()
    assert page.get_by_test_id("fact-ground-truth").inner_text() == "42"
    page.get_by_test_id("transcript-mistake").click()
    page.wait_for_function("() => document.body.dataset.selected === 'h3'")
    assert "misread the page" in row(page, "h3").inner_text()

    # A trace whose content tries HTML and script: rendered as Markdown, never run.
    doc = json.loads((fixtures / "native_small.json").read_text())
    doc = copy.deepcopy(doc)
    doc["source_id"] = "transcript-markdown-test"
    doc["name"] = "Markdown safety"
    hostile = (
        "## Plan\n\n* **first** step\n* second `code`\n\n```python\nprint('hi')\n```\n\n"
        '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>\n\n'
        "[click](javascript:window.__pwned=3) and [docs](https://example.org/x)\n\n"
        + "\n".join(f"line {i}" for i in range(60))
    )
    doc["events"][0]["content"] = hostile
    path = tmp_path / "markdown_safety.json"
    path.write_text(json.dumps(doc))
    trace_id = app.import_files(path)["markdown_safety.json"]
    open_trace(page, app, trace_id)
    first = row(page, "e1")
    body = first.get_by_test_id("transcript-content")
    assert body.locator("h2").inner_text() == "Plan"
    assert body.locator("li strong").inner_text() == "first"
    assert "print('hi')" in body.locator("pre code").inner_text()
    assert body.locator("img, script").count() == 0
    assert "<script>" in body.inner_text()  # raw HTML is shown as text
    assert body.locator("a").count() == 2
    assert body.locator("a").first.get_attribute("href") is None  # javascript: dropped
    assert body.locator("a").nth(1).get_attribute("rel") == "noopener noreferrer nofollow"
    assert page.evaluate("window.__pwned") is None
    # Long content is folded with "Show more"; it unfolds and folds back.
    assert "folded" in body.get_attribute("class")
    more = first.locator(".tx-more")
    assert more.is_visible() and more.inner_text() == "Show more"
    folded_height = first.bounding_box()["height"]
    more.click()
    page.wait_for_function("() => document.querySelector('[data-event-id=e1].tx-row').classList.contains('expanded')")
    assert "line 59" in body.inner_text()
    page.wait_for_function(
        f"() => document.querySelector('[data-event-id=e1].tx-row').offsetHeight > {folded_height + 200}"
    )
    # Rows below moved down to make room (measured heights, no overlap).
    # (Scrolled so that e1's end is in view: a tall e1 can push e2 out of the rendered window.)
    page.evaluate(
        """() => { const a = document.querySelector('[data-event-id=e1].tx-row');
                   const box = document.querySelector('[data-testid=transcript-scroll]');
                   box.scrollTop = a.offsetTop + a.offsetHeight - box.clientHeight / 2; }"""
    )
    page.wait_for_function(
        """() => { const a = document.querySelector('[data-event-id=e1].tx-row');
                   const b = document.querySelector('[data-event-id=e2].tx-row');
                   return a && b && b.getBoundingClientRect().top >= a.getBoundingClientRect().bottom - 1; }"""
    )

    # Search: hits listed with snippets; Enter goes to each in turn.
    search = page.get_by_test_id("transcript-search")
    search.fill("the sum")
    results = page.get_by_test_id("transcript-results")
    results.locator("button").first.wait_for()
    hits = results.locator("button").evaluate_all("els => els.map(e => e.dataset.eventId)")
    assert hits and all(
        "the sum" in next(e for e in doc["events"] if e["id"] == h).get("content", "").lower() for h in hits
    )
    search.press("Enter")
    page.wait_for_function("(id) => document.body.dataset.selected === id", arg=hits[0])
    assert row(page, hits[0]).locator("mark.tx-hit").count() >= 1
    if len(hits) > 1:
        search.press("Enter")
        page.wait_for_function("(id) => document.body.dataset.selected === id", arg=hits[1])
    assert re.match(r"\d+ of \d+ match", page.get_by_test_id("transcript-search-count").inner_text())


def test_live_events_append_to_the_transcript_and_it_stays_virtual(app, page):
    trace = app.api("/api/traces/", {"name": "live transcript", "system": "browser-test"})["trace"]
    page.goto(f"{app.url}/traces/{trace['id']}/")
    page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined", timeout=60_000)
    page.evaluate("window.swarmscope.ready")
    total = 3000
    for start in range(0, total, 500):
        events = [
            {"id": f"m{i}", "t": i * 0.5, "type": "message", "agent": f"worker-{i % 5}", "content": f"**message** {i}"}
            for i in range(start, start + 500)
        ]
        app.api(f"/api/traces/{trace['id']}/events/", events)
    page.wait_for_function(f"() => Number(document.body.dataset.eventCount) === {total}", timeout=120_000)
    page.wait_for_function(  # in the browser's number format (3,000 in en-US)
        f"() => document.querySelector('[data-testid=transcript-count]').textContent"
        f" === ({total}).toLocaleString() + ' events'"
    )
    # Scrolled to the end at the start, it follows the stream: the last event is in view.
    page.wait_for_function("() => document.querySelector('[data-event-id=\"m2999\"].tx-row') !== null")
    assert in_view(page, "m2999") or page.evaluate(
        "(() => { const s = document.querySelector('[data-testid=transcript-scroll]');"
        " return s.scrollTop + s.clientHeight >= s.scrollHeight - 4; })()"
    )
    rendered = page.get_by_test_id("transcript-row").count()
    assert 0 < rendered < 200, rendered  # only the rows near the viewport are in the DOM
    assert page.locator('[data-event-id="m2999"].tx-row strong').inner_text() == "message"
