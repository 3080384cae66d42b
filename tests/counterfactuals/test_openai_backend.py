"""The `openai` backend through the job services, and `manage.py eval_attribution`, against
FakeOpenAIServer (a scripted local fake endpoint)."""

import io
import os
import re
import shutil
import threading
import time

import numpy as np
import pytest
from django.core.management import call_command
from django.test import override_settings

from swarmscope import judge
from swarmscope.importers import SourceFile, read_files
from swarmscope.interventions import Intervention
from swarmscope.protocol_schema import validate_message
from tests.fake_openai import FakeOpenAIServer
from tests.trainer.rollout.test_openai import (
    answer,
    magentic_one,
    make_trace,
    picks,
    verdicts,
)
from trainer.rollout.openai import OpenAIRollout
from webapp.counterfactuals import costs, services, tasks
from webapp.counterfactuals.models import Attribution, CounterfactualJob
from webapp.counterfactuals.wire import job_summary_wire, job_wire
from webapp.traces.ingest import do_ingest

BACKENDS = {
    "sim": "trainer.rollout.sim.SimRollout",
    "openai": "trainer.rollout.openai.OpenAIRollout",
    "openai-verifier": "trainer.rollout.openai.OpenAIVerifierRollout",
}


@pytest.fixture
def fake(monkeypatch):
    with FakeOpenAIServer(answer) as server:
        monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "fake-model")
        monkeypatch.setenv("SWARMSCOPE_OPENAI_TIMEOUT_S", "0.5")
        monkeypatch.setenv("SWARMSCOPE_OPENAI_RETRY_BASE_S", "0.01")
        yield server


def run_all(job):
    for start, stop in services._missing_chunks(job):
        tasks.run_counterfactual_chunk(job.pk, start, stop)
    job.refresh_from_db()
    return job


@pytest.mark.django_db
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=4)
def test_a_job_on_the_openai_backend_completes_and_records_the_model(project, fake):
    trace = do_ingest(project, make_trace()).trace
    job = run_all(services.request_counterfactual(trace, {"kind": "remove", "events": ["h2"]}, 8, backend="openai"))
    assert job.status == "done" and job.done_count == 8
    attribution = Attribution.objects.get(job=job)
    assert attribution.estimate == -1.0
    assert attribution.environment["model"] == "fake-model" and attribution.environment["speaker_order"] == "original"
    assert {(b["seed"], b["n"]) for b in fake.requests if b["n"] > 1} == {(0, 4), (4, 4)}


@pytest.mark.django_db
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=4)
def test_a_job_records_the_servers_usage_and_survives_a_transient_503(project, fake):
    fake.statuses = [503]  # the first request fails once, then is retried
    trace = do_ingest(project, make_trace()).trace
    job = services.request_counterfactual(trace, {"kind": "remove", "events": ["h2"]}, 8, backend="openai")
    assert job.usage == dict.fromkeys(services.USAGE_KEYS, 0) and job.started_at is None
    tasks.run_counterfactual_chunk(job.pk, 0, 4)
    job.refresh_from_db()
    first = dict(job.usage)
    tasks.run_counterfactual_chunk(job.pk, 4, 8)
    job.refresh_from_db()
    assert job.status == "done" and job.done_count == 8
    assert not any(s.values for s in job.samples.all())  # the usage is the job's, not a sample's
    usage = {0: first, 4: {k: job.usage[k] - first[k] for k in first}}
    # chunk 0: both arms (2 requests) and the branch re-run of sample 0 (2 more); chunk 4: 2
    assert (usage[0]["requests"], usage[0]["retries"], usage[4]["requests"], usage[4]["retries"]) == (4, 1, 2, 0)
    assert sum(u["prompt_tokens"] for u in usage.values()) == sum(fake.prompt_tokens(b) for b in fake.requests[1:])
    assert usage[4]["cached_tokens"] > 0  # the same prompts as chunk 0's
    shown = job_wire(job)["usage"]
    assert (shown["requests"], shown["retries"], shown["prompt_tokens"]) == (6, 1, job.usage["prompt_tokens"])
    assert shown["cache_hit_rate"] == pytest.approx(job.usage["cached_tokens"] / job.usage["prompt_tokens"])
    assert shown["wall_s"] == pytest.approx((job.finished_at - job.started_at).total_seconds(), abs=1e-3)
    assert job_summary_wire(job)["usage"] == shown
    validate_message("trace", {"type": "job", "job": job_wire(job)})


@pytest.mark.django_db
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=4)
def test_the_usage_of_an_estimated_job_equals_its_estimate_and_its_requests(project, fake):
    trace = do_ingest(project, make_trace()).trace
    body = {"kind": "remove", "events": ["h2"]}
    estimate = costs.estimate_cost(trace, body, 8, "openai")
    job = run_all(services.request_counterfactual(trace, body, 8, backend="openai"))
    assert job.usage["requests"] == estimate["requests"] == len(fake.requests)
    assert job.usage["prompt_tokens"] == sum(fake.prompt_tokens(b) for b in fake.requests)


@pytest.mark.django_db
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=2)
def test_an_attribution_job_records_the_servers_usage_of_all_its_chunks(project, fake):
    trace = do_ingest(project, make_trace()).trace
    estimate = costs.estimate_attribution_cost(trace, "loo", 4 * 4, "openai")
    job = run_all(services.request_attribution(trace, "loo", 4 * 4, backend="openai"))
    assert job.status == "done" and job.kind == "attribution"
    assert job.usage["requests"] == estimate["requests"] == len(fake.requests) > 0
    assert job.usage["prompt_tokens"] == sum(fake.prompt_tokens(b) for b in fake.requests)
    assert job_wire(job)["usage"]["requests"] == len(fake.requests)


@pytest.mark.django_db
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=4)
def test_a_failed_chunk_still_records_the_requests_it_sent(project, fake, monkeypatch):
    monkeypatch.setenv("SWARMSCOPE_OPENAI_ATTEMPTS", "2")
    fake.statuses = [0, 503, 503]  # the first request is answered (0: no scripted status), the next fails twice
    trace = do_ingest(project, make_trace()).trace
    job = run_all(services.request_counterfactual(trace, {"kind": "remove", "events": ["h2"]}, 4, backend="openai"))
    assert job.status == "failed" and not job.samples.exists()
    assert (job.usage["requests"], job.usage["retries"]) == (1, 1)
    assert job_wire(job)["usage"]["wall_s"] >= 0


@pytest.mark.django_db
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
def test_a_job_fails_only_after_the_retries_naming_the_status_and_attempts(project, fake, monkeypatch):
    monkeypatch.setenv("SWARMSCOPE_OPENAI_ATTEMPTS", "2")
    fake.status = 503
    trace = do_ingest(project, make_trace()).trace
    job = run_all(services.request_counterfactual(trace, {"kind": "remove", "events": ["h2"]}, 4, backend="openai"))
    assert job.status == "failed" and "answered HTTP 503 (after 2 attempts)" in job.error
    assert "turn request of planner at event h3" in job.error and len(fake.requests) == 2


@pytest.mark.django_db
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
@pytest.mark.parametrize("failure, reason", [("status", "HTTP 502"), ("raw", "malformed JSON"), ("delay", "timed out")])
def test_endpoint_errors_fail_the_job_with_the_reason_and_store_nothing(project, fake, failure, reason):
    setattr(fake, failure, {"status": 502, "raw": b"<html>", "delay": 1.5}[failure])
    trace = do_ingest(project, make_trace()).trace
    job = run_all(services.request_counterfactual(trace, {"kind": "remove", "events": ["h2"]}, 4, backend="openai"))
    assert job.status == "failed" and job.error.startswith("The LLM server failed: ") and reason in job.error
    assert not job.samples.exists() and not Attribution.objects.filter(job=job).exists()


@pytest.mark.django_db
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=2)
def test_a_job_on_a_trace_with_an_llm_orchestrator_records_its_speaker_order_and_fallbacks(project, fake):
    fake.answer = picks({0: "Let me think.", 1: "WebSurfer", 2: "Orchestrator", 3: "FileSurfer"})
    trace = do_ingest(project, magentic_one()).trace
    job = run_all(services.request_counterfactual(trace, {"kind": "mask", "events": ["h3"]}, 4, backend="openai"))
    assert job.status == "done" and job.done_count == 4
    environment = Attribution.objects.get(job=job).environment
    assert environment["speaker_order"] == "orchestrator" and environment["orchestrator"] == "Orchestrator"
    assert environment["speakers"] == ["Orchestrator", "WebSurfer"]
    branch = job.samples.get(index=0).branch_trace  # seed 0: "Let me think." names no speaker
    assert branch.attributes["speaker_order"] == "orchestrator"
    assert branch.attributes["speaker_choices"] == branch.attributes["speaker_fallbacks"] == 5
    questions = [b for b in fake.requests if b["messages"][-1]["content"].startswith("Read the above conversation")]
    assert {b["seed"] for b in questions} == {0, 1, 2, 3}


@pytest.mark.django_db
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=4)
def test_a_job_on_a_trace_without_ground_truth_is_scored_by_the_verifier(project, fake):
    fake.answer = verdicts(lambda final: '{"correct": true}' if "42" in final else '{"correct": false}')
    core = make_trace()
    core.attributes.pop("ground_truth")
    job = run_all(
        services.request_counterfactual(
            do_ingest(project, core).trace, {"kind": "remove", "events": ["h2"]}, 4, backend="openai"
        )
    )
    assert job.status == "done" and job.done_count == 4
    attribution = Attribution.objects.get(job=job)
    assert attribution.estimate == -1.0 and attribution.environment["scoring"] == "verifier"
    # one verdict per sample and arm (8), and 2 more for sample 0's branch trace, which the job re-runs
    assert sum(b["messages"][0]["content"].startswith("You are a strict verifier") for b in fake.requests) == 8 + 2


@pytest.mark.django_db
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
def test_a_malformed_verdict_fails_the_job_with_the_reason_and_stores_nothing(project, fake):
    fake.answer = verdicts(lambda final: "Looks right to me.")
    trace = do_ingest(project, make_trace()).trace  # has a ground truth: the openai-verifier backend is the option
    job = run_all(
        services.request_counterfactual(trace, {"kind": "remove", "events": ["h2"]}, 4, backend="openai-verifier")
    )
    assert job.status == "failed" and job.error.startswith("The verifier did not answer with a verdict: ")
    assert "malformed" in job.error and "Looks right to me." in job.error
    assert not job.samples.exists() and not Attribution.objects.filter(job=job).exists()


def test_eval_attribution_prints_predictions_and_exact_equality_accuracy(tmp_path, fixtures):
    for name in ("whowhen_hand_crafted.json", "whowhen_algorithm.json", "native_small.json"):
        shutil.copy(fixtures / name, tmp_path / name)

    def judge_answer(body):  # right for the hand-crafted log (websurfer, 3), a substring of the other's step
        return "Agent Name: WebSurfer\nStep Number: 3"

    with FakeOpenAIServer(judge_answer) as server:
        out = io.StringIO()
        call_command("eval_attribution", str(tmp_path), "--base-url", server.base_url, "--model", "judge", stdout=out)
    text = out.getvalue()
    assert len(server.requests) == 2 and all(b["temperature"] == 0.0 for b in server.requests)
    assert re.search(r"whowhen_hand_crafted.json: predicted agent=WebSurfer step=3 .* step ok, agent ok", text)
    assert re.search(r"whowhen_algorithm.json: predicted agent=WebSurfer step=3 .*step wrong, agent wrong", text)
    assert "2 logs, exact equality: step accuracy 50.00 %, agent accuracy 50.00 %" in text


def test_eval_attribution_limit_and_method(tmp_path, fixtures):
    shutil.copy(fixtures / "whowhen_hand_crafted.json", tmp_path / "a.json")
    shutil.copy(fixtures / "whowhen_algorithm.json", tmp_path / "b.json")
    with FakeOpenAIServer(lambda body: "No") as server:
        out = io.StringIO()
        call_command(
            "eval_attribution",
            str(tmp_path),
            "--method",
            "step_by_step",
            "--limit",
            "1",
            "--base-url",
            server.base_url,
            "--model",
            "judge",
            stdout=out,
        )
    assert "a.json: predicted agent=None step=None" in out.getvalue()
    assert "1 logs, exact equality: step accuracy 0.00 %" in out.getvalue()


def constrained_judge(body):
    """On vLLM the server answers in the requested format: a regex answer names the log's last speaker
    at its last step (as the fake must be scripted: it cannot make up a match); otherwise free text,
    which the fake's choice constraint turns into its first choice and which nothing can parse."""
    regex = (body.get("structured_outputs") or {}).get("regex")
    if regex:
        agents, steps = re.fullmatch(r"Agent Name: \((.*)\)\\nStep Number: \((.*)\)\\nReason.*", regex).groups()
        return f"Agent Name: {agents.split('|')[-1]}\nStep Number: {steps.split('|')[-1]}\nReason for Mistake: odd."
    return "It is hard to say."


@pytest.mark.parametrize("method", judge.METHODS)
@pytest.mark.parametrize("vllm", [True, False])
def test_eval_attribution_constrains_the_judges_answers_on_vllm_so_every_answer_parses(
    tmp_path, fixtures, method, vllm
):
    for name in ("whowhen_hand_crafted.json", "whowhen_algorithm.json"):
        shutil.copy(fixtures / name, tmp_path / name)
    with FakeOpenAIServer(constrained_judge, vllm=vllm) as server:
        out = io.StringIO()
        call_command(
            "eval_attribution",
            str(tmp_path),
            "--method",
            method,
            "--base-url",
            server.base_url,
            "--model",
            "judge",
            stdout=out,
        )
    text, sent = out.getvalue(), [b.get("structured_outputs") for b in server.requests]
    if not vllm:  # nothing constrains the free answer: none parses
        assert sent == [None] * len(sent) and text.count(": error: ") == 2
        return
    assert ": error: " not in text and "2 logs, exact equality" in text
    expected = {"step_by_step": [judge.YES_NO], "binary_search": [judge.HALVES]}.get(method)
    if expected is None:  # all_at_once: one request per log, its speakers and steps
        traces = [
            read_files([SourceFile(n, (fixtures / n).read_bytes())]).traces[0] for n in sorted(os.listdir(tmp_path))
        ]
        expected = [judge.all_at_once_format(t) for t in traces]
        assert sorted(sent, key=str) == sorted(expected, key=str)
        assert "whowhen_hand_crafted.json: predicted agent=ComputerTerminal step=10" in text
    else:
        assert {str(s) for s in sent} == {str(expected[0])}


@pytest.mark.django_db(transaction=True)
@pytest.mark.services
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=8)
def test_a_cancel_stops_a_running_chunk_at_its_next_request_and_keeps_its_usage(project, fake, monkeypatch):
    """A chunk that is running when its job is cancelled sends no further request (its LLM client's
    `should_stop`, polled from the job row), and the usage of what it did send is the job's."""
    monkeypatch.setattr(services, "CANCEL_POLL_S", 0.02)
    monkeypatch.setattr(services, "enqueue", lambda *args, **kwargs: None)  # the chunk runs here, below
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_IN_FLIGHT", "1")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_TURNS", "3")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_TIMEOUT_S", "5")
    fake.answer = picks(dict.fromkeys(range(8), "WebSurfer"))
    fake.delay = 0.1
    trace = do_ingest(project, magentic_one()).trace
    intervention = {"kind": "remove", "events": ["h3"]}
    runner = OpenAIRollout.from_trace(magentic_one())
    planned = sum(len(r) for r in runner.plan_paired(Intervention.from_dict(intervention), np.arange(8)).values())
    job = services.request_counterfactual(trace, intervention, 8, backend="openai")

    def cancel_after_two_requests():
        while len(fake.requests) < 2:
            time.sleep(0.01)
        services.do_cancel_job(CounterfactualJob.objects.get(pk=job.pk))

    canceller = threading.Thread(target=cancel_after_two_requests)
    canceller.start()
    tasks.run_counterfactual_chunk(job.pk, 0, 8)
    canceller.join()
    job.refresh_from_db()
    assert job.status == "cancelled" and job.done_count == 0, (planned, len(fake.requests), job.status)
    assert planned > 6 and 2 <= len(fake.requests) <= 4, (planned, len(fake.requests))  # stopped within a request
    assert job.usage["requests"] == len(fake.requests)  # what was sent is counted, though nothing was stored


@pytest.mark.django_db
@pytest.mark.services
# No cost pilot: the shares' sources without one (tests/counterfactuals/test_cost_pilot.py has it).
@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=4, SWARMSCOPE_COST_PILOT_SAMPLES=0)
def test_a_confirmed_job_keeps_its_estimate_and_the_next_estimate_calibrates_on_it(
    project, fake, api_client, monkeypatch
):
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_TOKENS", "8")
    monkeypatch.delenv("SWARMSCOPE_OPENAI_CAP_SHARE", raising=False)
    trace = do_ingest(project, make_trace()).trace
    body = {"intervention": {"kind": "remove", "events": ["h2"]}, "n": 8, "backend": "openai"}
    url = f"/api/traces/{trace.pk}/counterfactuals/"
    first = api_client.post(f"{url}estimate/", body, content_type="application/json").json()
    assert (first["cap_share"], first["cap_share_source"], first["model"]) == (costs.CAP_SHARE, "default", "fake-model")
    answer = api_client.post(url, {**body, "confirmed": True}, content_type="application/json")
    assert answer.status_code == 202 and answer.json()["estimate"] == costs.job_estimate(first)
    job = run_all(CounterfactualJob.objects.get(pk=answer.json()["id"]))
    assert job.status == "done" and job.estimate["requests"] == job.usage["requests"] == len(fake.requests)
    # Every re-generated turn is the planner's h3, recorded "FINAL ANSWER: 43" (4 tokens of 4
    # characters), cap 8: the control arm (the solver's 43 kept) answers the same 4 tokens, the
    # intervention arm "FINAL ANSWER: 42." (5), as many turns in each. Share = (0 + 1) / (4 + 4).
    second = api_client.post(f"{url}estimate/", body, content_type="application/json").json()
    assert second["cap_share"] == pytest.approx(1 / 8)
    # No later prompt held a re-generated turn (h3 is the last): the prompts' share is the completions'.
    assert second["prompt_cap_share"] == second["cap_share"]
    turns = job.estimate["turn_completions"]
    assert second["cap_share_source"] == f"measured on 1 finished job on this trace ({turns} turns)"
    assert second["completion_tokens"] < first["completion_tokens"]  # 0.125 of the room, not 0.35
    # Another trace: no job of its own yet, so the model's jobs on any trace.
    core = make_trace()
    core.source_id = "t2"
    elsewhere_trace = do_ingest(project, core).trace
    elsewhere_url = f"/api/traces/{elsewhere_trace.pk}/counterfactuals/estimate/"
    elsewhere = api_client.post(elsewhere_url, body, content_type="application/json").json()
    assert elsewhere["cap_share"] == pytest.approx(1 / 8)
    assert elsewhere["cap_share_source"] == f"measured on 1 finished job of fake-model ({turns} turns)"
    # Another temperature is another calibration: the default again.
    monkeypatch.setenv("SWARMSCOPE_OPENAI_TEMPERATURE", "0.5")
    other = api_client.post(f"{url}estimate/", body, content_type="application/json").json()
    assert (other["cap_share"], other["cap_share_source"]) == (costs.CAP_SHARE, "default")
