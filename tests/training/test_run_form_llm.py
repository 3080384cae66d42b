"""The New run form's orchestrator policy (issue 31): `llm` is offered beside the default `mlp` with
a help text; a run started with it trains a language model with a LoRA adapter on the training
worker (here the Celery task run eagerly in this process, on the tiny random Llama of
tests/trainer/llm_policy/tiny_lm.py standing in for SmolLM2's folder) and reports iterations with
the model's own figures; what policy llm cannot train is an error at its field that starts nothing;
a model folder the server does not offer is refused naming `config.llm_model`."""

from __future__ import annotations

import re

import pytest

from tests.trainer.llm_policy.tiny_lm import tiny_lm
from tests.training.test_pages import FORM, field_error
from trainer import llm_server
from trainer.recipes.config import LLM_DEFAULTS
from trainer.recipes.train_orchestrator import POLICY_DEFAULTS
from webapp.training.models import Run, RunIteration
from webapp.training.services import RunInputError, check_config

pytestmark = pytest.mark.django_db(transaction=True)

LLM_FORM = {**FORM, "policy": "llm", "algorithm": "grpo", "budget_steps": 20}


@pytest.fixture
def browser_client(client, member):
    client.force_login(member)
    return client


@pytest.fixture
def tiny_model(tmp_path, monkeypatch):
    """The tiny Llama saved as a model folder, standing in for var/llm/smollm2."""
    model, tokenizer = tiny_lm()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    monkeypatch.setattr(llm_server, "MODEL_DIR", tmp_path / "model")
    return tmp_path / "model"


def test_the_form_offers_the_llm_policy_beside_the_default_with_help(browser_client):
    html = browser_client.get("/runs/new/").content.decode()
    select = re.search(r'<select name="policy".*?</select>', html, re.S).group(0)
    assert '<option value="mlp" selected>' in select and '<option value="llm">' in select
    hint = re.search(r'data-field="policy">.*?<p class="hint">([^<]*)</p>', html, re.S).group(1)
    assert "GRPO" in hint and "constrained to the legal actions" in hint


def test_a_run_of_policy_llm_started_from_the_form_trains_the_adapter(
    browser_client, settings, tmp_path, monkeypatch, tiny_model
):
    from webapp.config.celery import app

    settings.DATA_DIR = tmp_path
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    response = browser_client.post("/runs/new/", LLM_FORM)
    run = Run.objects.get()
    assert response.status_code == 302 and run.status == Run.FINISHED, run.error
    # the policy's defaults for what the form does not set (trainer.recipes.config.LLM_DEFAULTS)
    assert run.config["policy"] == "llm" and run.config["episodes_per_iteration"] == 4
    assert run.config["group_size"] == 2 and run.config["lr"] == pytest.approx(1e-4)
    iterations = list(RunIteration.objects.filter(run=run).order_by("iteration"))
    assert len(iterations) >= 1
    for it in iterations:
        assert it.metrics["llm"]["decisions"] > 0 and it.metrics["llm"]["prompt_tokens"] > 0
    assert run.iterations.filter(episodes__isnull=False).exists()  # sample episodes imported as traces
    page = browser_client.get(f"/runs/{run.pk}/").content.decode()
    policy = re.search(r'data-testid="run-policy"[^>]*>([^<]*)<', page).group(1)
    assert policy == "language model (SmolLM2-135M-Instruct, LoRA rank 8)"


def test_server_rollouts_without_a_server_fail_the_run_naming_the_setting(
    browser_client, settings, tmp_path, monkeypatch, tiny_model
):
    from webapp.config.celery import app

    settings.DATA_DIR = tmp_path
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    monkeypatch.delenv("SWARMSCOPE_OPENAI_BASE_URL", raising=False)
    browser_client.post("/runs/new/", {**LLM_FORM, "llm_rollouts": "server"})
    run = Run.objects.get()
    assert run.config["llm_rollouts"] == "server"
    assert run.status == Run.FAILED and "SWARMSCOPE_OPENAI_BASE_URL is not set" in run.error, run.error
    assert not RunIteration.objects.filter(run=run).exists()


def test_server_rollouts_are_policy_llm_only(browser_client):
    response = browser_client.post("/runs/new/", {**FORM, "llm_rollouts": "server"})
    assert response.status_code == 200 and not Run.objects.exists()
    assert "only policy llm plays on a server" in field_error(response.content.decode(), "llm_rollouts")


def test_policy_llm_with_ppo_is_an_error_at_the_algorithm_field_and_starts_nothing(browser_client):
    response = browser_client.post("/runs/new/", {**LLM_FORM, "algorithm": "ppo"})
    assert response.status_code == 200 and not Run.objects.exists()
    assert "policy llm trains with grpo" in field_error(response.content.decode(), "algorithm")


def test_a_model_folder_the_server_does_not_offer_is_refused(settings, tmp_path):
    config = {"policy": "llm", "algorithm": "grpo", "group_size": 2, "episodes_per_iteration": 4}
    with pytest.raises(RunInputError) as refused:
        check_config({**config, "llm_model": "/etc"})
    assert refused.value.field == "config.llm_model"
    settings.SWARMSCOPE_LLM_POLICY_MODELS = [str(tmp_path)]
    assert check_config({**config, "llm_model": str(tmp_path)})["llm_model"] == str(tmp_path)


@pytest.mark.live_llm
def test_a_run_started_from_the_form_plays_on_the_vllm_server_and_its_episodes_open(
    browser_client, settings, tmp_path, monkeypatch, llm_endpoint
):
    """One iteration of SmolLM2 (as trainer/llm_server.py builds it) whose actions the live server
    samples with the run's adapter loaded there; the adapter folders are gone after the run."""
    from webapp.config.celery import app

    if not llm_server.model_built():
        pytest.skip(f"SmolLM2 is not built in {llm_server.MODEL_DIR}")
    settings.DATA_DIR = tmp_path
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    # A small iteration (2 episodes of at most 5 decisions, the adapter on the top layer): the update
    # on the worker's one torch thread is what costs.
    small = {**LLM_DEFAULTS, "episodes_per_iteration": 2, "max_steps": 5, "lora_layers": 1}
    monkeypatch.setitem(POLICY_DEFAULTS, "llm", small)
    browser_client.post("/runs/new/", {**LLM_FORM, "llm_rollouts": "server", "budget_steps": 1})
    run = Run.objects.get()
    assert run.status == Run.FINISHED, run.error
    (iteration,) = RunIteration.objects.filter(run=run)
    llm = iteration.metrics["llm"]
    assert llm["server_requests"] >= llm["decisions"] > 0, llm
    assert not list(tmp_path.glob("swarmscope-adapter-*")), "the adapter folders are removed"
    page = browser_client.get(f"/runs/{run.pk}/").content.decode()
    assert "played on the vLLM server" in re.search(r'data-testid="run-policy"[^>]*>([^<]*)<', page).group(1)
    episode = run.iterations.get().episodes.first()
    assert browser_client.get(f"/traces/{episode.pk}/").status_code == 200
