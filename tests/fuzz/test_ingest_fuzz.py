"""Hypothesis-generated API batches and trace files: never a 500, never a partial write.

A request either succeeds (and everything it carried is stored) or is refused with a 4xx and the
database is exactly as before: the same rows, the same trace seq.
"""

import json

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from webapp.accounts.models import Project
from webapp.traces.models import Agent, Edge, Event, Label, StoredSpan, Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services, pytest.mark.timeout(600)]

TYPES = [
    "orchestrator_decision",
    "spawn",
    "despawn",
    "message",
    "tool_call",
    "tool_result",
    "return",
    "aggregate",
    "human_intervention",
    "safety_event",
    "delegate",
    "stop",
]
EDGE_TYPES = ["temporal", "causal", "spawn", "message", "tool_dependency", "return", "aggregate", "safety_flow"]
IDS = st.sampled_from(["e1", "e2", "e5", "e9", "f1", "f2", "f3", ""]) | st.text(max_size=6)
JUNK = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.lists(st.integers(), max_size=2)
)
NUMBER = st.floats(min_value=-1e3, max_value=1e6, allow_nan=False) | st.integers(min_value=-5, max_value=10**6)


@st.composite
def events(draw):
    event = {
        "id": draw(IDS),
        "t": draw(NUMBER | JUNK),
        "type": draw(st.sampled_from(TYPES) | st.text(max_size=5)),
        "agent": draw(st.sampled_from(["orchestrator", "adder", "checker", "new"]) | JUNK),
    }
    for name, values in [
        ("t_end", NUMBER | JUNK),
        ("to", st.sampled_from(["adder", "checker", "x"]) | JUNK),
        ("content", st.text(max_size=30) | JUNK),
        ("tokens", st.integers(-3, 10**7) | JUNK),
        ("trusted", st.booleans() | JUNK),
        ("attributes", st.dictionaries(st.text(max_size=4), JUNK, max_size=3) | JUNK),
    ]:
        if draw(st.booleans()):
            event[name] = draw(values)
    if draw(st.integers(0, 9)) == 0:
        event.pop(draw(st.sampled_from(["id", "t", "type", "agent"])), None)
    return event


edges = st.fixed_dictionaries({"src": IDS, "dst": IDS, "type": st.sampled_from(EDGE_TYPES) | st.text(max_size=4)})
batches = st.one_of(
    st.lists(events(), max_size=6),
    st.fixed_dictionaries(
        {"events": st.lists(events(), max_size=6)},
        optional={
            "edges": st.lists(edges, max_size=4) | JUNK,
            "agents": st.lists(st.fixed_dictionaries({"name": st.text(max_size=6) | JUNK}), max_size=2) | JUNK,
            "labels": st.lists(st.fixed_dictionaries({"key": st.text(max_size=6) | JUNK, "value": JUNK}), max_size=2)
            | JUNK,
            "rewards": st.dictionaries(st.text(max_size=4), NUMBER, max_size=2) | JUNK,
        },
    ),
    JUNK,
)


def state():
    """Everything ingestion may write, as comparable values."""
    return {
        "traces": sorted(Trace.objects.values_list("id", "seq", "event_count", "agent_count")),
        **{model.__name__: model.objects.count() for model in (Event, Edge, Agent, Label, StoredSpan, Project)},
    }


def body_of(doc, draw_raw):
    raw = json.dumps(doc).encode()
    if draw_raw == "ndjson" and isinstance(doc, list):
        return b"\n".join(json.dumps(e).encode() for e in doc)
    if draw_raw == "truncated":
        return raw[: max(0, len(raw) // 2)]
    return raw


@given(batch=batches, encoding=st.sampled_from(["json", "ndjson", "truncated"]))
def test_api_batches_never_500_and_never_write_partly(team, settings, batch, encoding):
    settings.SWARMSCOPE_INGEST_RATE = 0  # unlimited: this test sends many batches with one token
    before = state()
    response = team.client("rev").post(
        f"/api/traces/{team.trace_a.pk}/events/", data=body_of(batch, encoding), content_type="application/json"
    )
    note(f"batch={batch!r} encoding={encoding} -> {response.status_code} {response.content[:300]!r}")
    assert response.status_code < 500, response.content
    if response.status_code >= 400:
        assert state() == before, response.json()
        assert "error" in response.json() or "field" in response.json()
    elif encoding != "truncated":  # (half a body can still be a valid, shorter document)
        stored = set(Event.objects.filter(trace=team.trace_a).values_list("event_id", flat=True))
        sent = batch if isinstance(batch, list) else batch["events"]
        assert {e["id"] for e in sent} <= stored, (batch, encoding)


@st.composite
def trace_files(draw):
    doc = {
        "format": "swarmscope",
        "version": 1,
        "source_format": "native",
        "source_id": draw(st.text(min_size=1, max_size=8)),
        "name": draw(st.text(max_size=10) | JUNK),
        "events": draw(st.lists(events(), max_size=6)),
        "edges": draw(st.lists(edges, max_size=4)),
    }
    for name in ("agents", "labels", "rewards", "costs", "metrics", "attributes"):
        if draw(st.booleans()):
            doc[name] = draw(JUNK | st.dictionaries(st.text(max_size=3), NUMBER, max_size=2))
    if draw(st.integers(0, 5)) == 0:
        doc.pop(draw(st.sampled_from(["format", "version", "source_id", "events"])), None)
    return doc


@given(doc=trace_files(), encoding=st.sampled_from(["json", "truncated"]))
def test_trace_files_never_500_and_never_write_partly(team, settings, doc, encoding):
    settings.SWARMSCOPE_INGEST_RATE = 0
    before = state()
    response = team.client("rev").post(
        "/api/traces/upload/?filename=fuzz.json", data=body_of(doc, encoding), content_type="application/octet-stream"
    )
    assert response.status_code < 500, response.content
    report = response.json()["files"][0]
    if response.status_code >= 400:
        assert report["error"] and "fuzz.json" in " ".join(report["report"]) + report["error"] + report["file"]
        assert state() == before
    elif report["traces"]:
        trace = Trace.objects.get(pk=report["traces"][0]["id"])
        assert trace.event_count == Event.objects.filter(trace=trace).count()
