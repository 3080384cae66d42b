"""The `openai` backend against what a real server (vLLM) does, on FakeOpenAIServer: empty
conversations and too-long prompts refused, unknown parameters refused off vLLM, constrained
choices on vLLM, retries of transient failures, per-turn seeds, concurrent requests over
keep-alive connections, TERMINATE endings and the server's usage."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from swarmscope.interventions import Intervention
from swarmscope.model import Agent, Event, Trace
from tests.fake_openai import FakeOpenAIServer, fake_tokens
from tests.trainer.rollout.test_openai import answer, is_speaker_question, magentic_one, make_trace, picks
from trainer.rollout.chat import ChatClient, OpenAIError, PromptTooLongError, ServerInfo
from trainer.rollout.llm_plan import START_TEXT, turn_seed
from trainer.rollout.llm_trace import final_turn, substantive
from trainer.rollout.openai import VERDICT_CHOICES, OpenAIRollout, OpenAIVerifierRollout


def client(server, **options) -> ChatClient:
    return ChatClient(server.base_url, "fake-model", **{"retry_base_s": 0.01, **options})


def is_verdict(body) -> bool:
    return body["messages"][0]["content"].startswith("You are a strict verifier")


@pytest.fixture
def fake():
    with FakeOpenAIServer(answer) as server:
        yield server


@pytest.fixture
def vllm():
    with FakeOpenAIServer(answer, vllm=True, max_model_len=4096) as server:
        yield server


# --- 1. never an empty conversation -------------------------------------------------------------


def test_the_fake_refuses_an_empty_conversation_as_vllm_does_and_it_is_not_retried(fake):
    with pytest.raises(OpenAIError, match="HTTP 400: .*conversation is empty"):
        client(fake).chat([])
    assert len(fake.requests) == 1


def test_removing_the_first_message_sends_a_start_turn_instead_of_an_empty_conversation(fake):
    fake.answer = picks({0: "WebSurfer", 1: "Orchestrator"})
    runner = OpenAIRollout(magentic_one(), client(fake), max_turns=2)  # the Orchestrator has no system prompt
    result = runner.paired(Intervention("remove", ("h0",)), np.array([0, 1]))
    assert result.treated.shape == (2,)
    forks = [b for b in fake.requests if b["n"] == 2]
    assert forks[1]["messages"] == [{"role": "user", "content": START_TEXT}]  # the intervention arm's fork turn
    assert all(b["messages"] for b in fake.requests)
    # the plan (the estimate) counts the same turn
    plan = runner.plan_paired(Intervention("remove", ("h0",)), np.array([0, 1]))["intervention"]
    assert plan[0].messages == forks[1]["messages"] and plan[0].parts == [START_TEXT]


# --- 2. speaker picks and verdicts: small max_tokens, constrained on vLLM -----------------------


def test_speaker_picks_and_verdicts_get_their_own_max_tokens_and_no_unknown_parameter_off_vllm(fake):
    fake.answer = picks({5: "WebSurfer", 6: "Orchestrator"})
    OpenAIRollout(magentic_one(), client(fake, max_tokens=300)).paired(Intervention("mask", ("h3",)), np.array([5, 6]))
    questions = [b for b in fake.requests if is_speaker_question(b)]
    turns = [b for b in fake.requests if not is_speaker_question(b)]
    assert questions and {b["max_tokens"] for b in questions} == {16}
    assert {b["max_tokens"] for b in turns} == {300}
    assert not any("structured_outputs" in b or "guided_choice" in b for b in fake.requests)
    assert fake.gets == ["/v1/models"]  # asked once what the server is
    trace = make_trace()
    fake.requests.clear()
    fake.answer = lambda body: '{"correct": true}' if is_verdict(body) else answer(body)
    OpenAIVerifierRollout(trace, client(fake)).paired(Intervention("remove", ("h2",)), np.array([0, 1]))
    verdicts = [b for b in fake.requests if is_verdict(b)]
    assert len(verdicts) == 4 and {b["max_tokens"] for b in verdicts} == {32}


def test_the_fake_refuses_an_unknown_parameter_off_vllm():
    with FakeOpenAIServer() as server:
        chat = client(server)
        chat._server = ServerInfo(vllm=True, version="0.32.0")  # believes it is vLLM: sends structured_outputs
        with pytest.raises(OpenAIError, match="HTTP 400: .*Unrecognized request argument supplied: structured_outputs"):
            chat.chat([{"role": "user", "content": "hi"}], choices=["a", "b"])


def test_on_vllm_speaker_picks_and_verdicts_are_constrained_to_the_choices(vllm):
    vllm.answer = picks({5: "I think WebSurfer should go next.", 6: "Orchestrator"})
    runner = OpenAIRollout(magentic_one(), client(vllm))
    result = runner.paired(Intervention("mask", ("h3",)), np.array([5, 6]))
    questions = [b for b in vllm.requests if is_speaker_question(b)]
    assert all(b["structured_outputs"] == {"choice": ["Orchestrator", "WebSurfer"]} for b in questions)
    assert result.fallbacks.tolist() == [0, 0]  # a sentence is not a choice: the server answers a name
    assert not any("structured_outputs" in b for b in vllm.requests if not is_speaker_question(b))
    assert vllm.gets == ["/v1/models", "/version"] and runner.client.server() == ServerInfo(True, "0.32.0", 4096)
    vllm.requests.clear()
    vllm.answer = lambda body: "Looks right to me." if is_verdict(body) else answer(body)  # free text: not a verdict
    result = OpenAIVerifierRollout(make_trace(), client(vllm)).paired(Intervention("remove", ("h2",)), np.array([0, 1]))
    verdicts = [b for b in vllm.requests if is_verdict(b)]
    assert all(b["structured_outputs"] == {"choice": VERDICT_CHOICES} for b in verdicts)
    assert result.control.tolist() == result.treated.tolist() == [1.0, 1.0]  # the first choice: {"correct": true}


def test_older_vllm_gets_guided_choice_and_settings_come_from_the_environment(monkeypatch):
    assert ServerInfo(True, "0.10.2").choice_parameter == "guided_choice"
    assert ServerInfo(True, "0.33.0").choice_parameter == ServerInfo(True, "").choice_parameter == "structured_outputs"
    assert ServerInfo(False, "0.33.0").choice_parameter is None
    monkeypatch.setenv("SWARMSCOPE_OPENAI_CHOICE_MAX_TOKENS", "8")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_VERDICT_MAX_TOKENS", "24")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_ATTEMPTS", "5")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_RETRY_BASE_S", "0.5")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_IN_FLIGHT", "2")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_MODEL_LEN", "1024")
    chat = ChatClient.from_env("http://127.0.0.1:9/v1", "m")
    assert (chat.choice_max_tokens, chat.verdict_max_tokens, chat.attempts) == (8, 24, 5)
    assert (chat.retry_base_s, chat.max_in_flight, chat.max_model_len) == (0.5, 2, 1024)
    assert chat.server().max_model_len == 1024  # nothing listens on port 9: the configured length
    for name in ("CHOICE_MAX_TOKENS", "VERDICT_MAX_TOKENS", "ATTEMPTS", "MAX_IN_FLIGHT", "MAX_MODEL_LEN"):
        monkeypatch.delenv(f"SWARMSCOPE_OPENAI_{name}")
    chat = ChatClient.from_env("http://127.0.0.1:9/v1", "m")
    assert (chat.choice_max_tokens, chat.verdict_max_tokens, chat.attempts, chat.max_in_flight) == (16, 32, 3, 4)


@pytest.mark.parametrize(
    "vllm, version, sent",
    [
        (True, "0.32.0", {"structured_outputs": {"regex": "(Yes|No)[.]"}}),
        (True, "0.10.2", {"guided_regex": "(Yes|No)[.]"}),
        (False, "", {}),
    ],
)
def test_the_judges_constraint_goes_in_the_extra_body_on_vllm_only(vllm, version, sent):
    with FakeOpenAIServer(lambda body: "No.", vllm=vllm, version=version) as server:
        chat = client(server)
        assert chat.complete([{"role": "user", "content": "Is it?"}], structured={"regex": "(Yes|No)[.]"}) == "No."
        body = server.requests[0]
        extra = {k: v for k, v in body.items() if k in ("structured_outputs", "guided_regex", "guided_choice")}
        assert extra == sent and body["temperature"] == 0.0 and body["max_tokens"] == chat.max_tokens
        server.answer = lambda body: "Maybe."  # outside the regex: the fake refuses what it cannot match
        if vllm:
            with pytest.raises(OpenAIError, match="HTTP 400: .*does not match the regex"):
                chat.complete([{"role": "user", "content": "Is it?"}], structured={"regex": "(Yes|No)[.]"})
        else:
            assert (
                chat.complete([{"role": "user", "content": "Is it?"}], structured={"regex": "(Yes|No)[.]"}) == "Maybe."
            )


# --- 3. prompts checked against max_model_len ---------------------------------------------------


def long_trace(chars: int) -> Trace:
    trace = make_trace()
    trace.events[0].content = "6" * chars  # the human's question, kept before every fork after it
    return trace


def test_a_prompt_over_the_context_is_refused_before_it_is_sent_naming_agent_and_turn():
    with FakeOpenAIServer(answer, vllm=True, max_model_len=600) as server:
        runner = OpenAIRollout(long_trace(4 * 400), client(server))
        removal = Intervention("remove", ("h2",))  # h0 (400 tokens) is in both arms' prompts of h3
        with pytest.raises(
            PromptTooLongError,
            match=r"planner's turn at event h3 is 4\d\d tokens \(by the server's tokenizer\) .*context of 600",
        ):
            runner.check_context(runner.plan_paired(removal, np.array([0, 1]))["control"])
        assert server.tokenized  # on vLLM the prompt is counted by its /tokenize
        with pytest.raises(PromptTooLongError, match="planner's turn at event h3"):
            runner.paired(removal, np.array([0, 1]))
        assert all(server.prompt_tokens(b) + b["max_tokens"] <= 600 for b in server.requests)
        short = OpenAIRollout(long_trace(4 * 10), client(server))
        short.check_context(short.plan_paired(removal, np.array([0, 1]))["control"])  # fits: no error


def test_the_fake_refuses_a_prompt_over_its_context_and_the_error_names_the_turn():
    with FakeOpenAIServer(answer, max_model_len=600) as server:  # off vLLM: /v1/models reports no length
        runner = OpenAIRollout(long_trace(4 * 400), client(server))
        assert runner.context_limit() is None
        with pytest.raises(
            OpenAIError, match="turn request of planner at event h3: .*HTTP 400.*maximum context length"
        ):
            runner.paired(Intervention("remove", ("h2",)), np.array([0, 1]))


# --- 4. a seed per (sample, turn) ---------------------------------------------------------------


def test_each_regenerated_turn_of_a_sample_has_its_own_seed_reproducibly_and_paired(fake):
    fake.answer = lambda body: f"turn at seed {body['seed']}"
    intervention = Intervention("mask", ("h3",))

    def run():
        fake.requests.clear()
        runner = OpenAIRollout(magentic_one(), client(fake), speaker_order="original")
        result = runner.paired(intervention, np.array([5, 6]), traces=True)
        return [(b["n"], b["seed"]) for b in fake.requests], result

    sent, result = run()
    half = len(sent) // 2
    assert sent[:half] == sent[half:]  # control and intervention: the same seeds, request by request
    seeds_of_5 = [seed for n, seed in sent[:half] if n == 1][::2]  # sample 5's turns after the fork turn
    assert sent[0] == (2, 5) and len(seeds_of_5) == 5
    assert seeds_of_5 == [turn_seed(5, k) for k in range(1, 6)] and len(set(seeds_of_5 + [5, 6])) == 7
    texts = [e.content for e in result.branches[0].events[4:] if e.type != "tool_result"]
    assert len(set(texts)) == len(texts) == 6  # 6 consecutive re-generated turns, none alike
    again, _ = run()
    assert again == sent  # a rerun sends the same seeds
    assert turn_seed(5, 0) == 5 and 0 <= turn_seed(5, 1) < 2**31 and turn_seed(5, 1) != turn_seed(6, 1)


# --- 5. retries with backoff --------------------------------------------------------------------


def test_a_503_once_is_retried_and_the_rollout_succeeds(fake):
    fake.statuses = [503]
    chat = client(fake)
    result = OpenAIRollout(make_trace(), chat).paired(Intervention("remove", ("h2",)), np.array([0, 1]))
    assert result.treated.tolist() == [1.0, 1.0]
    assert len(fake.requests) == 3 and fake.requests[0] == fake.requests[1]  # the control fork turn, twice
    assert chat.usage.retries == 1 == result.usage["retries"]


def test_always_503_fails_after_the_attempts_naming_status_url_and_attempts(fake):
    fake.status = 503
    started = time.monotonic()
    with pytest.raises(OpenAIError) as info:
        OpenAIRollout(make_trace(), client(fake, attempts=4, retry_base_s=0.05)).paired(
            Intervention("remove", ("h2",)), np.array([0, 1])
        )
    assert f"{fake.base_url}/chat/completions answered HTTP 503 (after 4 attempts): " in str(info.value)
    assert str(info.value).startswith("turn request of planner at event h3: ")
    assert len(fake.requests) == 4 and time.monotonic() - started >= 0.05 + 0.1 + 0.2  # backoff 0.05 · 2^k


def test_a_timeout_is_retried_and_then_names_the_attempts(fake):
    fake.delay = 0.5
    with pytest.raises(OpenAIError, match=r"timed out after 0.1s \(after 2 attempts\)"):
        client(fake, timeout_s=0.1, attempts=2).chat([{"role": "user", "content": "hi"}])
    deadline = time.monotonic() + 2  # on a loaded machine the fake may read the second try after the client gave up
    while len(fake.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(fake.requests) == 2


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_rate_limits_and_server_errors_are_retried_with_backoff(fake, status):
    fake.answer, fake.statuses = (lambda body: "ok"), [status, status]
    chat = client(fake, attempts=3, retry_base_s=0.05)
    started = time.monotonic()
    assert chat.chat([{"role": "user", "content": "hi"}]) == ["ok"]
    assert time.monotonic() - started >= 0.05 + 0.1  # waits of 0.05 · 2^k before tries 2 and 3
    assert len(fake.requests) == 3 and (chat.usage.requests, chat.usage.retries) == (1, 2)


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(fake, status):
    fake.statuses = [status]
    chat = client(fake)
    with pytest.raises(OpenAIError) as info:
        chat.chat([{"role": "user", "content": "hi"}])
    assert str(info.value) == (
        f'OpenAI endpoint {fake.base_url}/chat/completions answered HTTP {status}: {{"error": "scripted failure"}}'
    )
    assert len(fake.requests) == 1 and (chat.usage.requests, chat.usage.retries) == (0, 0)


def test_a_dropped_connection_is_retried_and_dropping_every_try_names_the_cause(fake):
    fake.answer, fake.drops = (lambda body: "ok"), 1  # the first request's connection is closed unanswered
    chat = client(fake)
    assert chat.chat([{"role": "user", "content": "hi"}]) == ["ok"]
    assert len(fake.requests) == 2 and chat.usage.retries == 1
    fake.drops = 3
    with pytest.raises(OpenAIError, match=r"chat/completions is unreachable \(after 3 attempts\): .*disconnected"):
        chat.chat([{"role": "user", "content": "hi"}])
    assert len(fake.requests) == 5 and chat.usage.retries == 1 + 2


def test_an_unreachable_server_fails_naming_url_and_attempts_and_is_an_unknown_server():
    chat = ChatClient("http://127.0.0.1:9/v1", "m", attempts=2, retry_base_s=0.01)
    with pytest.raises(OpenAIError, match=r"^OpenAI endpoint http://127.0.0.1:9/v1/chat/completions is unreachable "):
        chat.chat([{"role": "user", "content": "hi"}])
    assert chat.usage.retries == 1 and chat.server() == ServerInfo() and chat.count_tokens([]) is None


def test_retries_of_concurrent_requests_are_counted_per_request(fake):
    fake.answer, fake.statuses = (lambda body: body["messages"][0]["content"]), [503, 503, 503]
    chat = client(fake, attempts=4)  # one request may meet all three 503s
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda k: chat.chat([{"role": "user", "content": f"q{k}"}]), range(8)))
    assert answers == [[f"q{k}"] for k in range(8)]
    assert len(fake.requests) == 8 + 3 and (chat.usage.requests, chat.usage.retries) == (8, 3)


def test_the_api_key_is_sent_and_without_one_openais_environment_key_is_not(fake, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-this-server")
    client(fake, api_key="k").chat([{"role": "user", "content": "hi"}])
    client(fake).chat([{"role": "user", "content": "hi"}])
    assert [b["_authorization"] for b in fake.requests] == ["Bearer k", "Bearer EMPTY"]


# --- 6. bounded concurrency over keep-alive connections ------------------------------------------


def test_requests_of_one_turn_run_concurrently_with_results_in_sample_order(fake):
    in_flight, most = [0], [0]
    lock = threading.Lock()

    def slow(body):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.15 if body["seed"] % 2 else 0.05)  # odd seeds answer last
        with lock:
            in_flight[0] -= 1
        return f"FINAL ANSWER: {body['seed']}"

    fake.answer = slow
    trace, intervention, seeds = make_trace(), Intervention("resample", ("h2",)), np.arange(8)
    sequential = OpenAIRollout(trace, client(fake, max_in_flight=1)).paired(intervention, seeds, traces=True)
    assert most[0] == 1
    fake.requests.clear()
    concurrent = OpenAIRollout(trace, client(fake, max_in_flight=4)).paired(intervention, seeds, traces=True)
    assert 1 < most[0] <= 4  # several in flight at once, never more than the client's bound
    assert [b.events[-1].content for b in concurrent.branches] == [b.events[-1].content for b in sequential.branches]
    assert [b.events[-1].content for b in concurrent.branches] == [f"FINAL ANSWER: {turn_seed(s, 1)}" for s in seeds]


def test_connections_are_kept_alive(fake):
    chat = client(fake)
    for _ in range(5):
        chat.chat([{"role": "user", "content": "hi"}])
    assert fake.connections == 1
    OpenAIRollout(make_trace(), client(fake, max_in_flight=4)).paired(Intervention("resample", ("h2",)), np.arange(8))
    assert fake.connections <= 1 + 4


# --- 7. TERMINATE endings -----------------------------------------------------------------------


def terminated_trace() -> Trace:
    events = [
        Event("a0", 0.0, "message", "user", content="What is 6 times 7?"),
        Event("a1", 1.0, "message", "assistant", content="The product is 42."),
        Event("a2", 2.0, "message", "critic", content="Agreed. FINAL ANSWER: 42"),
        Event("a3", 3.0, "message", "assistant", content="TERMINATE"),
    ]
    agents = [Agent("user", role="human"), Agent("assistant"), Agent("critic")]
    return Trace("native", "t-term", name="terminated", events=events, agents=agents, attributes={"ground_truth": "42"})


def test_the_final_answer_is_the_last_substantive_message(fake):
    assert final_turn(["FINAL ANSWER: 42", "", "TERMINATE", "  terminate.  ".upper()]) == "FINAL ANSWER: 42"
    assert substantive("FINAL ANSWER: 42 TERMINATE") == "FINAL ANSWER: 42" and final_turn(["TERMINATE"]) == ""
    runner = OpenAIRollout(terminated_trace(), client(fake))
    assert runner.recorded_final() == "Agreed. FINAL ANSWER: 42" and runner(None, np.array([0, 1])).tolist() == [1, 1]
    fake.answer = lambda body: (
        "TERMINATE" if body["messages"][-1]["content"].startswith("[critic]") else "FINAL ANSWER: 41 TERMINATE"
    )
    result = runner.paired(Intervention("resample", ("a2",)), np.array([0, 1]))
    assert result.control.tolist() == [1.0, 1.0]  # the recorded answer, then a re-generated bare TERMINATE
    assert result.treated.tolist() == [0.0, 0.0]  # "FINAL ANSWER: 41 TERMINATE", then a bare TERMINATE: 41


# --- 8. the server's usage ----------------------------------------------------------------------


def test_paired_calls_return_the_servers_usage_with_cached_and_cut_turns(fake):
    fake.answer = lambda body: "x" * 40 if body["n"] == 1 else answer(body)  # 10 tokens: cut at max_tokens 4
    runner = OpenAIRollout(make_trace(), client(fake, max_tokens=4))
    result = runner.paired(Intervention("resample", ("h2",)), np.array([0, 1]))
    assert result.usage["requests"] == len(fake.requests) == 1 + 3
    assert result.usage["prompt_tokens"] == sum(fake.prompt_tokens(b) for b in fake.requests)
    # control: its fork turn h3 (n = 2); intervention: h2 (n = 2), then h3 per sample, cut at 4 tokens
    assert (
        result.usage["completion_tokens"] == 2 * fake_tokens("FINAL ANSWER: 43") + 2 * fake_tokens("I think 42") + 2 * 4
    )
    assert result.usage["length_cut"] == 2 and result.usage["retries"] == 0
    assert result.usage["cached_tokens"] > 0  # the arms share the prompt prefix
    assert runner.usage() == result.usage  # the backend's total: one call so far
