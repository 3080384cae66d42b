"""Honest actions: which backend can run What-if and attribution on a trace, and why not, in words
(`webapp.counterfactuals.capabilities`), on real shared traces (Who&When, Claude Code) and on
fixtures; the one definition of a trace's messages; job failures phrased for people; the
capabilities API; the branch-trace banner and the README section the page links to."""

from pathlib import Path

import pytest
from django.test import override_settings

from swarmscope.importers import SourceFile
from webapp.counterfactuals import capabilities, costs, services, tasks
from webapp.counterfactuals.models import CounterfactualJob
from webapp.traces import ingest

pytestmark = [pytest.mark.django_db, pytest.mark.services]

SIM_ONLY = {"sim": "trainer.rollout.sim.SimRollout"}
WITH_LLM = {
    "sim": "trainer.rollout.sim.SimRollout",
    "openai": "trainer.rollout.openai.OpenAIRollout",
    "openai-verifier": "trainer.rollout.openai.OpenAIVerifierRollout",
}
RAW = ("KeyError", "Traceback", "ValueError(", "('")


def imported(project, path: Path):
    [outcome] = ingest.do_import_sources(project, [SourceFile(path.name, path.read_bytes())])
    assert outcome.traces, outcome.error or outcome.skipped
    return outcome.traces[0]


@pytest.fixture
def no_llm(monkeypatch, settings):
    for name in ("SWARMSCOPE_OPENAI_BASE_URL", "SWARMSCOPE_OPENAI_MODEL", "SWARMSCOPE_OPENAI_SCORING"):
        monkeypatch.delenv(name, raising=False)
    settings.SWARMSCOPE_OPENAI_BASE_URL = ""
    settings.SWARMSCOPE_OPENAI_MODEL = ""
    settings.SWARMSCOPE_ROLLOUT_BACKENDS = SIM_ONLY


@pytest.fixture
def llm(monkeypatch, settings):
    """An endpoint configured (nothing is sent: capabilities and request checks never call it)."""
    monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "some-model")
    monkeypatch.delenv("SWARMSCOPE_OPENAI_SCORING", raising=False)
    monkeypatch.delenv("SWARMSCOPE_OPENAI_MAX_MODEL_LEN", raising=False)
    settings.SWARMSCOPE_OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.SWARMSCOPE_OPENAI_MODEL = "some-model"
    settings.SWARMSCOPE_ROLLOUT_BACKENDS = WITH_LLM


def assert_worded(text: str):
    assert text and not any(raw in text for raw in RAW), text


def test_whowhen_without_an_llm_disables_both_actions_naming_the_setting_and_the_readme(project, shared_data, no_llm):
    trace = imported(project, shared_data / "who-and-when" / "Hand-Crafted" / "1.json")
    summary = capabilities.action_capabilities(trace)
    sim, openai = summary["backends"]["sim"], summary["backends"]["openai"]
    assert list(summary["backends"]) == ["sim", "openai"]
    assert not sim["available"] and "not a SwarmSim episode" in sim["reason"]
    assert not openai["available"] and openai["setting"] == "SWARMSCOPE_OPENAI_BASE_URL"
    for action in ("what_if", "attribution"):
        assert not summary[action]["available"]
        reason = summary[action]["reason"]
        assert_worded(reason)
        assert "SWARMSCOPE_OPENAI_BASE_URL" in reason and "SwarmSim" in reason
        assert summary[action]["setting"] == "SWARMSCOPE_OPENAI_BASE_URL"
        assert summary[action]["docs"] == capabilities.DOCS_URL


def test_whowhen_requests_on_sim_are_refused_in_words_not_with_a_keyerror(project, shared_data, no_llm):
    trace = imported(project, shared_data / "who-and-when" / "Hand-Crafted" / "1.json")
    event = trace.events.filter(type="delegate").first().event_id
    calls = [
        lambda: services.request_counterfactual(trace, {"kind": "remove", "events": [event]}, 8),
        lambda: costs.estimate_cost(trace, {"kind": "remove", "events": [event]}, 8),
        lambda: services.request_attribution(trace, "loo", 416),
        lambda: costs.estimate_attribution_cost(trace, "loo", 416),
    ]
    for call in calls:
        with pytest.raises(services.JobRequestError) as raised:
            call()
        assert raised.value.field == "backend"
        assert_worded(raised.value.message)
        assert "not a SwarmSim episode" in raised.value.message


@pytest.mark.parametrize("subset", ["Hand-Crafted", "Algorithm-Generated"])
def test_whowhen_with_an_llm_counts_every_message_like_event_as_a_player(project, shared_data, llm, subset):
    trace = imported(project, shared_data / "who-and-when" / subset / "1.json")
    cap = capabilities.backend_capabilities(trace)["openai"]
    types = ("message", "delegate", "return")
    expected = [e.event_id for e in trace.events.order_by("seq") if e.type in types]
    assert cap["available"] and cap["what_if"]["available"] and cap["attribution"]["available"]
    assert cap["message_types"] == list(types) and cap["messages"] == len(expected) >= 2
    assert cap["scoring"] == "exact_match" and cap["notes"] == []  # Who&When has a ground truth
    names, n, _ = services.check_attribution(trace, "loo", 2 * (len(expected) + 1), "openai")
    assert sorted(names) == sorted(expected) and n == 2
    # the verifier backend scores by a prompt whatever the trace has
    assert capabilities.backend_capabilities(trace)["openai-verifier"]["scoring"] == "verifier"


def test_claude_code_without_ground_truth_notes_verifier_scoring(project, shared_data, llm):
    trace = imported(project, shared_data / "claude-code" / "short.jsonl")
    cap = capabilities.backend_capabilities(trace)["openai"]
    assert cap["available"] and cap["scoring"] == "verifier"
    assert any("No ground truth" in note and "verifier" in note for note in cap["notes"])
    assert cap["messages"] == trace.events.filter(type__in=("message", "delegate", "return")).count()


def test_claude_code_without_an_llm_says_what_is_needed(project, shared_data, no_llm):
    trace = imported(project, shared_data / "claude-code" / "subagent.jsonl")
    summary = capabilities.action_capabilities(trace)
    assert not summary["what_if"]["available"] and not summary["attribution"]["available"]
    assert_worded(summary["attribution"]["reason"])
    assert "SWARMSCOPE_OPENAI_BASE_URL" in summary["attribution"]["reason"]


def test_exact_match_without_ground_truth_names_the_scoring_setting(project, shared_data, llm, monkeypatch):
    monkeypatch.setenv("SWARMSCOPE_OPENAI_SCORING", "exact_match")
    trace = imported(project, shared_data / "claude-code" / "short.jsonl")
    cap = capabilities.backend_capabilities(trace)["openai"]
    assert not cap["available"] and cap["setting"] == "SWARMSCOPE_OPENAI_SCORING"
    assert "no ground truth" in cap["reason"] and "openai-verifier" in cap["reason"]


def test_a_history_over_the_models_context_is_noted(project, shared_data, llm, monkeypatch):
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_MODEL_LEN", "64")
    trace = imported(project, shared_data / "who-and-when" / "Hand-Crafted" / "1.json")
    cap = capabilities.backend_capabilities(trace)["openai"]
    assert any("over the model's context of 64" in note for note in cap["notes"])


def test_a_swarmsim_trace_runs_on_sim_with_its_message_events_only(sim_trace, no_llm):
    summary = capabilities.action_capabilities(sim_trace)
    sim = summary["backends"]["sim"]
    assert sim["available"] and sim["message_types"] == ["message"]
    assert sim["messages"] == sim_trace.events.filter(type="message").count() == 12
    assert summary["what_if"] == {
        "available": True,
        "reason": "",
        "setting": None,
        "docs": capabilities.DOCS_URL,
        "backends": ["sim"],
    }
    assert summary["attribution"]["available"] and summary["attribution"]["backends"] == ["sim"]
    names, _, _ = services.check_attribution(sim_trace, "loo", 13 * 2)
    assert len(names) == 12


def test_a_swarmsim_trace_still_streaming_says_so_and_runs_on_sim_once_it_ends(project, case, no_llm):
    """Half streamed, the re-simulated episode has events the trace has not yet: the reason is that
    it is streaming, not that its recording does not reproduce it; streamed whole and closed, it runs."""
    from swarmscope import model as core
    from trainer.sim import stream
    from webapp.traces.live import do_close_stream

    episode = case.episode
    header = core.Trace(source_format="api", source_id="streaming", attributes=stream.trace_attributes(episode))
    trace = ingest.do_ingest(project, header, live=True).trace
    payload = stream.trace_payload(episode)

    def send(part):
        fragment = core.Trace(source_format="api", source_id="streaming")
        for event, edges in part:
            fragment.events.append(core.event_from_dict(event))
            fragment.edges.extend(core.edge_from_dict(edge) for edge in edges)
        ingest.do_ingest(project, fragment, trace=trace, live=True)
        trace.refresh_from_db()

    half = payload[: len(payload) // 2]
    send(half)
    summary = capabilities.action_capabilities(trace)
    sim = summary["backends"]["sim"]
    assert not sim["available"] and "still streaming" in sim["reason"] and "reproduce" not in sim["reason"]
    assert "still streaming" in summary["what_if"]["reason"]
    message = next(event["id"] for event, _ in half if event["type"] == "message")
    with pytest.raises(services.JobRequestError, match="still streaming"):
        services.request_counterfactual(trace, {"kind": "remove", "events": [message]}, 8)

    send(payload[len(payload) // 2 :])
    do_close_stream(trace.pk)
    trace.refresh_from_db()
    assert capabilities.action_capabilities(trace)["what_if"]["available"]


def test_a_native_fixture_without_messages_cannot_be_attributed(project, fixtures, llm):
    from swarmscope import model as core

    trace = ingest.do_ingest(
        project,
        core.Trace(
            source_format="native",
            source_id="one-message",
            agents=[core.Agent(name="a"), core.Agent(name="b")],
            events=[
                core.Event(id="m1", t=0.0, type="message", agent="a", to="b", content="hello"),
                core.Event(id="t1", t=1.0, type="tool_call", agent="b", content="ls"),
            ],
        ),
    ).trace
    cap = capabilities.backend_capabilities(trace)["openai"]
    assert cap["available"] and cap["what_if"]["available"]
    assert not cap["attribution"]["available"] and "at least 2 messages" in cap["attribution"]["reason"]
    with pytest.raises(services.JobRequestError, match="it has 1"):
        services.check_attribution(trace, "loo", 100, "openai")


def test_describe_failure_words_known_exceptions_and_names_only_the_class_of_others():
    class PromptTooLongError(ValueError):
        pass

    assert capabilities.describe_failure(KeyError("task")) == "The backend failed: KeyError; see the worker log."
    text = capabilities.describe_failure(PromptTooLongError("the prompt of A's turn is 900 tokens"))
    assert text.startswith("A prompt was too long for the model's context: the prompt of A's turn")
    assert capabilities.describe_failure(ConnectionRefusedError(111, "Connection refused")).startswith(
        "The LLM server refused the connection"
    )
    assert "KeyError" not in capabilities.describe_failure(ValueError("not re-runnable: KeyError('task')"))


class ExplodingRollout:
    """A backend whose rollouts raise an exception nobody mapped."""

    queue = "rollouts-cpu"

    @classmethod
    def from_trace(cls, trace):
        return cls()

    def check(self, intervention):
        pass

    def paired(self, intervention, seeds, traces=False):
        raise KeyError("task")

    def environment(self):
        return {}


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS={**SIM_ONLY, "boom": f"{__name__}.ExplodingRollout"})
def test_a_failed_job_stores_words_and_logs_the_traceback(sim_trace, pivotal, caplog):
    job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 4, backend="boom")
    with caplog.at_level("WARNING"):
        tasks.run_counterfactual_chunk(job.pk, 0, 4)
    job.refresh_from_db()
    assert job.status == CounterfactualJob.FAILED
    assert job.error == "The backend failed: KeyError; see the worker log."
    assert any(record.exc_info for record in caplog.records)


def test_the_capabilities_api(api_client, project, shared_data, sim_trace, no_llm):
    trace = imported(project, shared_data / "who-and-when" / "Hand-Crafted" / "1.json")
    answer = api_client.get(f"/api/traces/{trace.pk}/counterfactuals/capabilities/").json()
    assert not answer["what_if"]["available"] and answer["docs"] == capabilities.DOCS_URL
    assert answer["backends"]["openai"]["setting"] == "SWARMSCOPE_OPENAI_BASE_URL"
    ok = api_client.get(f"/api/traces/{sim_trace.pk}/counterfactuals/capabilities/").json()
    assert ok["what_if"]["available"] and ok["backends"]["sim"]["messages"] == 12
    assert api_client.get("/api/traces/999999/counterfactuals/capabilities/").status_code == 404
    event = trace.events.filter(type="delegate").first().event_id
    for url, body in [
        (f"/api/traces/{trace.pk}/counterfactuals/", {"intervention": {"kind": "remove", "events": [event]}}),
        (f"/api/traces/{trace.pk}/counterfactuals/estimate/", {"intervention": {"kind": "remove", "events": [event]}}),
        (f"/api/traces/{trace.pk}/attributions/run/", {"method": "loo", "budget": 416}),
    ]:
        response = api_client.post(url, body, content_type="application/json")
        assert response.status_code == 400 and response.json()["field"] == "backend"
        assert_worded(response.json()["error"])


def test_the_trace_page_carries_the_capabilities_and_the_readme_section_is_served(client, member, sim_trace, no_llm):
    client.force_login(member)
    page = client.get(f"/traces/{sim_trace.pk}/").content.decode()
    assert "data-capabilities=" in page and "what_if" in page
    help_page = client.get(capabilities.DOCS_URL.split("#")[0])
    assert help_page.status_code == 200
    text = help_page.content.decode()
    assert f'id="{capabilities.README_ANCHOR}"' in text and "SWARMSCOPE_OPENAI_BASE_URL" in text


def test_a_branch_trace_page_links_back_to_its_parent_and_job(client, member, sim_trace, pivotal, no_llm):
    job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 2)
    tasks.run_counterfactual_chunk(job.pk, 0, 2)
    branch = job.samples.get(index=0).branch_trace
    client.force_login(member)
    page = client.get(f"/traces/{branch.pk}/").content.decode()
    assert 'data-testid="origin-banner"' in page
    assert f'href="/traces/{sim_trace.pk}/"' in page and f"job {job.pk}" in page
    assert f"/traces/compare/?left={sim_trace.pk}&amp;right={branch.pk}" in page
    original = client.get(f"/traces/{sim_trace.pk}/").content.decode()
    assert 'data-testid="origin-banner"' not in original


def test_a_sample_episode_page_links_to_its_run_and_iteration(client, member, project, sim_trace, no_llm):
    from webapp.training.models import Run, RunIteration

    run = Run.objects.create(project=project, name="ablation", config={}, seed_group="g")
    RunIteration.objects.create(run=run, iteration=3, env_steps=10).episodes.set([sim_trace])
    client.force_login(member)
    page = client.get(f"/traces/{sim_trace.pk}/").content.decode()
    assert 'data-testid="origin-banner"' in page and "Sample episode of training run" in page
    # stored 0-based, shown from 1 as on the run page
    assert f'href="/runs/{run.pk}/"' in page and "iteration 4" in page


def test_the_what_if_help_page_renders_the_readmes_markdown(client):
    """Issue 32: the help page showed raw Markdown (`*What if removed?*`, `- ` bullets, `**SwarmSim**`)."""
    response = client.get("/help/what-if/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<em>What if removed?</em>" in html and "<strong>SwarmSim</strong>" in html
    assert html.count("<li>") >= 4 and "<code>SWARMSCOPE_OPENAI_BASE_URL</code>" in html
    assert "*What if removed?*" not in html and "**SwarmSim**" not in html
    assert '<a href="#deploy" rel="noopener noreferrer">Deploy</a>' in html
