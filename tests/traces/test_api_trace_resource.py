"""The API's trace resource: `GET /api/traces/<id>/` carries the computed metrics (`metrics`; the
source's under `source_metrics`) and the cost, and a
streamed trace's rewards (a SwarmSim episode's, sent by trainer.sim.stream) are its reward in the
list and the API."""

import json

import jsonschema
import pytest

from trainer.sim.stream import trace_attributes
from trainer.sim.suites import pivot12_case
from webapp.traces import services
from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def post_json(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_the_trace_resource_has_its_computed_metrics_and_cost(api_client):
    created = post_json(
        api_client,
        "/api/traces/",
        {
            "name": "two calls",
            "events": [
                {"id": "a", "t": 0, "type": "message", "agent": "lead", "to": "worker", "content": "go",
                 "attributes": {"model": "gpt-4o", "input_tokens": 1000, "output_tokens": 100}},
                {"id": "b", "t": 1, "type": "tool_result", "agent": "worker", "tool": "fetch",
                 "attributes": {"status": "error"}},
            ],
        },
    )  # fmt: skip
    assert created.status_code == 201, created.content
    trace_id = created.json()["trace"]["id"]
    detail = api_client.get(f"/api/traces/{trace_id}/").json()
    assert detail["source_metrics"] == {}  # none given by the source
    assert detail["metrics"]["total_events"] == 2 and detail["metrics"]["total_steps"] == 2
    assert "computed_metrics" not in detail
    # the figures the trace page shows: the metrics the page's snapshot and socket carry
    assert detail["metrics"] == services.get_computed_metrics(Trace.objects.get(pk=trace_id))
    document = api_client.get("/api/openapi.json").json()
    schema = document["paths"]["/api/traces/{trace_id}/"]["get"]["responses"]["200"]["content"]["application/json"]
    jsonschema.validate(detail, schema["schema"])
    # ... and it requires both: a response without the source's metrics fails it
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({k: v for k, v in detail.items() if k != "source_metrics"}, schema["schema"])
    # gpt-4o at $2.50 / $10 per million input / output tokens
    assert detail["cost"] == {
        "usd": pytest.approx((1000 * 2.5 + 100 * 10) / 1e6),
        "estimated": False,
        "models": ["gpt-4o"],
        "unknown_models": [],
    }
    assert detail["error_count"] == 1
    empty = post_json(api_client, "/api/traces/", {"name": "nothing yet"}).json()["trace"]["id"]
    jsonschema.validate(api_client.get(f"/api/traces/{empty}/").json(), schema["schema"])  # metrics {}


def test_the_first_snapshot_of_a_trace_carries_its_cost(api_client):
    """The trace page's header shows the snapshot summary's cost: a trace whose facts no worker
    computed yet (an import without a worker) gets them with the snapshot's metrics."""
    body = {"name": "one call", "events": [{"id": "a", "t": 0, "type": "message", "agent": "lead",
            "attributes": {"model": "gpt-4o", "input_tokens": 1000, "output_tokens": 100}}]}  # fmt: skip
    created = post_json(api_client, "/api/traces/", body)
    assert created.status_code == 201, created.content
    trace_id = created.json()["trace"]["id"]
    Trace.objects.filter(pk=trace_id).update(cost_usd=None, model_names="", computed_metrics_seq=-1)
    summary = services.get_snapshot(Trace.objects.get(pk=trace_id))["trace"]
    assert summary["cost"]["usd"] == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)
    assert summary["cost"]["models"] == ["gpt-4o"]


@pytest.mark.parametrize("where", ["rewards", "attributes"])
def test_a_streamed_swarmsim_episode_shows_its_reward(api_client, client, member, where):
    """`rewards` in the create call (trainer.sim.stream now), or only in `attributes.rewards` (as
    it sent them before, and other senders may): the trace's reward either way."""
    episode = pivot12_case(0).episode
    body = {"name": "episode", "system": "swarmsim", "attributes": trace_attributes(episode)}
    if where == "rewards":
        body["rewards"] = episode.trace.rewards
    created = post_json(api_client, "/api/traces/", body)
    assert created.status_code == 201, created.content
    trace = created.json()["trace"]
    assert trace["rewards"] == episode.trace.rewards and trace["reward"] == pytest.approx(episode.reward)
    listed = api_client.get("/api/traces/").json()["results"]
    assert [t["reward"] for t in listed] == [pytest.approx(episode.reward)]
    client.defaults.pop("HTTP_AUTHORIZATION")
    client.force_login(member)
    page = client.get("/?kind=streamed").content.decode()
    assert f'data-col="reward">{episode.reward:.2f}</td>' in page
