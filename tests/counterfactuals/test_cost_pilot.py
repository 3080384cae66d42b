"""The cost pilot of a first what-if job on a trace (webapp.counterfactuals.pilot): the estimate
endpoint sends the job's own first samples on FakeOpenAIServer (a scripted local fake endpoint, the
boundary: a real model's turn lengths are measured by bench/bench_cost_live.py and the live_llm
tests), and its shares replace the prior; its failures and its state while it runs are said, never
raised."""

import json
import time

import pytest
from django.core.cache import cache
from django.test import override_settings
from django.utils import timezone

from tests.counterfactuals.test_llm_cost_estimate import long_turns
from tests.counterfactuals.test_openai_backend import BACKENDS, run_all
from tests.fake_openai import FakeOpenAIServer
from tests.trainer.rollout.test_openai import answer, make_trace
from webapp.counterfactuals import costs, pilot, tasks
from webapp.counterfactuals.models import CounterfactualJob
from webapp.traces.ingest import do_ingest

pytestmark = [pytest.mark.django_db, pytest.mark.services]

BODY = {"intervention": {"kind": "remove", "events": ["h1"]}, "n": 8, "backend": "openai", "seed": 5}


@pytest.fixture(autouse=True)
def pilot_runs_inline(monkeypatch):
    """The pilot's task runs when it is enqueued, as under eager Celery (the SQLite stage) and unlike
    a worker-less broker (the PostgreSQL + Redis stage); its keys hold the fake server's port, so
    tests sharing a Redis cache do not meet."""

    def run(name, *args, queue=None):
        tasks.run_cost_pilot(*args)
        return True

    monkeypatch.setattr(pilot, "enqueue", run)


@pytest.fixture
def fake(monkeypatch):
    with FakeOpenAIServer(answer) as server:
        monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "fake-model")
        monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_TOKENS", "16")
        monkeypatch.setenv("SWARMSCOPE_OPENAI_TIMEOUT_S", "5")
        monkeypatch.setenv("SWARMSCOPE_OPENAI_RETRY_BASE_S", "0.01")
        yield server


def estimate(api_client, trace, body=BODY):
    response = api_client.post(
        f"/api/traces/{trace.pk}/counterfactuals/estimate/", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200, response.json()
    return response.json()


def confirm(api_client, trace):
    body = json.dumps({**BODY, "confirmed": True})
    return api_client.post(f"/api/traces/{trace.pk}/counterfactuals/", body, content_type="application/json")


def per_sample(bodies):
    """The n = 1 turn requests (a sample's later turns) as (seed, messages)."""
    return {(b["seed"], json.dumps(b["messages"])) for b in bodies if b["n"] == 1}


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=4, SWARMSCOPE_COST_PILOT_SAMPLES=2)
def test_a_first_job_is_estimated_from_a_pilot_of_its_own_samples(api_client, project, fake):
    trace = do_ingest(project, make_trace()).trace
    prior = costs.estimate_cost(trace, BODY["intervention"], 8, "openai")  # no pilot: the default share
    assert prior["cap_share_source"] == "default" and prior["pilot"] is None
    fake.answer = long_turns  # every turn runs to its 16-token cap: a share of 1, not the default 0.35
    first = estimate(api_client, trace)  # eager Celery: the pilot ran inside the request
    shown = first["pilot"]
    assert shown["status"] == "done" and shown["samples"] == 2 and shown["requests"] == len(fake.requests) > 0
    assert shown["completion_tokens"] > 0 and shown["turns"] > 0
    assert (first["cap_share"], first["cap_share_source"]) == (1.0, "measured by this job's pilot")
    assert first["completion_tokens"] == first["at_cap"]["completion_tokens"] > prior["completion_tokens"]
    pilot_requests = list(fake.requests)

    # Asked again (the dialog's poll, or the confirmed job's own estimate): the same pilot, nothing sent.
    again = estimate(api_client, trace)
    assert again["pilot"]["status"] == "done" and len(fake.requests) == len(pilot_requests)
    other = estimate(api_client, trace, {**BODY, "seed": 100})  # another seed is another job: another pilot
    assert other["pilot"]["status"] == "done" and per_sample(fake.requests[len(pilot_requests) :])
    del fake.requests[len(pilot_requests) :]
    response = confirm(api_client, trace)
    assert response.status_code == 202, response.json()
    job = run_all(CounterfactualJob.objects.get(pk=response.json()["id"]))
    assert job.status == "done", job.error
    assert job.estimate["cap_share"] == 1.0 and job.estimate["completion_tokens"] == job.usage["completion_tokens"]
    # The pilot's samples are the job's samples 0 and 1: their later turns are the job's requests.
    job_requests = fake.requests[len(pilot_requests) :]
    assert per_sample(pilot_requests) and per_sample(pilot_requests) <= per_sample(job_requests)
    assert {b["seed"] for b in pilot_requests if b["n"] > 1} == {BODY["seed"]}

    assert job.usage["requests"] == job.estimate["requests"] == len(job_requests)  # P is not a chunk: not taken

    # Now the trace's own finished job says how far the model's turns run: no pilot for the next job.
    after = estimate(api_client, trace, {**BODY, "seed": 200})
    assert after["pilot"] is None and "on this trace" in after["cap_share_source"]


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=4, SWARMSCOPE_COST_PILOT_SAMPLES=4)
def test_the_job_takes_a_pilot_of_one_chunk_as_its_first_chunk(api_client, project, fake):
    trace = do_ingest(project, make_trace()).trace
    fake.answer = long_turns
    first = estimate(api_client, trace)
    assert first["pilot"]["status"] == "done" and first["pilot"]["samples"] == 4
    sent_by_pilot = len(fake.requests)
    response = confirm(api_client, trace)
    job = run_all(CounterfactualJob.objects.get(pk=response.json()["id"]))
    assert job.status == "done" and job.done_count == 8, job.error
    # Chunk 0 is the pilot's: not sent again, counted in the job's usage; what the job sent is as estimated.
    assert job.usage["requests"] == job.estimate["requests"] == len(fake.requests)
    assert job.usage["completion_tokens"] == job.estimate["completion_tokens"]
    again = per_sample(fake.requests[sent_by_pilot:])
    assert per_sample(fake.requests[:sent_by_pilot]) - again  # samples 1-3: only the pilot sent them
    assert sorted(job.samples.values_list("index", "seed"))[:4] == [(i, BODY["seed"] + i) for i in range(4)]
    # One job takes it: the next estimate at the same seed is calibrated on the finished job instead.
    assert estimate(api_client, trace)["pilot"] is None


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_COST_PILOT_SAMPLES=2)
def test_no_pilot_where_the_traces_jobs_or_the_setting_say_or_the_job_is_no_bigger(
    api_client, project, fake, monkeypatch
):
    trace = do_ingest(project, make_trace()).trace
    assert estimate(api_client, trace, {**BODY, "n": 2})["pilot"] is None  # the pilot would be the whole job
    monkeypatch.setenv("SWARMSCOPE_OPENAI_CAP_SHARE", "0.5")
    assert estimate(api_client, trace)["pilot"] is None
    monkeypatch.delenv("SWARMSCOPE_OPENAI_CAP_SHARE")
    with override_settings(SWARMSCOPE_COST_PILOT_SAMPLES=0):
        assert estimate(api_client, trace)["pilot"] is None
    assert not fake.requests
    for _ in range(2):  # finished jobs on the trace hold enough turns: they say, not a pilot
        CounterfactualJob.objects.create(
            trace=trace,
            intervention={"kind": "remove"},
            backend="openai",
            n_samples=8,
            done_count=8,
            status="done",
            heartbeat_at=timezone.now(),
            finished_at=timezone.now(),
            estimate={
                "model": "fake-model",
                "temperature": 1.0,
                "turn_max_tokens": 16,
                "turn_completions": 10,
                "recorded_length": {"prompt_tokens": 100, "completion_tokens": 100},
                "at_cap": {"prompt_tokens": 200, "completion_tokens": 300},
            },
            usage={"prompt_tokens": 150, "completion_tokens": 200},
        )
    answered = estimate(api_client, trace)
    assert answered["pilot"] is None and "on this trace" in answered["cap_share_source"]
    assert answered["cap_share"] == 0.5 and not fake.requests


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_COST_PILOT_SAMPLES=2)
def test_a_failed_pilot_says_why_and_the_estimate_falls_back(api_client, project, fake, monkeypatch):
    monkeypatch.setattr(pilot, "FAILED_S", 3600)
    trace = do_ingest(project, make_trace()).trace
    fake.status = 400  # the server refuses every completion
    first = estimate(api_client, trace)
    assert first["pilot"]["status"] == "failed" and "400" in first["pilot"]["reason"]
    assert first["cap_share_source"] == "default" and first["completion_tokens"] > 0
    sent = len(fake.requests)
    assert estimate(api_client, trace)["pilot"]["status"] == "failed" and len(fake.requests) == sent  # no retry storm
    fake.status = None  # the server is back: once the failure is FAILED_S old, the next estimate tries again
    monkeypatch.setattr(pilot, "FAILED_S", 0)
    assert estimate(api_client, trace)["pilot"]["status"] == "done"


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_COST_PILOT_SAMPLES=2)
def test_while_the_pilot_waits_the_estimate_says_so_and_a_lost_one_starts_again(api_client, project, fake, monkeypatch):
    trace = do_ingest(project, make_trace()).trace
    started = []
    monkeypatch.setattr(pilot, "enqueue", lambda *args, **kwargs: started.append(args) or True)  # a busy worker
    queued = estimate(api_client, trace)
    assert queued["pilot"]["status"] == "queued" and queued["pilot"]["samples"] == 2
    assert queued["cap_share_source"] == "default" and len(started) == 1
    estimate(api_client, trace)
    assert len(started) == 1  # one pilot per job, however often it is asked
    key = started[0][1]
    cache.set(key, {**cache.get(key), "started": time.time() - pilot.RUNNING_S - 1})  # its worker died
    assert estimate(api_client, trace)["pilot"]["status"] == "queued" and len(started) == 2
    # A job of the model queued or running on the trace will say how far its turns run: no pilot meanwhile.
    cache.delete(key)
    assert confirm(api_client, trace).status_code == 202
    assert estimate(api_client, trace, {**BODY, "seed": 9})["pilot"] is None and len(started) == 2


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_COST_PILOT_SAMPLES=2)
def test_a_viewer_sees_the_estimate_but_starts_no_pilot(client, project, fake, django_user_model):
    from webapp.accounts.services import do_add_member, do_create_token

    trace = do_ingest(project, make_trace()).trace
    viewer = django_user_model.objects.create_user("vic", password="vic-password-1")
    do_add_member(project, viewer, "viewer")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {do_create_token(viewer, project, 'tests')[1]}"
    seen = estimate(client, trace)  # a pilot spends tokens: a write the viewer's role does not allow
    assert seen["pilot"] is None and seen["cap_share_source"] == "default" and not fake.requests
