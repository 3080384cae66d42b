"""Crawl the app on the sample data as its first user would: every page linked from the trace list
and from each trace page (and the pages those link to, within the site), plus the API and export
URLs the pages name in their `data-*` attributes. No answer may be a 500, Django's debug page or a
Python traceback; links must not lead to a 404. DEBUG is on, as in the local default."""

from __future__ import annotations

from collections import deque
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from django.test import Client

from webapp.traces import samples
from webapp.traces.models import Trace

pytestmark = pytest.mark.django_db

#: Never followed: the admin (Django's own), logging out, static files, websockets.
SKIP_PREFIXES = ("/admin/", "/accounts/logout/", "/static/", "/ws/")
BAD_TEXT = (
    "Traceback (most recent call last)",
    "Using the URLconf",
    "Exception Value",
    'id="traceback"',
    "Django tried",
)
MAX_PAGES = 400


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if not value:
                continue
            if (name == "href" and tag == "a") or (name.startswith("data-") and name.endswith("url")):
                self.links.append(value)


def _links(base: str, html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    found = []
    for link in parser.links:
        url = urldefrag(urljoin(base, link)).url
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.netloc not in ("", "testserver"):
            continue  # another site
        if parts.scheme not in ("", "http", "https") or not parts.path.startswith("/"):
            continue  # mailto:, javascript:, ws:
        local = parts.path + (f"?{parts.query}" if parts.query else "")
        if local.startswith(SKIP_PREFIXES) or local.startswith("/ws/"):
            continue
        found.append(local)
    return found


@pytest.fixture
def first_user_client(settings, django_user_model):
    settings.DEBUG = True
    settings.SWARMSCOPE_DEBUG_PAGES = False
    settings.SWARMSCOPE_SAMPLE_STREAM_S = 0
    admin = django_user_model.objects.create_superuser("admin", password="admin-password-1")
    client = Client(raise_request_exception=False)
    client.force_login(admin)
    response = client.post("/samples/load/")
    assert response.status_code == 302
    return client


def test_crawl_every_page_of_the_sample_data(first_user_client):
    traces = list(Trace.objects.filter(project__name=samples.SAMPLES_PROJECT).order_by("pk"))
    assert len(traces) >= 4 + len(samples.LIVE_EPISODES)
    start = ["/", "/?q=sample", f"/traces/compare/?left={traces[0].pk}&right={traces[1].pk}", "/tokens/"]
    start += [f"/traces/{t.pk}/" for t in traces]
    start += [f"/api/traces/{t.pk}/jobs/" for t in traces]  # what the trace page's script reads too
    queue, seen, visited = deque(start), set(start), []
    while queue and len(visited) < MAX_PAGES:
        url = queue.popleft()
        response = first_user_client.get(url)
        visited.append((url, response.status_code))
        assert response.status_code < 500, f"{url}: {response.status_code}"
        assert response.status_code != 404, f"{url}: a link that leads nowhere"
        if response.status_code in (301, 302):
            target = urlsplit(response["Location"]).path
            assert not target.startswith("/accounts/login"), f"{url}: sent to log in"
            continue
        content_type = response.get("Content-Type", "")
        if not content_type.startswith("text/html"):
            continue
        text = response.content.decode()
        for marker in BAD_TEXT:
            assert marker not in text, f"{url}: {marker!r} on the page"
        parts = urlsplit(url)
        if parts.path.startswith("/api/") or parts.path.startswith("/v1/"):
            continue
        if parts.path == "/" and parts.query and url not in start:
            continue  # a filtered list (facets, sort, page): visited, its own links are the list's again
        for link in _links(url, text):
            if link not in seen:
                seen.add(link)
                queue.append(link)
    pages = {u for u, _ in visited}
    assert "/upload/" in pages and "/projects/" in pages and "/runs/" in pages
    assert any(u.startswith("/api/traces/") and "snapshot" in u for u in pages)
    assert len(visited) < MAX_PAGES, "the crawl did not finish"
