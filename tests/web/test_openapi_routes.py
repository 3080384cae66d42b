"""The OpenAPI document (webapp.web.openapi) lists every API route with every method its view
takes, and nothing that is not a route: a new endpoint fails here until it is documented."""

from __future__ import annotations

import re

from django.urls import URLPattern, URLResolver, get_resolver

from webapp.web.openapi import document

#: Routes under /api/ and /v1/ that are not API operations.
NOT_OPERATIONS = {"/api/openapi.json"}


def api_routes() -> dict[str, set[str]]:
    """Every URL route under /api/ and /v1/ in OpenAPI's path syntax -> the HTTP methods (lower
    case) its view takes (`api_view`'s methods)."""
    found: dict[str, set[str]] = {}

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                route = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", prefix + str(pattern.pattern))
                if route.startswith(("/api/", "/v1/")) and route not in NOT_OPERATIONS:
                    methods = getattr(pattern.callback, "api_methods", None)
                    assert methods, f"{route}: its view is not an api_view"
                    found[route] = {m.lower() for m in methods}

    walk(get_resolver().url_patterns, "")
    return found


def test_every_api_route_and_method_is_in_the_openapi_document():
    routes = api_routes()
    paths = {
        path: {m for m in item if m in ("get", "post", "put", "patch", "delete")}
        for path, item in document()["paths"].items()
    }
    assert len(routes) > 40  # the walk found the API
    missing = {route: sorted(methods - paths.get(route, set())) for route, methods in routes.items()}
    missing = {route: methods for route, methods in missing.items() if methods}
    assert not missing, f"routes and methods missing from the OpenAPI document: {missing}"
    extra = {path: sorted(methods - routes.get(path, set())) for path, methods in paths.items()}
    extra = {path: methods for path, methods in extra.items() if methods}
    assert not extra, f"documented but not served: {extra}"
