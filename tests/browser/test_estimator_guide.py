"""The attribution panel's estimator guide in the real app: the measured numbers beside the choice.

The numbers come from bench/bench_estimators.py (static/js/panels/estimator_bench.js); the panel
shows what the chosen estimator estimates and what was measured for it, flags the 2-additive
estimator for higher-order interactions, and says so when the budget buys fewer samples than the
95 % interval needs to cover real effects at least 93 % of the time.
"""

import json

import pytest

from tests.browser.test_trace_page import open_trace
from tests.servers import REPO
from trainer.sim.suites import pivot12_case

pytestmark = pytest.mark.timeout(300)


def measured() -> dict:
    """ESTIMATOR_BENCH, as the page imports it."""
    text = (REPO / "static" / "js" / "panels" / "estimator_bench.js").read_text()
    return json.loads(text[text.index("{") : text.rindex("}") + 1])


def test_the_guide_follows_the_estimator_and_the_budget(app, page, tmp_path):
    bench = measured()
    case = pivot12_case(1)
    path = tmp_path / "swarmsim-pivot-12-1-guide.json"
    document = case.episode.trace.to_dict()
    document["source_id"] = f"{document.get('source_id')}-guide"
    path.write_text(json.dumps(document))
    trace_id = app.import_files(path)[path.name]
    open_trace(page, app, trace_id)
    page.get_by_test_id("attribute").click()
    form = page.get_by_test_id("attribution-form")
    guide = page.get_by_test_id("estimator-guide-text")
    assert guide.is_visible() and guide.inner_text().startswith("Leave-one-out Δ")
    assert bench["measured"] in guide.inner_text()
    # SwarmSim's re-simulation shares its draws exactly: the LLM coupling note is for LLM backends only
    assert page.get_by_test_id("estimator-llm-coupling").count() == 0

    form.locator("select[name=method]").select_option("shapley2")
    text = guide.inner_text()
    assert "4-way synergy" in text and "use Shapley (permutations)" in text
    share = bench["methods"]["shapley2"]["families"]["synergy4"]["1.0"]["max_error_pass"]
    assert f"only {round(100 * share)} %" in text

    # leave-one-out over 12 messages: 13 rollouts per sample; the note shows where N falls short
    form.locator("select[name=method]").select_option("loo")
    budget = form.locator("input[name=budget]")
    coverage = bench["methods"]["loo"]["coverage"]
    floor = bench["coverage_floor"]
    for n in (4, 32):
        budget.fill(str(13 * n))
        note = page.get_by_test_id("estimator-coverage-note")
        if coverage[str(n)]["real"] < floor:
            assert note.is_visible() and f"at N = {n}, it covered" in note.inner_text()
        else:
            assert note.count() == 0
    form.locator("select[name=method]").select_option("shapley")
    budget.fill(str(24 * 4))  # permutations over 12 messages: 24 rollouts per pair, 4 pairs
    note = page.get_by_test_id("estimator-coverage-note")
    if bench["methods"]["shapley"]["coverage"]["4"]["real"] < floor:
        assert "at N = 4, it covered" in note.inner_text()
    else:
        assert note.count() == 0
