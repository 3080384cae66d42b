"""`Idempotency-Key` on `POST /api/traces/<id>/counterfactuals/`: a client retrying a job request
after a 500 or a timeout gets the first request's job, and no second job is created or enqueued."""

import json

import pytest

from webapp.counterfactuals import services
from webapp.counterfactuals.models import CounterfactualJob
from webapp.traces.models import IdempotencyKey

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def request_job(client, trace, body, key):
    return client.post(
        f"/api/traces/{trace.pk}/counterfactuals/",
        json.dumps(body),
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def test_a_retried_job_request_answers_the_first_job(api_client, sim_trace, pivotal, monkeypatch):
    enqueued = []
    monkeypatch.setattr(services, "_enqueue_missing", lambda job: enqueued.append(job.pk))
    body = {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 8, "backend": "sim", "seed": 1}
    first = request_job(api_client, sim_trace, body, "job-1")
    assert first.status_code == 202 and "Idempotent-Replayed" not in first
    again = request_job(api_client, sim_trace, body, "job-1")
    assert again.status_code == 202 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert CounterfactualJob.objects.count() == 1 and enqueued == [first.json()["id"]]
    other = request_job(api_client, sim_trace, {**body, "seed": 2}, "job-1")
    assert other.status_code == 422 and other.json()["field"] == "Idempotency-Key"
    assert request_job(api_client, sim_trace, body, "job-2").status_code == 202  # another call, another job
    assert CounterfactualJob.objects.count() == 2


def test_a_refused_job_request_leaves_its_key_free(api_client, sim_trace, pivotal):
    bad = {"intervention": {"kind": "remove", "events": ["nope"]}, "n": 8}
    refused = request_job(api_client, sim_trace, bad, "job-1")
    assert refused.status_code == 400 and refused.json()["field"] == "intervention.events"
    assert not IdempotencyKey.objects.exists()
    good = {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 8}
    assert request_job(api_client, sim_trace, good, "job-1").status_code == 202
    assert CounterfactualJob.objects.count() == 1
