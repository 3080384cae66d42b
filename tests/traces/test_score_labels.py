"""Evaluation scores in the trace list: a Langfuse score or an OpenTelemetry evaluation result is a
label, and the list's Labels column, its search and its Labels facet show it as they show
Who&When's mistake labels ("hallucination=1" in `Trace.label_summary`), for file imports and
OTLP-streamed traces alike; traces stored before get theirs from migration 0011.

The real Langfuse exports of ../shared/data/langfuse-exports: six of the ten carry trace scores
(tests/traces/test_reward_score.py lists them), e.g. claude-agent toxicity 0, hallucination 1,
correctness 0 in that order; four carry none, so the Labels facet counts 6 labelled, 4 without.
"""

import gzip
import importlib
import re

import pytest
from django.apps import apps as django_apps

from swarmscope import model as core
from swarmscope.importers import SourceFile, otlp
from swarmscope.importers.otel.fields import EVALUATION_SOURCE
from swarmscope.importers.scores import EVALUATION_RESULT_SOURCE, is_score_label
from tests.traces.test_reward_score import CLAUDE, CREWAI, EXPORTS, evaluated_spans, import_traces
from webapp.traces import ingest, services
from webapp.traces.models import Label, Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def label_facet(project_ids: list[int], **filters) -> dict[str, int]:
    found = services.list_facets(project_ids, services.ListFilters(**filters))["label"]
    return {entry["value"]: entry["count"] for entry in found}  # values without traces are not shown


def listed(client, query: str) -> list[str]:
    """Names of the traces the list page shows for the query string `query`."""
    body = client.get(f"/?{query}").content.decode()
    return re.findall(r'<a href="/traces/\d+/" data-col="name">([^<]+)</a>', body)


def test_langfuse_scores_are_in_the_list_column_search_and_facet(shared_data, client, project, member):
    import_traces(shared_data / EXPORTS, "--project", project.name)
    by_file = {t.attributes["sources"][0]: t for t in Trace.objects.filter(project=project)}
    claude = by_file[str(shared_data / EXPORTS / CLAUDE)]
    crewai = by_file[str(shared_data / EXPORTS / CREWAI)]
    assert claude.label_summary == "toxicity=0; hallucination=1; correctness=0"
    assert crewai.label_summary == "hallucination=1; toxicity=0.8"
    assert sum(bool(t.label_summary) for t in by_file.values()) == 6
    assert label_facet([project.pk]) == {"yes": 6, "no": 4}  # was "no labels 10"
    assert label_facet([project.pk], query="toxicity") == {"yes": 6}  # counted from the matching rows

    client.force_login(member)
    assert len(listed(client, "q=toxicity")) == 6
    assert sorted(listed(client, "q=hallucination%3D1")) == sorted([claude.name, crewai.name])
    assert len(listed(client, "label=yes")) == 6
    page = client.get("/?q=correctness").content.decode()
    assert "toxicity=0; hallucination=1; correctness=0" in page  # the Labels column


def test_a_hand_written_langfuse_export_lists_its_scores(fixtures, project):
    (outcome,) = ingest.do_import_sources(
        project, [SourceFile("h.json", (fixtures / "langfuse_openinference_handoff.json").read_bytes())]
    )
    (trace,) = outcome.traces
    # a trace score, a categorical one, and a score of one observation (step)
    assert trace.label_summary == "helpfulness=0.75; language=es; answer_ok=1"
    assert label_facet([project.pk]) == {"yes": 1}
    assert [t.pk for t in services.list_traces([project.pk], query="language=es")] == [trace.pk]


def test_otlp_streamed_evaluations_are_in_the_list(team):
    body = gzip.compress(otlp.encode_protobuf(evaluated_spans("0" * 31 + "3")))
    response = team.client("zed").post(
        "/v1/traces", data=body, content_type="application/x-protobuf", HTTP_CONTENT_ENCODING="gzip"
    )
    assert response.status_code == 200, response.content
    trace = Trace.objects.get(project=team.b, identity_key="otlp:" + "0" * 31 + "3")
    assert trace.label_summary == "relevance=0.9; hallucination=1"
    assert label_facet([team.b.pk])["yes"] == 1  # the team's other trace has no labels
    assert [t.pk for t in services.list_traces([team.b.pk], query="relevance")] == [trace.pk]


def test_only_scores_and_mistakes_are_summarised():
    assert EVALUATION_RESULT_SOURCE == EVALUATION_SOURCE  # the OTel mapping's label source
    score = core.Label("hallucination", 1.0, source="langfuse:EVAL")
    explanation = core.Label("relevance.explanation", "long text", source=EVALUATION_SOURCE)
    note = core.Label("note", "hand-written fixture", source="tests")
    assert is_score_label(score) and is_score_label(core.Label("relevance", 0.9, source=EVALUATION_SOURCE))
    assert not is_score_label(explanation) and not is_score_label(note)
    summary = ingest.label_summary("mistake_agent=Orchestrator", [note, score, explanation, score])
    assert summary == "mistake_agent=Orchestrator; hallucination=1"


def test_the_migration_summarises_the_scores_of_stored_traces(project):
    scored = Trace.objects.create(project=project, identity_key="langfuse:a", source_format="langfuse", seq=1)
    Label.objects.create(trace=scored, key="mistake_agent", value="A", source="whowhen", seq=1)
    Label.objects.create(trace=scored, key="toxicity", value=0.0, source="langfuse:EVAL", seq=1)
    Label.objects.create(trace=scored, key="toxicity", value=0.5, source="langfuse:EVAL", seq=2)  # not published
    Label.objects.create(trace=scored, key="rel.explanation", value="why", source=EVALUATION_SOURCE, seq=1)
    plain = Trace.objects.create(project=project, identity_key="native:b", source_format="native", seq=1)
    Label.objects.create(trace=plain, key="note", value="x", source="tests", seq=1)
    assert label_facet([project.pk]) == {"no": 2}

    migration = importlib.import_module("webapp.traces.migrations.0011_score_labels_in_summary")
    migration.summarise(django_apps, None)
    assert Trace.objects.get(pk=scored.pk).label_summary == "mistake_agent=A; toxicity=0"
    assert Trace.objects.get(pk=plain.pk).label_summary == ""
    assert label_facet([project.pk]) == {"yes": 1, "no": 1}  # the counts table follows (triggers)
