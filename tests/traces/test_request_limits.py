"""Bounded memory of a request (issue 33): gzip files of an import decompressed as a stream, a ratio
cap (a decompression bomb is refused early), a total cap over all the files of one request,
refusals naming the file and the limit; the OTLP export streamed, large ones for writers only."""

import gzip
import json
import zlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from swarmscope.importers import DecompressionBudget, SourceFile, TraceFormatError, decompressed

pytestmark = [pytest.mark.django_db, pytest.mark.services]

MiB = 1024 * 1024


def bomb(size: int) -> bytes:
    """A gzip file of `size` zero bytes (about 1000-fold smaller)."""
    return gzip.compress(b"\0" * size)


def native(source_id: str, padding: int = 0) -> bytes:
    """A small native trace; `padding` characters of incompressible-enough content in one event."""
    content = "".join(chr(0x41 + (i * 7919) % 26) for i in range(padding))
    doc = {
        "format": "swarmscope",
        "version": 1,
        "source_format": "native",
        "source_id": source_id,
        "agents": [{"name": "solo"}],
        "events": [{"id": "e1", "t": 0.0, "type": "message", "agent": "solo", "content": content}],
    }
    return json.dumps(doc).encode()


def test_a_bomb_is_refused_by_its_ratio_before_it_is_expanded():
    budget = DecompressionBudget(total=1 << 40, ratio=50, ratio_name="SWARMSCOPE_MAX_GZIP_RATIO")
    with pytest.raises(TraceFormatError, match=r"expands more than 50-fold.*SWARMSCOPE_MAX_GZIP_RATIO") as refused:
        decompressed(SourceFile("bomb.json.gz", bomb(16 * MiB)), limit=1 << 40, budget=budget)
    assert refused.value.source == "bomb.json.gz" and budget.used == 0


def test_files_that_fit_take_their_share_of_the_budget_and_members_all_count():
    text = native("a")
    two_members = gzip.compress(text[:10]) + gzip.compress(text[10:])
    budget = DecompressionBudget(total=3 * len(text), ratio=200)
    assert decompressed(SourceFile("a.json.gz", two_members), budget=budget).data == text
    assert decompressed(SourceFile("plain.json", text), budget=budget).data == text
    assert budget.used == 2 * len(text)
    with pytest.raises(TraceFormatError, match=rf"with the files before it over {3 * len(text)} bytes"):
        decompressed(SourceFile("c.json.gz", gzip.compress(text + b" " * 10)), budget=budget)
    with pytest.raises(TraceFormatError, match="cut short"):
        decompressed(SourceFile("cut.json.gz", gzip.compress(text)[:-12]))
    raw = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    with pytest.raises(TraceFormatError, match="does not decompress"):
        decompressed(SourceFile("junk.gz", raw.compress(text) + raw.flush() + b"\x1f\x8bjunk"))


def test_the_api_upload_refuses_a_bomb_naming_file_and_ratio(api_client, settings):
    settings.SWARMSCOPE_MAX_GZIP_RATIO = 100
    good = SimpleUploadedFile("good.json", native("good"), content_type="application/json")
    boom = SimpleUploadedFile("boom.json.gz", bomb(8 * MiB), content_type="application/gzip")
    response = api_client.post("/api/traces/upload/", {"file": [good, boom]})
    assert response.status_code == 400, response.content
    files = {f["file"]: f for f in response.json()["files"]}
    assert files["good.json"]["error"] is None and len(files["good.json"]["traces"]) == 1
    assert "expands more than 100-fold" in files["boom.json.gz"]["error"]
    assert "SWARMSCOPE_MAX_GZIP_RATIO" in files["boom.json.gz"]["report"][0]
    assert files["boom.json.gz"]["report"][0].startswith("boom.json.gz: failed: gzip-compressed")


def test_the_api_upload_caps_all_files_together_not_each(api_client, settings):
    """Each file fits the per-file limit; the third passes the request's total and is refused by name."""
    texts = [native(f"t{i}", padding=40_000) for i in range(3)]
    settings.SWARMSCOPE_MAX_IMPORT_BYTES = len(texts[0]) + len(texts[1]) + len(texts[2]) // 2
    uploads = [
        SimpleUploadedFile(f"t{i}.json.gz", gzip.compress(t), content_type="application/gzip")
        for i, t in enumerate(texts)
    ]
    response = api_client.post("/api/traces/upload/", {"file": uploads})
    assert response.status_code == 400, response.content
    files = response.json()["files"]
    assert [bool(f["traces"]) for f in files] == [True, True, False]
    assert files[2]["file"] == "t2.json.gz"
    assert f"over {settings.SWARMSCOPE_MAX_IMPORT_BYTES} bytes" in files[2]["error"]
    assert "SWARMSCOPE_MAX_IMPORT_BYTES" in files[2]["error"]


def test_the_upload_page_refuses_a_bomb_with_the_reason(client, member, settings):
    client.force_login(member)
    settings.SWARMSCOPE_MAX_GZIP_RATIO = 100
    boom = SimpleUploadedFile("boom.json.gz", bomb(8 * MiB), content_type="application/gzip")
    text = client.post("/upload/", {"file": boom}).content.decode()
    assert "boom.json.gz: failed: gzip-compressed, and expands more than 100-fold" in text


def test_the_otlp_export_streams_and_large_ones_are_for_writers_only(api_client, project, settings):
    from django.contrib.auth import get_user_model
    from django.test import Client

    from webapp.accounts.services import do_add_member
    from webapp.traces import ingest

    (outcome,) = ingest.do_import_sources(project, [SourceFile("t.json", native("export-me"))])
    (trace,) = outcome.traces
    url = f"/api/traces/{trace.pk}/export/otlp/"
    viewer = get_user_model().objects.create_user("vera", password="vera-password-1")
    do_add_member(project, viewer, "viewer")
    client = Client()
    client.force_login(viewer)
    settings.SWARMSCOPE_EXPORT_LARGE_EVENTS = 1
    assert client.get(url).status_code == 200  # one event: not large
    settings.SWARMSCOPE_EXPORT_LARGE_EVENTS = 0
    refused = client.get(url)
    assert refused.status_code == 403 and "SWARMSCOPE_EXPORT_LARGE_EVENTS" in refused.json()["error"]
    exported = api_client.get(url)  # the admin's token
    assert exported.status_code == 200 and exported.streaming
    (resource_spans,) = json.loads(b"".join(exported.streaming_content))["resourceSpans"]
    assert len(resource_spans["scopeSpans"][0]["spans"]) == 3  # root, agent, event
    settings.SWARMSCOPE_EXPORT_MAX_EVENTS = 0
    too_big = api_client.get(url)
    assert too_big.status_code == 413 and "over the 0 an export may hold" in too_big.json()["error"]
