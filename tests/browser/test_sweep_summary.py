"""The compare page of a whole credit-diffusion sweep in Chromium: `manage.py import_credit_sweep`
of a hand-written sweep (tests/training/sweep_fixture.py), then its "all n" link draws the summary
vs n (final E[R] and env steps to the target, one line and band per arm) and the learning curves
of one n at a time. Waits are on visible state (`data-points`), never sleeps."""

import json
import re

import pytest

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
