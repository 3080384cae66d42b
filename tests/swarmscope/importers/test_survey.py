"""Survey-schema import and export (swarmscope.importers.survey)."""

import json

import pytest
from jsonschema import Draft202012Validator

from swarmscope.importers import survey
from swarmscope.importers.chatlog import TOKENS_ESTIMATED
from swarmscope.model import Agent, Edge, Event, Label, Trace, content_hash
from tests.swarmscope.importers import read_paths as _read

SCHEMA_DIR = "survey-trace-schema"


def _validator(shared_data):
    return Draft202012Validator(json.loads((shared_data / SCHEMA_DIR / "trace_schema.json").read_text()))


def _assert_round_trip(trace):
    doc, _ = survey.export(trace)
    again = survey.parse(json.loads(json.dumps(doc)), "export.json")[0]
    assert again.events == trace.events
    assert again.edges == trace.edges
    return doc


# --- hand-written fixture: runs without ../shared ---------------------------------------------


def test_fixture_is_detected_and_read(fixtures):
    result = _read(fixtures / "survey_small.json")
    assert result.files[0].format == "survey"
    assert [t.identity_key for t in result.traces] == ["survey:fixture-survey-001"]


def test_decision_events_import_as_delegate_and_stop(fixtures):
    trace = _read(fixtures / "survey_small.json").traces[0]
    types = {e.id: e.type for e in trace.events}
    assert types["e3"] == "delegate" and types["e7"] == "stop"
    assert "decision" not in trace.events[2].attributes


def test_agents_come_from_spawn_and_despawn(fixtures):
    trace = _read(fixtures / "survey_small.json").traces[0]
    agents = {a.name: a for a in trace.agents}
    assert list(agents) == ["lead", "researcher_1", "search"]
    assert agents["lead"].role == "orchestrator" and agents["lead"].parent is None
    child = agents["researcher_1"]
    assert (child.parent, child.spawned_at, child.despawned_at, child.role) == ("lead", 1.0, 7.0, "researcher")


def test_fields_tokens_and_extra_properties(fixtures):
    events = {e.id: e for e in _read(fixtures / "survey_small.json").traces[0].events}
    assert events["e4"].t_end == 4.5 and events["e4"].tokens == 5
    assert TOKENS_ESTIMATED not in events["e4"].attributes
    assert events["e3"].tokens is None and events["e3"].content == "Find the boiling point of water."
    assert events["e5"].tokens is None and events["e5"].attributes == {"latency_ms": 1500}
    assert events["e5"].trusted is False


def test_round_trip_of_fixture_is_lossless(fixtures):
    trace = _read(fixtures / "survey_small.json").traces[0]
    doc = _assert_round_trip(trace)
    decisions = [(e["id"], e["type"], e.get("decision")) for e in doc["events"] if "decision" in e]
    assert decisions == [("e3", "orchestrator_decision", "delegate"), ("e7", "orchestrator_decision", "stop")]
    assert doc["events"][4]["latency_ms"] == 1500


def test_export_reports_what_it_cannot_carry():
    trace = Trace(
        source_format="whowhen",
        source_id="t1",
        name="a named trace",
        topology="ring",
        agents=[Agent("boss", role="orchestrator", system_prompt="lead"), Agent("idle")],
        events=[
            Event(
                "a",
                0.0,
                "delegate",
                "boss",
                to="w",
                content="go",
                t_end=1.0,
                attributes={"decision": "keep me", "note": "x"},
            ),
            Event("b", 2.0, "stop", "boss"),
        ],
        edges=[Edge("a", "b", "temporal")],
        costs={"tool_calls": 2, "odd": "many"},
        metrics={"score": float("nan")},
        labels=[Label("mistake_agent", "boss", agent="boss")],
        attributes={"question": "q"},
    )
    doc, lost = survey.export(trace)
    assert doc["costs"] == {"tool_calls": 2, "tokens": 0, "wall_clock_s": 0}
    assert doc["topology"] == "unknown" and doc["task_id"] == survey.UNKNOWN_TASK and "metrics" not in doc
    assert doc["events"][0]["attributes"] == {"decision": "keep me"} and doc["events"][0]["note"] == "x"
    assert set(lost) == {
        "task_id: none, written as 'unknown'",
        "topology: 'ring' is not in the schema, written as 'unknown'",
        "costs.odd: not a number",
        "costs.tokens: unknown, written as 0",
        "costs.wall_clock_s: unknown, written as 0",
        "metrics.score: not a number",
        "source_format: whowhen",
        "name",
        "attributes.question",
        "labels[0]: mistake_agent",
        "agents.boss.role",
        "agents.boss.system_prompt",
        "agents.idle: no events",
    }
    _assert_round_trip(trace)


def test_export_needs_an_event():
    with pytest.raises(ValueError):
        survey.export(Trace(source_format="survey", source_id="empty"))


def test_placeholder_trace_id_falls_back_to_the_record_hash():
    doc = {
        "trace_id": "...",
        "task_id": "...",
        "events": [{"id": "e1", "t": 0, "type": "spawn", "agent": "o"}],
        "edges": [],
        "rewards": {},
        "costs": {"tokens": 1, "wall_clock_s": 1},
    }
    trace = survey.parse(doc, "inline.json")[0]
    assert trace.source_id == content_hash(json.dumps(doc, sort_keys=True, ensure_ascii=False))
    assert trace.attributes["source_trace_id"] == "..."
    other = survey.parse({**doc, "task_id": "other"}, "inline.json")[0]
    assert other.source_id != trace.source_id
    assert survey.is_placeholder_id("--") and survey.is_placeholder_id(None)
    assert not survey.is_placeholder_id("t-1") and not survey.is_placeholder_id(7)


def test_fixture_export_validates_against_the_schema(fixtures, shared_data):
    doc, _ = survey.export(_read(fixtures / "survey_small.json").traces[0])
    assert list(_validator(shared_data).iter_errors(doc)) == []


# --- the survey's own files in ../shared/data --------------------------------------------------


def test_example_trace(shared_data):
    path = shared_data / SCHEMA_DIR / "example_trace.json"
    raw = json.loads(path.read_text())
    trace = _read(path).traces[0]
    assert trace.identity_key == "survey:demo-trace-001"
    assert len(trace.events) == len(raw["events"]) == 8
    assert len(trace.edges) == len(raw["edges"]) == 8
    assert (trace.task_id, trace.system, trace.topology) == (
        "demo-task-browser-research",
        "illustrative",
        "centralized",
    )
    assert trace.rewards == raw["rewards"] and trace.costs == raw["costs"] and trace.metrics == raw["metrics"]
    agents = {a.name: a for a in trace.agents}
    assert list(agents) == ["orchestrator", "planner_1", "executor_1", "browser.search"]
    assert (agents["planner_1"].parent, agents["planner_1"].spawned_at, agents["planner_1"].role) == (
        "orchestrator",
        1.0,
        "planner",
    )
    assert (agents["executor_1"].parent, agents["executor_1"].role) == ("orchestrator", "executor")
    assert agents["orchestrator"].parent is None and agents["orchestrator"].role == "lead"


def test_paper_inline_example_gets_a_hash_identity(shared_data):
    path = shared_data / SCHEMA_DIR / "paper_inline_example_trace_sec9_4.json"
    raw = json.loads(path.read_text())
    trace = _read(path).traces[0]
    assert raw["trace_id"] == "..."
    assert trace.source_id == content_hash(json.dumps(raw, sort_keys=True, ensure_ascii=False))
    assert len(trace.events) == 3 and len(trace.edges) == 1
    assert [a.name for a in trace.agents] == ["orchestrator", "planner", "executor"]
    assert trace.agent("orchestrator").role is None  # a spawn's role is the child's, not the spawner's


@pytest.mark.parametrize("name", ["example_trace.json", "paper_inline_example_trace_sec9_4.json"])
def test_round_trip_validates_against_the_schema(shared_data, name):
    trace = _read(shared_data / SCHEMA_DIR / name).traces[0]
    doc = _assert_round_trip(trace)
    assert list(_validator(shared_data).iter_errors(doc)) == []
    again = survey.parse(doc, "export.json")[0]
    assert again.identity_key == trace.identity_key and again.agents == trace.agents


def test_whowhen_export_validates_and_keeps_delegations(shared_data):
    path = shared_data / "who-and-when" / "Hand-Crafted" / "14.json"
    trace = _read(path).traces[0]
    doc = _assert_round_trip(trace)
    assert list(_validator(shared_data).iter_errors(doc)) == []
    assert {e["decision"] for e in doc["events"] if "decision" in e} == {"delegate", "stop"}
