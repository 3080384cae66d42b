"""From a click to Δ: a SwarmSim trace, "What if removed?" on its pivotal message, 32 paired samples
on a real Celery worker (the app's embedded Redis as broker), Δ with its interval, the branch trace
side by side; two messages checked in the dialog make one intervention; "Attribute this trace" per
message and per agent; after a reload the stored results and the job history are shown again; and
an LLM job (the `openai` backend against FakeOpenAIServer, a scripted local fake endpoint, on a real
`rollouts-gpu` worker) shows its estimated cost and starts only once confirmed, from the dialog and
from the attribution panel; shift/ctrl-clicked timeline events and an inspected agent pre-check the
dialog."""

import json
import re
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import expect

from swarmscope.model import Agent, Event, Trace
from tests.browser.conftest import App, save_admin_session
from tests.browser.test_trace_page import click_event, open_trace
from tests.fake_openai import FakeOpenAIServer
from tests.servers import (
    app_env,
    first_start_password,
    free_port,
    manage,
    start,
    start_worker,
    stop,
    wait_http,
)
from trainer.sim.suites import pivot12_case

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def rollout_worker(app, tmp_path):
    """A worker of the app's `rollouts-cpu` queue."""
    log = tmp_path / "worker.log"
    process = app.start_worker("rollouts-cpu", log)
    yield process, log
    stop(process)


def test_what_if_removed_runs_32_samples_and_opens_the_branch(app, page, rollout_worker, tmp_path):
    case = pivot12_case(0)
    path = tmp_path / "swarmsim-pivot-12-0.json"
    path.write_text(json.dumps(case.episode.trace.to_dict()))
    trace_id = app.import_files(path)[path.name]
    pivotal = next(
        f"message:{case.episode.actions[c].item}" for c, k in zip(case.candidates, case.kinds) if k == "pivotal"
    )
    open_trace(page, app, trace_id)
    click_event(page, pivotal)
    page.get_by_test_id("what-if").click()
    dialog = page.get_by_test_id("what-if-dialog")
    assert dialog.is_visible()
    page.keyboard.press("Escape")
    assert not dialog.is_visible() and page.get_by_test_id("inspector").is_visible()
    page.get_by_test_id("what-if").click()
    dialog.locator("input[name=n]").fill("32")
    dialog.locator("input[name=n]").press("Enter")
    job = page.get_by_test_id("job")
    job.wait_for()
    delta = page.get_by_test_id("job-delta")
    try:
        delta.wait_for(timeout=60_000)
    except Exception:
        pytest.fail(f"no Δ; job {job.get_attribute('data-status')}:\n" + rollout_worker[1].read_text()[-3000:])
    assert job.get_attribute("data-status") == "done"
    assert page.get_by_test_id("job-progress").evaluate("p => [p.value, p.max]") == [32, 32]
    text = delta.inner_text()
    assert text.startswith("Δ = ") and "95 %" in text and "64 rollouts" in text
    assert page.get_by_test_id("job-samples").locator("li").count() == 32
    assert page.get_by_test_id("job-usage").inner_text().startswith("no LLM requests: this backend runs no model")

    # Two messages, one intervention: the pivotal one and another checked in the dialog.
    other = next(
        f"message:{case.episode.actions[c].item}"
        for c, k in zip(case.candidates, case.kinds)
        if f"message:{case.episode.actions[c].item}" != pivotal
    )
    page.get_by_test_id("what-if").click()
    events = dialog.get_by_test_id("what-if-events")
    assert events.locator(f"input[value='{pivotal}']").is_checked()
    dialog.get_by_placeholder("Find a message…").fill(other)
    events.locator(f"input[value='{other}']").check()
    dialog.get_by_placeholder("Find a message…").fill("")
    assert events.locator(f"input[value='{pivotal}']").is_checked()
    assert events.locator(f"input[value='{other}']").is_checked()
    assert dialog.get_by_test_id("what-if-targets").inner_text() == f"event:{pivotal}, event:{other}"
    dialog.locator("input[name=n]").fill("8")
    dialog.locator("input[name=n]").press("Enter")
    both = page.locator("[data-testid=job][data-status=done]").filter(
        has_text=f"remove(event:{pivotal}, event:{other})"
    )
    both.wait_for(timeout=60_000)
    assert both.get_by_test_id("job-samples").locator("li").count() == 8

    # A reload loses nothing: both jobs, newest first, and the history lists them.
    page.reload()
    page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined", timeout=60_000)
    restored = page.locator("[data-testid=job][data-status=done]")
    restored.nth(1).wait_for(timeout=30_000)
    assert restored.first.locator("code").inner_text() == f"remove(event:{pivotal}, event:{other})"
    assert restored.nth(1).locator("code").inner_text() == f"remove(event:{pivotal})"
    assert restored.nth(1).get_by_test_id("job-delta").inner_text() == text
    history = page.get_by_test_id("history-item")
    assert history.count() == 2 and history.first.get_attribute("data-status") == "done"
    assert "8 / 8 samples" in history.first.inner_text() and "32 / 32 samples" in history.nth(1).inner_text()

    restored.nth(1).get_by_test_id("open-branch").click()
    page.wait_for_url(f"{app.url}/traces/compare/?left={trace_id}&right=*")
    assert "remove(event:" in page.content()


def test_attribute_this_trace_ranks_the_messages_and_paints_the_timeline(app, page, rollout_worker, tmp_path):
    case = pivot12_case(0)
    path = tmp_path / "swarmsim-pivot-12-0-attribution.json"
    document = case.episode.trace.to_dict()
    document["source_id"] = f"{document.get('source_id')}-attribution"
    path.write_text(json.dumps(document))
    trace_id = app.import_files(path)[path.name]
    pivotal = next(
        f"message:{case.episode.actions[c].item}" for c, k in zip(case.candidates, case.kinds) if k == "pivotal"
    )
    open_trace(page, app, trace_id)
    page.get_by_test_id("attribute").click()
    panel = page.get_by_test_id("attribution-panel")
    assert panel.is_visible()
    assert page.evaluate("document.activeElement.name") == "method"
    page.keyboard.press("Tab")  # to the players (messages by default)
    assert page.evaluate("[document.activeElement.name, document.activeElement.value]") == ["players", "messages"]
    page.keyboard.press("Tab")  # to the budget: 32 seeds of 12 messages and the shared control
    page.keyboard.press("Control+a")
    page.keyboard.type(str(13 * 32))
    page.keyboard.press("Enter")
    table = page.get_by_test_id("attribution-table")
    try:
        table.wait_for(timeout=60_000)
    except Exception:
        pytest.fail("no attribution table:\n" + rollout_worker[1].read_text()[-3000:])
    assert page.get_by_test_id("attribution-status").get_attribute("data-status") == "done"
    assert page.get_by_test_id("attribution-progress").evaluate("p => [p.value, p.max]") == [32, 32]
    rows = page.get_by_test_id("attribution-row")
    assert rows.count() == 12
    assert rows.first.get_attribute("data-target") == f"event:{pivotal}"
    assert page.get_by_test_id("credit-legend").is_visible()
    rows.nth(1).click()
    assert page.evaluate("document.body.dataset.selected") == rows.nth(1).get_attribute("data-target")[len("event:") :]
    rows.first.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => document.body.dataset.selected === {json.dumps(pivotal)}")
    listed = app.api(f"/api/traces/{trace_id}/attributions/")["results"]
    assert len(listed) == 12 and {a["method"] for a in listed} == {"paired_loo"}
    # Message credit also paints the agent graph: node colours and sender→receiver edge widths.
    legend = page.get_by_test_id("graph-credit-legend")
    assert legend.is_visible() and "edge width" in legend.inner_text()

    # After a reload the stored attribution is shown again, ranked, with the history of the job.
    page.reload()
    page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined", timeout=60_000)
    table.wait_for(timeout=30_000)
    assert rows.count() == 12 and rows.first.get_attribute("data-target") == f"event:{pivotal}"
    assert page.get_by_test_id("attribution-status").get_attribute("data-status") == "done"
    assert page.get_by_test_id("graph-credit-legend").is_visible()
    history = page.get_by_test_id("history-item")
    assert history.count() == 1 and "attribution · loo · messages · 32 / 32 samples" in history.first.inner_text()

    # Credit per agent: each agent that sends a message, removed with all its events.
    page.get_by_test_id("attribute").click()
    page.get_by_test_id("attribution-players").select_option("agents")
    budget = page.get_by_test_id("attribution-form").locator("input[name=budget]")
    budget.fill(str(4 * 16))
    budget.press("Enter")
    agent_rows = page.locator("[data-testid=attribution-row][data-target^='agent:']")
    try:
        agent_rows.first.wait_for(timeout=60_000)
    except Exception:
        pytest.fail("no agent attribution:\n" + rollout_worker[1].read_text()[-3000:])
    senders = {e.agent for e in case.episode.trace.events if e.type == "message"}
    assert {r.get_attribute("data-target") for r in agent_rows.all()} == {f"agent:{a}" for a in senders}
    assert "node colour" in page.get_by_test_id("graph-credit-legend").inner_text()
    agent_rows.first.click()
    assert page.evaluate("document.body.dataset.selected") == agent_rows.first.get_attribute("data-target")
    page.wait_for_function("() => document.querySelectorAll('[data-testid=history-item]').length === 2")
    # The history shows the earlier job's result again.
    page.get_by_test_id("history-item").nth(1).get_by_test_id("history-show").click()
    page.wait_for_function(
        "(t) => document.querySelector('[data-testid=attribution-row]')?.dataset.target === t", arg=f"event:{pivotal}"
    )


@contextmanager
def openai_app(tmp_path: Path, base_url: str, model: str, **env_extra: str) -> Iterator[tuple[App, Path]]:
    """The app with the `openai` backend pointed at `base_url` (SWARMSCOPE_OPENAI_BASE_URL, _MODEL and
    `env_extra` in the environment of its processes), and a `rollouts-gpu` worker: (app, worker log)."""
    env = app_env(tmp_path / "data", SWARMSCOPE_OPENAI_BASE_URL=base_url, SWARMSCOPE_OPENAI_MODEL=model, **env_extra)
    port = free_port()
    log = tmp_path / "up.log"
    process = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-worker"], env, log)
    worker = None
    try:
        wait_http(f"http://127.0.0.1:{port}/", process, log)
        password = first_start_password(env)
        token = manage("create_token", "admin", env=env).stdout.strip()
        redis_url = (tmp_path / "data" / "redis" / "url").read_text().strip()
        worker_log = tmp_path / "worker.log"
        worker = start_worker("rollouts-gpu", {**env, "REDIS_URL": redis_url}, worker_log)
        yield App(f"http://127.0.0.1:{port}", password, token, env), worker_log
    finally:
        if worker is not None:
            stop(worker)
        stop(process, signal.SIGINT)


@pytest.fixture
def llm_app(chromium_path, tmp_path):
    """The app with the `openai` backend pointed at a FakeOpenAIServer, and a `rollouts-gpu` worker."""
    with FakeOpenAIServer(lambda body: "FINAL ANSWER: 42") as fake:
        with openai_app(tmp_path, fake.base_url, "fake-model") as (app, worker_log):
            yield app, fake, worker_log


def test_an_llm_job_shows_its_estimated_cost_and_runs_only_once_confirmed(llm_app, browser, tmp_path):
    app, fake, worker_log = llm_app
    # Hand-sized: 4 characters per token gives e1 2, e2 3, e3 2, e4 4 tokens, the planner's prompt 3.
    events = [
        Event("e1", 0.0, "message", "planner", to="coder", content="a" * 8),
        Event("e2", 1.0, "message", "coder", to="planner", content="b" * 10),
        Event("e3", 2.0, "tool_result", "coder", content="c" * 7),
        Event("e4", 3.0, "message", "planner", content="d" * 13),
    ]
    trace = Trace(
        "native",
        "llm-cost",
        name="LLM cost",
        events=events,
        agents=[Agent("planner", system_prompt="s" * 9), Agent("coder")],
        attributes={"ground_truth": "42"},
    )
    path = tmp_path / "llm-cost.json"
    path.write_text(json.dumps(trace.to_dict()))
    trace_id = app.import_files(path)[path.name]
    context = browser.new_context(
        storage_state=save_admin_session(browser, app.url, app.password, str(tmp_path / "state.json")),
        viewport={"width": 1600, "height": 1000},
    )
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    open_trace(page, app, trace_id)
    click_event(page, "e2")
    page.get_by_test_id("what-if").click()
    dialog = page.get_by_test_id("what-if-dialog")
    dialog.locator("select[name=backend]").select_option("openai")
    n = dialog.locator("input[name=n]")
    n.fill("4")
    n.press("Enter")
    estimate = dialog.get_by_test_id("what-if-estimate")
    run = dialog.get_by_test_id("what-if-run")
    try:  # "Estimating the cost…" first, then the estimate and the button to confirm it
        expect(run).to_have_text("Confirm and run", timeout=15_000)
    except AssertionError:
        pytest.fail(f"no estimate; dialog says {dialog.locator('[role=alert]').inner_text()!r}")
    # As tests/counterfactuals/test_players_history_cost.py computes it by hand for this trace, with
    # the job's defaults: 512 tokens a turn, e4 expected at 4 + 0.35 × 508 = 182 tokens.
    assert (
        "≈ 128 prompt + 1,820 completion tokens (1,948 in all; 168 if the re-generated turns are as long as the "
        "recorded ones, at most ≈ 5,248 if each runs to its 512-token cap; turns expected to use 35 % of the room "
        "their cap leaves (default)) in 4 requests: 2 arms × 4 samples from e2"
    ) in estimate.inner_text()
    assert dialog.is_visible()
    assert app.api(f"/api/traces/{trace_id}/jobs/")["results"] == [] and fake.requests == []
    n.fill("5")  # a change asks again
    assert estimate.is_hidden() and run.inner_text() == "Run"
    n.fill("4")
    n.press("Enter")
    expect(run).to_have_text("Confirm and run")
    run.click()  # confirm
    job = page.locator("[data-testid=job][data-status=done]")
    try:
        job.wait_for(timeout=60_000)
    except Exception:
        pytest.fail("the LLM job did not finish:\n" + worker_log.read_text()[-3000:])
    assert job.locator("code").inner_text() == "remove(event:e2)" and "openai" in job.inner_text()
    assert job.get_by_test_id("job-delta").inner_text().startswith("Δ = 0 ")
    # The worker sent what the estimate counted: one request of n = 4 per arm, and both arms of
    # sample 0 once more for its branch trace.
    assert sorted((b["n"], b["seed"]) for b in fake.requests) == [(1, 0), (1, 0), (4, 0), (4, 0)]
    listed = app.api(f"/api/traces/{trace_id}/jobs/")["results"]
    assert [(j["backend"], j["status"], j["done"]) for j in listed] == [("openai", "done", 4)]
    # The server's usage beside the estimate: the 4 requests it planned, their prompt tokens, a cache share.
    usage = job.get_by_test_id("job-usage")
    assert usage.get_attribute("data-requests") == "4" and listed[0]["usage"]["requests"] == 4
    # and the tokens sent beside the estimate the job keeps (webapp.counterfactuals.costs.job_estimate)
    line = (
        r"requests 4 of 4 estimated · \d+ of ≈ 128 prompt tokens, \d+ % from cache · "
        r"\d+ of ≈ 1,820 completion tokens · [\d.]+ m?s"
    )
    assert re.fullmatch(line, usage.inner_text()), usage.inner_text()
    # A reload keeps the estimate beside the usage (the job's own, not the page's memory).
    page.reload()
    page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined", timeout=60_000)
    restored = page.locator("[data-testid=job][data-status=done]").first
    restored.wait_for(timeout=30_000)
    assert re.fullmatch(line, restored.get_by_test_id("job-usage").inner_text())

    # "Attribute this trace" on the LLM backend, from the panel: backend selector, estimate, confirm.
    page.get_by_test_id("attribute").click()
    form = page.get_by_test_id("attribution-form")
    form.get_by_test_id("attribution-backend").select_option("openai")
    budget = form.locator("input[name=budget]")
    budget.fill(str(4 * 2))  # leave-one-out over e1, e2, e4: 4 rollouts per sample, 2 samples
    sent_before = len(fake.requests)
    budget.press("Enter")
    run = page.get_by_test_id("attribution-run")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=attribution-run]').dataset.confirm === 'true'", timeout=15_000
    )
    expected = app.api(
        f"/api/traces/{trace_id}/attributions/estimate/",
        {"method": "loo", "budget": 8, "backend": "openai", "seed": 0, "players": "messages"},
    )
    line = page.get_by_test_id("attribution-estimate").inner_text()
    assert f"in {expected['requests']} requests" in line and "loo over 3 messages, 2 samples (8 rollouts)" in line
    assert run.inner_text() == "Confirm and run"
    assert len(fake.requests) == sent_before and len(app.api(f"/api/traces/{trace_id}/jobs/")["results"]) == 1
    run.click()  # confirm
    table = page.get_by_test_id("attribution-table")
    try:
        table.wait_for(timeout=60_000)
    except Exception:
        pytest.fail("the LLM attribution did not finish:\n" + worker_log.read_text()[-3000:])
    expect(page.get_by_test_id("attribution-row")).to_have_count(3)  # rows render after the table
    # The worker sent as many requests as the estimate planned, and the panel says so.
    assert len(fake.requests) - sent_before == expected["requests"] > 0
    usage = page.get_by_test_id("attribution-usage")
    assert usage.get_attribute("data-requests") == str(expected["requests"])
    assert usage.inner_text().startswith(f"requests {expected['requests']} of {expected['requests']} estimated · ")
    context.close()
    assert errors == [], f"console errors: {errors}"


def test_shift_and_ctrl_click_select_several_messages_and_an_agent_opens_its_own_what_if(app, page, tmp_path):
    case = pivot12_case(0)
    document = case.episode.trace.to_dict()
    document["source_id"] = f"{document.get('source_id')}-multi-select"
    path = tmp_path / "swarmsim-pivot-12-0-multi.json"
    path.write_text(json.dumps(document))
    trace_id = app.import_files(path)[path.name]
    open_trace(page, app, trace_id)
    messages = [e.id for e in case.episode.trace.events if e.type == "message"]
    drawn = [m for m in messages if page.evaluate("(id) => window.swarmscope.eventClientPoint(id)", m)]
    first, second, third = drawn[:3]
    dialog = page.get_by_test_id("what-if-dialog")
    events = dialog.get_by_test_id("what-if-events")

    def checked():
        return events.locator("input:checked").evaluate_all("els => els.map(e => e.value)")

    def modified_click(key, event_id):
        page.keyboard.down(key)
        click_event(page, event_id)
        page.keyboard.up(key)

    # Shift-click two messages: the dialog opens with both checked.
    modified_click("Shift", first)
    modified_click("Shift", second)
    what_if = page.get_by_test_id("what-if")
    assert what_if.inner_text() == "What if removed? (2 selected)"
    what_if.click()
    assert dialog.is_visible() and checked() == [first, second]
    assert dialog.get_by_test_id("what-if-targets").inner_text() == f"event:{first}, event:{second}"
    page.keyboard.press("Escape")
    # Ctrl-click adds a third and removes the second; a plain click then selects one alone.
    modified_click("Control", third)
    modified_click("Control", second)
    page.get_by_test_id("what-if").click()
    assert checked() == [first, third]
    page.keyboard.press("Escape")
    click_event(page, second)
    assert page.get_by_test_id("what-if").inner_text() == "What if removed?"
    page.get_by_test_id("what-if").click()
    assert checked() == [second]
    page.keyboard.press("Escape")

    # An agent selected (its lane's name): "What if removed?" opens with the agent checked.
    agent = next(e.agent for e in case.episode.trace.events if e.type == "message")
    page.locator(f"[data-testid=lane][data-agent='{agent}'] .lane-name").click()
    page.wait_for_function("(a) => document.body.dataset.selected === 'agent:' + a", arg=agent)
    page.get_by_test_id("what-if-agent").click()
    agents = dialog.get_by_test_id("what-if-agents")
    assert agents.locator("input:checked").evaluate_all("els => els.map(e => e.value)") == [agent]
    assert checked() == [] and dialog.get_by_test_id("what-if-targets").inner_text() == f"agent:{agent}"
