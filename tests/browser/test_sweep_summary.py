"""The compare page of a whole credit-diffusion sweep in Chromium: `manage.py import_credit_sweep`
of a hand-written sweep (tests/training/sweep_fixture.py), then its "all n" link draws the summary
vs n (final E[R] and env steps to the target, one line and band per arm) and the learning curves
of one n at a time. Waits are on visible state (`data-points`), never sleeps."""

import json
import re

import pytest

from tests.browser.test_trace_workspace import luminance
from tests.servers import manage
from tests.training.sweep_fixture import small_sweep
from webapp.accounts.services import DEFAULT_PROJECT

pytestmark = pytest.mark.timeout(300)


def test_the_sweep_summary_chart_draws(app, page, tmp_path):
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(small_sweep()))
    result = manage("import_credit_sweep", str(path), "--project", DEFAULT_PROJECT, env=app.env)
    assert result.returncode == 0, result.stderr
    url = re.search(r"all n \(summary vs n\): (\S+)", result.stdout).group(1)
    page.goto(app.url + url)
    for testid in ("sweep-final-chart", "sweep-steps-chart"):
        page.wait_for_function(
            "(id) => document.querySelector(`[data-testid=${id}] canvas`) !== null"
            " && document.querySelector(`[data-testid=${id}]`).dataset.points === '2'",
            arg=testid,
            timeout=30_000,
        )
        assert page.get_by_test_id(testid).get_attribute("data-arms") == "2"
    assert "held-out E[R]" in page.get_by_test_id("sweep-caption").inner_text()
    assert page.get_by_test_id("sweep-legend").locator("li").count() == 2
    # the learning curves: n = 4's two arms first, then n = 16's
    page.wait_for_function("() => document.querySelector('[data-testid=compare-charts]').dataset.series === '2'")
    # every metric at once: one titled chart per metric, the one the link names first, each reachable by Tab
    cells = page.get_by_test_id("compare-chart")
    assert cells.count() >= 8
    assert cells.first.get_attribute("data-metric") == "expected_success"  # the sweep link's ?metric=
    assert cells.first.locator("figcaption").inner_text() == "Expected success E[R] · probability, 0–1 (closed form)"
    drawn = page.locator("[data-testid=compare-chart] canvas").count()
    assert drawn >= 2 and str(page.get_by_test_id("compare-charts").get_attribute("data-charts")) != "0"
    boxes = [cells.nth(i).bounding_box() for i in range(2)]
    assert boxes[0]["y"] == boxes[1]["y"] and boxes[1]["x"] > boxes[0]["x"]  # side by side, not one at a time
    page.get_by_test_id("compare-n").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.dataset.metric") == "expected_success"
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.dataset.metric") == cells.nth(1).get_attribute("data-metric")
    assert "against env steps" in page.evaluate("() => document.activeElement.getAttribute('aria-label')")
    assert page.get_by_test_id("compare-legend").locator("li").first.inner_text().startswith("credit sweep n=4")
    page.get_by_test_id("compare-n").select_option("16")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=compare-legend] li')?.textContent.startsWith('credit sweep n=16')"
    )


#: A CSS colour (any syntax) as the computed `rgb(...)` of an element painted with it.
AS_RGB = (
    "(() => { const e = document.createElement('span'); e.style.color = %s; document.body.append(e);"
    " const c = getComputedStyle(e).color; e.remove(); return c; })()"
)


def test_the_runs_pages_and_their_charts_follow_a_dark_colour_scheme(app, browser, storage_state, tmp_path):
    """In a dark context the runs list and the compare page are dark with light text, a chart's
    figure is dark, and uPlot's axes are drawn in the theme's light axis colour (lib/chart_theme.js);
    in a light context the reverse."""
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(small_sweep()))
    result = manage("import_credit_sweep", str(path), "--project", DEFAULT_PROJECT, env=app.env)
    assert result.returncode == 0, result.stderr
    url = re.search(r"all n \(summary vs n\): (\S+)", result.stdout).group(1)
    seen = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(storage_state=storage_state, color_scheme=scheme)
        try:
            page = context.new_page()
            page.goto(app.url + "/runs/")
            runs_list = {
                "body": luminance(page, "getComputedStyle(document.body).backgroundColor"),
                "text": luminance(page, "getComputedStyle(document.querySelector('main')).color"),
            }
            page.goto(app.url + url)
            page.wait_for_function(
                "() => Number(document.querySelector('[data-testid=compare-charts]').dataset.charts) > 0"
            )
            axis = page.evaluate(
                "() => { const u = window.swarmscopeCompare.plots()[0]; const s = u.axes[1].stroke;"
                " return typeof s === 'function' ? s(u, 1) : s; }"
            )
            seen[scheme] = {
                **runs_list,
                "figure": luminance(page, "getComputedStyle(document.querySelector('.compare-cell')).backgroundColor"),
                "axis": luminance(page, AS_RGB % json.dumps(axis)),
            }
        finally:
            context.close()
    assert seen["light"]["body"] > 0.8 and seen["light"]["figure"] > 0.8 and seen["light"]["text"] < 0.3, seen
    assert seen["light"]["axis"] < 0.4, seen
    assert seen["dark"]["body"] < 0.2 and seen["dark"]["figure"] < 0.2 and seen["dark"]["text"] > 0.8, seen
    assert seen["dark"]["axis"] > 0.6, seen
