"""The metrics panel says what each metric measures on the page (a "What these measure" list under
the cards), not only in hover titles."""

import pytest

pytestmark = pytest.mark.timeout(300)


def test_the_metric_definitions_are_readable_on_the_trace_page(app, page, fixtures):
    trace = app.import_files(fixtures / "native_small.json")["native_small.json"]
    page.goto(f"{app.url}/traces/{trace}/")
    page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined", timeout=60_000)
    definitions = page.get_by_test_id("metric-definitions")
    definitions.wait_for(state="attached", timeout=30_000)
    definitions.locator("summary").click()
    term = definitions.locator('dt[data-metric="critical_steps"]')
    assert term.is_visible() and term.inner_text() == "Critical steps"
    assert "longest chain of steps" in term.locator("xpath=following-sibling::dd[1]").inner_text()
