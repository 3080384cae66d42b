"""The one authentication path of every websocket (docs/architecture.md "Security"), and the
refusal of NUL characters in page requests (`RefuseNulMiddleware`) and the Content-Security-Policy
header (`ContentSecurityPolicyMiddleware`), at the end.

A socket authenticates either with `?token=<API token>` or with the browser's session cookie, never
both and never one after the other:

- With `?token=` (present at all, even empty or unknown) the cookie is not read: the consumer
  (webapp.web.sockets.SequencedConsumer) resolves that token alone and closes with 4401 and a
  reason when it is unknown, revoked or its user deactivated. No Origin check: a token is not an
  ambient credential (a browser never sends it on its own), so a page that has it could use it
  over HTTP anyway, and scripts and SDK clients send no Origin.
- Without it the session cookie is used, which a browser attaches to a cross-site handshake as
  well: the handshake is refused (HTTP 403) unless its Origin is the site's own (`origin_allowed`:
  scheme, host and port) or one of SWARMSCOPE_WEBSOCKET_ORIGINS. No Origin header means refused.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from channels.auth import AuthMiddlewareStack
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.request import split_domain_port, validate_host
from django.template import loader

from swarmscope.inputs import MAX_DB_INT

from .errors import not_found

DEFAULT_PORTS = {"http": 80, "https": 443}


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def normalise_origin(origin: str) -> tuple[str, str, int] | None:
    """`(scheme, host, port)` of an origin such as `https://app.example.org:8443` (the port made
    explicit), or None when it is not an http(s) origin (`null`, a path, junk)."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in DEFAULT_PORTS or not host or parts.path not in ("", "/") or parts.query or parts.username:
        return None
    return scheme, host, port or DEFAULT_PORTS[scheme]


def site_scheme(scope) -> str:
    """The scheme the browser used to reach this server, as Django's `request.is_secure()` decides
    it: the trusted proxy header (SECURE_PROXY_SSL_HEADER) when configured and present, else the
    socket's own (`wss` -> https); when the server does not say (Daphne puts no scheme in a
    websocket scope), https where plain HTTP is redirected to HTTPS (SECURE_SSL_REDIRECT), else http."""
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name, secure_value = proxy
        value = _header(scope, name.removeprefix("HTTP_").lower().replace("_", "-").encode())
        if value is not None:
            return "https" if value.split(",")[0].strip() == secure_value else "http"
    scheme = scope.get("scheme")
    if scheme:
        return "https" if scheme in ("wss", "https") else "http"
    return "https" if settings.SECURE_SSL_REDIRECT else "http"


def site_origin(scope) -> tuple[str, str, int] | None:
    """The site's own origin for this handshake: `site_scheme` and the Host header, when that host is
    one of ALLOWED_HOSTS (else None: a rebound DNS name must not make any origin "its own")."""
    host = _header(scope, b"host")
    if not host:
        return None
    domain, port = split_domain_port(host.lower())
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    scheme = site_scheme(scope)
    try:
        return scheme, domain.strip("[]"), int(port) if port else DEFAULT_PORTS[scheme]
    except ValueError:
        return None


def origin_allowed(scope) -> bool:
    """Whether a cookie-authenticated handshake comes from the site itself: its Origin equals the
    site's own origin (scheme, host and port) or is listed in SWARMSCOPE_WEBSOCKET_ORIGINS. A missing
    or unparseable Origin is refused."""
    origin = _header(scope, b"origin")
    parsed = normalise_origin(origin) if origin else None
    if parsed is None:
        return False
    allowed = {normalise_origin(o) for o in settings.SWARMSCOPE_WEBSOCKET_ORIGINS}
    return parsed in allowed or parsed == site_origin(scope)


class SocketAuthentication:
    """ASGI middleware of the websocket routes: token or session, as the module docstring says.

    Sets `scope["auth"]` to "token" (with `scope["raw_token"]`, and an anonymous `scope["user"]`)
    or "session" (with the session's user, from Channels' AuthMiddlewareStack)."""

    def __init__(self, app):
        self.app = app
        self.with_session = AuthMiddlewareStack(app)

    async def __call__(self, scope, receive, send):
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if "token" in query:
            scope = {**scope, "auth": "token", "raw_token": query["token"][0], "user": AnonymousUser()}
            return await self.app(scope, receive, send)
        if not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)  # HTTP 403 to the handshake
        return await self.with_session({**scope, "auth": "session"}, receive, send)


# --- NUL characters in page requests ------------------------------------------------------------

NUL_REFUSAL = "must not contain a NUL character (U+0000)"
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"


def nul_field(request: HttpRequest) -> str | None:
    """The name of the first query-string or url-encoded form field whose name or value holds a NUL
    (`\\x00`), else None. PostgreSQL text cannot hold NUL, and psycopg refuses it in any query
    parameter ("A string literal cannot contain NUL (0x00) characters", a 500 where a search or a
    login looks it up); SQLite stores it. Multipart bodies (uploads) are left to their views: reading
    them here would consume the stream; the API checks its own JSON bodies (webapp.web.validation)."""
    if "%00" in request.META.get("QUERY_STRING", "") or "\x00" in request.META.get("QUERY_STRING", ""):
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in v for v in values):
                return name.replace("\x00", "\\x00")
    if request.method == "POST" and request.content_type == FORM_CONTENT_TYPE:
        try:
            body = request.body
        except RequestDataTooBig:
            return None  # the view's own refusal (413) stands
        if b"%00" in body or b"\x00" in body:
            for name, values in request.POST.lists():
                if "\x00" in name or any("\x00" in v for v in values):
                    return name.replace("\x00", "\\x00")
    return None


class RefuseNulMiddleware:
    """Answer 400 naming the field to a page request with a NUL in its query string or form fields
    (`nul_field`): JSON `{"error", "field"}` under /api/ and /v1/, else the 400 page with the reason.
    Nothing reaches a view, so nothing is stored."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        field = nul_field(request)
        if field is None:
            return self.get_response(request)
        if request.path.startswith(("/api/", "/v1/")):
            return JsonResponse({"error": NUL_REFUSAL, "field": field}, status=400)
        reason = f"{field}: {NUL_REFUSAL}"
        return HttpResponse(loader.render_to_string("400.html", {"reason": reason}, request), status=400)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> HttpResponse | None:
        """404 (the friendly page, JSON under /api/) for a URL naming what no row can be: an id past a
        64-bit column (`/projects/<10**30>/members/`: SQLite cannot even compare it) or a path part
        holding a NUL (`/sessions/%00/`: PostgreSQL cannot compare it)."""
        for value in (*view_args, *view_kwargs.values()):
            if (isinstance(value, int) and value > MAX_DB_INT) or (isinstance(value, str) and "\x00" in value):
                # answered here: an Http404 raised by a middleware would get Django's debug page with DEBUG on
                return not_found(request, Http404("no such page"))
        return None


class ContentSecurityPolicyMiddleware:
    """Set the `Content-Security-Policy` header (SWARMSCOPE_CSP; none when empty) on every response
    that has none: Django 5.2 has no CSP of its own. The policy is one header, so a library
    (django-csp: nonces, per-view policies) would add nothing the pages need."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.policy = settings.SWARMSCOPE_CSP

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response
