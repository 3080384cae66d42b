"""`manage.py import_traces` on ../shared/data and on the hand-written fixtures."""

import gzip
import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count

from webapp.traces.models import Event, Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]

HANDOFF_CUT = (
    "monocle_trace_okahu_demos_ms_openai_handoff_travel_a262a1005533d3dc6fd375c37d31ee95_2026-06-11_15.01.07.json"
)


def run(*paths):
    out, err = StringIO(), StringIO()
    try:
        call_command("import_traces", *map(str, paths), stdout=out, stderr=err)
        code = 0
    except CommandError:
        code = 1
    return code, out.getvalue(), err.getvalue()


def test_every_shared_trace_imports_except_the_truncated_chunk(shared_data):
    code, out, err = run(shared_data)
    assert code == 1
    failures = err.strip().splitlines()
    assert len(failures) == 1 and HANDOFF_CUT in failures[0] and "line 497, column 1" in failures[0]
    assert re.search(r"trace_schema\.json: skipped: not a trace", out)
    assert re.search(r"README\.md: skipped: not a trace", out) and re.search(r"LICENSE: skipped: not a trace", out)
    by_format = dict(Trace.objects.values_list("source_format").annotate(n=Count("id")))
    assert by_format == {
        **{"survey": 2, "whowhen": 45, "mast": 19, "jaeger": 1, "otel_sdk": 4},
        **{"claude_code": 5, "codex": 1, "langfuse": 10},  # sessions (subagent files joined), rollouts, exports
    }
    handoff = Trace.objects.get(source_id="a262a1005533d3dc6fd375c37d31ee95")
    assert {"triage_agent", "visa_agent"} <= set(handoff.agents.values_list("name", flat=True))
    assert handoff.events.filter(agent="visa_agent", tool="check_visa").exists()
    counts = (Trace.objects.count(), Event.objects.count())

    code, out, err = run(shared_data)
    assert (Trace.objects.count(), Event.objects.count()) == counts
    assert out.count("already stored, nothing new") == out.count("imported as trace")


def test_mistake_step_label_points_at_its_event(shared_data):
    run(shared_data / "who-and-when" / "Hand-Crafted" / "1.json")
    trace = Trace.objects.get()
    label = trace.labels.get(key="mistake_step")
    event = trace.events.get(event_id=label.event_id)
    assert event.position == int(label.value)
    assert event.agent.lower() == trace.labels.get(key="mistake_agent").value.lower()


def test_fixtures_import_one_trace_per_format(fixtures):
    code, out, err = run(fixtures)
    assert code == 0, err
    assert "README.txt: skipped: not a trace" in out
    formats = set(Trace.objects.values_list("source_format", flat=True))
    assert formats >= {"native", "survey", "whowhen", "mast", "jaeger", "otel_sdk", "otlp"} | {
        "claude_code",
        "codex",
        "langfuse",
        "langsmith",
    }


def test_a_gzipped_file_is_read_decompressed_up_to_the_upload_limit(fixtures, tmp_path, settings, api_client):
    data = (fixtures / "native_small.json").read_bytes()
    (tmp_path / "random.json.gz").write_bytes(gzip.compress(data))
    settings.SWARMSCOPE_MAX_UPLOAD_BYTES = len(data) - 1  # a bomb: over the limit once decompressed
    code, out, err = run(tmp_path / "random.json.gz")
    assert code == 1 and f"random.json.gz: failed: gzip-compressed, and over {len(data) - 1} bytes" in err
    settings.SWARMSCOPE_MAX_UPLOAD_BYTES = len(data)
    code, out, err = run(tmp_path / "random.json.gz")
    assert code == 0 and "random.json.gz: imported as trace" in out, err
    assert Trace.objects.get().source_id == "hand-written-native-1"
    settings.SWARMSCOPE_MAX_UPLOAD_BYTES = 10 * len(data)
    uploaded = api_client.post(  # the Upload page and the API upload read it the same way
        "/api/traces/upload/?filename=random.json.gz", data=gzip.compress(data), content_type="application/gzip"
    )
    assert uploaded.status_code == 200, uploaded.content
    assert uploaded.json()["files"][0]["report"][0].startswith("random.json.gz: imported as trace")


def test_a_cut_pretty_printed_json_file_fails_at_its_line_and_column(fixtures, tmp_path):
    """Events one per line put "{" at the start of lines 1 and 2, as in JSON Lines: the error is
    still the whole document's (the first line is no JSON value by itself)."""
    doc = json.loads((fixtures / "native_small.json").read_text())
    events = doc.pop("events")
    text = json.dumps(doc)[:-1] + ', "events": [\n' + ",\n".join(f"  {json.dumps(e)}" for e in events) + "\n]}\n"
    assert json.loads(text) == {**doc, "events": events}
    cut = text[: len(text) // 2]
    (tmp_path / "cut.json").write_text(cut)
    code, out, err = run(tmp_path / "cut.json")
    assert code == 1 and Trace.objects.count() == 0
    last = cut.count("\n") + 1
    assert re.fullmatch(rf".*cut\.json: failed: invalid JSON: [^\n]+ at line {last}, column \d+\n", err)


def test_a_skipped_file_says_what_it_holds_and_what_is_read(tmp_path):
    (tmp_path / "schema.json").write_text(json.dumps({"title": "Trace", "type": "object", "properties": {}}))
    (tmp_path / "events.json").write_text(json.dumps([{"step": 1, "who": "a"}, {"step": 2, "who": "b"}]))
    (tmp_path / "NOTES").write_text("# Notes\nnothing here\n")
    code, out, err = run(tmp_path)
    assert code == 0 and Trace.objects.count() == 0
    formats = (
        "; no importer reads it (formats: native, langfuse, langsmith, survey, whowhen, mast, otlp, otlp_logs, jaeger, "
    )
    assert f"schema.json: skipped: not a trace: a JSON object with keys title, type, properties{formats}" in out
    items = "a JSON list of 2 items: objects, the first with keys step, who"
    assert f"events.json: skipped: not a trace: {items}{formats}" in out
    assert f'NOTES: skipped: not a trace: text, not JSON (it starts "# Notes"){formats}' in out


def test_spans_that_no_convention_reads_import_as_an_empty_trace_that_says_so(tmp_path):
    """Plain spans whose attributes no convention names (an unknown framework's own keys): the trace
    is stored, and the report says why it has no events, as a span with a GenAI model call has one."""

    def span(span_id: str, name: str, attributes: dict) -> dict:
        values = [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]
        return {
            "traceId": "5" * 32,
            "spanId": span_id,
            "name": name,
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            "attributes": values,
        }

    plain = [span("1" * 16, "step", {"agent": "planner", "llm.tokens": "12"}), span("2" * 16, "step", {"agent": "x"})]
    path = tmp_path / "unknown.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": plain}]}]}))
    code, out, err = run(path)
    assert code == 0, err
    assert re.search(
        r"unknown.json: imported as trace \d+: 0 agents, 0 events \(none of its 2 spans is an agent, model call or tool"
        r' call by the conventions read: docs/otel-mapping.md, "Reading a span"\)',
        out,
    ), out
    plain[1]["attributes"].append({"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}})
    plain[1]["traceId"] = plain[0]["traceId"] = "6" * 32
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": plain}]}]}))
    code, out, err = run(path)
    assert code == 0 and "0 events" not in out and "none of its" not in out, out
