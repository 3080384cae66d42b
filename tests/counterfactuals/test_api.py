"""The counterfactual and attribution API: 202 jobs, validation errors, auth, foreign ids, CSV."""

import csv
import io
import json
from collections import Counter

import pytest

from webapp.accounts.services import (
    do_add_member,
    do_create_token,
    do_get_or_create_project,
)
from webapp.counterfactuals import services, tasks
from webapp.counterfactuals.models import CounterfactualJob
from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def post(client, url, body):
    return client.post(url, body, content_type="application/json")


def finish(job_id):
    job = CounterfactualJob.objects.get(pk=job_id)
    for start, stop in services._missing_chunks(job):
        tasks.run_counterfactual_chunk(job.pk, start, stop)


def test_request_then_read_the_job_and_its_attribution(api_client, sim_trace, pivotal, member):
    response = post(
        api_client,
        f"/api/traces/{sim_trace.pk}/counterfactuals/",
        {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 16, "backend": "sim", "seed": 3},
    )
    assert response.status_code == 202
    job = response.json()
    assert (job["status"], job["done"], job["total"], job["seed"]) == ("queued", 0, 16, 3)
    assert job["estimate"] is None  # SwarmSim costs no tokens: no estimate was confirmed
    finish(job["id"])
    done = api_client.get(f"/api/jobs/{job['id']}/").json()
    assert done["status"] == "done" and done["done"] == 16 and len(done["samples"]) == 16
    assert done["result"]["ci_low"] <= done["result"]["estimate"] <= done["result"]["ci_high"]
    api_client.force_login(member)
    assert api_client.get(done["compare_url"]).status_code == 200
    listed = api_client.get(f"/api/traces/{sim_trace.pk}/attributions/").json()["results"]
    assert [a["id"] for a in listed] == [done["result"]["id"]]
    response = api_client.get(f"/api/traces/{sim_trace.pk}/attributions/?format=csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert response["Content-Type"] == "text/csv" and rows[0]["target"] == f"event:{pivotal}"
    assert float(rows[0]["estimate"]) == pytest.approx(done["result"]["estimate"])


@pytest.mark.parametrize(
    "body, field",
    [
        ({"n": 8}, "intervention"),
        ({"intervention": {"kind": "remove", "events": ["nope"]}}, "intervention.events"),
        ({"intervention": {"kind": "replace", "events": ["x"]}}, "intervention.text"),
        ({"intervention": {"kind": "remove", "events": ["x"]}, "n": 100000}, "n"),
        ({"intervention": {"kind": "remove", "events": ["x"]}, "colour": "red"}, "colour"),
        ([1, 2], "body"),
    ],
)
def test_bad_requests_answer_400_naming_the_field(api_client, sim_trace, body, field):
    response = post(api_client, f"/api/traces/{sim_trace.pk}/counterfactuals/", body)
    assert response.status_code == 400 and response.json()["field"] == field


@pytest.mark.parametrize("backend", [{}, [], 3, None])
def test_an_estimate_with_a_backend_that_is_no_string_answers_400(api_client, sim_trace, pivotal, backend):
    """An unhashable backend (found by schemathesis) is refused by name, not looked up in a dict."""
    response = post(
        api_client,
        f"/api/traces/{sim_trace.pk}/counterfactuals/estimate/",
        {"intervention": {"kind": "remove", "events": [pivotal]}, "backend": backend},
    )
    assert response.status_code == 400 and response.json()["field"] == "backend"


@pytest.mark.parametrize(
    "change, field",
    [
        ({"epsilon": int("1" + "0" * 400)}, "epsilon"),  # beyond a float (float(epsilon) would raise)
        ({"intervention": {"kind": "replace", "events": ["{pivotal}"], "text": "a\x00b"}}, "intervention"),  # no U+0000
    ],
)
def test_unstorable_job_requests_answer_400(api_client, sim_trace, pivotal, change, field):
    body = {"intervention": {"kind": "remove", "events": [pivotal]}, **change}
    body = json.loads(json.dumps(body).replace("{pivotal}", pivotal))
    response = post(api_client, f"/api/traces/{sim_trace.pk}/counterfactuals/", body)
    assert response.status_code == 400 and response.json()["field"] == field
    assert not CounterfactualJob.objects.exists()


def test_cancel_and_retry(api_client, sim_trace, pivotal):
    job = post(
        api_client,
        f"/api/traces/{sim_trace.pk}/counterfactuals/",
        {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 8},
    ).json()
    assert post(api_client, f"/api/jobs/{job['id']}/cancel/", {}).json()["status"] == "cancelled"
    assert post(api_client, f"/api/jobs/{job['id']}/retry/", {}).json()["status"] == "queued"


def test_unauthenticated_401_and_foreign_ids_404(client, api_client, sim_trace, pivotal, django_user_model):
    job = post(
        api_client,
        f"/api/traces/{sim_trace.pk}/counterfactuals/",
        {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 8},
    ).json()
    assert client.get(f"/api/jobs/{job['id']}/", HTTP_AUTHORIZATION="").status_code == 401
    other = do_get_or_create_project("Other")
    bob = django_user_model.objects.create_user("bob", password="bob-password-1")
    do_add_member(other, bob, "admin")
    foreign = {"HTTP_AUTHORIZATION": f"Bearer {do_create_token(bob, other, 't')[1]}"}
    for url in (f"/api/jobs/{job['id']}/", f"/api/traces/{sim_trace.pk}/attributions/"):
        assert client.get(url, **foreign).status_code == 404
    for url in (f"/api/jobs/{job['id']}/cancel/", f"/api/traces/{sim_trace.pk}/counterfactuals/"):
        assert (
            client.post(
                url,
                {"intervention": {"kind": "remove", "events": [pivotal]}},
                content_type="application/json",
                **foreign,
            ).status_code
            == 404
        )
    assert Trace.objects.get(pk=sim_trace.pk).counterfactual_jobs.get().status == "queued"


def test_otlp_export_carries_the_attribution_and_the_branch_parent(api_client, sim_trace, pivotal):
    response = post(
        api_client,
        f"/api/traces/{sim_trace.pk}/counterfactuals/",
        {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 8, "backend": "sim", "seed": 5},
    )
    finish(response.json()["id"])
    job = CounterfactualJob.objects.get(pk=response.json()["id"])
    attribution = job.attribution

    exported = api_client.get(f"/api/traces/{sim_trace.pk}/export/otlp/")
    assert exported.status_code == 200 and "otlp.json" in exported["Content-Disposition"]
    (resource_spans,) = json.loads(b"".join(exported.streaming_content))["resourceSpans"]
    resource = {a["key"]: a["value"] for a in resource_spans["resource"]["attributes"]}
    (listed,) = json.loads(resource["swarmscope.attributions"]["stringValue"])
    assert listed["id"] == attribution.pk and listed["estimate"] == pytest.approx(attribution.estimate)
    spans = resource_spans["scopeSpans"][0]["spans"]
    target = next(
        s for s in spans if {"key": "swarmscope.event.id", "value": {"stringValue": pivotal}} in s["attributes"]
    )
    (span_event,) = target["events"]
    values = {a["key"]: next(iter(a["value"].values())) for a in span_event["attributes"]}
    assert span_event["name"] == "swarmscope.attribution"
    assert (values["ci_low"], values["ci_high"]) == (
        pytest.approx(attribution.ci_low),
        pytest.approx(attribution.ci_high),
    )

    branch = job.samples.get(index=0).branch_trace
    branch_doc = json.loads(b"".join(api_client.get(f"/api/traces/{branch.pk}/export/otlp/").streaming_content))
    branch_resource = {a["key"]: a["value"] for a in branch_doc["resourceSpans"][0]["resource"]["attributes"]}
    assert branch_resource["swarmscope.branch.of_trace"] == {"intValue": str(sim_trace.pk)}
    assert api_client.get(f"/api/traces/{sim_trace.pk + 999}/export/otlp/").status_code == 404


def test_an_agent_removal_attribution_lets_the_metrics_judge_free_riding(api_client, sim_trace):
    from webapp.traces.services import get_computed_metrics

    sim_trace.refresh_from_db()
    before = get_computed_metrics(sim_trace)
    assert before["failure_modes"]["free_riding"] is None and "free_riding" in before["unavailable"]
    counts = Counter(sim_trace.events.values_list("agent", flat=True))
    agent = max((a for a in counts if a not in before["orchestrators"]), key=lambda a: (counts[a], a))
    assert counts[agent] >= 0.05 * sum(counts.values())  # enough events to be judged (metrics.free_riders)
    response = post(
        api_client,
        f"/api/traces/{sim_trace.pk}/counterfactuals/",
        {"intervention": {"kind": "remove", "agents": [agent]}, "n": 8, "backend": "sim", "seed": 1},
    )
    assert response.status_code == 202, response.json()
    finish(response.json()["id"])
    attribution = CounterfactualJob.objects.get(pk=response.json()["id"]).attribution
    sim_trace.refresh_from_db()
    after = get_computed_metrics(sim_trace)
    assert "free_riding" not in after["unavailable"] and after["failure_modes"]["free_riding"] is not None
    # The rule of swarmscope.metrics.free_riders: the removal effect's interval contains 0.
    rides = attribution.ci_low <= 0 <= attribution.ci_high
    assert (agent in after["failure_modes"]["free_riders"]) == rides
