"""A request body compressed as a whole (Content-Encoding gzip or deflate) is decompressed within the
budget of gzip files in an upload (issue 33): a bomb is refused with a 413 naming
SWARMSCOPE_MAX_GZIP_RATIO after about a MiB of output, on every route that reads such bodies,
holding nothing near its decompressed size (Python allocations traced; before, the whole 100 MiB)."""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib

import pytest

from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db]

MiB = 1024 * 1024
BOMB_MIB = 100  # under SWARMSCOPE_MAX_UPLOAD_BYTES (200 MiB): only the ratio stops it


def compressed(mib: int, encoding: str) -> bytes:
    """`mib` MiB of spaces, compressed a MiB at a time (gzip: a gzip member; deflate: a zlib stream)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    block = b" " * MiB
    return b"".join(packer.compress(block) for _ in range(mib)) + packer.flush()


@pytest.fixture(scope="module")
def bombs():
    return {encoding: compressed(BOMB_MIB, encoding) for encoding in ("gzip", "deflate")}


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
@pytest.mark.parametrize(
    "url, content_type",
    [
        ("/api/traces/", "application/json"),
        ("/api/traces/upload/?filename=bomb.json", "application/json"),
        ("/v1/traces", "application/json"),
    ],
)
def test_a_compressed_body_bomb_is_a_413_naming_the_ratio(api_client, bombs, encoding, url, content_type):
    body = bombs[encoding]
    assert len(body) * 1000 < BOMB_MIB * MiB  # over a thousandfold
    tracemalloc.start()
    try:
        response = api_client.post(url, data=body, content_type=content_type, HTTP_CONTENT_ENCODING=encoding)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 413, response.content[:500]
    error = response.json().get("error") or response.json()["message"]  # OTLP answers a google.rpc.Status
    assert "SWARMSCOPE_MAX_GZIP_RATIO" in error and "200-fold" in error and encoding in error
    assert peak < 32 * MiB, f"held {peak / MiB:.1f} MiB for a {BOMB_MIB} MiB bomb"
    assert Trace.objects.count() == 0


def test_a_well_compressed_body_within_the_ratio_is_read(api_client, settings):
    """Ordinary JSON compresses far less than 200-fold: read as before; a lower ratio refuses it."""
    events = [{"id": f"e{i}", "t": i, "type": "message", "agent": "a"} for i in range(50)]
    doc = {"name": "compressed", "events": events}
    body = gzip.compress(json.dumps(doc).encode())
    answer = api_client.post("/api/traces/", data=body, content_type="application/json", HTTP_CONTENT_ENCODING="gzip")
    assert answer.status_code == 201, answer.content
    settings.SWARMSCOPE_MAX_IMPORT_BYTES = 100  # the total budget of an import bounds a body too
    refused = api_client.post("/api/traces/", data=body, content_type="application/json", HTTP_CONTENT_ENCODING="gzip")
    assert refused.status_code == 413 and "SWARMSCOPE_MAX_IMPORT_BYTES" in refused.json()["error"]
