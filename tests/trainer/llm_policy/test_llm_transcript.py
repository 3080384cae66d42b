"""What the run page and the debugger show of policy `llm` (trainer.llm_policy.transcript): the
distribution each decision sampled from (entropy, p(stop)), and the model's own turns on the
orchestrator events of a sample episode; on the tiny random Llama of tiny_lm.py (mechanics only)."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.llm_policy.constrained import action_logprobs
from trainer.llm_policy.model import LoraSettings, with_adapter
from trainer.llm_policy.play import play_llm
from trainer.llm_policy.transcript import DistributionRecorder, decision_figures, entropy, write_turns
from trainer.policy import STOP
from trainer.recipes.config import LLM_DEFAULTS, RunConfig
from trainer.recipes.train_orchestrator import train
from trainer.sim.actions import ORCHESTRATOR
from trainer.sim.env import SimConfig
from trainer.sim.tasks import generate_task

from .tiny_lm import tiny_lm


@pytest.fixture(scope="module")
def played():
    """Two episodes (anytime stop: stop is offered at every decision) played with the recorder."""
    torch.set_num_threads(1)
    model, tokenizer = tiny_lm()
    model = with_adapter(model, LoraSettings(rank=2, alpha=4, layers=1))
    recorder = DistributionRecorder(model)
    task, config = generate_task("tiny", 1), SimConfig(max_steps=8)
    games = [play_llm(model, tokenizer, task, seed, config, "anytime", choose=recorder) for seed in (3, 4)]
    return model, tokenizer, recorder, games


def test_the_recorder_samples_as_the_local_policy_and_keeps_each_distribution(played):
    model, tokenizer, recorder, games = played
    task, config = generate_task("tiny", 1), SimConfig(max_steps=8)
    default = play_llm(model, tokenizer, task, 3, config, "anytime")  # local_chooser
    assert default.episode.actions == games[0].episode.actions
    decision = games[0].decisions[0]
    with torch.no_grad():
        expected = [math.exp(float(lp.sum())) for lp in action_logprobs(model, decision.prompt, decision.candidates)]
    assert recorder.probs(decision) == pytest.approx(expected)
    assert sum(recorder.probs(decision)) == pytest.approx(1.0, abs=1e-5)


def test_entropy_and_p_stop_by_decision_come_from_the_recorded_distributions(played):
    _, _, recorder, games = played
    assert entropy([0.5, 0.5]) == pytest.approx(math.log(2)) and entropy([1.0, 0.0]) == 0.0
    mean, p_stop = decision_figures(games, recorder)
    decisions = [d for g in games for d in g.decisions]
    by_hand = [entropy(recorder.probs(d)) for d in decisions]
    assert mean == pytest.approx(sum(by_hand) / len(by_hand))
    assert 0 < mean <= max(math.log(len(d.actions)) for d in decisions)
    first = [recorder.probs(g.decisions[0])[[m for m, _ in g.decisions[0].actions].index(STOP)] for g in games]
    assert [g.decisions[0].step for g in games] == [0, 0]
    assert p_stop[0] == [0, pytest.approx(sum(first) / 2)]  # anytime: stop offered at the first decision
    assert [t for t, _ in p_stop] == sorted({d.step for d in decisions})
    assert decision_figures(games, None) == (None, [])  # sampled on the server: no distribution


def test_the_sample_trace_carries_the_models_prompt_and_answer_on_its_decision_events(played):
    _, tokenizer, recorder, games = played
    game = games[0]
    write_turns(game, tokenizer, recorder)
    events = [e for e in game.episode.trace.events if e.agent == ORCHESTRATOR]
    kinds = [a.kind for a in game.episode.actions]
    for decision in game.decisions:
        t = decision.step
        event, answer = events[t], decision.actions[decision.chosen][1]
        assert event.type == kinds[t] and answer.startswith(kinds[t])  # the event of the decision's action
        assert event.content.startswith(answer + "\n") and "Your action:" in event.content
        assert f"Budget spent: {t} of 8 actions" in event.content
        assert event.attributes["llm"]["answer"] == answer
        assert event.attributes["llm"]["p_answer"] == pytest.approx(recorder.probs(decision)[decision.chosen])


def test_a_local_run_reports_entropy_p_stop_and_the_models_turns(tmp_path):
    torch.set_num_threads(1)
    model, tokenizer = tiny_lm()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    data = {**LLM_DEFAULTS, "policy": "llm", "llm_model": str(tmp_path), "level": "tiny", "max_steps": 6}
    reports: list[dict] = []
    train(RunConfig.from_dict({**data, "lora_layers": 0, "budget_steps": 1}), on_iteration=reports.append)
    (report,) = reports
    assert report["metrics"]["entropy"] > 0 and report["stop"]["p_stop_by_step"]
    assert all(0 <= p <= 1 for _, p in report["stop"]["p_stop_by_step"])
    turns = [e for e in report["episodes"][0]["events"] if "llm" in e.get("attributes", {})]
    assert turns and all("Your action:" in e["content"] for e in turns)
