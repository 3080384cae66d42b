"""Files = streams: an OTLP/JSON logs file imported with its spans file (several files or a folder,
in any order; `import_traces`, the Upload page, the upload API) is stored as the same trace that
/v1/traces + /v1/logs store for the same files; a logs file without its spans is skipped, naming
its trace id, and stores nothing.

Fixtures: `otlp_multi_agent_spans.json` (an orchestrator delegating to a researcher and a writer,
`chat` spans without content) and `otlp_multi_agent_logs.json` (their content on the logs signal,
six records of trace 5e1f…, and one plain log without trace context). The library's side of the
join is tests/swarmscope/importers/test_otlp_log_files.py.
"""

import json
import shutil
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from swarmscope.importers import SourceFile, otlp
from tests.traces.test_otlp_streaming import stored_form
from webapp.accounts.services import do_get_or_create_project
from webapp.traces.ingest import do_import_sources
from webapp.traces.models import StoredLogRecord, Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]

TRACE_ID = "5e1f0c2a9b7d4e3f8a6b1c0d2e4f6a8b"
SPANS, LOGS = "otlp_multi_agent_spans.json", "otlp_multi_agent_logs.json"


def streamed(api_client, fixtures) -> dict:
    """The stored form of the trace that /v1/traces then /v1/logs store for the two files (JSON)."""
    for path, name in ((SPANS, "traces"), (LOGS, "logs")):
        response = api_client.post(f"/v1/{name}", data=(fixtures / path).read_bytes(), content_type="application/json")
        assert response.status_code == 200, response.content
    return stored_form(Trace.objects.get(identity_key=f"otlp:{TRACE_ID}", project__name="Test project"))


@pytest.mark.parametrize("order", [(SPANS, LOGS), (LOGS, SPANS)])
def test_spans_and_logs_files_import_as_the_endpoints_store_them(api_client, fixtures, order):
    expected = streamed(api_client, fixtures)
    assert expected["attributes"]["log_records"] == 6 and expected["attributes"]["input"].startswith("system: ")
    project = do_get_or_create_project("Files")
    outcomes = do_import_sources(project, [SourceFile(name, (fixtures / name).read_bytes()) for name in order])
    assert [(o.name, o.skipped, o.error) for o in outcomes] == [(name, None, None) for name in order]
    (trace,) = {t.pk: t for o in outcomes for t in o.traces}.values()
    assert stored_form(trace) == expected
    assert trace.attributes["sources"] == list(order)
    assert not StoredLogRecord.objects.filter(project=project).exists()  # a file import stores the trace only


def test_a_folder_of_spans_and_logs_imports_as_one_trace(api_client, fixtures, tmp_path):
    expected = streamed(api_client, fixtures)
    shutil.copy(fixtures / LOGS, tmp_path / "a-logs.json")
    shutil.copy(fixtures / SPANS, tmp_path / "b-spans.json")
    out = StringIO()
    call_command("import_traces", str(tmp_path), "--project", "Folder", stdout=out, stderr=StringIO())
    (trace,) = Trace.objects.filter(project__name="Folder")
    assert stored_form(trace) == expected
    lines = out.getvalue().splitlines()
    assert [line.split(": ")[0] for line in lines] == [str(tmp_path / "a-logs.json"), str(tmp_path / "b-spans.json")]
    assert all(f"imported as trace {trace.pk}: 3 agents" in line for line in lines), lines


def test_a_logs_file_alone_is_skipped_naming_its_trace(fixtures, api_client):
    out = StringIO()
    call_command("import_traces", str(fixtures / LOGS), stdout=out, stderr=StringIO())  # exit 0: a skip
    (line,) = out.getvalue().splitlines()
    assert line.startswith(f"{fixtures / LOGS}: skipped: OTLP log records of a trace whose OTLP spans are not")
    assert line.endswith(f"trace {TRACE_ID}; {otlp.LOGS_WITHOUT_TRACE}")
    assert not Trace.objects.exists() and not StoredLogRecord.objects.exists()

    answer = api_client.post(
        "/api/traces/upload/?filename=logs.json", data=(fixtures / LOGS).read_bytes(), content_type="application/json"
    )
    assert answer.status_code == 200, answer.content  # a skip, not a failure
    (report,) = answer.json()["files"]
    assert report["traces"] == [] and report["error"] is None and TRACE_ID in report["skipped"]
    assert not Trace.objects.exists()


def test_the_upload_page_joins_the_files_and_reports_a_stray_trace(fixtures, member, client):
    doc = json.loads((fixtures / LOGS).read_text())
    doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["traceId"] = "ab" * 16  # a trace not uploaded
    client.force_login(member)
    response = client.post(
        "/upload/",
        {
            "file": [
                SimpleUploadedFile("logs.json", json.dumps(doc).encode()),
                SimpleUploadedFile("spans.json", (fixtures / SPANS).read_bytes()),
            ]
        },
    )
    assert response.status_code == 200
    page = response.content.decode()
    (trace,) = Trace.objects.all()
    assert trace.attributes["log_records"] == 5
    assert f'<li class="ok">logs.json: imported as trace {trace.pk}: 3 agents' in page
    assert '<li class="skipped">logs.json: skipped: OTLP log records of a trace whose OTLP spans' in page
    assert f"trace {'ab' * 16}</li>" in page
    assert f'<li class="ok">spans.json: imported as trace {trace.pk}' in page
