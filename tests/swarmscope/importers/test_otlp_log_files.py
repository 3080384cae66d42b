"""OTLP/JSON logs files (`otlp_logs`): an ExportLogsServiceRequest file joins the OTLP spans of the
same trace id in the same import (several files or a folder, in any order), as /v1/logs joins log
records to the spans of /v1/traces; alone, it is skipped, naming its trace ids.

Fixtures: `otlp_multi_agent_spans.json` (an orchestrator delegating to a researcher and a writer,
`chat` spans without content) and `otlp_multi_agent_logs.json` (their content as GenAI events on
the logs signal: six records of trace 5e1f…, one plain log without trace context). The store's
side of the comparison (the same files posted to /v1/traces and /v1/logs) is
tests/traces/test_otlp_log_files.py.
"""

import copy
import json
import shutil

import pytest

from swarmscope.importers import SourceFile, TraceFormatError, otlp, read_files
from swarmscope.importers.files import read_traces

TRACE_ID = "5e1f0c2a9b7d4e3f8a6b1c0d2e4f6a8b"
OTHER_TRACE = "0123456789abcdef0123456789abcdef"
SPANS, LOGS = "otlp_multi_agent_spans.json", "otlp_multi_agent_logs.json"


@pytest.fixture
def files(fixtures):
    return {name: SourceFile(name, (fixtures / name).read_bytes()) for name in (SPANS, LOGS)}


def expected(files):
    """The trace of the spans with the log records attached as /v1/logs attaches them, read
    through the decoders (not through `read_files`): the six records of the trace counted."""
    (spans,) = otlp.split(json.loads(files[SPANS].data)).values()
    records = [r for r in otlp.split_logs(json.loads(files[LOGS].data)) if r.trace_id == TRACE_ID]
    trace = otlp.build(TRACE_ID, otlp.attach_logs(spans, records), ["x"])
    trace.attributes["log_records"] = 6
    return trace


def comparable(trace):
    return {**trace.to_dict(), "attributes": {k: v for k, v in trace.attributes.items() if k != "sources"}}


@pytest.mark.parametrize("order", [(SPANS, LOGS), (LOGS, SPANS)])
def test_a_logs_file_joins_the_spans_of_its_trace_in_either_order(files, order):
    result = read_files([files[name] for name in order])
    assert [(f.name, f.format, f.trace_keys, f.skipped, f.error) for f in result.files] == [
        (name, "otlp" if name == SPANS else "otlp_logs", [f"otlp:{TRACE_ID}"], None, None) for name in order
    ]
    (trace,) = result.traces
    assert comparable(trace) == comparable(expected(files))
    assert trace.attributes["sources"] == list(order)
    contents = {e.id: e.content for e in trace.events if e.content}
    assert contents == {
        "c100000000000001": "Researcher: find sources. Writer: draft the brief.",
        "c100000000000002": "Three sources: ...",
        "c100000000000003": "Solid-state batteries replace ...",  # operation.details, in attributes
    }


def test_a_folder_of_spans_and_logs_files_is_one_trace(files, fixtures, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(fixtures / LOGS, folder / "1-logs.json")  # before the spans in the folder's order
    shutil.copy(fixtures / SPANS, folder / "2-spans.json")
    (trace,) = read_traces(folder)
    assert comparable(trace) == comparable(expected(files))


def test_the_same_records_twice_count_once(files):
    twice = SourceFile("again.json", files[LOGS].data)
    (trace,) = read_files([files[SPANS], files[LOGS], twice]).traces
    assert comparable(trace) == comparable(expected(files))


def test_a_logs_file_alone_is_skipped_naming_its_trace(files):
    result = read_files([files[LOGS]])
    assert result.traces == []
    (report,) = result.files
    assert (report.format, report.trace_keys, report.error) == ("otlp_logs", [], None)
    assert report.skipped == f"{otlp.LOGS_WITHOUT_SPANS}: trace {TRACE_ID}; {otlp.LOGS_WITHOUT_TRACE}"
    assert "OTLP spans are not in this import" in report.skipped


def test_records_of_a_trace_without_spans_are_named_beside_the_joined_trace(files):
    doc = json.loads(files[LOGS].data)
    stray = copy.deepcopy(doc["resourceLogs"][0])
    for record in stray["scopeLogs"][0]["logRecords"]:
        record["traceId"] = OTHER_TRACE
    doc["resourceLogs"].append(stray)
    result = read_files([files[SPANS], SourceFile("mixed.json", json.dumps(doc).encode())])
    assert [t.identity_key for t in result.traces] == [f"otlp:{TRACE_ID}"]
    mixed = result.files[1]
    assert mixed.trace_keys == [f"otlp:{TRACE_ID}"]
    # the records without a trace id are not worth a word once the file joined a trace
    assert mixed.skipped == f"{otlp.LOGS_WITHOUT_SPANS}: trace {OTHER_TRACE}"


def test_records_without_a_trace_id_alone(files):
    doc = json.loads(files[LOGS].data)
    plain = {"resourceLogs": [r for r in doc["resourceLogs"] if "traceId" not in r["scopeLogs"][0]["logRecords"][0]]}
    assert plain["resourceLogs"]  # the fixture has one
    (report,) = read_files([SourceFile("plain.json", json.dumps(plain).encode())]).files
    assert report.skipped == otlp.LOGS_WITHOUT_TRACE


def test_many_trace_ids_are_listed_five_then_counted(files):
    doc = json.loads(files[LOGS].data)
    template = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    records = [{**template, "traceId": f"{n:032x}"} for n in range(1, 8)]
    logs = {"resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {}, "logRecords": records}]}]}
    (report,) = read_files([SourceFile("many.json", json.dumps(logs).encode())]).files
    shown = ", ".join(f"{n:032x}" for n in range(1, 6))
    assert report.skipped == f"{otlp.LOGS_WITHOUT_SPANS}: traces {shown} and 2 more"


def test_a_malformed_record_fails_its_file_naming_the_record_and_field(files, fixtures, tmp_path):
    doc = json.loads(files[LOGS].data)
    doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][2]["spanId"] = "not-an-id"
    result = read_files([files[SPANS], SourceFile("bad.json", json.dumps(doc).encode())])
    bad = result.files[1]
    assert bad.error.startswith("malformed otlp_logs: resourceLogs[0].scopeLogs[0].logRecords[2]: spanId 'not-an-id'")
    assert bad.trace_keys == []
    shutil.copy(fixtures / SPANS, tmp_path / "spans.json")
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match="bad.json"):  # read_traces: all or nothing
        read_traces(tmp_path)


def test_a_spans_request_is_not_a_logs_file_and_the_endpoints_sniffs_stay_apart(files):
    spans_doc, logs_doc = json.loads(files[SPANS].data), json.loads(files[LOGS].data)
    assert otlp.sniff(spans_doc) and not otlp.sniff(logs_doc)  # /v1/traces reads spans only
    assert otlp.sniff_logs(logs_doc) and not otlp.sniff_logs(spans_doc)
