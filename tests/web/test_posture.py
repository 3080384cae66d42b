"""Request posture (issue 33): unknown Content-Encodings are refused, not read as plain bytes, and
`testserver` is an allowed host only under tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.servers import REPO
from webapp.traces.models import Trace


@pytest.mark.django_db
@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip, br", "x-unknown"])
def test_an_unknown_content_encoding_is_a_415_naming_the_header(api_client, encoding):
    body = json.dumps({"name": "plain bytes"}).encode()
    response = api_client.post(
        "/api/traces/", data=body, content_type="application/json", HTTP_CONTENT_ENCODING=encoding
    )
    assert response.status_code == 415
    assert response.json()["field"] == "Content-Encoding" and "gzip" in response.json()["error"]
    assert Trace.objects.count() == 0
    plain = api_client.post(
        "/api/traces/", data=body, content_type="application/json", HTTP_CONTENT_ENCODING="identity"
    )
    assert plain.status_code == 201


def test_testserver_is_not_an_allowed_host_by_default():
    env = {k: v for k, v in os.environ.items() if k not in ("ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE")}
    code = "from webapp.config import settings; print(','.join(settings.ALLOWED_HOSTS))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "127.0.0.1,localhost"
