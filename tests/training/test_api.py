"""Runs API (the contract external trainers report to): token auth, create, iterations, finish,
read; bad input gets a 400 naming the field and writes nothing; foreign runs are 404."""

from __future__ import annotations

import json

import pytest

from tests.training.conftest import TINY
from webapp.traces.models import Trace
from webapp.training.models import Run, RunIteration

pytestmark = pytest.mark.django_db


def post(client, url, body):
    return client.post(url, json.dumps(body) if not isinstance(body, bytes) else body, content_type="application/json")


def test_an_external_run_reports_iterations_and_finishes(api_client, iterations):
    created = post(api_client, "/api/runs/", {"name": "cluster run", "config": TINY})
    assert created.status_code == 201, created.content
    run = created.json()
    assert run["external"] and run["status"] == "running" and run["budget_steps"] == TINY["budget_steps"]
    for doc in iterations:
        answer = post(api_client, f"/api/runs/{run['id']}/iterations/", doc)
        assert answer.status_code == 201, answer.content
        assert len(answer.json()["episodes"]) == len(doc["episodes"])
    detail = api_client.get(f"/api/runs/{run['id']}/").json()
    assert detail["iterations"] == len(iterations) and detail["env_steps"] == iterations[-1]["env_steps"]
    assert detail["best_reward"] == max(d["metrics"]["reward"] for d in iterations)
    episode_id = api_client.get(f"/api/runs/{run['id']}/snapshot/").json()["iterations"][0]["episodes"][0]
    assert api_client.get(f"/api/traces/{episode_id}/").status_code == 200  # linked, readable as a trace
    finished = post(api_client, f"/api/runs/{run['id']}/finish/", {"summary": {"status": "finished"}})
    assert finished.status_code == 200 and finished.json()["status"] == "finished"
    late = post(api_client, f"/api/runs/{run['id']}/iterations/", iterations[0])
    assert late.status_code == 409 and late.json()["field"] == "status"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"config": {**TINY, "credit": "vibes"}}, "config.credit"),
        ({"config": {**TINY, "budget_steps": -5}}, "config.budget_steps"),
        ({"config": {**TINY, "budget_steps": 10**30}}, "config.budget_steps"),  # beyond 64 bits: no 500
        ({"config": {**TINY, "hidden": 10**9}}, "config.hidden"),  # a network no worker could hold
        ({"config": []}, "config"),
        ({"name": 7, "config": TINY}, "name"),
        (b"{not json", "body"),
    ],
)
def test_bad_run_requests_name_the_field(api_client, body, field):
    answer = post(api_client, "/api/runs/", body)
    assert answer.status_code == 400 and answer.json()["field"] == field, answer.content
    assert not Run.objects.exists()


def test_a_bad_iteration_is_refused_whole(api_client, iterations):
    run_id = post(api_client, "/api/runs/", {"config": TINY}).json()["id"]
    doc = iterations[0]
    doc["episodes"][0]["events"][3]["t"] = "later"  # the episode trace itself is invalid
    answer = post(api_client, f"/api/runs/{run_id}/iterations/", doc)
    assert answer.status_code == 400 and answer.json()["field"] == "episodes[0]", answer.content
    assert not RunIteration.objects.exists() and not Trace.objects.exists()
    doc = iterations[1]
    del doc["env_steps"]
    answer = post(api_client, f"/api/runs/{run_id}/iterations/", doc)
    assert answer.status_code == 400 and answer.json()["field"] == "env_steps"
    assert post(api_client, f"/api/runs/{run_id}/finish/", {"status": "exploded"}).json()["field"] == "status"
    assert Run.objects.get(pk=run_id).status == "running"


BIG = int("1" + "0" * 400)  # a JSON integer beyond a float's range


@pytest.mark.parametrize(
    "change, field",
    [
        ({"env_steps": 2**63}, "env_steps"),  # beyond the 64-bit column (the database would overflow)
        ({"budget_steps": 2**63}, "budget_steps"),
        ({"iteration": 2**31}, "iteration"),  # a 32-bit column on PostgreSQL
        ({"wall_s": BIG}, "wall_s"),  # beyond a float (math.isfinite would raise)
        ({"metrics": {"reward": BIG}}, "metrics.reward"),
        ({"stop": {"p_stop_by_step": [[1, BIG]]}}, "stop.p_stop_by_step[0][1]"),
        ({"metrics": {"reward": 1.0, "note": "a\x00b"}}, "metrics"),  # PostgreSQL cannot store U+0000
    ],
)
def test_iterations_too_large_or_unstorable_answer_400_naming_the_field(api_client, change, field):
    """Found by schemathesis and by probing its cases: these were 500s."""
    run_id = post(api_client, "/api/runs/", {"config": TINY}).json()["id"]
    answer = post(
        api_client,
        f"/api/runs/{run_id}/iterations/",
        {"iteration": 0, "env_steps": 10, "metrics": {"reward": 1.0}, **change},
    )
    assert answer.status_code == 400 and answer.json()["field"] == field, answer.content
    assert not RunIteration.objects.exists()


def test_a_nul_character_in_a_run_is_refused(api_client):
    assert post(api_client, "/api/runs/", {"name": "a\x00", "config": TINY}).json()["field"] == "name"
    run_id = post(api_client, "/api/runs/", {"config": TINY}).json()["id"]
    answer = post(api_client, f"/api/runs/{run_id}/finish/", {"error": "boom\x00"})
    assert answer.status_code == 400 and answer.json()["field"] == "error"
    assert Run.objects.get(pk=run_id).status == "running"


def test_tokens_see_only_their_project(api_client, iterations, django_user_model):
    from django.test import Client

    from webapp.accounts.services import (
        do_add_member,
        do_create_token,
        do_get_or_create_project,
    )

    client = Client()  # `api_client` is the test client with a token of the run's project

    run_id = post(api_client, "/api/runs/", {"config": TINY}).json()["id"]
    other = django_user_model.objects.create_user("mallory", password="mallory-password-1")
    elsewhere = do_get_or_create_project("Elsewhere")
    do_add_member(elsewhere, other, "admin")
    foreign = do_create_token(other, elsewhere, "t")[1]
    for url in (f"/api/runs/{run_id}/", f"/api/runs/{run_id}/snapshot/"):
        assert client.get(url, HTTP_AUTHORIZATION=f"Bearer {foreign}").status_code == 404
    assert (
        client.post(
            f"/api/runs/{run_id}/iterations/",
            json.dumps(iterations[0]),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {foreign}",
        ).status_code
        == 404
    )
    assert client.get(f"/api/runs/{run_id}/").status_code == 401
    assert client.get(f"/api/runs/{run_id}/", HTTP_AUTHORIZATION="Bearer ssk_nope").status_code == 401


def test_only_external_open_runs_take_iterations_and_finish(api_client, iterations, project):
    from webapp.training import services

    app_run = services.do_create_run(project, TINY)  # trained by the app's worker
    injected = post(api_client, f"/api/runs/{app_run.pk}/iterations/", iterations[0])
    assert injected.status_code == 409 and injected.json()["field"] == "run"
    finished = post(api_client, f"/api/runs/{app_run.pk}/finish/", {"status": "finished"})
    assert finished.status_code == 409 and Run.objects.get(pk=app_run.pk).status == Run.QUEUED
    external = post(api_client, "/api/runs/", {"config": TINY}).json()["id"]
    assert post(api_client, f"/api/runs/{external}/finish/", {"status": "failed", "error": "x"}).status_code == 200
    again = post(api_client, f"/api/runs/{external}/finish/", {"status": "finished"})
    assert again.status_code == 409 and again.json()["field"] == "status"
    assert Run.objects.get(pk=external).status == Run.FAILED and not RunIteration.objects.exists()


@pytest.mark.parametrize(
    "change, field",
    [
        ({"metrics": {"reward": 1.0, "custom": float("nan")}}, "metrics.custom"),  # a recipe's own entry
        ({"credit": {"by_role": {"solver": 0.5}, "extra": [1, float("inf")]}}, "credit.extra[1]"),
    ],
)
def test_non_finite_numbers_anywhere_in_an_iteration_are_refused(api_client, change, field):
    run_id = post(api_client, "/api/runs/", {"config": TINY}).json()["id"]
    answer = post(
        api_client,
        f"/api/runs/{run_id}/iterations/",
        {"iteration": 0, "env_steps": 10, "metrics": {"reward": 1.0}, **change},
    )
    assert answer.status_code == 400 and answer.json()["field"] == field, answer.content
    finish = post(api_client, f"/api/runs/{run_id}/finish/", {"summary": {"best": float("nan")}})
    assert finish.status_code == 400 and finish.json()["field"] == "summary.best"
    assert Run.objects.get(pk=run_id).status == "running" and not RunIteration.objects.exists()


def test_steps_never_go_back_and_a_replaced_iteration_recomputes_the_best_reward(api_client):
    run_id = post(api_client, "/api/runs/", {"config": TINY}).json()["id"]
    url = f"/api/runs/{run_id}/iterations/"
    assert post(api_client, url, {"iteration": 0, "env_steps": 100, "metrics": {"reward": 99.0}}).status_code == 201
    assert post(api_client, url, {"iteration": 1, "env_steps": 200, "metrics": {"reward": 0.5}}).status_code == 201
    back = post(api_client, url, {"iteration": 2, "env_steps": 150, "metrics": {"reward": 0.5}})
    assert back.status_code == 400 and back.json()["field"] == "env_steps" and "iteration 1" in back.json()["error"]
    # a resumed recipe re-sends iteration 0: its old reward no longer counts
    assert post(api_client, url, {"iteration": 0, "env_steps": 100, "metrics": {"reward": 0.2}}).status_code == 201
    assert api_client.get(f"/api/runs/{run_id}/").json()["best_reward"] == 0.5
    ahead = post(api_client, url, {"iteration": 0, "env_steps": 250, "metrics": {"reward": 0.2}})
    assert ahead.status_code == 400 and ahead.json()["field"] == "env_steps" and "iteration 1" in ahead.json()["error"]


def test_a_name_over_300_characters_is_refused(api_client):
    answer = post(api_client, "/api/runs/", {"name": "n" * 301, "config": TINY})
    assert answer.status_code == 400 and answer.json()["field"] == "name" and not Run.objects.exists()
