"""Policy `llm` in the training recipe (RunConfig.policy == "llm"): the config's rules, iterations
that follow the app's contract, a resumed run that reports what an uninterrupted one does, and a
run trained by the app's service (what the training worker runs for a run started from the form).
On the tiny random Llama of tiny_lm.py saved as a model folder (mechanics, not what a model says)."""

from __future__ import annotations

import re

import pytest
import torch

from tests.trainer.llm_policy.tiny_lm import tiny_lm
from trainer.recipes.config import LLM_DEFAULTS, RunConfig
from trainer.recipes.train_orchestrator import train


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A folder holding the tiny Llama and its tokenizer, as `save_pretrained` writes them."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    model, tokenizer = tiny_lm()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def llm_config(model_dir, **changes) -> RunConfig:
    data = {
        **LLM_DEFAULTS,
        "policy": "llm",
        "llm_model": str(model_dir),
        "level": "tiny",
        "max_steps": 6,
        "lora_layers": 0,
        "lr": 1e-2,
        "budget_steps": 30,
        **changes,
    }
    return RunConfig.from_dict(data)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"algorithm": "ppo"}, "algorithm"),
        ({"credit": "counterfactual"}, "credit"),
        ({"group_size": 1, "episodes_per_iteration": 4}, "group_size"),
        ({"lora_rank": 0}, "lora_rank"),
        ({"policy": "gpt"}, "policy"),
        ({"llm_env": "llm_workers", "credit": "expected"}, "credit"),
        ({"llm_env": "llm_workers", "credit": "counterfactual_baseline_exact"}, "credit"),
        ({"llm_env": "crowd"}, "llm_env"),
        ({"policy": "mlp", "llm_env": "llm_workers"}, "llm_env"),
    ],
)
def test_a_policy_llm_config_refuses_what_it_cannot_train_naming_the_field(changes, field):
    with pytest.raises(ValueError, match=rf"^{field}: "):
        RunConfig.from_dict({**LLM_DEFAULTS, "policy": "llm", **changes})


def test_llm_workers_train_with_shared_or_counterfactual_credit():
    for credit in ("shared", "counterfactual_baseline"):
        config = RunConfig.from_dict({**LLM_DEFAULTS, "policy": "llm", "llm_env": "llm_workers", "credit": credit})
        assert (config.llm_env, config.credit) == ("llm_workers", credit)


def test_llm_workers_without_a_server_are_refused_naming_the_setting(model_dir, monkeypatch):
    monkeypatch.delenv("SWARMSCOPE_OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match=r"^llm_env: .*SWARMSCOPE_OPENAI_BASE_URL is not set"):
        train(llm_config(model_dir, llm_env="llm_workers"))


@pytest.mark.live_llm
def test_an_iteration_with_llm_workers_asks_the_server_and_its_sample_holds_their_answers(
    model_dir, llm_endpoint, monkeypatch, tmp_path
):
    base_url, name = llm_endpoint
    monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", name or "SmolLM2-135M-Instruct")
    torch.set_num_threads(1)
    config = llm_config(model_dir, llm_env="llm_workers", credit="counterfactual_baseline", budget_steps=1)
    reports: list[dict] = []
    summary = train(config, checkpoint_dir=tmp_path, on_iteration=reports.append)
    assert summary["status"] == "finished" and len(reports) == 1
    [report] = reports
    assert report["stop"]["stop_regret"] is None and report["stop"]["regret"] == "not_measured"
    assert "expected_success" not in report["metrics"]
    sample = report["episodes"][0]
    assert sample["attributes"]["environment"] == "llm_workers"
    assert sample["attributes"]["training"]["environment"] == "llm_workers"
    results = [e for e in sample["events"] if e["type"] == "tool_result"]
    solved = [e for e in results if "=" in (e.get("content") or "")]
    # every attempt with its inputs asked the model; its answer is in the constrained form
    # (an expert's answer also lists its 5 samples after the one it kept)
    assert all(re.match(r"[\d +]+ = \d{1,4}( \(the most common of \d+ answers: .*\))?$", e["content"]) for e in solved)
    assert report["metrics"]["llm"]["worker_requests"] >= len(solved) > 0


def test_a_missing_model_folder_is_refused_naming_llm_model(tmp_path):
    config = RunConfig.from_dict({**LLM_DEFAULTS, "policy": "llm", "llm_model": str(tmp_path / "none")})
    with pytest.raises(ValueError, match=r"^llm_model: no Hugging Face model in .*none"):
        train(config)


def test_llm_iterations_follow_the_contract_and_a_resumed_run_reports_the_same(model_dir, tmp_path):
    torch.set_num_threads(1)
    config = llm_config(model_dir)
    whole: list[dict] = []
    summary = train(config, checkpoint_dir=tmp_path / "whole", on_iteration=whole.append)
    assert summary["status"] == "finished" and summary["iterations"] == len(whole) >= 2
    assert summary["env_steps"] >= config.budget_steps
    first = whole[0]
    metrics = first["metrics"]
    assert metrics["llm"]["decisions"] > 0 and metrics["llm"]["prompt_tokens"] > metrics["llm"]["decisions"]
    assert 0 <= metrics["success_rate"] <= 1 and metrics["episode_length"] <= config.max_steps
    assert sum(metrics["move_shares"].values()) == pytest.approx(1.0)
    assert first["episodes"][0]["attributes"]["training"]["policy"] == "llm"

    # One iteration, stop, resume from the checkpoint: the same reports as the uninterrupted run.
    part: list[dict] = []
    cut = RunConfig.from_dict({**config.to_dict(), "budget_steps": 1})
    train(cut, checkpoint_dir=tmp_path / "cut", on_iteration=part.append)
    train(config, checkpoint_dir=tmp_path / "cut", resume=True, on_iteration=part.append)
    assert [p["iteration"] for p in part] == [w["iteration"] for w in whole]
    for resumed, straight in zip(part, whole):
        assert resumed["env_steps"] == straight["env_steps"]
        assert resumed["metrics"]["reward"] == pytest.approx(straight["metrics"]["reward"], abs=1e-9)
        assert resumed["metrics"].get("policy_loss") == pytest.approx(straight["metrics"].get("policy_loss"), abs=1e-6)
    # The adapter moved (LoRA's B starts at zero) and the resumed run ends with the same weights.
    straight_state = torch.load(tmp_path / "whole" / "last.pt", weights_only=False)["model"]
    resumed_state = torch.load(tmp_path / "cut" / "last.pt", weights_only=False)["model"]
    assert any(name.endswith("lora_B.weight") and value.abs().max() > 0 for name, value in straight_state.items())
    assert straight_state.keys() == resumed_state.keys()
    for name, value in straight_state.items():
        torch.testing.assert_close(resumed_state[name], value, msg=name)
