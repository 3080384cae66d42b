"""`{% modulepreload "js/pages/trace_page.js" ... %}`: a `<link rel="modulepreload">` for every ES
module the page's entry modules import, transitively (webapp.web.module_graph), so that the
browser fetches the whole graph at once instead of one import wave after another.

The graph is read from the static files once per process and set of entries (not cached with
DEBUG on, so that an edited import shows at the next page load). The links are plain `<link>`
elements of this site's own files: the Content-Security-Policy's `script-src 'self'` covers them
and the modules they preload."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from django import template
from django.conf import settings
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from webapp.web.module_graph import list_module_graph

register = template.Library()


def _find(path: str) -> Path | None:
    found = finders.find(path)
    return Path(found) if isinstance(found, str) else None


def _graph(entries: tuple[str, ...]) -> list[str]:
    return list_module_graph(entries, _find, settings.STATIC_URL or "/static/")


_cached_graph = lru_cache(maxsize=64)(_graph)


def page_modules(*entries: str) -> list[str]:
    """The static-relative paths of `entries` and every module they import (see
    webapp.web.module_graph.list_module_graph), each once."""
    return _graph(entries) if settings.DEBUG else _cached_graph(entries)


@register.simple_tag
def modulepreload(*entries: str) -> SafeString:
    """One `<link rel="modulepreload" href="/static/...">` per module of `entries`' graph, one a line."""
    return format_html_join(
        "\n", '<link rel="modulepreload" href="{}">', ((static(p),) for p in page_modules(*entries))
    )
