"""The trace page's head: `modulepreload` links for its whole ES module graph and the snapshot
preloaded (`<link rel="preload" as="fetch">`), used by the page (one request, seen in Chromium's
network log); and two looks of the header and the metrics panel that need a browser's layout."""

from __future__ import annotations

import pytest

from tests.browser.test_trace_page import GROUPCHAT, MONOCLE

pytestmark = pytest.mark.timeout(300)


def test_trace_page_preloads_every_module_it_runs_and_fetches_the_snapshot_once(app, page, shared_data):
    ids = app.import_files(shared_data / MONOCLE / GROUPCHAT)
    trace_id = ids[GROUPCHAT]
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    requests: list[str] = []
    cdp.on("Network.requestWillBeSent", lambda e: requests.append(e["request"]["url"]))
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)

    page.goto(f"{app.url}/traces/{trace_id}/")
    page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined", timeout=60_000)
    page.evaluate("window.swarmscope.ready")
    assert page.evaluate("window.swarmscope.eventCount()") > 0

    snapshot_url = f"{app.url}/api/traces/{trace_id}/snapshot/lod/"
    assert page.get_by_test_id("snapshot-preload").get_attribute("href") == snapshot_url.removeprefix(app.url)
    assert requests.count(snapshot_url) == 1, [u for u in requests if "/snapshot" in u]
    assert not [w for w in warnings if "preload" in w.lower()], warnings  # "preloaded ... but not used"

    preloaded = page.evaluate(
        "[...document.querySelectorAll('link[rel=modulepreload]')].map((l) => new URL(l.href).pathname)"
    )
    ran = page.evaluate(
        "performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)"
        ".filter((p) => p.startsWith('/static/js/'))"
    )
    assert len(preloaded) == len(set(preloaded))
    assert set(ran) == set(preloaded), {"loaded, not preloaded": set(ran) - set(preloaded)}
    assert {"/static/js/pages/trace_page.js", "/static/js/panels/review.js", "/static/js/lib/dom.js"} <= set(preloaded)
    assert all(requests.count(app.url + path) == 1 for path in preloaded)  # preloaded, then used: once each


def test_unavailable_metric_reason_in_small_text_and_the_bell_drawn_without_an_emoji_font(app, page, shared_data):
    ids = app.import_files(shared_data / MONOCLE / GROUPCHAT)
    page.goto(f"{app.url}/traces/{ids[GROUPCHAT]}/")
    page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined", timeout=60_000)
    page.evaluate("window.swarmscope.ready")

    card = page.locator(
        '[data-testid=computed-metrics] .metric-card.metric-unavailable[data-metric="protocol_overhead"]'
    )
    card.wait_for()
    style = card.evaluate(
        """(c) => {
          const [value, reason] = [...c.querySelectorAll("dd")].map((d) => getComputedStyle(d));
          return {value: [parseFloat(value.fontSize), Number(value.fontWeight)],
                  reason: [parseFloat(reason.fontSize), Number(reason.fontWeight)]};
        }"""
    )
    assert card.locator("dd").first.inner_text() == "n/a"
    assert card.get_by_test_id("metric-reason").inner_text().strip()
    assert style["reason"][0] < style["value"][0] and style["reason"][1] < style["value"][1], style

    bell = page.get_by_test_id("notification-bell")
    assert bell.get_attribute("aria-label").startswith("Notifications")
    assert page.get_by_role("link", name="Notifications").count() == 1
    icon = bell.locator("svg.bell-icon")
    box = icon.bounding_box()
    assert box and box["width"] >= 10 and box["height"] >= 10
    assert icon.get_attribute("aria-hidden") == "true"
    assert "\U0001f514" not in bell.inner_text()
