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


def turns_only(cost):
    """An arm's turns, requests, prompt and completion tokens (at the expected turn length), and
    that it sends only turn requests (original order, exact match)."""
    assert (cost["turn_requests"], cost["speaker_requests"], cost["verdict_requests"]) == (cost["requests"], 0, 0)
    return cost["turns"], cost["requests"], cost["prompt_tokens"], cost["completion_tokens"]


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS)
def test_the_estimate_matches_a_hand_computation(api_client, project, endpoint, monkeypatch):
    # A re-generated turn is expected at r + s (m - r) tokens: m = 20, s = 0.25, so e4 (recorded 4
    # tokens) at 8 and e2 (3) at 7.25 -> 7; tokens at 4 characters, 5 a message and 3 a request
    # of chat formatting (the rule of thumb: the endpoint counts nothing).
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_TOKENS", "20")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_CAP_SHARE", "0.25")
    trace = do_ingest(project, small_llm_trace()).trace
    response = post(
        api_client,
        f"/api/traces/{trace.pk}/counterfactuals/estimate/",
        {"intervention": {"kind": "remove", "events": ["e2"]}, "n": 4, "backend": "openai"},
    )
    assert response.status_code == 200
    estimate = response.json()
    # Fork at e2; 4 samples. Control arm: e2 kept as recorded (3), e3 replayed (2), e4 (planner)
    # re-generated: prompt 3 (system) + e1 2 + e2 3 + e3 2 = 10, "[coder] " twice (16 characters:
    # 4), 4 messages (20) and the request (3): 37, sent once for all 4 samples (one request with
    # n = 4); completion 4 × 8 = 32. Intervention arm: e2 dropped, e4's prompt 3 + 2 + 2 + 2 + 15 +
    # 3 = 27, completion 32. The branch trace of sample 0: both arms once more with n = 1.
    assert {k: estimate[k] for k in ("n", "fork_event", "turns", "requests", "speaker_order", "scoring")} == {
        "n": 4,
        "fork_event": "e2",
        "turns": 2,
        "requests": 2 + 2,
        "speaker_order": "original",
        "scoring": "exact_match",
    }
    assert (estimate["prompt_tokens"], estimate["completion_tokens"], estimate["total_tokens"]) == (
        37 + 27 + 37 + 27,
        32 + 32 + 8 + 8,
        128 + 80,
    )
    # As recorded (e4: 4 tokens) and at the cap (20): only the completions differ here.
    assert estimate["recorded_length"] == {"prompt_tokens": 128, "completion_tokens": 40, "total_tokens": 168}
    assert estimate["at_cap"] == {"prompt_tokens": 128, "completion_tokens": 200, "total_tokens": 328}
    assert (estimate["turn_max_tokens"], estimate["cap_share"], estimate["tokenizer"]) == (20, 0.25, "rule of thumb")
    assert estimate["chars_per_token"] == 4 and estimate["turn_completions"] == 4 + 4 + 1 + 1
    assert [turns_only(estimate["arms"][a]) for a in ("control", "intervention")] == [(1, 1, 37, 32), (1, 1, 27, 32)]
    assert [turns_only(estimate["branch"][a]) for a in ("control", "intervention")] == [(1, 1, 37, 8), (1, 1, 27, 8)]
    # Removing the planner (2 samples) forks at e1. Control: e1 kept (2); e2 re-generated by the
    # coder (no system prompt), prompt e1 2 + "[planner] " 3 + 5 + 3 = 13 once, completion 7 × 2;
    # e3 replayed; e4 re-generated per sample, its prompt holding e2 at its expected 7 tokens:
    # 3 + 2 + 7 + 2 + 4 + 20 + 3 = 41, twice, completion 8 × 2: prompt 95, completion 30, 3
    # requests. Intervention: e1 and e4 dropped, e2 re-generated with an empty history: its one
    # turn START_TEXT (s tokens) + 8, completion 7 × 2, one request.
    s = costs._tokens(START_TEXT)
    agent = costs.estimate_cost(trace, {"kind": "remove", "agents": ["planner"]}, 2, "openai")
    assert (agent["fork_event"], agent["turns"]) == ("e1", 3)
    assert turns_only(agent["arms"]["control"]) == (2, 3, 95, 30)
    assert turns_only(agent["arms"]["intervention"]) == (1, 1, s + 8, 14)
    # Its branch (n = 1): control prompt 13 + 41, completion 7 + 8, two requests; intervention s + 8, 7, one.
    assert (agent["requests"], agent["prompt_tokens"], agent["completion_tokens"]) == (4 + 3, 95 + 54 + 2 * (s + 8), 66)
    # As recorded, e4's prompt holds e2's 3 tokens (37), at the cap 20 (54).
    assert agent["arms"]["control"]["recorded_prompt_tokens"] == 13 + 2 * 37
    assert agent["arms"]["control"]["cap_prompt_tokens"] == 13 + 2 * 54
    # Masking e2 keeps its place with "[masked]" (2 tokens): intervention prompt 9 + 4 + 23 = 36.
    masked = costs.estimate_cost(trace, {"kind": "mask", "events": ["e2"]}, 4, "openai")
    assert turns_only(masked["arms"]["intervention"]) == (1, 1, 36, 32)
    # Resampling e2 re-generates it in the intervention arm: e2 (prompt 13, once; 4 × 7), then e4
    # per sample (41 each; 8 each).
    resampled = costs.estimate_cost(trace, {"kind": "resample", "events": ["e2"]}, 4, "openai")
    assert turns_only(resampled["arms"]["intervention"]) == (2, 5, 13 + 4 * 41, 4 * 7 + 4 * 8)
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
