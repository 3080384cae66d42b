"""Error answers: the 400/404/500 handlers (settings: `handler400`, `handler404`, `handler500` in
webapp.config.urls) and FriendlyErrorsMiddleware, which gives the same answers with DEBUG on.

Pages get `templates/404.html`, `500.html` or `400.html`: what went wrong in words and where to go,
never an exception's text or a traceback. Under /api/ and /v1/ the answer is JSON
(`{"error": ...}`), as for the API's own errors. Django's technical debug pages show only where
DEBUG is on and SWARMSCOPE_DEBUG_PAGES=1 asks for them; the traceback of a 500 always goes to the
log (`django.request`).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import (
    BadRequest,
    PermissionDenied,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.urls import Resolver404, get_resolver
from django.utils.log import log_response
from django.views.decorators.csrf import requires_csrf_token
from django.views.defaults import permission_denied

log = logging.getLogger("django.request")

API_PREFIXES = ("/api/", "/v1/")


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIXES)


def _reason(exception) -> str:
    """A view's own words for a 404 (`Http404("no such trace")`), never an unresolved URL's details."""
    if isinstance(exception, Http404) and not isinstance(exception, Resolver404) and exception.args:
        message = exception.args[0]
        if isinstance(message, str) and len(message) <= 200:
            return message
    return ""


def _page(request: HttpRequest, template: str, status: int, context: dict | None = None) -> HttpResponse:
    return HttpResponse(loader.render_to_string(template, context or {}, request), status=status)


@requires_csrf_token
def not_found(request: HttpRequest, exception=None) -> HttpResponse:
    """404: JSON under /api/ and /v1/ (a malformed id answers as an unknown one does); the page elsewhere."""
    if is_api(request):
        return JsonResponse({"error": "not found"}, status=404)
    return _page(request, "404.html", 404, {"reason": _reason(exception), "request_path": request.path})


def limit_refusal(exception) -> tuple[str, str, int] | None:
    """(reason, setting, limit) for a request refused by one of Django's request limits, naming
    the limit and the setting that moves it; None for any other bad request."""
    if isinstance(exception, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        setting = "SWARMSCOPE_MAX_UPLOAD_FILES"
        return f"more than {limit} files in one request ({setting}); send them in several uploads", setting, limit
    if isinstance(exception, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return f"more than {limit} form fields in one request", "DATA_UPLOAD_MAX_NUMBER_FIELDS", limit
    return None


@requires_csrf_token
def bad_request(request: HttpRequest, exception=None) -> HttpResponse:
    """400: JSON under /api/ and /v1/, else the page; a request over one of Django's limits (files,
    form fields) is told which limit and its value (`limit_refusal`)."""
    refusal = limit_refusal(exception)
    if is_api(request):
        if refusal is not None:
            reason, setting, limit = refusal
            return JsonResponse({"error": reason, "setting": setting, "limit": limit}, status=400)
        return JsonResponse({"error": "bad request"}, status=400)
    return _page(request, "400.html", 400, {"reason": refusal[0]} if refusal else None)


@requires_csrf_token
def server_error(request: HttpRequest) -> HttpResponse:
    """500: JSON under /api/ and /v1/; else the page. Rendered without the request's context (no
    user, no database): whatever broke the view must not break its error page too."""
    if is_api(request):
        return JsonResponse({"error": "internal server error: the details are in the server's log"}, status=500)
    try:
        return HttpResponse(loader.render_to_string("500.html"), status=500)
    except Exception:  # noqa: BLE001 - the last resort must answer
        return HttpResponse("<h1>Something went wrong</h1><p>The details are in the server's log.</p>", status=500)


def debug_pages_wanted() -> bool:
    """Django's technical 404/500 pages: only with DEBUG on and SWARMSCOPE_DEBUG_PAGES=1."""
    return settings.DEBUG and getattr(settings, "SWARMSCOPE_DEBUG_PAGES", False)


class FriendlyErrorsMiddleware:
    """With DEBUG on (the local default), answer unknown URLs, Http404, bad requests and unhandled
    exceptions with the handlers above instead of Django's debug pages (unless
    SWARMSCOPE_DEBUG_PAGES). With DEBUG off, Django calls the same handlers itself. A view's
    PermissionDenied (a role too low) gets Django's 403 page and one warning line on `django.request`,
    not the traceback Django logs with it. Put it last in MIDDLEWARE, so CommonMiddleware still
    redirects to the URL with a slash."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.DEBUG and not debug_pages_wanted():
            try:
                get_resolver(getattr(request, "urlconf", None)).resolve(request.path_info)
            except Resolver404 as exc:
                return not_found(request, exc)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, PermissionDenied):
            response = permission_denied(request, exception)
            log_response("Forbidden: %s: %s", request.path, exception, response=response, request=request)
            return response
        if not settings.DEBUG or debug_pages_wanted():
            return None  # Django's own handling: the handlers above
        if isinstance(exception, Http404):
            return not_found(request, exception)
        if isinstance(exception, SuspiciousOperation | BadRequest):
            log.warning("Bad request: %s: %s", request.path, exception)
            return bad_request(request, exception)
        log.error("Internal Server Error: %s", request.path, exc_info=exception)
        return server_error(request)
