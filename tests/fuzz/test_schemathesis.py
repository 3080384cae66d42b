"""schemathesis against the REST API's OpenAPI document (/api/openapi.json): every documented
operation, with generated valid and invalid inputs, never answers 500 and answers only the status
codes and content types the document lists, with bodies that match its schemas."""

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from schemathesis.checks import (content_type_conformance, not_a_server_error, response_schema_conformance,
                                 status_code_conformance)

from webapp.review.openapi import document

pytestmark = [pytest.mark.django_db, pytest.mark.services, pytest.mark.timeout(900)]

schema = schemathesis.openapi.from_dict(document())
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def test_the_served_document_is_the_one_tested(client):
    assert client.get("/api/openapi.json").json() == document()


@pytest.fixture
def app(team, settings):
    """Django's WSGI handler on the test database: as Django's test client does, requests must not
    close the connection that holds the test transaction."""
    settings.SWARMSCOPE_INGEST_RATE = 0  # the fuzzer sends many requests with one token
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield WSGIHandler()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
def test_api_conforms_to_its_openapi_document(case, app, team):
    case.call_and_validate(app=app, headers={"Authorization": f"Bearer {team.tokens['rev']}"}, checks=CHECKS)
