"""The `openai` rollout backend against FakeOpenAIServer (a scripted local fake, not a real LLM)."""

import os

import numpy as np
import pytest

from tests.fake_openai import FakeOpenAIServer
from trainer.rollout.openai import ChatClient, OpenAIError, OpenAIRollout, normalise_answer, score
from webapp.core.interventions import Intervention
from webapp.core.model import Agent, Event, Trace, validate_trace


def make_trace() -> Trace:
    events = [Event("h0", 0.0, "message", "human", content="What is 6 times 7?"),
              Event("h1", 1.0, "message", "planner", content="Plan: ask the solver."),
              Event("h2", 2.0, "message", "solver", content="43"),
              Event("h3", 3.0, "message", "planner", content="FINAL ANSWER: 43")]
    return Trace("native", "t1", name="six times seven", events=events,
                 agents=[Agent("human"), Agent("planner", system_prompt="You plan."),
                         Agent("solver", system_prompt="You solve.")],
                 attributes={"ground_truth": "42", "synthetic_time": True})


def answer(body):
    """43 when the solver's 43 is in the prompt, else 42."""
    seen = " ".join(m["content"] for m in body["messages"])
    if body["messages"][0]["content"] == "You solve.":
        return "I think 42"
    return "FINAL ANSWER: 43" if "[solver] 43" in seen else "FINAL ANSWER: 42."


@pytest.fixture
def fake():
    with FakeOpenAIServer(answer) as server:
        yield server


def backend(fake, **options):
    return OpenAIRollout(make_trace(), ChatClient(fake.base_url, "fake-model", api_key="k", **options))


def test_remove_sends_system_prompt_and_edited_history_with_shared_seed_and_n(fake):
    result = backend(fake).paired(Intervention("remove", ("h2",)), np.arange(10, 14))
    assert result.speaker_order == "original"
    control, treated = fake.requests
    for body in (control, treated):
        assert body["n"] == 4 and body["seed"] == 10 and body["model"] == "fake-model"
        assert body["_path"] == "/v1/chat/completions" and body["_authorization"] == "Bearer k"
    prefix = [{"role": "system", "content": "You plan."}, {"role": "user", "content": "[human] What is 6 times 7?"},
              {"role": "assistant", "content": "Plan: ask the solver."}]
    assert control["messages"] == prefix + [{"role": "user", "content": "[solver] 43"}]
    assert treated["messages"] == prefix
    assert result.control.tolist() == [0.0] * 4 and result.treated.tolist() == [1.0] * 4


@pytest.mark.parametrize("intervention, shown", [
    (Intervention("mask", ("h2",)), "[solver] [masked]"),
    (Intervention("replace", ("h2",), text="42"), "[solver] 42"),
])
def test_mask_and_replace_keep_the_position_with_the_edited_content(fake, intervention, shown):
    backend(fake).paired(intervention, np.array([0, 1]))
    assert fake.requests[1]["messages"][-1] == {"role": "user", "content": shown}


def test_resample_batches_the_fork_turn_then_continues_each_sample_at_its_seed(fake):
    result = backend(fake).paired(Intervention("resample", ("h2",)), np.array([5, 6, 7]))
    treated = fake.requests[1:]
    assert [(b["n"], b["seed"]) for b in treated] == [(3, 5), (1, 5), (1, 6), (1, 7)]
    assert treated[0]["messages"][0] == {"role": "system", "content": "You solve."}
    assert treated[1]["messages"][-1] == {"role": "user", "content": "[solver] I think 42"}
    assert result.treated.tolist() == [1.0, 1.0, 1.0]


def test_removing_an_agent_drops_its_turns(fake):
    backend(fake).paired(Intervention("remove", agents=("solver",)), np.array([0, 1]))
    assert all("[solver]" not in m["content"] for m in fake.requests[-1]["messages"])


def test_branch_traces_are_valid_and_name_the_fork(fake):
    result = backend(fake).paired(Intervention("remove", ("h2",)), np.array([3]), traces=True)
    branch = result.branches[0]
    validate_trace(branch)
    assert [e.id for e in branch.events] == ["h0", "h1", "h3~0"]
    assert branch.events[-1].content == "FINAL ANSWER: 42."
    assert branch.attributes["fork_event"] == "h2" and branch.attributes["speaker_order"] == "original"
    assert branch.source_id == "t1/remove(event:h2)/seed-3"


def test_scoring_is_normalised_exact_match():
    assert normalise_answer("  The 42. ") == "42"
    assert score("Some text. FINAL ANSWER: 42!", "42") == 1.0
    assert score("FINAL ANSWER: 142", "42") == 0.0 and score("42 or 43", "42") == 0.0


def test_a_slow_endpoint_raises_a_timeout(fake):
    fake.delay = 1.0
    with pytest.raises(OpenAIError, match="timed out after 0.2s"):
        backend(fake, timeout_s=0.2).paired(Intervention("remove", ("h2",)), np.array([0, 1]))


def test_a_5xx_raises_naming_the_status(fake):
    fake.status = 503
    with pytest.raises(OpenAIError, match="HTTP 503"):
        backend(fake).paired(Intervention("remove", ("h2",)), np.array([0, 1]))


def test_malformed_json_raises(fake):
    fake.raw = b"{not json"
    with pytest.raises(OpenAIError, match="malformed JSON"):
        backend(fake).paired(Intervention("remove", ("h2",)), np.array([0, 1]))


def test_wrong_number_of_choices_raises(fake):
    fake.answer = lambda body: ["only one"]
    with pytest.raises(OpenAIError, match="1 choices for n=2"):
        backend(fake).paired(Intervention("remove", ("h2",)), np.array([0, 1]))


def test_from_trace_needs_an_endpoint_and_a_ground_truth(monkeypatch):
    monkeypatch.delenv("SWARMSCOPE_OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="SWARMSCOPE_OPENAI_BASE_URL"):
        OpenAIRollout.from_trace(make_trace())
    monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "m")
    trace = make_trace()
    trace.attributes.pop("ground_truth")
    with pytest.raises(ValueError, match="ground_truth"):
        OpenAIRollout.from_trace(trace)


@pytest.mark.live_llm
@pytest.mark.skipif(not os.environ.get("SWARMSCOPE_OPENAI_BASE_URL"),
                    reason="needs a live OpenAI-compatible endpoint: set SWARMSCOPE_OPENAI_BASE_URL (and _MODEL)")
def test_a_live_endpoint_runs_paired_samples():
    result = OpenAIRollout.from_trace(make_trace()).paired(Intervention("remove", ("h2",)), np.array([0, 1]))
    assert result.control.shape == result.treated.shape == (2,)
