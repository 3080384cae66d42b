"""The runs UI for policy llm (issue 31 item 5, a fresh user's trial): the New run form's model,
LoRA rank, group size and episodes per iteration (for policy llm only, errors naming the field, the
server's rank limit), the rules its page estimates an iteration from; Resume refused for a run whose
budget is spent; the sample episode's iteration numbered from 1 in the debugger, as on the run page."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest

from tests.training.conftest import TINY
from tests.training.test_pages import FORM, field_error
from tests.training.test_run_form_llm import LLM_FORM, tiny_model  # noqa: F401 (tiny_model: a fixture)
from trainer.recipes.config import LLM_DECISION_S, LLM_DEFAULTS
from webapp.training import services, tasks
from webapp.training.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def browser_client(client, member):
    client.force_login(member)
    return client


def policy_rules(html: str) -> dict:
    return json.loads(unescape(re.search(r'id="policy-rules"[^>]*>(.*?)</script>', html, re.S).group(1)))


def test_the_llm_fields_are_marked_for_policy_llm_and_the_page_gets_what_it_estimates_from(browser_client):
    html = browser_client.get("/runs/new/").content.decode()
    for name in ("llm_env", "llm_model", "lora_rank", "group_size", "episodes_per_iteration", "llm_rollouts"):
        assert re.search(rf'data-field="{name}" data-policy="llm"', html), name
    assert not re.search(r'data-field="(level|credit|budget_steps)" data-policy', html)
    model = re.search(r'<select name="llm_model".*?</select>', html, re.S).group(0)
    assert '<option value="" selected>SmolLM2-135M-Instruct' in model
    rules = policy_rules(html)
    assert rules["llm"]["episodes"] == LLM_DEFAULTS["episodes_per_iteration"]
    assert rules["llm"]["max_steps"] == LLM_DEFAULTS["max_steps"]
    assert rules["llm"]["decision_s"] == {k: list(v) for k, v in LLM_DECISION_S.items()}
    assert rules["mlp"]["max_steps"] == 400 and "decision_s" not in rules["mlp"]
    assert 'data-testid="run-estimate"' in html


def test_the_llm_fields_reach_the_config_for_policy_llm_only(browser_client, monkeypatch):
    started = []
    monkeypatch.setattr(services, "request_training", started.append)
    fields = {"lora_rank": 4, "group_size": 4, "episodes_per_iteration": 8, "llm_model": "", "llm_env": "llm_workers"}
    browser_client.post("/runs/new/", {**LLM_FORM, **fields})
    run = Run.objects.get()
    assert (run.config["lora_rank"], run.config["group_size"], run.config["episodes_per_iteration"]) == (4, 4, 8)
    assert run.config["llm_env"] == "llm_workers"
    assert run.config["llm_model"] == "" and started == [run]
    # policy mlp keeps the recipe's own values whatever the hidden llm fields hold
    hidden = {"lora_rank": 2, "group_size": 8, "episodes_per_iteration": 8, "llm_env": "llm_workers"}
    browser_client.post("/runs/new/", {**FORM, **hidden})
    mlp = Run.objects.exclude(pk=run.pk).get()
    assert mlp.config["llm_env"] == "swarmsim"
    assert (mlp.config["lora_rank"], mlp.config["group_size"], mlp.config["episodes_per_iteration"]) == (8, 4, 16)


@pytest.mark.parametrize(
    ("fields", "name", "message"),
    [
        ({"group_size": 1}, "group_size", "group size: must be at least 2 (GRPO's advantage is relative to the group)"),
        ({"group_size": 3}, "group_size", "must divide episodes_per_iteration (4), got 3"),
        ({"lora_rank": 0}, "lora_rank", "LoRA rank: must be at least 1"),
        ({"lora_rank": "eight"}, "lora_rank", "LoRA rank: must be a whole number"),
        ({"episodes_per_iteration": 0}, "episodes_per_iteration", "episodes per iteration: must be at least 1"),
        ({"llm_model": "/etc"}, "llm_model", "model: /etc is not a model folder this server offers"),
        ({"llm_env": "llm_workers", "credit": "expected"}, "credit", "which the llm_workers environment does not have"),
        (
            {"lora_rank": 32, "llm_rollouts": "server"},
            "lora_rank",
            "the vLLM server loads adapters of rank at most 16 (its --max-lora-rank",
        ),
    ],
)
def test_bad_llm_settings_are_errors_at_their_field_and_start_nothing(browser_client, fields, name, message):
    response = browser_client.post("/runs/new/", {**LLM_FORM, **fields})
    assert response.status_code == 200 and not Run.objects.exists()
    assert message in field_error(response.content.decode(), name)


def test_policy_mlp_refuses_the_credit_that_replaces_the_outcome_under_grpo_at_the_credit_field(browser_client):
    form = {**FORM, "algorithm": "grpo", "credit": "counterfactual_baseline"}
    response = browser_client.post("/runs/new/", form)
    assert response.status_code == 200 and not Run.objects.exists()
    assert "GAE on the critic, which algorithm ppo has and grpo does not" in field_error(
        response.content.decode(), "credit"
    )
    browser_client.post("/runs/new/", {**form, "algorithm": "ppo"})
    assert Run.objects.get().config["credit"] == "counterfactual_baseline"


def test_the_credits_that_replace_the_outcome_are_offered_and_policy_llm_trains_with_them(browser_client):
    html = browser_client.get("/runs/new/").content.decode()
    for credit in ("counterfactual_baseline", "counterfactual_baseline_exact"):
        assert f'<option value="{credit}">' in html
        assert credit in policy_rules(html)["llm"]["credits"]


def test_a_rank_over_the_servers_is_fine_on_the_worker(browser_client, monkeypatch):
    monkeypatch.setattr(services, "request_training", lambda run: None)
    browser_client.post("/runs/new/", {**LLM_FORM, "lora_rank": 32, "llm_rollouts": "local"})
    assert Run.objects.get().config["lora_rank"] == 32


def test_a_run_whose_budget_is_spent_cannot_be_resumed(browser_client, project, settings, tmp_path, monkeypatch):
    """Cancelled during its one iteration, a run of 20 steps has played past its budget: Resume is
    refused with the reason (it would finish at once), and the page's button is disabled saying why."""
    settings.DATA_DIR = tmp_path
    run = services.do_create_run(project, {**TINY, "budget_steps": 20})
    record = services.do_record_iteration

    def record_then_cancel(run_, doc):
        row = record(run_, doc)
        services.do_request_cancel(run_)
        return row

    monkeypatch.setattr(services, "do_record_iteration", record_then_cancel)
    assert tasks.train_run(run.pk) == Run.CANCELLED
    run.refresh_from_db()
    assert run.env_steps >= run.budget_steps == 20 and services.budget_spent(run)
    with pytest.raises(services.RunInputError) as refused:
        services.request_resume(run)
    assert refused.value.field == "budget_steps" and "budget of 20 env steps is spent" in refused.value.message
    page = browser_client.post(f"/runs/{run.pk}/resume/", follow=True).content.decode()
    assert "resuming would train nothing; start a new run with a larger budget" in unescape(page)
    run.refresh_from_db()
    assert run.status == Run.CANCELLED
    button = re.search(r'<button data-testid="resume-run"[^>]*>', page).group(0)
    assert "disabled" in button and "its budget of 20 env steps is spent" in button
    # its sample episode names the iteration as the run page numbers it: the first is 1
    episode = run.iterations.get().episodes.first()
    trace_page = browser_client.get(f"/traces/{episode.pk}/").content.decode()
    assert re.search(r'data-testid="origin-run">[^<]*</a>, iteration 1\b', trace_page)


def test_a_cancelled_run_with_budget_left_still_resumes(project):
    run = services.do_create_run(project, TINY)
    services.do_request_cancel(run)
    assert services.request_resume(Run.objects.get(pk=run.pk)).status == Run.QUEUED


@pytest.mark.usefixtures("tiny_model")
def test_a_local_llm_run_stores_entropy_p_stop_and_the_models_turns_in_its_episodes(
    browser_client, settings, tmp_path, monkeypatch
):
    """A run of policy llm played on the worker (the tiny Llama standing in for SmolLM2): its
    iteration has the entropy and p(stop) the run page draws, and its sample episode, as the
    debugger reads it, has the model's answer and prompt on its decision events."""
    from webapp.config.celery import app

    settings.DATA_DIR = tmp_path
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    browser_client.post("/runs/new/", {**LLM_FORM, "budget_steps": 1})
    run = Run.objects.get()
    assert run.status == Run.FINISHED, run.error
    iteration = run.iterations.get()
    assert iteration.metrics["entropy"] > 0 and iteration.stop["p_stop_by_step"]
    episode = iteration.episodes.first()
    turns = list(episode.events.filter(agent="orchestrator", attributes__has_key="llm"))
    assert turns, "no decision event carries the model's turn"
    for event in turns:
        answer = event.attributes["llm"]["answer"]
        assert event.content.startswith(answer) and "Your action:" in event.content
        assert event.type == answer.split("(")[0]
