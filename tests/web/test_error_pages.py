"""Friendly 404/500 pages with DEBUG on (the local default) and off; JSON under /api/ and /v1/;
never a traceback or Django's technical pages unless SWARMSCOPE_DEBUG_PAGES asks for them."""

from __future__ import annotations

import pytest
from django.http import Http404
from django.test import Client
from django.urls import clear_url_caches, path

from webapp.config import urls as root_urls

pytestmark = pytest.mark.django_db

DEBUG_MARKERS = ("Traceback", "technical_500", "Page not found at", "Using the URLconf", "DEBUG = True", "Django tried")


def _boom(request):
    raise RuntimeError("secret internal detail 0xdeadbeef")


def _gone(request):
    raise Http404("no such widget")


@pytest.fixture
def broken_urls(monkeypatch):
    """Two extra routes: a page and an API endpoint that raise."""
    patterns = [
        path("test-boom/", _boom),
        path("api/test-boom/", _boom),
        path("test-gone/", _gone),
        *root_urls.urlpatterns,
    ]
    monkeypatch.setattr(root_urls, "urlpatterns", patterns)
    clear_url_caches()
    yield
    clear_url_caches()


@pytest.fixture(params=[True, False], ids=["debug-on", "debug-off"])
def debug(request, settings):
    settings.DEBUG = request.param
    settings.SWARMSCOPE_DEBUG_PAGES = False
    return request.param


@pytest.fixture
def user_client(member):
    client = Client(raise_request_exception=False)
    client.force_login(member)
    return client


def _clean(text: str) -> None:
    for marker in DEBUG_MARKERS:
        assert marker not in text, marker
    assert "secret internal detail" not in text and "RuntimeError" not in text and "Resolver404" not in text


def test_unknown_url_renders_the_friendly_404(debug, user_client):
    response = user_client.get("/no/such/page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
    text = response.content.decode()
    assert 'data-testid="not-found"' in text and "/no/such/page/" in text and 'href="/"' in text
    _clean(text)


def test_unknown_trace_and_view_404_give_the_friendly_page_with_the_views_words(debug, user_client, broken_urls):
    response = user_client.get("/traces/999999/")
    assert response.status_code == 404 and "no such trace" in response.content.decode()
    _clean(response.content.decode())
    response = user_client.get("/test-gone/")
    assert response.status_code == 404 and "no such widget" in response.content.decode()


def test_anonymous_404_is_friendly_too(debug):
    response = Client().get("/definitely-not-here")
    assert response.status_code == 404
    _clean(response.content.decode())


def test_missing_slash_still_redirects(debug, user_client):
    response = user_client.get("/upload")
    assert response.status_code == 301 and response["Location"] == "/upload/"


def test_forced_500_renders_the_friendly_page_and_logs_the_traceback(debug, user_client, broken_urls, caplog):
    response = user_client.get("/test-boom/")
    assert response.status_code == 500
    text = response.content.decode()
    assert 'data-testid="server-error"' in text and "log" in text
    _clean(text)
    assert any("secret internal detail" in str(r.exc_info) for r in caplog.records if r.exc_info)


def test_api_paths_stay_json(debug, user_client, broken_urls):
    for url in ("/api/no-such-endpoint/", "/api/traces/999999999/", "/v1/nothing"):
        response = user_client.get(url)
        assert response.status_code == 404, url
        assert response["Content-Type"] == "application/json", url
        assert response.json()["error"]
    response = user_client.get("/api/test-boom/")
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert "secret" not in response.content.decode() and "Traceback" not in response.content.decode()


def test_debug_pages_only_when_asked_for(settings, user_client):
    settings.DEBUG = True
    settings.SWARMSCOPE_DEBUG_PAGES = True
    response = user_client.get("/no/such/page/")
    assert response.status_code == 404 and "Using the URLconf" in response.content.decode()


def test_permission_denied_keeps_the_403_page(debug, client, django_user_model):
    from webapp.accounts.services import do_add_member, do_get_or_create_project

    viewer = django_user_model.objects.create_user("vic", password="vic-password-1")
    do_add_member(do_get_or_create_project("P"), viewer, "viewer")
    client.force_login(viewer)
    response = client.post("/upload/")
    assert response.status_code == 403 and 'data-testid="forbidden"' in response.content.decode()
    _clean(response.content.decode())


def test_a_viewers_403_logs_one_line_without_a_traceback(debug, client, django_user_model, caplog):
    from webapp.accounts.services import do_add_member, do_get_or_create_project

    project = do_get_or_create_project("P")
    viewer = django_user_model.objects.create_user("vic", password="vic-password-1")
    do_add_member(project, viewer, "viewer")
    client.force_login(viewer)
    with caplog.at_level("WARNING", logger="django.request"):
        response = client.post(f"/projects/{project.pk}/delete/", {"confirm_name": "P"})
    assert response.status_code == 403 and "only a project admin may do this" in response.content.decode()
    forbidden = [r for r in caplog.records if r.name == "django.request" and getattr(r, "status_code", None) == 403]
    assert len(forbidden) == 1 and forbidden[0].levelname == "WARNING" and forbidden[0].exc_info is None
    assert f"/projects/{project.pk}/delete/" in forbidden[0].getMessage()
