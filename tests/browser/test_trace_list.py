"""The trace list in headless Chromium: the kind facet hides branch traces (and back/forward
restores the filter), a streamed trace appears and grows without a reload, the table fits a
1280 px window and the top bar a 390 px phone. Waits are on visible state and `body[data-list-socket]`, never sleeps."""

import pytest

from tests.browser.page_waits import wait_until
from tests.servers import manage

pytestmark = pytest.mark.timeout(300)

BRANCH = """
from webapp.traces.models import Trace
parent = Trace.objects.get(pk={parent})
Trace.objects.create(project=parent.project, identity_key="sim:branch-of-{parent}", source_format="sim",
                     source_id="branch-of-{parent}", name="Branch of {parent} (what-if)", kind="branch",
                     derived_from="trace:{parent}")
"""


def rows(page):
    return page.get_by_test_id("trace-table").locator("tbody tr a[data-col=name]").all_inner_texts()


def test_the_kind_facet_hides_branch_traces_and_the_url_keeps_it(app, page, fixtures):
    parent = app.import_files(fixtures / "native_small.json")["native_small.json"]
    made = manage("shell", "-c", BRANCH.format(parent=parent), env=app.env)
    assert made.returncode == 0, made.stderr
    page.goto(app.url + "/")
    listed = rows(page)
    assert not any("Branch of" in name for name in listed)
    parent_row = page.locator(f"tr[data-trace-id='{parent}']")
    chip = parent_row.get_by_test_id("derived-chip")
    assert chip.inner_text() == "1 branch"

    page.get_by_test_id("facet-kind").locator("a[data-value=branch]").click()
    page.wait_for_url("**/?kind=branch")
    # (Other tests of this app may have made branch traces too: only branches are listed.)
    assert f"Branch of {parent} (what-if)" in rows(page) and not set(rows(page)) & set(listed)
    assert page.locator(f"tr[data-trace-id='{parent}']").count() == 0
    page.go_back()
    page.wait_for_url(app.url + "/")
    assert not any("Branch of" in name for name in rows(page))
    page.go_forward()
    page.wait_for_url("**/?kind=branch")
    assert f"Branch of {parent} (what-if)" in rows(page) and not set(rows(page)) & set(listed)

    page.goto(app.url + "/")
    chip = page.locator(f"tr[data-trace-id='{parent}']").get_by_test_id("derived-chip")
    chip.click()
    page.wait_for_url(f"**/?kind=branch&from=trace%3A{parent}")
    assert rows(page) == [f"Branch of {parent} (what-if)"]


def test_a_new_streamed_trace_appears_and_grows_without_a_reload(app, page):
    page.goto(app.url + "/")
    page.wait_for_function("() => document.body.dataset.listSocket === 'open'", timeout=30_000)
    page.evaluate("window.__sameDocument = true")
    trace = app.api("/api/traces/", {"name": "streamed into the list", "system": "browser-test"})["trace"]
    row = page.locator(f"tr[data-trace-id='{trace['id']}']")
    row.wait_for(timeout=30_000)
    assert row.locator("a[data-col=name]").inner_text() == "streamed into the list"
    assert row.get_by_test_id("row-live").is_visible()
    events = [{"id": f"e{i}", "t": i * 0.1, "type": "message", "agent": f"a{i % 3}"} for i in range(12)]
    app.api(f"/api/traces/{trace['id']}/events/", events)
    page.wait_for_function(
        "(id) => document.querySelector(`tr[data-trace-id='${id}'] [data-col=event_count]`)?.textContent === '12'",
        arg=trace["id"],
        timeout=30_000,
    )
    assert page.evaluate("window.__sameDocument") is True  # no reload happened
    assert page.get_by_test_id("trace-table").locator("tbody tr").first.get_attribute("data-trace-id") == str(
        trace["id"]
    )


@pytest.mark.parametrize("width", [1280, 1440])
def test_the_table_is_not_clipped(app, page, fixtures, width):
    app.import_files(fixtures / "whowhen_hand_crafted.json", fixtures / "otlp_genai_agents.json")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(app.url + "/")
    last = page.get_by_test_id("trace-table").locator("thead th").last
    box = last.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for cell in page.get_by_test_id("trace-table").locator("tbody tr:first-child td").all():
        cell_box = cell.bounding_box()
        if cell_box is not None:  # a folded column has no box
            assert cell_box["x"] + cell_box["width"] <= width


def test_the_top_bar_fits_a_phone(app, page):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(app.url + "/")
    bar = page.locator("header.topbar")
    assert bar.evaluate("(el) => el.scrollWidth <= el.clientWidth")
    for item in bar.locator("nav a, .brand, .user").all():
        box = item.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, item.inner_text()


def test_a_word_of_a_message_finds_its_trace_and_opens_it_at_the_event(app, page, shared_data):
    """Content search on SQLite: a word of a real Claude Code session's messages, typed in the list's
    search box, lists that session with the hit marked; the hit opens the trace with its event selected
    and the word marked in its transcript row, in view."""
    heavy = app.import_files(shared_data / "claude-code" / "tool_heavy.jsonl")["tool_heavy.jsonl"]
    page.goto(app.url + "/")
    box = page.get_by_role("searchbox", name="Search traces")
    box.fill("scrolling")
    box.press("Enter")
    page.wait_for_url("**/?q=scrolling")
    row = page.locator(f"tr[data-trace-id='{heavy}']")
    hit = row.get_by_test_id("search-hit")
    assert hit.locator("mark").first.inner_text().lower() == "scrolling"
    # Its tokens (and counts) read in the browser's number format, as the trace page's do.
    measured = int(row.locator("[data-col=total_tokens]").get_attribute("data-measured"))
    grouped = page.evaluate("(n) => new Intl.NumberFormat().format(n)", measured)
    assert measured >= 1000 and "," in grouped  # Chromium here: en-US
    assert row.locator("[data-col=total_tokens] [data-tokens=figure]").inner_text() == grouped
    events = row.locator("[data-col=event_count]")
    assert events.inner_text() == page.evaluate(
        "(n) => new Intl.NumberFormat().format(n)", int(events.get_attribute("data-number"))
    )
    event_id = hit.get_attribute("data-event-id")
    hit.click()
    page.wait_for_url(f"**/traces/{heavy}/?event=*&find=scrolling*")
    page.wait_for_function(f"() => document.body.dataset.selected === {event_id!r}", timeout=30_000)
    # The word is marked in the event's transcript row, unfolded, and the first mark is in view.
    row = page.locator(f"[data-testid=transcript-panel] [data-event-id='{event_id}']").first
    mark = row.locator("mark.tx-found").first
    mark.wait_for(timeout=30_000)
    assert mark.inner_text().lower() == "scrolling"
    assert all(m.lower() == "scrolling" for m in row.locator("mark.tx-found").all_inner_texts())
    in_view = (
        "([m, s]) => { const a = m.getBoundingClientRect(), b = s.getBoundingClientRect();"
        " return a.height > 0 && a.top >= b.top && a.bottom <= b.bottom; }"
    )
    scroller = page.get_by_test_id("transcript-scroll")
    wait_until(page, in_view, [mark.element_handle(), scroller.element_handle()], timeout_s=30)
