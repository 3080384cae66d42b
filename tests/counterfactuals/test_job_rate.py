"""Counterfactual and attribution jobs count their samples against the job rate of the user and
of the project (issue 33): 25 jobs of N = 4,096 no longer go through in a minute."""

import pytest
from django.core.cache import cache

from webapp.counterfactuals.models import CounterfactualJob

pytestmark = [pytest.mark.django_db, pytest.mark.services]


@pytest.fixture(autouse=True)
def fresh_counters():
    cache.clear()
    yield
    cache.clear()


def test_jobs_count_their_samples_and_a_refused_one_is_not_stored(api_client, sim_trace, pivotal, settings):
    settings.SWARMSCOPE_JOB_SAMPLES_RATE, settings.SWARMSCOPE_JOB_SAMPLES_RATE_PROJECT = 40, 1000
    url = f"/api/traces/{sim_trace.pk}/counterfactuals/"
    body = {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 32, "backend": "sim"}
    assert api_client.post(url, body, content_type="application/json").status_code == 202  # 32 of 40
    refused = api_client.post(url, {**body, "n": 16}, content_type="application/json")  # 48: over
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    error = refused.json()["error"]
    assert "over the job rate of 40 samples" in error and "SWARMSCOPE_JOB_SAMPLES_RATE" in error
    assert CounterfactualJob.objects.count() == 1
