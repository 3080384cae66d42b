"""OTLP/JSON export: a valid ExportTraceServiceRequest (parsed by opentelemetry-proto itself), the
GenAI operation names, and a round trip through Swarmscope's own OTLP importer that gives back the
same trace (every field, with its value types), from OTLP/JSON and from protobuf."""

import base64
import copy
import json

import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from swarmscope import read_traces
from swarmscope.importers import SourceFile, otlp, read_files
from swarmscope.importers.otel_sdk import iso_ns
from swarmscope.otlp_export import to_otlp_json

FIXTURE_FILES = ["native_small.json", "whowhen_hand_crafted.json", "monocle_small.json", "survey_small.json"]


def _imported(path):
    result = read_files([SourceFile(path.name, path.read_bytes())])
    assert not result.failed, result.failed
    return result.traces


def _attrs(span):
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_export_is_valid_otlp_and_round_trips(fixtures, name):
    for trace in _imported(fixtures / name):
        doc = to_otlp_json(trace, extra={"swarmscope.note": {"a": 1}})
        request = ParseDict(doc, ExportTraceServiceRequest())  # raises on any field OTLP does not have
        spans = request.resource_spans[0].scope_spans[0].spans
        all_spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        span_of = {}  # event id -> the id of the span that carries it (a folded tool result: its call's)
        for span in all_spans:
            attrs = _attrs(span)
            for key in ("swarmscope.event.id", "swarmscope.result_event.id"):
                if key in attrs:
                    span_of[attrs[key]] = span["spanId"]
        assert set(span_of) == {e.id for e in trace.events}
        event_spans = [s for s in all_spans if "swarmscope.event.id" in _attrs(s)]
        agents = {*(a.name for a in trace.agents), *(e.agent for e in trace.events)}
        assert len(spans) == 1 + len(agents) + len(event_spans) and len(event_spans) <= len(trace.events)
        assert to_otlp_json(trace) == to_otlp_json(trace)  # ids are derived, not random

        by_id = {e.id: e for e in trace.events}
        for span in event_spans:
            attrs = _attrs(span)
            event = by_id[attrs["swarmscope.event.id"]]
            assert attrs["swarmscope.event.type"] == event.type and attrs["gen_ai.agent.name"] == event.agent
            if event.content and event.type not in ("tool_call", "tool_result"):
                assert json.loads(attrs["gen_ai.output.messages"])[0]["parts"][0]["content"] == event.content
            if "swarmscope.result_event.id" in attrs:
                assert by_id[attrs["swarmscope.result_event.id"]].type == "tool_result" and event.type == "tool_call"
        links = sum(len(s.get("links", [])) for s in event_spans)
        assert links == sum(1 for e in trace.edges if span_of[e.src] != span_of[e.dst])

        # Back through the OTLP importer: one trace, every agent that has events, every event's content.
        again = read_files([SourceFile("export.json", json.dumps(doc).encode())])
        assert not again.failed and len(again.traces) == 1, again.files
        back = again.traces[0]
        assert {e.agent for e in trace.events} <= {a.name for a in back.agents}
        contents = {e.content for e in back.events if e.content}
        # (A delegation's content does not come back: the importer reads delegations from span nesting.)
        assert {e.content for e in trace.events if e.content and e.type != "delegate"} <= contents


def test_spawn_hierarchy_becomes_span_parents(fixtures):
    (trace,) = _imported(fixtures / "native_small.json")
    spans = to_otlp_json(trace)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    agent_spans = {
        _attrs(s)["gen_ai.agent.name"]: s
        for s in spans
        if _attrs(s).get("gen_ai.operation.name") == "invoke_agent" and "swarmscope.event.id" not in _attrs(s)
    }
    for agent in trace.agents:
        if agent.parent:
            assert agent_spans[agent.name]["parentSpanId"] == agent_spans[agent.parent]["spanId"]
    assert any(a.parent for a in trace.agents)  # the fixture has spawned agents, so the check ran


def test_spans_start_when_the_session_ran(fixtures):
    """The origin is the trace's own start (a Claude Code session's `start_time`), not the epoch or
    the import."""
    trace = next(t for t in read_traces(fixtures / "claude_code" / "project") if t.attributes.get("start_time"))
    root = to_otlp_json(trace)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert int(root["startTimeUnixNano"]) == iso_ns(trace.attributes["start_time"])


def _typed(value):
    """`value` as JSON text, so that a comparison tells 1, 1.0 and true apart (== does not)."""
    return json.dumps(value, sort_keys=True, default=repr)


def same_trace(trace, back) -> None:
    """`back` is `trace` again, every field with its value types: name, system, topology, task_id,
    agents (all their fields, in order), events (in order), edges (a set), rewards, costs, metrics,
    labels and attributes. The identity is the OTLP trace's (`otlp:<trace id>`), `exported_from`
    names the exported one; the import adds its own facts to the attributes where the trace has none
    (`trace_id`, `sources`, `start_time_unix_nano`) and counts its spans (docs/otel-mapping.md)."""
    want, got = trace.to_dict(), back.to_dict()
    for doc in (want, got):
        del doc["source_format"], doc["source_id"]
    want["edges"] = sorted({_typed(e) for e in want["edges"]})
    got["edges"] = sorted(_typed(e) for e in got["edges"])
    want["attributes"] = {
        "trace_id": back.source_id,
        "sources": back.attributes.get("sources"),
        "start_time_unix_nano": back.attributes.get("start_time_unix_nano"),
        **trace.attributes,
        "spans": back.attributes.get("spans"),
        "exported_from": trace.identity_key,
    }
    assert got == want, trace.identity_key
    assert _typed(got) == _typed(want), trace.identity_key


def _protobuf(doc) -> bytes:
    """The OTLP/JSON `doc` as protobuf: hex ids as bytes (the protobuf JSON mapping reads base64)."""
    doc = copy.deepcopy(doc)
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for item in [span, *span.get("links", [])]:
            for key in ("traceId", "spanId", "parentSpanId"):
                if key in item:
                    item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    return ParseDict(doc, ExportTraceServiceRequest()).SerializeToString()


def check_round_trip(traces) -> None:
    """Each trace exported, then imported from the OTLP/JSON file and decoded from protobuf (as
    /v1/traces takes either), is the same trace."""
    assert traces
    for trace in traces:
        doc = to_otlp_json(trace)
        again = read_files([SourceFile("export.json", json.dumps(doc).encode())])
        assert not again.failed and len(again.traces) == 1, again.files
        same_trace(trace, again.traces[0])
        ((trace_id, spans),) = otlp.decode_protobuf(_protobuf(doc)).items()
        same_trace(trace, otlp.build(trace_id, spans, ["export.pb"]))


def test_export_then_import_gives_the_same_trace(fixtures):
    """Every fixture trace, of every format (the importer reads the exporter's `swarmscope.*`
    attributes instead of guessing events from the GenAI spans); native_small.json has a task,
    nested attributes and metrics."""
    check_round_trip(read_traces(fixtures))


def test_shared_traces_export_then_import_the_same(shared_data):
    check_round_trip(
        read_traces(
            shared_data / "who-and-when" / "Hand-Crafted" / "4.json",
            shared_data / "mast",
            shared_data / "otel-agntcy-a2a",
            shared_data / "langfuse-exports",
            shared_data / "survey-trace-schema",  # task_id and metrics
            shared_data / "claude-code",
            shared_data / "codex-cli",
            *sorted((shared_data / "otel-monocle-agent-framework").glob("*_concurrent_travel_*.json")),
        )
    )
