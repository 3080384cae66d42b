"""A request over one of Django's request limits is refused naming the limit and its setting
(issue 33: the 5,001-file upload said only "bad request")."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db]


def files(n: int) -> list[SimpleUploadedFile]:
    return [SimpleUploadedFile(f"f{i}.json", b"{}", content_type="application/json") for i in range(n)]


def test_an_api_upload_over_the_file_limit_names_it(api_client, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    response = api_client.post("/api/traces/upload/", {"file": files(4)})
    assert response.status_code == 400
    doc = response.json()
    assert doc["limit"] == 3 and doc["setting"] == "SWARMSCOPE_MAX_UPLOAD_FILES"
    assert "more than 3 files" in doc["error"] and Trace.objects.count() == 0


def test_the_upload_page_over_the_file_limit_names_it(client, member, settings):
    client.force_login(member)
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    response = client.post("/upload/", {"file": files(4)})
    assert response.status_code == 400
    assert "more than 3 files in one request (SWARMSCOPE_MAX_UPLOAD_FILES)" in response.content.decode()


def test_a_form_over_the_field_limit_names_it(client, member, settings):
    client.force_login(member)
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    response = client.post("/upload/", {f"x{i}": "1" for i in range(10)})
    assert response.status_code == 400
    assert "more than 5 form fields" in response.content.decode()
