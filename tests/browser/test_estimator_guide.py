"""The attribution panel's estimator guide in the real app: the measured numbers beside the choice.

The numbers come from bench/bench_estimators.py (static/js/panels/estimator_bench.js); the panel
shows what the chosen estimator estimates and what was measured for it, flags the 2-additive
estimator for higher-order interactions, states the 95 % interval's measured coverage of real effects
per coupling (with each coupling's worst family) and how often it called a null message real at the
sample count the budget buys, and warns where some family and coupling were significantly off
nominal there.
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

    # leave-one-out over 12 messages: 13 rollouts per sample; the coverage line follows N, the note
    # shows where some family and coupling fall short
    form.locator("select[name=method]").select_option("loo")
    budget = form.locator("input[name=budget]")
    for method, per_sample in (("loo", 13), ("shapley", 24), ("kernelshap", 4)):
        form.locator("select[name=method]").select_option(method)
        for n in (4, 32):
            budget.fill(str(per_sample * n))  # over 12 messages: 13, 24 (2 per message) and 4 rollouts a sample
            at = bench["methods"][method]["coverage"][str(n)]
            line = page.get_by_test_id("estimator-coverage").inner_text()
            assert line.startswith(f"95 % interval, measured at N = {n} ")
            for rho, rho_text in (("1.0", "1"), ("0.5", "0.5"), ("0.0", "0")):
                c = at["couplings"][rho]
                worst = f"worst {100 * c['real_worst']:.1f} %" if c["real_worst"] < c["real"] else "in every family"
                assert f"{100 * c['real']:.1f} % at ρ = {rho_text} ({worst}" in line
                assert f"{100 * c['null_flag']:.1f} % at ρ = {rho_text}" in line
            note = page.get_by_test_id("estimator-coverage-note")
            if at["under"] or at["over_null"]:
                assert note.is_visible() and f"measured at N = {n}," in note.inner_text()
            else:
                assert note.count() == 0
