"""The JSON API's plumbing, shared by every app: the `api_view` decorator (caller, limits, errors),
body reading and parsing, write checks (the error handlers are in webapp.web.errors).

Authentication: `Authorization: Bearer <token>` (an API token, acting in its project with its
user's role there) or the browser session. Reading needs membership; every write needs WRITE_ROLE
(reviewer or admin): a viewer gets 403 naming the role, while unknown and foreign objects answer
404 alike. Errors are JSON: `{"error": ..., "index": ..., "event_id": ..., "field": ...}`.
"""

from __future__ import annotations

import functools
import json
import re
import zlib
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from swarmscope import model as core
from swarmscope.importers import GZIP_INPUT_CHUNK, GZIP_RATIO_FLOOR, SourceFile, TraceFormatError, decode
from webapp.accounts.ratelimit import RateLimited, RateRefused, check_ingest_rate, check_rate
from webapp.accounts.services import (
    WRITE_ROLE,
    AuthenticationRefused,
    PermissionRefused,
    authenticate_token,
    check_role,
    has_role,
    list_projects_of,
    project_ids_for,
)

from .errors import not_found  # noqa: F401 - the 404 handler (JSON under /api/ and /v1/), where it was
from .validation import json_problem


def json_error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


class BodyTooLarge(Exception):
    """A request body (or its decompressed form) over SWARMSCOPE_MAX_UPLOAD_BYTES, or a compressed
    one past a bound of `read_body` (answered 413 with the message, which names the setting)."""


def too_large(message: str = "") -> JsonResponse:
    return json_error(
        413,
        message
        or f"request body over {settings.SWARMSCOPE_MAX_UPLOAD_BYTES} bytes "
        "(SWARMSCOPE_MAX_UPLOAD_BYTES); send smaller batches",
    )


#: The request Content-Encodings `read_body` undoes ("" and identity: none); any other is a 415.
CONTENT_ENCODINGS = ("", "identity", "gzip", "deflate")


def _refuse_request(request: HttpRequest, methods: tuple[str, ...], kwargs: dict) -> JsonResponse | None:
    """The answer to a request refused before anyone looks at the caller, else None."""
    if request.method not in methods:
        return json_error(405, f"method {request.method} not allowed", allowed=list(methods))
    if any(isinstance(v, int) and v >= 2**63 for v in kwargs.values()):
        return json_error(404, "not found")
    for name, value in request.GET.items():
        if "\x00" in value:
            return json_error(400, "must not contain a NUL character (U+0000)", field=name)
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in CONTENT_ENCODINGS:  # e.g. br, zstd, or a chain: not read as plain bytes
        return json_error(
            415,
            f"Content-Encoding {encoding[:40]!r} is not supported: send gzip, deflate or identity",
            field="Content-Encoding",
        )
    try:
        if int(request.headers.get("Content-Length") or 0) > settings.SWARMSCOPE_MAX_UPLOAD_BYTES:
            return too_large()
    except ValueError:
        return json_error(400, "bad Content-Length header")
    return None


def _authenticate(request: HttpRequest) -> JsonResponse | None:
    """Set `request.token` (None for a session); the 401/403 answer when the caller is not let in."""
    request.token = None
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        try:
            request.token = authenticate_token(header[len("Bearer ") :].strip())
        except AuthenticationRefused as exc:  # unknown, revoked, or its user deactivated
            return json_error(401, str(exc))
    elif not request.user.is_authenticated:
        return json_error(401, "authentication required: send 'Authorization: Bearer <token>'")
    elif request.method not in ("GET", "HEAD"):
        # Session-authenticated writes go through Django's CSRF check.
        if CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {}) is not None:
            return json_error(403, "CSRF check failed")
    return None


def _over_ingest_rate(request: HttpRequest) -> JsonResponse | None:
    """The 429 answer (with Retry-After) when the caller's user is over its ingestion rate
    (webapp.accounts.ratelimit), else None. The project counted is the one written to: a token's
    own, counted here; a session's when the view names it (`check_write`, `get_write_project`:
    `_charge_project`), so a member of two projects counts against the one she writes into."""
    request.ingest_project_pending = False
    if request.method != "POST":
        return None
    user = request.token.user if request.token is not None else request.user
    project_id = request.token.project_id if request.token is not None else None
    refused = check_ingest_rate(user.pk, project_id)
    request.ingest_project_pending = request.token is None
    return None if refused is None else rate_limited(refused)


def rate_limited(refused: RateRefused) -> JsonResponse:
    """The 429 answer of a write over a rate, with Retry-After."""
    response = json_error(429, refused.message, retry_after_s=refused.retry_after_s)
    response["Retry-After"] = str(refused.retry_after_s)
    return response


def _charge_project(request: HttpRequest, project_id: int) -> None:
    """Count an ingestion request of a session against the project it writes into, once; raise
    RateLimited (429) when that project is over its rate."""
    if getattr(request, "ingest_project_pending", False):
        request.ingest_project_pending = False
        refused = check_ingest_rate(None, project_id)
        if refused is not None:
            raise RateLimited(refused)


def api_view(*methods: str, ingest: bool = False):
    """Resolve the caller (token or session) into `request.token` / `request.project_ids`;
    answer 401 without one, 405 for other methods. Token requests are exempt from CSRF.
    Ids in the path beyond 64 bits answer 404; bodies over SWARMSCOPE_MAX_UPLOAD_BYTES 413;
    a role too low for the write (PermissionRefused, e.g. from `check_write`) 403.
    `ingest` views count against the caller's user and project ingestion rates (over one: 429
    with Retry-After)."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            refused = (
                _refuse_request(request, methods, kwargs)
                or _authenticate(request)
                or (_over_ingest_rate(request) if ingest else None)
            )
            if refused is not None:
                return refused
            request.project_ids = project_ids_for(request.user, request.token)
            try:
                return view(request, *args, **kwargs)
            except BodyTooLarge as exc:
                return too_large(str(exc))
            except RequestDataTooBig:
                return too_large()
            except PermissionRefused as exc:
                return json_error(403, str(exc))
            except RateLimited as exc:
                return rate_limited(exc.refused)

        wrapper.api_methods = methods  # type: ignore[attr-defined]  # read by the OpenAPI document's test
        return csrf_exempt(wrapper)

    return decorate


def check_write(request: HttpRequest, project_id: int, action: str) -> None:
    """Raise PermissionRefused (api_view answers 403) unless the caller may write in the project:
    WRITE_ROLE or above for the session user, or for a token's user (a token reads only its own
    project, so this is their role there). `action` names the write in the message. Pages call it
    too (no token there)."""
    token = getattr(request, "token", None)
    user = token.user if token is not None else request.user
    check_role(user, project_id, WRITE_ROLE, action)
    _charge_project(request, project_id)  # an ingestion request counts against the project written to


def may_write(request: HttpRequest, project_id: int) -> bool:
    """Whether `check_write` would let the caller write in the project (nothing is charged)."""
    token = getattr(request, "token", None)
    return has_role(token.user if token is not None else request.user, project_id, WRITE_ROLE)


def check_write_rate(request: HttpRequest, kind: str, project_id: int, cost: int) -> None:
    """Count a write of `cost` by the caller (a token's user, else the session's) into the project
    against the `kind` rate (webapp.accounts.ratelimit.RATES: "job" samples, "comment"s and
    mentions); raise RateLimited (api_view answers 429) when over it. Call it inside the write's
    transaction, after the write: a refusal then undoes it."""
    token = getattr(request, "token", None)
    user = token.user if token is not None else request.user
    refused = check_rate(kind, user.pk, project_id, cost)
    if refused is not None:
        raise RateLimited(refused)


def writable_projects(user) -> list:
    """The session user's projects where they have WRITE_ROLE, by name."""
    return [p for p in list_projects_of(user) if has_role(user, p.pk, WRITE_ROLE)]


def get_write_project(request: HttpRequest, action: str = "writing"):
    """The project a new trace or run goes to: the token's project, else the first of the session
    user's projects where they have WRITE_ROLE. None when the caller is a member of no project;
    raises PermissionRefused when they may only read (a token of a viewer, a viewer everywhere).
    Pages call it too (no token there)."""
    if getattr(request, "token", None) is not None:
        check_write(request, request.token.project_id, action)
        return request.token.project
    projects = list_projects_of(request.user)
    for project in projects:
        if has_role(request.user, project.pk, WRITE_ROLE):
            _charge_project(request, project.pk)
            return project
    if projects:
        check_write(request, projects[0].pk, action)  # raises: the caller only reads there
    return None


def read_body(request: HttpRequest) -> bytes:
    """The body, decompressed (Content-Encoding gzip, deflate) as a stream, GZIP_INPUT_CHUNK
    compressed bytes at a time, never past the smallest of: SWARMSCOPE_MAX_UPLOAD_BYTES and
    SWARMSCOPE_MAX_IMPORT_BYTES bytes, and SWARMSCOPE_MAX_GZIP_RATIO times the compressed bytes read
    (past GZIP_RATIO_FLOOR), the budget of gzip files in an upload (`ingest.import_budget`): a bomb
    is refused after about a MiB, not at the cap. Raises BodyTooLarge naming the setting (a 413),
    EOFError for a compressed body cut short, zlib.error for one that does not decompress."""
    body = request.body
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in ("gzip", "deflate"):
        return body
    upload, total, ratio = (
        settings.SWARMSCOPE_MAX_UPLOAD_BYTES,
        settings.SWARMSCOPE_MAX_IMPORT_BYTES,
        settings.SWARMSCOPE_MAX_GZIP_RATIO,
    )
    fixed, fixed_why = min(
        (upload, f"request body over {upload} bytes decompressed (SWARMSCOPE_MAX_UPLOAD_BYTES); send smaller batches"),
        (total, f"request body over {total} bytes decompressed (SWARMSCOPE_MAX_IMPORT_BYTES); send smaller batches"),
    )
    # wbits 16+15: a gzip member; 15: a zlib stream (what HTTP calls deflate).
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    view, parts, size, read = memoryview(body), [], 0, 0
    pending: bytes | memoryview = b""
    while not decompressor.eof:
        if not pending:
            if read >= len(view):
                raise EOFError("compressed body ended early")
            pending = view[read : read + GZIP_INPUT_CHUNK]
            read += len(pending)
        bound, why = fixed, fixed_why
        if max(ratio * read, GZIP_RATIO_FLOOR) < bound:
            bound = max(ratio * read, GZIP_RATIO_FLOOR)
            why = (
                f"request body ({encoding}) expands more than {ratio}-fold "
                "(SWARMSCOPE_MAX_GZIP_RATIO): a decompression bomb?"
            )
        part = decompressor.decompress(pending, bound + 1 - size)
        size += len(part)
        if size > bound:
            raise BodyTooLarge(why)
        parts.append(part)
        pending = decompressor.unconsumed_tail
    return b"".join(parts)


#: A JSON `\u0000` escape (not itself escaped): PostgreSQL text and jsonb cannot hold U+0000.
NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def check_no_nul(source: SourceFile) -> None:
    """Raise TraceFormatError (naming line and column) where the JSON text holds a NUL character,
    which the database cannot store: refused up front instead of failing the write."""
    # the regex tries every backslash (embedded JSON text has many): only where an escape may be
    escape = NUL_ESCAPE.search(source.data) if b"\\u0000" in source.data else None
    raw = source.data.find(b"\x00")
    if escape is not None or raw >= 0:
        start = escape.end() - len(b"\\u0000") if escape is not None else raw
        line = source.data.count(b"\n", 0, start) + 1
        column = start - (source.data.rfind(b"\n", 0, start) + 1) + 1
        raise TraceFormatError(
            source.name, "contains a NUL character (U+0000), which cannot be stored", line=line, column=column
        )


class BodyError(ValueError):
    """A request body that is not a usable JSON document; `field` is "body" or the top-level field."""

    def __init__(self, message: str, field: str = "body"):
        super().__init__(message)
        self.field = field


def json_body(request: HttpRequest) -> Any:
    """The request body as JSON ({} when empty). Raises BodyError for text that is not JSON, a
    document nested deeper than MAX_JSON_DEPTH, and naming the top-level field that holds text no
    database can store (a NUL character, a lone surrogate: `webapp.web.validation.json_problem`)."""
    try:
        doc = json.loads(request.body or b"{}")
    except RecursionError:
        raise BodyError("JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise BodyError(f"invalid JSON: {exc}") from None
    problem = json_problem(doc)
    if problem is not None:
        raise BodyError(problem[1], problem[0])
    return doc


def parse_body(body: bytes) -> Any:
    """A JSON document, or the list of an NDJSON body's documents. Raises TraceFormatError, and
    TraceValidationError (field `body`) for a document nested deeper than MAX_JSON_DEPTH (its text
    is checked field by field by the trace validators, which name the event and field)."""
    check_no_nul(SourceFile("request body", body))
    doc = decode(SourceFile("request body", body), strict=True)
    if doc is None:
        raise TraceFormatError("request body", "expected JSON or NDJSON")
    problem = json_problem(doc, text=False)
    if problem is not None:
        raise core.TraceValidationError(problem[1], field=problem[0], kind="body")
    return doc


def bad_body(exc: Exception) -> JsonResponse:
    if isinstance(exc, TraceFormatError):
        return json_error(400, exc.detail, line=exc.line, column=exc.column, field="body")
    if isinstance(exc, core.TraceValidationError):
        return JsonResponse(exc.as_dict(), status=400)
    return json_error(400, f"unreadable body: {exc}")


#: What a request body can fail with before any write: parsing, validation, decompression.
BODY_ERRORS = (TraceFormatError, core.TraceValidationError, OSError, EOFError, zlib.error)
