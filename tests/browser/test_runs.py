"""A training run from the browser: the New run form (with a validation error shown next to its
field), a real `training` Celery worker running the real recipe, the charts and the stop-decision
panel updating live over `/ws/runs/<id>/`, cancel, and resume from the last checkpoint.

Waits are on visible state (`data-points`, `data-status`, `data-iteration`), never sleeps.
"""

import re
from pathlib import Path

import pytest

from tests.servers import stop
from webapp.accounts.services import DEFAULT_PROJECT

pytestmark = pytest.mark.timeout(420)


@pytest.fixture
def training_worker(app, tmp_path):
    """A worker of the app's `training` queue."""
    log = tmp_path / "training-worker.log"
    process = app.start_worker("training", log)
    yield process, log
    stop(process)


def points(page, testid: str) -> int:
    return int(page.get_by_test_id(testid).get_attribute("data-points") or 0)


def wait_points(page, testid: str, at_least: int, log: Path, timeout: float = 120_000) -> None:
    try:
        page.wait_for_function(
            "([id, n]) => Number(document.querySelector(`[data-testid=${id}]`)?.dataset.points || 0) >= n",
            arg=[testid, at_least],
            timeout=timeout,
        )
    except Exception:
        pytest.fail(f"{testid} never showed {at_least} points:\n" + log.read_text()[-3000:])


def wait_status(page, status: str, timeout: float = 120_000) -> None:
    page.wait_for_function(
        "(s) => document.getElementById('run-app').dataset.status === s", arg=status, timeout=timeout
    )


def fill_form(page, **values) -> None:
    for name, value in values.items():
        field = page.locator(f"[data-testid=run-form] [name={name}]")
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(str(value))
        else:
            field.fill(str(value))


def test_start_watch_cancel_resume(app, page, training_worker):
    _, log = training_worker
    page.goto(f"{app.url}/runs/")
    page.get_by_test_id("new-run").click()
    page.wait_for_url(f"{app.url}/runs/new/")
    # The form says which project the run goes into (the admin has one: a read-only line).
    assert page.get_by_test_id("run-project").inner_text().strip() == DEFAULT_PROJECT
    # A budget of 0 environment steps is refused next to its field, and nothing is started.
    fill_form(page, level="long", algorithm="ppo", credit="shared", stop="learned", budget_steps=0, seed=3)
    page.get_by_test_id("start-run").click()
    assert (
        "at least 1" in page.get_by_test_id("error-budget_steps").inner_text().lower()
        or "greater than or equal to 1" in page.get_by_test_id("error-budget_steps").inner_text()
    )
    assert page.locator("[data-field=budget_steps] input").get_attribute("aria-invalid") == "true"
    fill_form(page, budget_steps=BUDGET, name="browser run")
    page.get_by_test_id("start-run").click()
    page.wait_for_url(f"{app.url}/runs/*/")
    run_id = int(page.url.rstrip("/").rsplit("/", 1)[1])

    # Live: reward and stop-panel charts fill in as iterations arrive, without a reload.
    wait_points(page, "chart-reward", 2, log)
    assert points(page, "chart-success_rate") >= 2 and points(page, "chart-losses") >= 2
    assert points(page, "stop-chart") > 0, "p(stop) vs step has no points"
    first = int(page.get_by_test_id("stop-cards").get_attribute("data-iteration"))
    wait_points(page, "chart-reward", 3, log)
    assert int(page.get_by_test_id("stop-cards").get_attribute("data-iteration")) > first, "stop panel did not follow"
    assert points(page, "regret-chart") >= 3
    assert page.get_by_test_id("episode-link").count() >= 1

    # The runs list formats the ETA as the run page does ("1 h 02 min", not "3720 s").
    listing = page.context.new_page()
    listing.goto(f"{app.url}/runs/")
    eta = listing.locator(f"tr[data-run-id='{run_id}'] [data-testid=run-eta]")
    assert eta.get_attribute("data-eta"), "a running run with iterations has an ETA"
    assert re.fullmatch(r"\d+ h \d\d min|\d+ min \d\d s|\d+ s", eta.inner_text().strip()), eta.inner_text()
    listing.close()

    # Cancel: the task stops at the end of the iteration; the page shows it live.
    page.get_by_test_id("cancel-run").click()
    wait_status(page, "cancelled")
    stopped_at = app.api(f"/api/runs/{run_id}/")
    assert stopped_at["env_steps"] < stopped_at["budget_steps"]
    assert page.get_by_test_id("resume-run").is_enabled()

    # Resume: continues from the checkpoint (iteration numbers and env steps go on) to the budget.
    page.get_by_test_id("resume-run").click()
    wait_status(page, "finished", timeout=300_000)
    snapshot = app.api(f"/api/runs/{run_id}/snapshot/")
    numbers = [it["iteration"] for it in snapshot["iterations"]]
    assert numbers == list(range(len(numbers))) and len(numbers) > stopped_at["iterations"]
    assert snapshot["run"]["env_steps"] >= snapshot["run"]["budget_steps"] > stopped_at["env_steps"]
    steps = [it["env_steps"] for it in snapshot["iterations"]]
    assert steps == sorted(steps)
    assert points(page, "chart-reward") == len(numbers)

    # The list shows it finished, and an episode opens in the trace debugger.
    page.get_by_test_id("episode-link").first.click()
    page.wait_for_url(f"{app.url}/traces/*/")


BUDGET = 120_000  # about 20 iterations of the default config on the `long` level (~6,000 env steps each)


def test_choosing_policy_llm_sets_grpo_and_offers_only_its_credits(app, page):
    """The form follows the recipe's rules for a policy (POLICY_DEFAULTS, POLICY_CREDITS): a run of
    policy llm chosen in the browser is one the server accepts."""
    page.goto(f"{app.url}/runs/new/")
    form = page.get_by_test_id("run-form")
    assert form.locator("[name=algorithm]").input_value() == "ppo"
    assert not form.locator("[data-field=llm_rollouts]").is_visible()
    form.locator("[name=policy]").select_option("llm")
    assert form.locator("[name=algorithm]").input_value() == "grpo"
    offered = form.locator("[name=credit] option:not([disabled])").evaluate_all("os => os.map(o => o.value)")
    assert offered == ["shared", "expected", "counterfactual_baseline", "counterfactual_baseline_exact"]
    assert form.locator("[data-field=llm_rollouts]").is_visible()
    form.locator("[name=policy]").select_option("mlp")
    assert form.locator("[name=algorithm]").input_value() == "ppo"
    assert form.locator("[name=credit] option[disabled]").count() == 0
