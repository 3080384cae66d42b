"""Scores are not rewards unless the user says so, in the app: an import's `--reward-score` (the
command, the Upload page's field, the upload API's `?reward_score=`), else the project's reward
score setting (its settings page, by an admin; also for OTLP ingest), else a score named `reward`
is a trace's reward; the other evaluation scores stay labels, and the list's outcome facet follows
the reward only.

The ten real Langfuse exports of ../shared/data/langfuse-exports carry these trace scores (read
from the raw files): claude-agent correctness 0, hallucination 1, toxicity 0; crewai toxicity 0.8,
hallucination 1; google-adk toxicity 0, hallucination 0; langgraph-python hallucination 0.1,
toxicity 0; microsoft-agent correctness 1, hallucination 0.9, toxicity 0; openai-agents toxicity
0.8, hallucination 0; the other four none. Before, the first score was the reward: four of them
were listed as successes, crewai's for `toxicity = 0.8`.
"""

import gzip
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from swarmscope.importers import otlp
from swarmscope.importers.otel import SpanEvent
from tests.swarmscope.importers.spans import make_span
from webapp.accounts.models import Project
from webapp.traces import services
from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]

EXPORTS = "langfuse-exports"
CLAUDE = "claude-agent-2025-12-22.trace.json"
MICROSOFT = "microsoft-agent-2025-12-17.trace.json"
CREWAI = "crewai-2025-07-11.trace.json"


def import_traces(*args) -> str:
    out = StringIO()
    call_command("import_traces", *map(str, args), stdout=out, stderr=StringIO())
    return out.getvalue()


def outcome_facet(project: Project) -> dict[str, int]:
    """The trace list's outcome facet: value -> count (values without traces are not shown)."""
    found = services.list_facets([project.pk], services.ListFilters())["outcome"]
    return {entry["value"]: entry["count"] for entry in found}


def by_file(project: Project) -> dict[str, Trace]:
    return {t.attributes["sources"][0]: t for t in Trace.objects.filter(project=project)}


def test_langfuse_scores_are_labels_and_no_trace_is_a_success_for_them(shared_data):
    import_traces(shared_data / EXPORTS, "--project", "Scores")
    project = Project.objects.get(name="Scores")
    traces = by_file(project)
    assert len(traces) == 10
    assert {(t.reward, t.outcome, json.dumps(t.rewards)) for t in traces.values()} == {(None, "", "{}")}
    assert outcome_facet(project) == {"none": 10}  # no success, no failure
    crewai = traces[str(shared_data / EXPORTS / CREWAI)]
    assert dict(crewai.labels.values_list("key", "value")) == {"toxicity": 0.8, "hallucination": 1}
    assert crewai.attributes["score_values"] == {"toxicity": 0.8, "hallucination": 1.0}


def test_the_reward_score_option_makes_that_score_the_reward(shared_data):
    import_traces(shared_data / EXPORTS, "--project", "Scores", "--reward-score", "correctness")
    project = Project.objects.get(name="Scores")
    traces = by_file(project)
    claude, microsoft = traces[str(shared_data / EXPORTS / CLAUDE)], traces[str(shared_data / EXPORTS / MICROSOFT)]
    assert (claude.rewards, claude.reward, claude.outcome) == ({"correctness": 0.0}, 0.0, "failure")
    assert (microsoft.rewards, microsoft.reward, microsoft.outcome) == ({"correctness": 1.0}, 1.0, "success")
    assert microsoft.labels.filter(key="hallucination", value=0.9).exists()  # still a label, by its name
    assert outcome_facet(project) == {"success": 1, "failure": 1, "none": 8}


def test_importing_again_with_a_reward_score_adds_the_reward(shared_data):
    path = shared_data / EXPORTS / MICROSOFT
    import_traces(path)
    assert Trace.objects.get().reward is None
    out = import_traces(path, "--reward-score", "correctness")
    assert "imported as trace" in out and "nothing new" not in out
    trace = Trace.objects.get()
    assert (trace.rewards, trace.outcome) == ({"correctness": 1.0}, "success")


@pytest.mark.parametrize(("name", "why"), [("x" * 201, "at most 200 characters"), ("a\x00b", "NUL")])
def test_a_bad_reward_score_option_is_refused_and_nothing_imported(fixtures, name, why):
    with pytest.raises(CommandError, match=f"--reward-score: .*{why}"):
        import_traces(fixtures / "native_small.json", "--reward-score", name)
    assert not Trace.objects.exists()


def test_the_project_setting_is_the_default_and_the_import_option_comes_first(shared_data, team, client):
    client.force_login(team.users["vic"])  # a viewer may not change it
    assert client.post(f"/projects/{team.a.pk}/settings/", {"reward_score": "correctness"}).status_code == 403
    client.force_login(team.users["ann"])
    page = client.get(f"/projects/{team.a.pk}/settings/").content.decode()
    assert 'name="reward_score"' in page
    response = client.post(f"/projects/{team.a.pk}/settings/", {"reward_score": " correctness "}, follow=True)
    assert "Reward score saved" in response.content.decode()
    team.a.refresh_from_db()
    assert team.a.reward_score == "correctness" and team.a.retention_days is None  # the other setting kept
    assert 'value="correctness"' in client.get(f"/projects/{team.a.pk}/settings/").content.decode()
    response = client.post(f"/projects/{team.a.pk}/settings/", {"reward_score": "x\x00"}, follow=True)
    assert "reward_score: must not contain a NUL character" in response.content.decode()
    assert Project.objects.get(pk=team.a.pk).reward_score == "correctness"

    claude = shared_data / EXPORTS / CLAUDE
    import_traces(claude, "--project", "Project A")
    assert Trace.objects.get(project=team.a, source_format="langfuse").rewards == {"correctness": 0.0}
    import_traces(claude, "--project", "Project B", "--reward-score", "toxicity")
    assert Trace.objects.get(project=team.b, source_format="langfuse").rewards == {"toxicity": 0.0}
    team.a.refresh_from_db()
    client.post(f"/projects/{team.a.pk}/settings/", {"reward_score": "", "retention_days": "30"})
    team.a.refresh_from_db()
    assert (team.a.reward_score, team.a.retention_days) == ("", 30)


def test_the_upload_page_and_api_take_a_reward_score(shared_data, team, client):
    data = (shared_data / EXPORTS / MICROSOFT).read_bytes()
    client.force_login(team.users["rev"])
    page = client.get("/upload/").content.decode()
    assert 'name="reward_score"' in page
    refused = client.post(
        "/upload/", {"project": team.a.pk, "reward_score": "y" * 201, "file": _upload("ms.json", data)}
    )
    assert refused.status_code == 400 and "reward_score: a score name is at most 200" in refused.content.decode()
    assert not Trace.objects.filter(source_format="langfuse").exists()
    response = client.post(
        "/upload/", {"project": team.a.pk, "reward_score": "hallucination", "file": _upload("ms.json", data)}
    )
    assert response.status_code == 200
    assert Trace.objects.get(project=team.a, source_format="langfuse").rewards == {"hallucination": 0.9}

    api = team.client("zed")
    bad = api.post(
        "/api/traces/upload/?filename=ms.json&reward_score=a%00b", data=data, content_type="application/json"
    )
    assert bad.status_code == 400 and bad.json()["field"] == "reward_score"
    ok = api.post(
        "/api/traces/upload/?filename=ms.json&reward_score=correctness", data=data, content_type="application/json"
    )
    assert ok.status_code == 200, ok.content
    ((summary,),) = [f["traces"] for f in ok.json()["files"]]
    assert summary["reward"] == 1.0
    assert Trace.objects.get(project=team.b, source_format="langfuse").outcome == "success"


def _upload(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/json")


def evaluated_spans(trace_id: str) -> list:
    """An agent's LLM call evaluated `relevance` 0.9 and `hallucination` 1 (`gen_ai.evaluation.result`)."""
    agent = make_span(
        trace_id, "1", None, "invoke_agent a", 1.0, 2.0, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="a"
    )
    chat = make_span(
        trace_id, "2", "1", "chat", 1.1, 1.5, gen_ai__operation__name="chat", gen_ai__usage__input_tokens=3
    )
    chat.events = [
        SpanEvent(
            "gen_ai.evaluation.result", None, {"gen_ai.evaluation.name": name, "gen_ai.evaluation.score.value": v}
        )
        for name, v in (("relevance", 0.9), ("hallucination", 1.0))
    ]
    return [agent, chat]


def test_otlp_ingest_takes_the_reward_score_of_the_project_setting(team):
    api = team.client("zed")

    def post(trace_id: str) -> Trace:
        body = gzip.compress(otlp.encode_protobuf(evaluated_spans(trace_id)))
        response = api.post(
            "/v1/traces", data=body, content_type="application/x-protobuf", HTTP_CONTENT_ENCODING="gzip"
        )
        assert response.status_code == 200, response.content
        return Trace.objects.get(project=team.b, identity_key=f"otlp:{trace_id}")

    plain = post("0" * 31 + "1")
    assert (plain.rewards, plain.reward, plain.outcome) == ({}, None, "")  # hallucination = 1 is no success
    assert {"relevance", "hallucination"} <= set(plain.labels.values_list("key", flat=True))
    Project.objects.filter(pk=team.b.pk).update(reward_score="relevance")
    chosen = post("0" * 31 + "2")
    assert (chosen.rewards, chosen.reward, chosen.outcome) == ({"relevance": 0.9}, 0.9, "success")
    assert chosen.attributes["reward_score"] == "relevance"


NOTE_CORRECTNESS = (
    "no trace in this import has a score 'Correctness' (scores present: correctness, hallucination, toxicity); "
    "did you mean 'correctness'? Score names are case-sensitive; no reward set from a score"
)


def test_the_command_notes_a_reward_score_no_trace_has(shared_data, fixtures):
    out = import_traces(shared_data / EXPORTS, "--project", "Scores", "--reward-score", "Correctness")
    assert f"note: {NOTE_CORRECTNESS}" in out.splitlines()
    assert not Trace.objects.exclude(rewards={}).exists()  # exact match: 'Correctness' is not 'correctness'
    assert "note:" not in import_traces(shared_data / EXPORTS / CLAUDE, "--reward-score", "correctness")
    assert "note:" not in import_traces(shared_data / EXPORTS / CLAUDE)  # no name given: nothing to note
    without = import_traces(fixtures / "native_small.json", "--reward-score", "correctness")
    assert (
        "note: no trace in this import has a score 'correctness' (these traces have no evaluation scores); "
        "no reward set from a score"
    ) in without


def test_a_missing_project_reward_score_is_noted_only_for_traces_with_scores(shared_data, fixtures):
    Project.objects.create(name="Set", reward_score="Hallucination")
    scored = import_traces(shared_data / EXPORTS / CREWAI, "--project", "Set")
    assert (
        "note: no trace in this import has a score 'Hallucination', the project's reward score setting, "
        "(scores present: hallucination, toxicity); did you mean 'hallucination'?"
    ) in scored
    assert "note:" not in import_traces(fixtures / "native_small.json", "--project", "Set")


def test_the_upload_page_and_api_note_a_reward_score_no_trace_has(shared_data, team, client):
    data = (shared_data / EXPORTS / MICROSOFT).read_bytes()
    client.force_login(team.users["rev"])
    page = client.post(
        "/upload/", {"project": team.a.pk, "reward_score": "nonexistent_score", "file": _upload("ms.json", data)}
    ).content.decode()
    assert 'data-testid="import-note"' in page
    assert (
        "Note: no trace in this import has a score &#x27;nonexistent_score&#x27; (scores present: correctness, "
        "hallucination, toxicity); no reward set from a score"
    ) in page
    assert (
        "import-note"
        not in client.post(
            "/upload/", {"project": team.a.pk, "reward_score": "correctness", "file": _upload("ms.json", data)}
        ).content.decode()
    )

    api = team.client("zed")
    missed = api.post(
        "/api/traces/upload/?filename=ms.json&reward_score=Correctness", data=data, content_type="application/json"
    )
    assert missed.status_code == 200, missed.content
    assert missed.json()["notes"] == [
        "no trace in this import has a score 'Correctness' (scores present: correctness, hallucination, toxicity); "
        "did you mean 'correctness'? Score names are case-sensitive; no reward set from a score"
    ]
    ok = api.post(
        "/api/traces/upload/?filename=ms.json&reward_score=correctness", data=data, content_type="application/json"
    )
    assert ok.json()["notes"] == []


def test_the_note_names_the_reward_score_used_instead():
    from swarmscope.importers.scores import missing_reward_score

    note = missing_reward_score("Reward", [{"score_values": {"reward": 1.0}}, {}])
    assert note == (
        "no trace in this import has a score 'Reward' (scores present: reward); did you mean 'reward'? "
        "Score names are case-sensitive; the score 'reward' is the reward instead"
    )
    assert missing_reward_score("x", [{"score_values": {"a": 1}}, {"score_values": {"x": 0}}]) is None
