"""Viewers only read, everywhere: every write path (traces, events, uploads, OTLP, counterfactual and
attribution jobs, job cancel/retry, runs from the API and the pages) answers a viewer of the project
403 naming the role needed and writes nothing; a reviewer of the same project may do each; a
viewer's pages show those controls disabled. Foreign objects still answer 404, not 403."""

import json

import pytest

from swarmscope import model as core
from trainer.sim.suites import pivot12_case
from webapp.counterfactuals.models import CounterfactualJob
from webapp.traces import ingest as traces
from webapp.traces.models import Event, Trace
from webapp.training import services as runs
from webapp.training.models import Run

pytestmark = [pytest.mark.django_db, pytest.mark.services]

TINY_RUN = {
    "level": "tiny",
    "algorithm": "ppo",
    "credit": "shared",
    "stop": "learned",
    "budget_steps": 600,
    "max_steps": 60,
    "episodes_per_iteration": 4,
    "group_size": 4,
    "seed": 0,
}
RUN_FORM = {
    "name": "",
    "level": "tiny",
    "algorithm": "ppo",
    "credit": "shared",
    "stop": "learned",
    "w_success": 1,
    "w_parallelism": 0.1,
    "w_finish": 0.1,
    "w_critical_steps": 0.001,
    "budget_steps": 300,
    "seed": 0,
}


def post(client, url, doc=None, **extra):
    return client.post(url, data=json.dumps(doc if doc is not None else {}), content_type="application/json", **extra)


def assert_refused(response, role_word="reviewer"):
    """A 403 whose message names the role needed (JSON from the API, the 403 page from pages)."""
    assert response.status_code == 403, response.content[:300]
    text = (
        response.json().get("error") or response.json()["message"]  # OTLP answers a google.rpc.Status
        if response["Content-Type"].startswith("application/json")
        else response.content.decode()
    )
    assert role_word in text and "viewer" in text, text


@pytest.fixture(scope="module")
def case():
    return pivot12_case(0)


@pytest.fixture
def sim_trace(team, case):
    """A SwarmSim trace in project A (re-runnable by the sim backend) and its pivotal message."""
    document = json.loads(json.dumps(case.episode.trace.to_dict()))
    trace = traces.do_ingest(team.a, core.trace_from_dict(document)).trace
    pivotal = next(
        f"message:{case.episode.actions[c].item}" for c, k in zip(case.candidates, case.kinds) if k == "pivotal"
    )
    return trace, pivotal


def state(team):
    """Everything a write could change: traces, events, jobs, runs (counts and statuses)."""
    return (
        Trace.objects.count(),
        Event.objects.count(),
        sorted(CounterfactualJob.objects.values_list("pk", "status")),
        sorted(Run.objects.values_list("pk", "status")),
    )


def test_trace_ingestion_needs_the_reviewer_role(team, fixtures):
    vic, rev = team.client("vic"), team.client("rev")
    ta = team.trace_a.pk
    event = [{"id": "x1", "t": 9.0, "type": "message", "agent": "adder"}]
    otlp = (fixtures / "otlp_genai_small.json").read_bytes()
    jaeger = (fixtures / "jaeger_small.json").read_bytes()
    before = state(team)
    assert_refused(post(vic, "/api/traces/", {"name": "viewer's trace"}))
    assert_refused(post(vic, f"/api/traces/{ta}/events/", event))
    assert_refused(vic.post("/api/traces/upload/?filename=t.json", data=jaeger, content_type="application/json"))
    assert_refused(vic.post("/v1/traces", data=otlp, content_type="application/json"))
    assert state(team) == before
    # The same requests from a reviewer of the project go through, into project A.
    assert post(rev, "/api/traces/", {"name": "reviewer's trace"}).status_code == 201
    assert post(rev, f"/api/traces/{ta}/events/", event).status_code == 200
    assert Event.objects.filter(trace_id=ta, event_id="x1").exists()
    assert rev.post("/v1/traces", data=otlp, content_type="application/json").status_code == 200
    assert Trace.objects.filter(project=team.a, source_format__icontains="otlp").exists()
    assert (
        rev.post("/api/traces/upload/?filename=t.json", data=jaeger, content_type="application/json").status_code == 200
    )
    assert Trace.objects.filter(project=team.a, source_format__icontains="jaeger").exists()


def test_counterfactual_and_attribution_jobs_need_the_reviewer_role(team, sim_trace):
    trace, pivotal = sim_trace
    vic, rev = team.client("vic"), team.client("rev")
    what_if = {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 8, "backend": "sim"}
    attribute = {"method": "loo", "budget": 13 * 8, "backend": "sim"}
    before = state(team)
    assert_refused(post(vic, f"/api/traces/{trace.pk}/counterfactuals/", what_if))
    assert_refused(post(vic, f"/api/traces/{trace.pk}/attributions/run/", attribute))
    assert state(team) == before
    # Estimating the cost writes nothing, so viewers may.
    assert post(vic, f"/api/traces/{trace.pk}/counterfactuals/estimate/", what_if).status_code == 200
    job = post(rev, f"/api/traces/{trace.pk}/counterfactuals/", what_if)
    assert job.status_code == 202
    assert post(rev, f"/api/traces/{trace.pk}/attributions/run/", attribute).status_code == 202
    job_id = job.json()["id"]
    # Cancelling and retrying: refused to the viewer (the job is untouched), done by the reviewer.
    assert_refused(post(vic, f"/api/jobs/{job_id}/cancel/"))
    assert CounterfactualJob.objects.get(pk=job_id).status == "queued"
    assert vic.get(f"/api/jobs/{job_id}/").status_code == 200  # reading stays open to viewers
    assert post(rev, f"/api/jobs/{job_id}/cancel/").json()["status"] == "cancelled"
    assert_refused(post(vic, f"/api/jobs/{job_id}/retry/"))
    assert CounterfactualJob.objects.get(pk=job_id).status == "cancelled"
    assert post(rev, f"/api/jobs/{job_id}/retry/").json()["status"] == "queued"


def test_runs_api_needs_the_reviewer_role(team):
    vic, rev = team.client("vic"), team.client("rev")
    run = runs.do_create_run(team.a, TINY_RUN, name="admin's run", external=True)
    before = state(team)
    assert_refused(post(vic, "/api/runs/", {"name": "viewer's run", "config": TINY_RUN}))
    assert_refused(post(vic, f"/api/runs/{run.pk}/iterations/", {"iteration": 0}))
    assert_refused(post(vic, f"/api/runs/{run.pk}/finish/", {"status": "finished"}))
    assert_refused(post(vic, f"/api/runs/{run.pk}/cancel/"))
    assert_refused(post(vic, f"/api/runs/{run.pk}/resume/"))
    assert state(team) == before and Run.objects.get(pk=run.pk).status == run.status
    assert vic.get(f"/api/runs/{run.pk}/").status_code == 200
    assert post(rev, "/api/runs/", {"name": "reviewer's run", "config": TINY_RUN}).status_code == 201
    assert post(rev, f"/api/runs/{run.pk}/cancel/").status_code == 200
    assert Run.objects.get(pk=run.pk).status in ("cancelling", "cancelled")


def test_a_viewer_gets_404_not_403_for_foreign_and_unknown_objects(team):
    vic = team.client("vic")
    run_b = runs.do_create_run(team.b, TINY_RUN, name="B's run", external=True)
    for url in (
        f"/api/runs/{run_b.pk}/cancel/",
        "/api/runs/987654/cancel/",
        f"/api/traces/{team.trace_b.pk}/events/",
        f"/api/traces/{team.trace_b.pk}/counterfactuals/",
        "/api/jobs/987654/cancel/",
    ):
        assert post(vic, url, []).status_code == 404, url


def test_run_pages_refuse_a_viewer_and_let_a_reviewer(team, client):
    run = runs.do_create_run(team.a, TINY_RUN, name="admin's run", external=True)
    client.force_login(team.users["vic"])
    before = state(team)
    assert_refused(client.post("/runs/new/", RUN_FORM))
    assert_refused(client.post(f"/runs/{run.pk}/cancel/"))
    assert_refused(client.post(f"/runs/{run.pk}/resume/"))
    assert state(team) == before
    # The viewer's pages show the write controls disabled, with the reason as tooltip.
    listing = client.get("/runs/").content.decode()
    assert 'data-testid="new-run" disabled title="Viewers only read' in listing and 'href="/runs/new/"' not in listing
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'data-can-write="false"' in page
    assert 'data-testid="cancel-run" disabled title="Viewers only read' in page
    new = client.get("/runs/new/").content.decode()
    assert 'data-testid="read-only"' in new and 'data-testid="start-run" disabled' in new
    run_b = runs.do_create_run(team.b, TINY_RUN, name="B's run", external=True)
    assert client.post(f"/runs/{run_b.pk}/cancel/").status_code == 404  # foreign: 404, as for an unknown id

    client.force_login(team.users["rev"])
    listing = client.get("/runs/").content.decode()
    assert 'href="/runs/new/" data-testid="new-run"' in listing
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'data-can-write="true"' in page and 'data-testid="cancel-run" disabled' not in page
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 302
    assert Run.objects.get(pk=run.pk).status in ("cancelling", "cancelled")
    response = client.post("/runs/new/", RUN_FORM)  # the training task is enqueued on commit
    assert response.status_code == 302 and Run.objects.filter(project=team.a, external=False).count() == 1


def test_trace_and_upload_pages_for_a_viewer_and_a_reviewer(team, client, fixtures):
    client.force_login(team.users["vic"])
    page = client.get(f"/traces/{team.trace_a.pk}/").content.decode()
    assert 'data-can-write="false"' in page and 'data-read-only-hint="Viewers only read' in page
    assert 'aria-controls="attribution-panel" disabled title="Viewers only read' in page
    upload = client.get("/upload/").content.decode()
    assert 'data-testid="read-only"' in upload and 'data-testid="upload-import" disabled' in upload
    before = state(team)
    with (fixtures / "jaeger_small.json").open("rb") as f:
        assert_refused(client.post("/upload/", {"file": f}))
    assert state(team) == before

    client.force_login(team.users["rev"])
    page = client.get(f"/traces/{team.trace_a.pk}/").content.decode()
    # A reviewer may write: the action is not refused for the role (this trace is no SwarmSim episode
    # and no LLM endpoint is set, so it is off for that reason, said in the page's note).
    assert 'data-can-write="true"' in page and 'disabled title="Viewers only read' not in page
    assert 'aria-controls="attribution-panel" disabled aria-describedby="actions-unavailable"' in page
    assert 'data-testid="read-only"' not in client.get("/upload/").content.decode()
    with (fixtures / "jaeger_small.json").open("rb") as f:
        assert client.post("/upload/", {"file": f}).status_code == 200
    assert Trace.objects.filter(project=team.a, source_format__icontains="jaeger").exists()


def test_a_session_viewer_in_one_project_writes_into_the_project_where_they_review(team, django_user_model):
    """The session's write project is the first where the user may write, not simply the first one."""
    from django.test import Client

    from webapp.accounts.services import do_add_member

    both = django_user_model.objects.create_user("both", password="both-password-1")
    do_add_member(team.a, both, "viewer")
    do_add_member(team.b, both, "reviewer")
    client = Client()
    client.force_login(both)
    created = post(client, "/api/traces/", {"name": "into B"})
    assert created.status_code == 201
    assert Trace.objects.get(pk=created.json()["trace"]["id"]).project == team.b
