"""Credit per agent, the trace's job history, several targets in one intervention, and the cost
estimate and confirmation of LLM jobs (services and API)."""

import pytest
from django.test import override_settings

from swarmscope.credit import coalition_game, leave_one_out, paired_effect
from swarmscope.interventions import Intervention
from swarmscope.model import Agent, Event, Trace
from trainer.rollout.llm_plan import START_TEXT
from trainer.rollout.sim import SimRollout
from webapp.config.celery import app
from webapp.counterfactuals import costs, services, tasks
from webapp.counterfactuals.models import Attribution, CounterfactualJob
from webapp.counterfactuals.wire import job_wire
from webapp.traces.ingest import do_ingest

pytestmark = [pytest.mark.django_db, pytest.mark.services]

BACKENDS = {"sim": "trainer.rollout.sim.SimRollout", "openai": "trainer.rollout.openai.OpenAIRollout"}


def post(client, url, body):
    return client.post(url, body, content_type="application/json")


def run_all(job):
    for start, stop in services._missing_chunks(job):
        tasks.run_counterfactual_chunk(job.pk, start, stop)
    job.refresh_from_db()
    return job


@pytest.fixture
def eager_celery():
    """Chunks run through Celery's eager mode (the task as the worker calls it), also where
    REDIS_URL points Celery at a broker; real workers are tested in test_celery_worker."""
    previous = app.conf.task_always_eager
    app.conf.update(task_always_eager=True)
    yield
    app.conf.update(task_always_eager=previous)


# --- credit per agent --------------------------------------------------------------------------


@override_settings(SWARMSCOPE_ROLLOUT_CHUNK=5)
def test_agent_players_credit_each_agent_removed_with_all_its_events(
    sim_trace, case, eager_celery, django_capture_on_commit_callbacks
):
    agents = list(dict.fromkeys(e.agent for e in case.episode.trace.events if e.type == "message"))
    assert len(agents) >= 2 and "orchestrator" not in agents
    with django_capture_on_commit_callbacks(execute=True):
        job = services.request_attribution(sim_trace, "loo", 16 * (len(agents) + 1), seed=2, players="agents")
    job.refresh_from_db()
    assert job.status == "done", job.error
    assert (job.player_kind, job.players, job.n_samples, job.done_count) == ("agents", agents, 16, 16)
    game = coalition_game(SimRollout(case.episode), [Intervention("remove", agents=(a,)) for a in agents])
    expected = {
        a.target: a for a in leave_one_out(game, len(agents), 16, first_seed=2, targets=[f"agent:{a}" for a in agents])
    }
    stored = {a.target: a for a in Attribution.objects.filter(job=job)}
    assert set(stored) == set(expected) == {f"agent:{a}" for a in agents}
    for target, a in stored.items():
        e = expected[target]
        assert (a.estimate, a.ci_low, a.ci_high) == pytest.approx((e.estimate, e.ci_low, e.ci_high))
        assert a.intervention == {"kind": "remove", "agents": [target.removeprefix("agent:")]}
        assert a.method == "paired_loo" and a.n_rollouts == 32
    # Each agent's credit is that of removing it alone, as a single counterfactual job measures it.
    one = agents[0]
    alone = paired_effect(SimRollout(case.episode), Intervention("remove", agents=(one,)), 16, 2)
    assert stored[f"agent:{one}"].estimate == pytest.approx(alone.estimate)
    wire = job_wire(job)
    assert wire["player_kind"] == "agents" and wire["players"] == len(agents)
    assert [r["estimate"] for r in wire["results"]] == sorted((r["estimate"] for r in wire["results"]), reverse=True)


def test_agent_players_through_the_api_and_bad_player_kinds(api_client, sim_trace):
    url = f"/api/traces/{sim_trace.pk}/attributions/run/"
    response = post(api_client, url, {"method": "loo", "budget": 4 * 8, "players": "agents"})
    assert response.status_code == 202
    job = response.json()
    assert (job["player_kind"], job["players"], job["total"]) == ("agents", 3, 8)
    run_all(CounterfactualJob.objects.get(pk=job["id"]))
    done = api_client.get(f"/api/jobs/{job['id']}/").json()
    assert done["status"] == "done" and all(r["target"].startswith("agent:") for r in done["results"])
    for players in ("events", ["agents"], None):
        response = post(api_client, url, {"method": "loo", "budget": 100, "players": players})
        assert response.status_code == 400 and response.json()["field"] == "players"


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
def test_a_trace_with_one_messaging_agent_cannot_be_attributed_per_agent(project, monkeypatch):
    monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # configured, never called
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "some-model")
    events = [Event("m1", 0.0, "message", "a", to="b", content="x"), Event("m2", 1.0, "message", "a", to="b")]
    trace = do_ingest(project, Trace("native", "one-sender", events=events, agents=[Agent("a"), Agent("b")])).trace
    with pytest.raises(services.JobRequestError) as raised:
        services.request_attribution(trace, "loo", 100, players="agents", backend="openai")
    assert raised.value.field == "players" and "2 agents" in raised.value.message


# --- several targets ---------------------------------------------------------------------------


def test_two_messages_removed_together_are_one_intervention(api_client, sim_trace, case, pivotal):
    other = next(e.id for e in case.episode.trace.events if e.type == "message" and e.id != pivotal)
    response = post(
        api_client,
        f"/api/traces/{sim_trace.pk}/counterfactuals/",
        {"intervention": {"kind": "remove", "events": [pivotal, other]}, "n": 8, "seed": 1},
    )
    assert response.status_code == 202
    run_all(CounterfactualJob.objects.get(pk=response.json()["id"]))
    done = api_client.get(f"/api/jobs/{response.json()['id']}/").json()
    assert done["result"]["target"] == f"event:{pivotal}, event:{other}"
    both = paired_effect(SimRollout(case.episode), Intervention("remove", (pivotal, other)), 8, 1)
    assert done["result"]["estimate"] == pytest.approx(both.estimate)


# --- history -----------------------------------------------------------------------------------


def test_the_trace_lists_its_jobs_newest_first_with_links_to_their_results(api_client, sim_trace, pivotal):
    first = post(
        api_client,
        f"/api/traces/{sim_trace.pk}/counterfactuals/",
        {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 4},
    ).json()
    second = post(
        api_client, f"/api/traces/{sim_trace.pk}/attributions/run/", {"method": "loo", "budget": 13 * 2}
    ).json()
    run_all(CounterfactualJob.objects.get(pk=first["id"]))
    listed = api_client.get(f"/api/traces/{sim_trace.pk}/jobs/").json()["results"]
    assert [j["id"] for j in listed] == [second["id"], first["id"]]
    assert (listed[0]["kind"], listed[0]["status"], listed[0]["method"], listed[0]["player_kind"]) == (
        "attribution",
        "queued",
        "loo",
        "messages",
    )
    assert (listed[1]["kind"], listed[1]["status"], listed[1]["done"], listed[1]["total"]) == (
        "counterfactual",
        "done",
        4,
        4,
    )
    assert "samples" not in listed[1] and api_client.get(listed[1]["url"]).json()["result"]["estimate"] is not None
    assert len(api_client.get(f"/api/traces/{sim_trace.pk}/jobs/?limit=1").json()["results"]) == 1
    for bad in ("0", "x", "501"):
        response = api_client.get(f"/api/traces/{sim_trace.pk}/jobs/?limit={bad}")
        assert response.status_code == 400 and response.json()["field"] == "limit"


# --- cost of LLM jobs --------------------------------------------------------------------------


def small_llm_trace() -> Trace:
    """Content lengths chosen for a hand computation at 4 characters per token (ceil)."""
    events = [
        Event("e1", 0.0, "message", "planner", to="coder", content="a" * 8),  # 2 tokens
        Event("e2", 1.0, "message", "coder", to="planner", content="b" * 10),  # 3 tokens
        Event("e3", 2.0, "tool_result", "coder", content="c" * 7),  # 2 tokens, replayed
        Event("e4", 3.0, "message", "planner", content="d" * 13),
    ]  # 4 tokens
    return Trace(
        "native",
        "cost",
        name="cost",
        events=events,
        agents=[Agent("planner", system_prompt="s" * 9), Agent("coder")],  # 3 tokens, none
        attributes={"ground_truth": "42"},
    )


@pytest.fixture
def endpoint(monkeypatch):
    """An endpoint configured as a job's would be; the estimate never calls it."""
    monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "fake-model")


def turns_only(turns, requests, prompt, completion):
    """An arm's cost with only turn requests (original order, exact match)."""
    return {
        "turns": turns,
        "requests": requests,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "turn_requests": requests,
        "speaker_requests": 0,
        "verdict_requests": 0,
    }


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
def test_the_estimate_matches_a_hand_computation(api_client, project, endpoint):
    trace = do_ingest(project, small_llm_trace()).trace
    response = post(
        api_client,
        f"/api/traces/{trace.pk}/counterfactuals/estimate/",
        {"intervention": {"kind": "remove", "events": ["e2"]}, "n": 4, "backend": "openai"},
    )
    assert response.status_code == 200
    # Fork at e2; 4 samples. Control arm: e2 kept as recorded (3), e3 replayed (2), e4 (planner)
    # re-generated: prompt 3 (system) + e1 2 + e2 3 + e3 2 = 10, sent once for all 4 samples (one
    # request with n = 4), completion 4 × 4 = 16. Intervention arm: e2 dropped, e4's prompt
    # 3 + 2 + 2 = 7, completion 16. The branch trace of sample 0: both arms once more with n = 1.
    assert response.json() == {
        "backend": "openai",
        "llm": True,
        "confirmation_required": True,
        "n": 4,
        "fork_event": "e2",
        "turns": 2,
        "requests": 2 + 2,
        "prompt_tokens": 10 + 7 + 10 + 7,
        "completion_tokens": 16 + 16 + 4 + 4,
        "total_tokens": 34 + 40,
        "chars_per_token": 4,
        "speaker_order": "original",
        "scoring": "exact_match",
        "turn_requests": 4,
        "speaker_requests": 0,
        "verdict_requests": 0,
        "arms": {"control": turns_only(1, 1, 10, 16), "intervention": turns_only(1, 1, 7, 16)},
        "branch": {"control": turns_only(1, 1, 10, 4), "intervention": turns_only(1, 1, 7, 4)},
    }
    # Removing the planner (2 samples) forks at e1. Control: e1 kept (2); e2 re-generated, prompt
    # 0 + 2 once, completion 3 × 2; e3 replayed; e4 re-generated per sample, prompt (3 + 7) × 2,
    # completion 4 × 2: prompt 22, completion 14, requests 1 + 2. Intervention: e1 and e4 dropped,
    # e2 re-generated with an empty history: its one turn START_TEXT (s tokens), completion 3 × 2, one request.
    s = costs._tokens(START_TEXT)
    agent = costs.estimate_cost(trace, {"kind": "remove", "agents": ["planner"]}, 2, "openai")
    assert (agent["fork_event"], agent["turns"]) == ("e1", 3)
    assert agent["arms"] == {"control": turns_only(2, 3, 22, 14), "intervention": turns_only(1, 1, s, 6)}
    # Its branch (n = 1): control prompt 2 + 10, completion 3 + 4, two requests; intervention s, 3, one.
    assert (agent["requests"], agent["prompt_tokens"], agent["completion_tokens"]) == (4 + 3, 22 + s + 12 + s, 20 + 10)
    # Masking e2 keeps its place with "[masked]" (2 tokens): intervention prompt 3 + 2 + 2 + 2 = 9.
    masked = costs.estimate_cost(trace, {"kind": "mask", "events": ["e2"]}, 4, "openai")
    assert masked["arms"]["intervention"] == turns_only(1, 1, 9, 16)
    # Resampling e2 re-generates it in the intervention arm: e2 (prompt 2, once), then e4 per sample.
    resampled = costs.estimate_cost(trace, {"kind": "resample", "events": ["e2"]}, 4, "openai")
    assert resampled["arms"]["intervention"] == turns_only(2, 5, 2 + 4 * 10, 4 * 3 + 4 * 4)
    # sim cannot re-run an LLM trace: its estimate says so in words (it would cost no tokens on a SwarmSim trace)
    sim = post(
        api_client,
        f"/api/traces/{trace.pk}/counterfactuals/estimate/",
        {"intervention": {"kind": "remove", "events": ["e2"]}, "n": 4},
    )
    assert sim.status_code == 400 and sim.json()["field"] == "backend"
    assert "not a SwarmSim episode" in sim.json()["error"]


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
@pytest.mark.parametrize(
    "body, field",
    [
        ({"intervention": {"kind": "remove", "events": ["nope"]}, "backend": "openai"}, "intervention.events"),
        ({"intervention": {"kind": "remove", "events": ["e2"]}, "backend": "gpt"}, "backend"),
        ({"intervention": {"kind": "remove", "events": ["e2"]}, "n": 1}, "n"),
        ({"intervention": {"kind": "remove", "events": ["e2"]}, "price": 3}, "price"),
        ({"n": 4}, "intervention"),
    ],
)
def test_bad_estimate_requests_name_their_field(api_client, project, body, field):
    trace = do_ingest(project, small_llm_trace()).trace
    response = post(api_client, f"/api/traces/{trace.pk}/counterfactuals/estimate/", body)
    assert response.status_code == 400 and response.json()["field"] == field


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
def test_an_llm_job_needs_confirmed_true(api_client, project, monkeypatch):
    monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never called: no chunk runs
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "fake-model")
    trace = do_ingest(project, small_llm_trace()).trace
    url = f"/api/traces/{trace.pk}/counterfactuals/"
    body = {"intervention": {"kind": "remove", "events": ["e2"]}, "n": 4, "backend": "openai"}
    for confirmed in ({}, {"confirmed": False}, {"confirmed": "yes"}):
        response = post(api_client, url, {**body, **confirmed})
        assert response.status_code == 400 and response.json()["field"] == "confirmed"
        assert "estimate" in response.json()["error"]
    assert not CounterfactualJob.objects.exists()
    run = post(
        api_client, f"/api/traces/{trace.pk}/attributions/run/", {"method": "loo", "budget": 100, "backend": "openai"}
    )
    assert run.status_code == 400 and run.json()["field"] == "confirmed"
    response = post(api_client, url, {**body, "confirmed": True})
    assert response.status_code == 202 and response.json()["backend"] == "openai"
    # SwarmSim costs no tokens: no confirmation needed.
    assert not costs.is_llm_backend("sim")


def test_history_and_estimate_need_auth_and_hide_foreign_traces(client, sim_trace, pivotal, django_user_model):
    from webapp.accounts.services import (
        do_add_member,
        do_create_token,
        do_get_or_create_project,
    )

    jobs, estimate = f"/api/traces/{sim_trace.pk}/jobs/", f"/api/traces/{sim_trace.pk}/counterfactuals/estimate/"
    body = {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 4}
    assert client.get(jobs, HTTP_AUTHORIZATION="").status_code == 401
    assert client.post(estimate, body, content_type="application/json", HTTP_AUTHORIZATION="").status_code == 401
    other = do_get_or_create_project("Other")
    bob = django_user_model.objects.create_user("bob", password="bob-password-1")
    do_add_member(other, bob, "admin")
    foreign = {"HTTP_AUTHORIZATION": f"Bearer {do_create_token(bob, other, 't')[1]}"}
    assert client.get(jobs, **foreign).status_code == 404
    assert client.post(estimate, body, content_type="application/json", **foreign).status_code == 404
