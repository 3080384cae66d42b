""" "Attribute this trace": credit for every message of a pivot-12 SwarmSim trace, in chunks, through
the services and the task bodies (no broker), and its API."""

import pytest
from django.test import override_settings

from swarmscope.credit import (
    coalition_game,
    design_size,
    kernel_shap,
    leave_one_out,
    shapley_2additive,
    shapley_permutation,
)
from swarmscope.interventions import Intervention
from trainer.rollout.sim import SimRollout
from webapp.accounts.services import (
    do_add_member,
    do_create_token,
    do_get_or_create_project,
)
from webapp.counterfactuals import services, tasks
from webapp.counterfactuals.models import Attribution, CounterfactualJob
from webapp.counterfactuals.wire import job_wire

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def run_all(job):
    for start, stop in services._missing_chunks(job):
        tasks.run_counterfactual_chunk(job.pk, start, stop)
    job.refresh_from_db()
    return job


def game_of(case):
    rollout = SimRollout(case.episode)
    players = list(rollout.messages)
    return coalition_game(rollout, [Intervention("remove", (p,)) for p in players]), players


@override_settings(SWARMSCOPE_ROLLOUT_CHUNK=5)
def test_loo_ranks_the_pivotal_message_first_and_matches_the_estimator(sim_trace, pivotal, case):
    game, players = game_of(case)
    job = services.request_attribution(sim_trace, "loo", 64 * (len(players) + 1), seed=3)
    assert (job.kind, job.method, job.n_samples, job.players) == ("attribution", "loo", 64, players)
    job = run_all(job)
    assert job.status == "done" and job.done_count == 64
    expected = {
        a.target: a
        for a in leave_one_out(game, len(players), 64, first_seed=3, targets=[f"event:{p}" for p in players])
    }
    stored = list(Attribution.objects.filter(job=job))
    assert len(stored) == len(players)
    for a in stored:
        e = expected[a.target]
        assert (a.estimate, a.ci_low, a.ci_high) == pytest.approx((e.estimate, e.ci_low, e.ci_high))
        assert a.n_rollouts == 128 and a.method == "paired_loo" and a.seed == 3
        assert a.backend == "trainer.rollout.sim.SimRollout" and a.code_version
        assert set(a.environment) == {"task", "action_list", "sim_config", "seed"}
        assert a.intervention == {"kind": "remove", "events": [a.target.removeprefix("event:")]}
    wire = job_wire(job)
    assert wire["kind"] == "attribution" and wire["results"][0]["target"] == f"event:{pivotal}"
    assert [r["estimate"] for r in wire["results"]] == sorted((r["estimate"] for r in wire["results"]), reverse=True)


@pytest.mark.parametrize(
    "method, estimator, per_sample",
    [
        ("shapley", shapley_permutation, lambda p: 2 * p),
        ("kernelshap", kernel_shap, lambda p: 4),
        ("shapley2", shapley_2additive, lambda p: 2 * design_size(p)),
    ],
)
@override_settings(SWARMSCOPE_ROLLOUT_CHUNK=3)
def test_chunked_shapley_estimates_equal_the_one_shot_estimator(sim_trace, case, method, estimator, per_sample):
    game, players = game_of(case)
    job = run_all(services.request_attribution(sim_trace, method, 8 * per_sample(len(players)) + 1, seed=7))
    assert job.status == "done" and job.n_samples == 8
    expected = {
        a.target: a
        for a in estimator(
            game, len(players), 8, first_seed=7, sampling_seed=7, targets=[f"event:{p}" for p in players]
        )
    }
    for a in Attribution.objects.filter(job=job):
        e = expected[a.target]
        assert (a.estimate, a.ci_low, a.ci_high, a.n_rollouts, a.method) == (
            pytest.approx(e.estimate),
            pytest.approx(e.ci_low),
            pytest.approx(e.ci_high),
            e.n_rollouts,
            e.method,
        )


def test_a_redelivered_chunk_stores_nothing_twice(sim_trace):
    job = run_all(services.request_attribution(sim_trace, "loo", 13 * 4))
    assert tasks.run_counterfactual_chunk(job.pk, 0, 4) == 0
    assert Attribution.objects.filter(job=job).count() == 12 and job.samples.count() == 4


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"method": "vibes"}, "method"),
        ({"method": ["loo"]}, "method"),
        ({"budget": 13}, "budget"),
        ({"budget": "100"}, "budget"),
        ({"seed": -1}, "seed"),
        ({"backend": "gpt"}, "backend"),
    ],
)
def test_attribution_requests_that_cannot_run_name_their_field(sim_trace, kwargs, field):
    with pytest.raises(services.JobRequestError) as raised:
        services.request_attribution(sim_trace, **{"method": "loo", "budget": 100, **kwargs})
    assert raised.value.field == field and not CounterfactualJob.objects.exists()


def post(client, url, body, **extra):
    return client.post(url, body, content_type="application/json", **extra)


def test_the_api_runs_lists_and_exports_attributions(api_client, sim_trace, pivotal):
    url = f"/api/traces/{sim_trace.pk}/attributions/run/"
    response = post(api_client, url, {"method": "loo", "budget": 13 * 32, "seed": 0})
    assert response.status_code == 202
    job = response.json()
    assert (job["kind"], job["method"], job["total"], job["players"]) == ("attribution", "loo", 32, 12)
    run_all(CounterfactualJob.objects.get(pk=job["id"]))
    done = api_client.get(f"/api/jobs/{job['id']}/").json()
    assert done["status"] == "done" and done["results"][0]["target"] == f"event:{pivotal}"
    listed = api_client.get(f"/api/traces/{sim_trace.pk}/attributions/?format=json").json()["results"]
    assert len(listed) == 12
    csv = api_client.get(f"/api/traces/{sim_trace.pk}/attributions/?format=csv").content.decode()
    assert csv.count("\n") == 13 and "paired_loo" in csv


@pytest.mark.parametrize(
    "body, field",
    [
        ({"method": "bogus", "budget": 100}, "method"),
        ({"budget": 100}, "method"),
        ({"method": "loo"}, "budget"),
        ({"method": "loo", "budget": 100, "colour": 1}, "colour"),
        ({"method": "loo", "budget": 2}, "budget"),
        ([1], "body"),
    ],
)
def test_bad_attribution_requests_answer_400(api_client, sim_trace, body, field):
    response = post(api_client, f"/api/traces/{sim_trace.pk}/attributions/run/", body)
    assert response.status_code == 400 and response.json()["field"] == field


def test_attribution_run_needs_auth_and_hides_foreign_traces(client, sim_trace, django_user_model):
    url = f"/api/traces/{sim_trace.pk}/attributions/run/"
    assert post(client, url, {"method": "loo", "budget": 100}, HTTP_AUTHORIZATION="").status_code == 401
    other = do_get_or_create_project("Other")
    bob = django_user_model.objects.create_user("bob", password="bob-password-1")
    do_add_member(other, bob, "admin")
    foreign = {"HTTP_AUTHORIZATION": f"Bearer {do_create_token(bob, other, 't')[1]}"}
    assert post(client, url, {"method": "loo", "budget": 100}, **foreign).status_code == 404
    assert not CounterfactualJob.objects.exists()
