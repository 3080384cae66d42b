"""The cost estimate of LLM jobs against what the `openai` backend really sends: counterfactual and
attribution jobs run through the job services on FakeOpenAIServer (a scripted local fake endpoint),
and the estimate (planned by the backend itself, `OpenAIRollout.plan_paired` / `plan_call`) is
checked against the requests the fake received: in the original order and in the order an LLM
orchestrator picks, under exact match and under the verifier."""

import json
from collections import Counter

import numpy as np
import pytest
from django.test import override_settings
from django.utils import timezone

from swarmscope.interventions import Intervention
from tests.counterfactuals.test_openai_backend import BACKENDS, run_all
from tests.fake_openai import FakeOpenAIServer
from tests.trainer.rollout.test_openai import (
    answer,
    magentic_one,
    make_trace,
    picks,
    verdicts,
)
from trainer.rollout.chat import ChatClient
from trainer.rollout.openai import OpenAIRollout
from webapp.counterfactuals import costs, services
from webapp.counterfactuals.models import CounterfactualJob
from webapp.traces.ingest import do_ingest
from webapp.traces.services import to_core_trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


@pytest.fixture
def fake(monkeypatch):
    with FakeOpenAIServer(answer) as server:
        monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "fake-model")
        monkeypatch.setenv("SWARMSCOPE_OPENAI_TIMEOUT_S", "5")
        monkeypatch.setenv("SWARMSCOPE_OPENAI_RETRY_BASE_S", "0.01")
        yield server


def key(n, seed, temperature, messages):
    return json.dumps([n, seed, temperature, messages])


def sent(body):
    return key(body["n"], body["seed"], body["temperature"], body["messages"])


def planned_requests(runner, intervention, n, chunk):
    """Every request a job of n samples plans: per chunk both arms, then sample 0's branch re-run."""
    requests = []
    for start in range(0, n, chunk):
        for arm in runner.plan_paired(intervention, np.arange(start, min(start + chunk, n))).values():
            requests += arm
    for arm in runner.plan_paired(intervention, np.arange(1)).values():
        requests += arm
    return requests


def answer_as_planned(requests, fallback):
    """A fake's answer function that answers each planned request with its assumed answer."""
    answers = {key(r.n, r.seed, r.temperature, r.messages): r.answer for r in requests}
    return lambda body: answers.get(sent(body), fallback)


def tokens_sent(bodies, agents):
    """Prompt tokens of the requests really sent, counted as the estimate counts them: each message's
    content, and its `[speaker] ` prefixes together, at 4 characters per token, MESSAGE_TOKENS a
    message of chat formatting and REPLY_TOKENS a request."""
    total = 0
    for body in bodies:
        prefixes = ""
        for message in body["messages"]:
            content = message["content"]
            for agent in agents:
                if message["role"] == "user" and content.startswith(f"[{agent}] "):
                    content = content[len(agent) + 3 :]
                    prefixes += f"[{agent}] "
                    break
            total += costs._tokens(content) + costs.MESSAGE_TOKENS
        total += costs._tokens(prefixes) + costs.REPLY_TOKENS
    return total


def recorded(estimate, key):
    """`key` of the estimate with every re-generated turn as long as its recorded content."""
    return estimate["recorded_length"][key]


def kinds_sent(bodies):
    def kind(body):
        if body["messages"][0]["content"].startswith("You are a strict verifier"):
            return "verdict"
        if body["messages"][-1]["content"].startswith("Read the above conversation"):
            return "speaker"
        return "turn"

    return Counter(kind(b) for b in bodies)


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=2)
def test_with_an_llm_orchestrator_the_estimate_counts_its_speaker_picks_as_sent(project, fake):
    core = magentic_one()
    trace = do_ingest(project, core).trace
    intervention = {"kind": "mask", "events": ["h3"]}
    estimate = costs.estimate_cost(trace, intervention, 4, "openai")
    assert (estimate["speaker_order"], estimate["scoring"]) == ("orchestrator", "exact_match")
    # 2 chunks of 2 samples and the branch re-run of sample 0: per arm and chunk, the fork turn
    # h4 is one request (n = 2), then each sample asks the orchestrator before each of the other 5
    # re-generated slots (h6 is replayed) and re-generates it.
    arms = estimate["arms"]
    prompts = ("prompt_tokens", "recorded_prompt_tokens", "cap_prompt_tokens")
    assert arms["control"] == arms["intervention"] | {k: arms["control"][k] for k in prompts}
    assert arms["intervention"]["turns"] == 6
    assert arms["intervention"]["speaker_requests"] == 2 * 2 * 5 and arms["intervention"]["turn_requests"] == 2 * (
        1 + 2 * 5
    )
    assert estimate["branch"]["intervention"]["speaker_requests"] == 5
    runner = OpenAIRollout.from_trace(to_core_trace(trace))
    plan = planned_requests(runner, Intervention.from_dict(intervention), 4, 2)
    fake.answer = answer_as_planned(plan, "UNPLANNED")
    job = run_all(services.request_counterfactual(trace, intervention, 4, backend="openai"))
    assert job.status == "done", job.error
    # Answered as the plan assumed, the job sends exactly the planned requests, no more, no fewer.
    assert Counter(sent(b) for b in fake.requests) == Counter(key(r.n, r.seed, r.temperature, r.messages) for r in plan)
    agents = [a.name for a in core.agents]
    assert estimate["requests"] == len(fake.requests)
    assert kinds_sent(fake.requests) == {
        "turn": sum(estimate[p][a]["turn_requests"] for p in ("arms", "branch") for a in ("control", "intervention")),
        "speaker": 2 * (20 + 5),
    }
    assert recorded(estimate, "prompt_tokens") == tokens_sent(fake.requests, agents)
    completions = sum(b["n"] * costs._tokens(fake.answer(b)) for b in fake.requests)
    assert recorded(estimate, "completion_tokens") == completions


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=2)
def test_other_speaker_picks_change_the_tokens_but_not_the_number_of_requests(project, fake):
    trace = do_ingest(project, magentic_one()).trace
    intervention = {"kind": "mask", "events": ["h3"]}
    estimate = costs.estimate_cost(trace, intervention, 4, "openai")
    fake.answer = picks({0: "WebSurfer", 1: "Orchestrator", 2: "nobody", 3: "WebSurfer"})
    job = run_all(services.request_counterfactual(trace, intervention, 4, backend="openai"))
    assert job.status == "done", job.error
    assert estimate["requests"] == len(fake.requests)
    assert kinds_sent(fake.requests)["speaker"] == sum(
        estimate[p][a]["speaker_requests"] for p in ("arms", "branch") for a in ("control", "intervention")
    )


def long_turns(body):
    """A model that writes every turn to its max_tokens (cut there, as SmolLM2-135M's mostly are);
    the recorded speaker's name where the orchestrator asks; a verdict where the verifier asks."""
    if body["messages"][0]["content"].startswith("You are a strict verifier"):
        return '{"correct": true}'
    return "abcd" * 1000


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=4)
@pytest.mark.parametrize(
    "backend, trace, intervention",
    [
        ("openai", make_trace, {"kind": "remove", "events": ["h1"]}),
        ("openai-verifier", make_trace, {"kind": "remove", "events": ["h1"]}),
        ("openai", magentic_one, {"kind": "mask", "events": ["h3"]}),
    ],
)
def test_turns_that_run_to_their_cap_cost_what_the_estimate_says_later_prompts_included(
    project, fake, monkeypatch, backend, trace, intervention
):
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_TOKENS", "16")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_SPEAKER_ORDER", "original")
    core = trace()
    stored = do_ingest(project, core).trace
    estimate = costs.estimate_cost(stored, intervention, 6, backend)
    assert estimate["turn_max_tokens"] == 16
    fake.answer = long_turns
    job = run_all(services.request_counterfactual(stored, intervention, 6, backend=backend))
    assert job.status == "done", job.error
    assert job.usage["length_cut"] > 0 and estimate["requests"] == len(fake.requests) == job.usage["requests"]
    # Every re-generated turn is cut at 16 tokens, and later prompts hold those turns, not the recorded ones.
    assert estimate["at_cap"]["prompt_tokens"] == tokens_sent(fake.requests, [a.name for a in core.agents])
    assert estimate["at_cap"]["completion_tokens"] == job.usage["completion_tokens"]
    assert recorded(estimate, "prompt_tokens") < estimate["at_cap"]["prompt_tokens"]


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=4)
@pytest.mark.parametrize("backend, ground_truth", [("openai", False), ("openai-verifier", True)])
def test_under_the_verifier_the_estimate_counts_two_verdicts_per_sample_as_sent(project, fake, backend, ground_truth):
    core = make_trace()
    if not ground_truth:
        core.attributes.pop("ground_truth")
    trace = do_ingest(project, core).trace
    intervention = {"kind": "remove", "events": ["h2"]}
    estimate = costs.estimate_cost(trace, intervention, 6, backend)
    assert (estimate["speaker_order"], estimate["scoring"]) == ("original", "verifier")
    # 6 samples in chunks of 4 and 2: one verdict per sample and arm, 2 more for the branch re-run.
    assert [estimate["arms"][a]["verdict_requests"] for a in ("control", "intervention")] == [6, 6]
    assert [estimate["branch"][a]["verdict_requests"] for a in ("control", "intervention")] == [1, 1]
    assert [estimate["arms"][a]["turn_requests"] for a in ("control", "intervention")] == [2, 2]  # one per chunk
    runner = services.get_backend_class(backend).from_trace(to_core_trace(trace))
    plan = planned_requests(runner, Intervention.from_dict(intervention), 6, 4)
    planned_answers = answer_as_planned(plan, "UNPLANNED")
    fake.answer = lambda body: planned_answers(body)
    job = run_all(services.request_counterfactual(trace, intervention, 6, backend=backend))
    assert job.status == "done", job.error
    assert Counter(sent(b) for b in fake.requests) == Counter(key(r.n, r.seed, r.temperature, r.messages) for r in plan)
    assert kinds_sent(fake.requests) == {"turn": 2 * 2 + 2, "verdict": 2 * 6 + 2}
    assert estimate["requests"] == len(fake.requests)
    assert recorded(estimate, "prompt_tokens") == tokens_sent(fake.requests, [a.name for a in core.agents])
    assert recorded(estimate, "completion_tokens") == sum(b["n"] * costs._tokens(fake.answer(b)) for b in fake.requests)
    # With the fake's own answers (a verdict per final answer), the same requests are sent.
    fake.requests.clear()
    fake.answer = verdicts(lambda final: '{"correct": true}' if "42" in final else '{"correct": false}')
    job = run_all(services.request_counterfactual(trace, intervention, 6, backend=backend, seed=50))
    assert job.status == "done", job.error
    assert estimate["requests"] == len(fake.requests)


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=3)
@pytest.mark.parametrize(
    "method, players, budget",
    [("loo", "messages", 5 * 4), ("shapley", "agents", 6 * 3), ("kernelshap", "messages", 4 * 4)],
)
def test_the_attribution_estimate_counts_what_its_chunks_send(api_client, project, fake, method, players, budget):
    core = make_trace()
    core.attributes.pop("ground_truth")  # scored by the verifier: verdicts are counted too
    trace = do_ingest(project, core).trace
    body = {"method": method, "budget": budget, "backend": "openai", "players": players, "seed": 3}
    response = api_client.post(f"/api/traces/{trace.pk}/attributions/estimate/", body, content_type="application/json")
    assert response.status_code == 200, response.json()
    estimate = response.json()
    assert (estimate["kind"], estimate["llm"], estimate["confirmation_required"]) == ("attribution", True, True)
    assert estimate["n"] == 4 if method != "shapley" else estimate["n"] == 3
    fake.answer = verdicts(lambda final: '{"correct": true}' if "42" in final else '{"correct": false}')
    run = api_client.post(
        f"/api/traces/{trace.pk}/attributions/run/", {**body, "confirmed": True}, content_type="application/json"
    )
    assert run.status_code == 202, run.json()
    job = run_all(CounterfactualJob.objects.get(pk=run.json()["id"]))
    assert job.status == "done", job.error
    assert job.estimate == costs.job_estimate(estimate) and job.estimate["requests"] == estimate["requests"]
    assert estimate["requests"] == len(fake.requests) > 0
    assert kinds_sent(fake.requests) == {
        k: estimate[f"{k}_requests"] for k in ("turn", "verdict") if estimate[f"{k}_requests"]
    }


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
def test_attribution_estimates_refuse_bad_requests_and_cost_nothing_on_swarmsim(
    api_client, project, sim_trace, monkeypatch
):
    trace = do_ingest(project, make_trace()).trace
    monkeypatch.delenv("SWARMSCOPE_OPENAI_BASE_URL", raising=False)
    response = api_client.post(
        f"/api/traces/{trace.pk}/attributions/estimate/",  # no endpoint configured
        {"method": "loo", "budget": 100, "backend": "openai"},
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["field"] == "backend"
    assert "SWARMSCOPE_OPENAI_BASE_URL" in response.json()["error"]
    url = f"/api/traces/{sim_trace.pk}/attributions/estimate/"
    for body, field in (
        ({"method": "banzhaf", "budget": 100}, "method"),
        ({"method": "loo", "budget": 1}, "budget"),
        ({"method": "loo", "budget": 100, "players": "events"}, "players"),
        ({"method": "loo", "budget": 100, "backend": "gpt"}, "backend"),
        ({"method": "loo", "budget": 100, "price": 1}, "price"),
        ({"budget": 100}, "method"),
    ):
        response = api_client.post(url, body, content_type="application/json")
        assert response.status_code == 400 and response.json()["field"] == field, (body, response.json())
    sim = api_client.post(
        f"/api/traces/{sim_trace.pk}/attributions/estimate/",
        {"method": "loo", "budget": 13 * 4},
        content_type="application/json",
    ).json()
    assert (sim["llm"], sim["confirmation_required"], sim["total_tokens"], sim["requests"]) == (False, False, 0, 0)
    assert (sim["n"], sim["rollouts"], sim["players"]) == (4, 13 * 4, 12)


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
def test_a_prompt_over_the_models_context_is_refused_at_the_estimate_naming_agent_and_turn(
    api_client, project, monkeypatch
):
    core = make_trace()
    core.events[0].content = "6" * (4 * 3000)  # 3,000 tokens in every prompt after the first turn
    trace = do_ingest(project, core).trace
    body = {"intervention": {"kind": "remove", "events": ["h2"]}, "n": 4, "backend": "openai"}
    with FakeOpenAIServer(answer, vllm=True, max_model_len=2048) as server:
        monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "fake-model")
        response = api_client.post(
            f"/api/traces/{trace.pk}/counterfactuals/estimate/", body, content_type="application/json"
        )
        assert response.status_code == 400 and response.json()["field"] == "intervention"
        assert "planner's turn at event h3" in response.json()["error"] and "2048" in response.json()["error"]
        attribution = {"method": "loo", "budget": 20, "backend": "openai", "players": "messages"}
        response = api_client.post(
            f"/api/traces/{trace.pk}/attributions/estimate/", attribution, content_type="application/json"
        )
        assert response.status_code == 400 and "over the model's context of 2048" in response.json()["error"]
        assert not server.requests  # nothing was sent: the job never started
        server.max_model_len = 8192  # a longer context: the same job fits
        response = api_client.post(
            f"/api/traces/{trace.pk}/counterfactuals/estimate/", body, content_type="application/json"
        )
        assert response.status_code == 200, response.json()


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
def test_on_vllm_the_estimate_counts_with_the_servers_tokenizer_measured_on_the_trace(project, monkeypatch):
    trace = do_ingest(project, make_trace()).trace
    intervention = {"kind": "remove", "events": ["h1"]}
    with FakeOpenAIServer(answer, vllm=True, max_model_len=8192) as server:
        monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "fake-model")
        estimate = costs.estimate_cost(trace, intervention, 4, "openai")
        # Four counts: an empty user message, two, a system and a user one, and the trace's texts.
        assert len(server.tokenized) == 4 and not server.requests
        assert server.tokenized[3]["messages"][0]["content"].startswith("What is 6 times 7?")
    # The fake counts ceil(characters / 4) a message and no formatting: so does the estimate here.
    assert estimate["tokenizer"] == "server" and 3.5 < estimate["chars_per_token"] <= 4
    with FakeOpenAIServer(answer) as server:  # not vLLM: no /tokenize, the rule of thumb
        monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", server.base_url)
        plain = costs.estimate_cost(trace, intervention, 4, "openai")
    assert (plain["tokenizer"], plain["chars_per_token"]) == ("rule of thumb", 4)
    assert plain["requests"] == estimate["requests"]


class TemplatedServer(FakeOpenAIServer):
    """A fake whose /tokenize counts like a chat template: 5 tokens a message, 3 opening the reply,
    and 20 of a default system prompt where the messages have none (as SmolLM2's template adds)."""

    def prompt_tokens(self, body):
        messages = body.get("messages", [])
        default = 0 if messages and messages[0]["role"] == "system" else 20
        return super().prompt_tokens(body) + 5 * len(messages) + 3 + default


def test_the_tokenizer_measure_finds_the_chat_templates_formatting(monkeypatch):
    with TemplatedServer(answer, vllm=True) as server:
        runner = OpenAIRollout(make_trace(), ChatClient(server.base_url, "fake-model"))
        rule = runner.measure_tokenizer()
        assert runner.measure_tokenizer() is rule and len(server.tokenized) == 4  # measured once
    assert (rule["message_tokens"], rule["request_tokens"], rule["request_tokens_no_system"]) == (5, 3, 23)
    assert 3.5 < rule["chars_per_token"] <= 4


@pytest.mark.django_db
def test_the_cap_shares_are_ratio_estimates_over_the_models_finished_jobs(project):
    trace = do_ingest(project, make_trace()).trace
    other = make_trace()
    other.source_id = "t-other"
    elsewhere = do_ingest(project, other).trace
    now = timezone.now()

    def job(on, sent_prompt, sent_completion, *, status="done", done=8, temperature=1.0, model="m"):
        # recorded 100 / 1,000 (prompt / completion), at the cap 1,100 / 5,100: rooms of 1,000 and 4,100
        estimate = {
            "model": model,
            "temperature": temperature,
            "turn_max_tokens": 512,
            "turn_completions": 10,
            "recorded_length": {"prompt_tokens": 100, "completion_tokens": 1_000},
            "at_cap": {"prompt_tokens": 1_100, "completion_tokens": 5_100},
        }
        usage = {"prompt_tokens": sent_prompt, "completion_tokens": sent_completion}
        return CounterfactualJob.objects.create(
            trace=on,
            intervention={"kind": "remove"},
            backend="openai",
            n_samples=8,
            done_count=done,
            status=status,
            heartbeat_at=now,
            finished_at=now,
            estimate=estimate,
            usage=usage,
        )

    job(trace, 600, 2_025)  # prompt (600 - 100) / 1,000 = 0.5; completion (2,025 - 1,000) / 4,100 = 0.25
    job(elsewhere, 200, 5_100)  # 0.1 and 1.0
    job(trace, 1_100, 5_100, status="failed")  # not done
    job(trace, 1_100, 5_100, done=3)  # stopped early (epsilon): its estimate is for 8 samples
    job(trace, 1_100, 5_100, temperature=0.5)  # other sampling
    job(trace, 1_100, 5_100, model="other")
    assert costs.measured_cap_share("m", 512, 1.0, trace.pk) is None  # 10 turns < CALIBRATION_TURNS
    job(trace, 600, 2_025)
    assert costs.measured_cap_share("m", 512, 1.0, trace.pk) == (0.25, 0.5, 2, 20)
    # Over both traces: completion (1,025 · 2 + 4,100) / (4,100 · 3) = 0.5, prompt (500 · 2 + 100) / 3,000.
    share, held, jobs, turns = costs.measured_cap_share("m", 512, 1.0)
    assert (share, jobs, turns) == (0.5, 3, 30) and held == pytest.approx(1_100 / 3_000)
    assert costs.measured_cap_share("m", 256, 1.0) is None
