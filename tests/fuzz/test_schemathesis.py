"""schemathesis against the REST API's OpenAPI document (/api/openapi.json): every documented
operation, with generated valid and invalid inputs, never answers 500 and answers only the status
codes and content types the document lists, with bodies that match its schemas."""

import dataclasses
import json

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from webapp.web.openapi import document

pytestmark = [pytest.mark.django_db, pytest.mark.services, pytest.mark.timeout(900)]

schema = schemathesis.openapi.from_dict(document())
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def test_the_served_document_is_the_one_tested(client):
    assert client.get("/api/openapi.json").json() == document()


@pytest.fixture
def app(team, settings):
    """Django's WSGI handler on the test database: as Django's test client does, requests must not
    close the connection that holds the test transaction."""
    settings.SWARMSCOPE_INGEST_RATE = 0  # the fuzzer sends many requests with one token
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield WSGIHandler()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def jobs_and_runs(team):
    """Objects for the runs and jobs operations to find (on SQLite their ids start at 1, which the
    fuzzer tries): in project A an external running run, a failed run of the app (resumable), a
    failed counterfactual job and done ones of both kinds with their attributions; in B a run.
    Nothing they enqueue runs: on_commit callbacks wait for the test transaction, which never commits."""
    from django.utils import timezone

    from webapp.counterfactuals.models import Attribution, CounterfactualJob
    from webapp.training import services as runs

    config = {"level": "tiny", "budget_steps": 600, "max_steps": 60, "episodes_per_iteration": 4, "group_size": 4}
    runs.do_create_run(team.a, config, name="external", external=True)
    runs.do_finish(runs.do_create_run(team.a, config, name="app run"), status="failed", error="worker lost")
    runs.do_create_run(team.b, config, external=True)
    job = {
        "trace": team.trace_a,
        "intervention": {"kind": "remove", "events": ["e5"]},
        "backend": "sim",
        "backend_path": "trainer.rollout.sim.SimRollout",
        "n_samples": 4,
        "heartbeat_at": timezone.now(),
    }
    CounterfactualJob.objects.create(**job, status=CounterfactualJob.FAILED, error="worker lost")
    for kind in (CounterfactualJob.COUNTERFACTUAL, CounterfactualJob.ATTRIBUTION):
        done = CounterfactualJob.objects.create(
            **job, kind=kind, status=CounterfactualJob.DONE, done_count=4, finished_at=timezone.now()
        )
        Attribution.objects.create(  # a copy of the team's attribution, credited to this job
            **{
                f.name: getattr(team.attribution_a, f.name)
                for f in Attribution._meta.fields
                if f.name not in ("id", "job")
            },
            job=done,
        )


@schema.parametrize()
def test_api_conforms_to_its_openapi_document(case, app, team, jobs_and_runs):
    case.call_and_validate(app=app, headers={"Authorization": f"Bearer {team.tokens['rev']}"}, checks=CHECKS)


def test_batches_document_edges_with_the_fields_the_parser_reads(app, team):
    """createTrace and appendEvents take `edges`: their bodies document the Edge object, and a
    trace created with one, as documented, conforms."""
    from swarmscope import model as core

    fields = [f.name for f in dataclasses.fields(core.Edge)]
    paths = document()["paths"]
    create = paths["/api/traces/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    append = paths["/api/traces/{trace_id}/events/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    for body in (create, append["oneOf"][1]):
        edge = body["properties"]["edges"]["items"]
        assert edge["required"] == fields and list(edge["properties"]) == fields
        assert edge["properties"]["type"]["enum"] == list(core.EDGE_TYPES)
    events = [{"id": f"e{i}", "t": float(i), "type": "message", "agent": "lead"} for i in (1, 2)]
    case = schema["/api/traces/"]["POST"].Case(
        body={"name": "with an edge", "events": events, "edges": [{"src": "e1", "dst": "e2", "type": "spawn"}]},
        media_type="application/json",
    )
    response = case.call_and_validate(app=app, headers={"Authorization": f"Bearer {team.tokens['rev']}"}, checks=CHECKS)
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    "path, body, status",
    [
        ("counterfactuals/", {"intervention": {"kind": "remove", "events": ["{pivotal}"]}, "n": 4}, 202),
        ("counterfactuals/estimate/", {"intervention": {"kind": "remove", "events": ["{pivotal}"]}, "n": 4}, 200),
        ("attributions/run/", {"method": "loo", "budget": 200, "players": "agents"}, 202),
        ("attributions/estimate/", {"method": "shapley", "budget": 400}, 200),
    ],
)
def test_job_requests_and_estimates_conform(app, team, path, body, status):
    """The fuzzer cannot guess a re-runnable trace and its event ids: valid requests on a SwarmSim
    trace, checked against the document as the fuzzer checks (their jobs never run: see above)."""
    from swarmscope import model as core
    from trainer.sim.suites import pivot12_case
    from webapp.traces import ingest

    sim = pivot12_case(0)
    trace = ingest.do_ingest(team.a, core.trace_from_dict(json.loads(json.dumps(sim.episode.trace.to_dict())))).trace
    pivotal = next(
        f"message:{sim.episode.actions[c].item}" for c, k in zip(sim.candidates, sim.kinds) if k == "pivotal"
    )
    case = schema[f"/api/traces/{{trace_id}}/{path}"]["POST"].Case(
        path_parameters={"trace_id": trace.pk},
        body=json.loads(json.dumps(body).replace("{pivotal}", pivotal)),
        media_type="application/json",
    )
    response = case.call_and_validate(app=app, headers={"Authorization": f"Bearer {team.tokens['rev']}"}, checks=CHECKS)
    assert response.status_code == status, response.text
