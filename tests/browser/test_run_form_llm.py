"""The New run form for policy llm in the browser (issue 31 item 5): its model, LoRA rank, group size
and episodes per iteration show for policy llm only; the estimate of an iteration follows the fields
(env steps against the budget, a warning where the budget is below one iteration, the time from the
measured seconds a decision); a rank over the vLLM server's is refused next to its field."""

import re

from playwright.sync_api import expect

from tests.browser.test_runs import fill_form

LLM_FIELDS = ("llm_model", "lora_rank", "group_size", "episodes_per_iteration")


def test_the_llm_fields_and_the_estimate_of_an_iteration(app, page):
    page.goto(f"{app.url}/runs/new/")
    form = page.get_by_test_id("run-form")
    estimate = lambda testid: page.get_by_test_id(testid).inner_text()
    for name in LLM_FIELDS:
        assert not form.locator(f"[data-field={name}]").is_visible(), name
    assert "16 episodes of at most 400 steps: up to 6400 env steps" in estimate("estimate-steps")
    assert not page.get_by_test_id("estimate-time").is_visible()  # policy mlp: no measured decision cost

    form.locator("[name=policy]").select_option("llm")
    for name in LLM_FIELDS:
        assert form.locator(f"[data-field={name}]").is_visible(), name
    assert form.locator("[name=group_size]").input_value() == "2"
    assert form.locator("[name=lora_rank]").input_value() == "8"
    fill_form(page, budget_steps=20)
    assert "4 episodes of at most 12 steps: up to 48 env steps" in estimate("estimate-steps")
    assert "less than one iteration" in estimate("estimate-budget")
    time = estimate("estimate-time")
    assert re.search(r"^Estimated time per iteration: [\d.]+ min to [\d.]+ min \(up to 48 decisions", time), time
    assert "sampled in torch on the worker" in time and "2-CPU machine" in time and "bench/RESULTS.md" in time

    fill_form(page, episodes_per_iteration=8, budget_steps=500, llm_rollouts="server")
    assert "up to 96 env steps" in estimate("estimate-steps")
    assert not page.get_by_test_id("estimate-budget").is_visible()
    assert "up to 96 decisions × 1.1–1.4 s sampled on the vLLM server" in estimate("estimate-time")

    fill_form(page, lora_rank=32)
    page.get_by_test_id("start-run").click()
    page.wait_for_selector("[data-testid=error-lora_rank]")
    assert "rank at most 16" in page.get_by_test_id("error-lora_rank").inner_text()
    # the form sent back keeps policy llm, its fields shown, and its estimate (once the module ran)
    expect(page.get_by_test_id("estimate-steps")).to_contain_text("up to 96 env steps")
    assert form.locator("[data-field=lora_rank]").is_visible()
