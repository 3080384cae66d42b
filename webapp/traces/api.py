"""REST API under /api/ and OTLP/HTTP at /v1/traces: parse, authorise, call services, serialise.

Authentication: `Authorization: Bearer <token>` (an API token, acting in its project with its
user's role there) or the browser session. Reading needs membership; every write (creating a trace,
adding events, uploads, OTLP) needs WRITE_ROLE (reviewer or admin): a viewer gets 403 naming the
role, while unknown and foreign objects answer 404 alike. Errors are JSON:
`{"error": ..., "index": ..., "event_id": ..., "field": ...}`.
"""

from __future__ import annotations

import functools
import json
import re
import secrets
import zlib
from typing import Any, Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.paginator import Paginator
from django.db import transaction
from django.middleware.csrf import CsrfViewMiddleware
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found

from webapp.accounts.ratelimit import check_ingest_rate
from webapp.accounts.services import (WRITE_ROLE, PermissionRefused, check_role, check_token, has_role,
                                      list_projects_of)
from webapp.core import model as core
from webapp.core.importers import SourceFile, TraceFormatError, decode, otlp
from webapp.core.importers import survey

from . import access, services
from .models import Trace

MAX_PAGE_SIZE = 200


def _error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def not_found(request: HttpRequest, exception=None) -> HttpResponse:
    """The 404 handler (settings: `handler404`): JSON under /api/ and /v1/, so an API client that
    sends a malformed id gets the same kind of answer as for an unknown one; pages elsewhere."""
    if request.path.startswith(("/api/", "/v1/")):
        return _error(404, "not found")
    return page_not_found(request, exception)


class BodyTooLarge(Exception):
    """A request body (or its decompressed form) over SWARMSCOPE_MAX_UPLOAD_BYTES (answered 413)."""


def _too_large() -> JsonResponse:
    return _error(413, f"request body over {settings.SWARMSCOPE_MAX_UPLOAD_BYTES} bytes "
                       "(SWARMSCOPE_MAX_UPLOAD_BYTES); send smaller batches")


def api_view(*methods: str, ingest: bool = False):
    """Resolve the caller (token or session) into `request.token` / `request.project_ids`;
    answer 401 without one, 405 for other methods. Token requests are exempt from CSRF.
    Ids in the path beyond 64 bits answer 404; bodies over SWARMSCOPE_MAX_UPLOAD_BYTES 413;
    a role too low for the write (PermissionRefused, e.g. from `check_write`) 403.
    `ingest` views count against the token's ingestion rate (over it: 429 with Retry-After)."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            if request.method not in methods:
                return _error(405, f"method {request.method} not allowed", allowed=list(methods))
            if any(isinstance(v, int) and v >= 2**63 for v in kwargs.values()):
                return _error(404, "not found")
            for name, value in request.GET.items():
                if "\x00" in value:
                    return _error(400, "must not contain a NUL character (U+0000)", field=name)
            try:
                if int(request.headers.get("Content-Length") or 0) > settings.SWARMSCOPE_MAX_UPLOAD_BYTES:
                    return _too_large()
            except ValueError:
                return _error(400, "bad Content-Length header")
            request.token = None
            header = request.headers.get("Authorization", "")
            if header.startswith("Bearer "):
                request.token = check_token(header[len("Bearer "):].strip())
                if request.token is None:
                    return _error(401, "invalid or revoked API token")
            elif not request.user.is_authenticated:
                return _error(401, "authentication required: send 'Authorization: Bearer <token>'")
            elif request.method not in ("GET", "HEAD"):
                # Session-authenticated writes go through Django's CSRF check.
                reason = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
                if reason is not None:
                    return _error(403, "CSRF check failed")
            if ingest and request.token is not None and request.method == "POST":
                retry_after = check_ingest_rate(request.token.pk)
                if retry_after is not None:
                    response = _error(429, f"over the ingestion rate of {settings.SWARMSCOPE_INGEST_RATE} requests "
                                           f"per {settings.SWARMSCOPE_INGEST_RATE_WINDOW_S} s for this token",
                                      retry_after_s=retry_after)
                    response["Retry-After"] = str(retry_after)
                    return response
            request.project_ids = access.project_ids_for(request.user, request.token)
            try:
                return view(request, *args, **kwargs)
            except (BodyTooLarge, RequestDataTooBig):
                return _too_large()
            except PermissionRefused as exc:
                return _error(403, str(exc))

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
            return project
    if projects:
        check_write(request, projects[0].pk, action)  # raises: the caller only reads there
    return None


def _get_trace(request: HttpRequest, trace_id: int) -> Trace | None:
    return Trace.objects.select_related("project").filter(pk=trace_id, project_id__in=request.project_ids).first()


def _read_body(request: HttpRequest) -> bytes:
    """The body, decompressed (gzip, deflate) up to SWARMSCOPE_MAX_UPLOAD_BYTES; raises
    BodyTooLarge past that (a small gzip body can expand a thousandfold)."""
    body = request.body
    encoding = request.headers.get("Content-Encoding", "").lower()
    if encoding in ("gzip", "deflate"):
        limit = settings.SWARMSCOPE_MAX_UPLOAD_BYTES
        # wbits 16+15: a gzip member; 15: a zlib stream (what HTTP calls deflate).
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
        data = decompressor.decompress(body, limit + 1)
        if len(data) > limit or decompressor.unconsumed_tail:
            raise BodyTooLarge()
        if not decompressor.eof:
            raise EOFError("compressed body ended early")
        return data
    return body


#: A JSON `\u0000` escape (not itself escaped): PostgreSQL text and jsonb cannot hold U+0000.
NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def check_no_nul(source: SourceFile) -> None:
    """Raise TraceFormatError (naming line and column) where the JSON text holds a NUL character,
    which the database cannot store: refused up front instead of failing the write."""
    escape, raw = NUL_ESCAPE.search(source.data), source.data.find(b"\x00")
    if escape is not None or raw >= 0:
        start = escape.end() - len(b"\\u0000") if escape is not None else raw
        line = source.data.count(b"\n", 0, start) + 1
        column = start - (source.data.rfind(b"\n", 0, start) + 1) + 1
        raise TraceFormatError(source.name, "contains a NUL character (U+0000), which cannot be stored",
                               line=line, column=column)


def _parse_body(body: bytes) -> Any:
    """A JSON document, or the list of an NDJSON body's documents. Raises TraceFormatError."""
    check_no_nul(SourceFile("request body", body))
    doc = decode(SourceFile("request body", body), strict=True)
    if doc is None:
        raise TraceFormatError("request body", "expected JSON or NDJSON")
    return doc


def _bad_body(exc: Exception) -> JsonResponse:
    if isinstance(exc, TraceFormatError):
        return _error(400, exc.detail, line=exc.line, column=exc.column)
    if isinstance(exc, core.TraceValidationError):
        return JsonResponse(exc.as_dict(), status=400)
    return _error(400, f"unreadable body: {exc}")


#: What a request body can fail with before any write: parsing, validation, decompression.
BODY_ERRORS = (TraceFormatError, core.TraceValidationError, OSError, EOFError, zlib.error)


#: Keys of an object batch; an object with none of them is taken as a single event.
BATCH_KEYS = frozenset({"events", "edges", "agents", "labels", "rewards", "costs", "metrics"})


def _fragment_from_batch(trace: Trace, doc: Any) -> core.Trace:
    """An API batch (events array, or {events, edges, agents, labels}) as a trace fragment."""
    if isinstance(doc, list):
        doc = {"events": doc}
    if not isinstance(doc, dict):
        raise core.TraceValidationError("body must be a JSON array of events or an object with 'events'",
                                        kind="body")
    for name in ("events", "edges", "agents", "labels"):
        if not isinstance(doc.get(name) or [], list):
            raise core.TraceValidationError("must be an array", field=name, kind="body")
    fragment = core.Trace(source_format=trace.source_format, source_id=trace.source_id)
    fragment.events = [core.event_from_dict(e, i) for i, e in enumerate(doc.get("events") or [])]
    fragment.edges = [core.edge_from_dict(e, i) for i, e in enumerate(doc.get("edges") or [])]
    fragment.agents = [core.agent_from_dict(a, i) for i, a in enumerate(doc.get("agents") or [])]
    fragment.labels = [core.label_from_dict(lb, i) for i, lb in enumerate(doc.get("labels") or [])]
    for name in ("rewards", "costs", "metrics"):
        value = doc.get(name)
        if value is not None:
            if not isinstance(value, dict):
                raise core.TraceValidationError("must be an object", field=name, kind="body")
            setattr(fragment, name, value)
    return fragment


def _ingest_response(project, fragment: core.Trace, trace: Trace | None = None, *, status: int = 200):
    try:
        result = services.do_ingest(project, fragment, trace=trace, live=True)
    except services.IngestConflict as exc:
        return JsonResponse(exc.error.as_dict(), status=409)
    except core.TraceValidationError as exc:
        return JsonResponse(exc.as_dict(), status=400)
    return JsonResponse({"trace": services.trace_summary(result.trace), "seq": result.seq,
                         "events_added": result.events_added, "events_updated": result.events_updated},
                        status=201 if result.created else status)


@api_view("GET", "POST", ingest=True)
def traces(request: HttpRequest):
    """GET: paginated list (`page`, `page_size`, `q`). POST: create a trace (`name`, `system`,
    `source_id`, `attributes`, and optionally a first batch of `events`/`edges`/`agents`)."""
    if request.method == "GET":
        try:
            size = min(max(int(request.GET.get("page_size") or 50), 1), MAX_PAGE_SIZE)
        except ValueError:
            return _error(400, f"page_size must be an integer from 1 to {MAX_PAGE_SIZE}", field="page_size")
        page = Paginator(services.list_traces(request.project_ids, query=request.GET.get("q", "")), size)
        current = page.get_page(request.GET.get("page") or 1)
        return JsonResponse({"count": page.count, "page": current.number, "pages": page.num_pages,
                             "results": [services.trace_summary(t) for t in current.object_list]})
    project = get_write_project(request, "creating a trace")
    if project is None:
        return _error(403, "you are not a member of any project")
    try:
        doc = _parse_body(_read_body(request) or b"{}")
        if not isinstance(doc, dict):
            raise core.TraceValidationError("body must be a JSON object", kind="body")
        for name in ("name", "system", "source_id"):
            if not isinstance(doc.get(name) or "", str):
                raise core.TraceValidationError("must be a string", field=name, kind="body")
        if not isinstance(doc.get("attributes") or {}, dict):
            raise core.TraceValidationError("must be an object", field="attributes", kind="body")
        fragment = core.Trace(source_format="api", source_id=doc.get("source_id") or "",
                              name=doc.get("name") or "", system=doc.get("system") or "",
                              attributes=doc.get("attributes") or {})
        if not fragment.source_id:
            fragment.source_id = core.content_hash(f"{project.pk}:{fragment.name}:{secrets.token_hex(8)}")
        batch = _fragment_from_batch(Trace(source_format="api", source_id=fragment.source_id), doc)
        fragment.events, fragment.edges, fragment.agents, fragment.labels = (batch.events, batch.edges,
                                                                             batch.agents, batch.labels)
    except BODY_ERRORS as exc:
        return _bad_body(exc)
    return _ingest_response(project, fragment)


@api_view("GET")
def trace_detail(request: HttpRequest, trace_id: int):
    trace = _get_trace(request, trace_id)
    if trace is None:
        return _error(404, "no such trace")
    return JsonResponse(services.trace_summary(trace))


@api_view("POST", ingest=True)
def trace_events(request: HttpRequest, trace_id: int):
    """Append a batch: a JSON array of events, NDJSON, or {events, edges, agents, labels}.
    400 names the bad event's index and field; 409 when it contradicts stored events."""
    trace = _get_trace(request, trace_id)
    if trace is None:
        return _error(404, "no such trace")
    check_write(request, trace.project_id, "adding events to a trace")
    try:
        doc = _parse_body(_read_body(request))
        if isinstance(doc, dict) and doc and not BATCH_KEYS & doc.keys():
            doc = [doc]  # one event (a one-line NDJSON body): refused with its field if it is not one
        fragment = _fragment_from_batch(trace, doc)
    except BODY_ERRORS as exc:
        return _bad_body(exc)
    return _ingest_response(trace.project, fragment, trace)


@api_view("GET")
def trace_snapshot(request: HttpRequest, trace_id: int):
    trace = _get_trace(request, trace_id)
    if trace is None:
        return _error(404, "no such trace")
    return JsonResponse(services.get_snapshot(trace))


def export_document(trace: Trace, fmt: str) -> tuple[dict[str, Any], list[str]]:
    """The export of `trace` as `native` or `survey` JSON, and what the format could not carry."""
    core_trace = services.to_core_trace(trace)
    if fmt == "survey":
        return survey.export(core_trace)
    return core_trace.to_dict(), []


@api_view("GET")
def trace_export(request: HttpRequest, trace_id: int):
    """`?format=native` (default, lossless) or `?format=survey` (schema-valid; the response header
    `X-Swarmscope-Not-Carried` and the download say what was dropped)."""
    trace = _get_trace(request, trace_id)
    if trace is None:
        return _error(404, "no such trace")
    fmt = request.GET.get("format", "native")
    if fmt not in ("native", "survey"):
        return _error(400, "format must be 'native' or 'survey'", field="format")
    document, not_carried = export_document(trace, fmt)
    response = HttpResponse(json.dumps(document, indent=1, ensure_ascii=False), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="trace-{trace.pk}-{fmt}.json"'
    if not_carried:
        response["X-Swarmscope-Not-Carried"] = "; ".join(not_carried)[:4000]
    return response


@api_view("GET")
def traces_export_jsonl(request: HttpRequest):
    """Many traces as native JSONL, one trace per line: `?ids=1,2,3` or every trace the caller reads."""
    qs = Trace.objects.filter(project_id__in=request.project_ids).order_by("id")
    if request.GET.get("ids"):
        try:
            ids = [int(i) for i in request.GET["ids"].split(",") if i.strip()]
            if any(not 0 < i < 2**63 for i in ids):
                raise ValueError
        except ValueError:
            return _error(400, "ids must be comma-separated positive integers", field="ids")
        qs = qs.filter(pk__in=ids)
    traces_to_send = list(qs)  # read before streaming: an error in a stream would hang the client

    def lines():
        for trace in traces_to_send:
            yield json.dumps(services.to_core_trace(trace).to_dict(), ensure_ascii=False) + "\n"

    response = StreamingHttpResponse(lines(), content_type="application/x-ndjson")
    response["Content-Disposition"] = 'attachment; filename="traces.jsonl"'
    return response


def upload_sources(request: HttpRequest) -> list[SourceFile]:
    """Files of a multipart upload (`file`, repeatable), else the raw body named by `?filename=`."""
    if request.FILES:
        return [SourceFile(name=f.name, data=f.read()) for f in request.FILES.getlist("file")]
    return [SourceFile(name=request.GET.get("filename") or "request body", data=_read_body(request))]


def outcome_json(outcome: services.FileOutcome) -> dict[str, Any]:
    return {"file": outcome.name, "traces": [services.trace_summary(t) for t in outcome.traces],
            "skipped": outcome.skipped, "error": outcome.error, "report": outcome.lines}


@api_view("POST", ingest=True)
def traces_upload(request: HttpRequest):
    """Import trace files in any supported format; 200 with a per-file report, 400 if any failed."""
    project = get_write_project(request, "uploading traces")
    if project is None:
        return _error(403, "you are not a member of any project")
    try:
        sources = upload_sources(request)
    except (OSError, EOFError, zlib.error) as exc:
        return _error(400, f"unreadable body: {exc}")
    refused = []
    for source in list(sources):
        try:
            check_no_nul(source)
        except TraceFormatError as exc:
            sources.remove(source)
            refused.append({"file": source.name, "traces": [], "skipped": None, "error": str(exc),
                            "report": [f"{source.name}: failed: {exc.detail}"]})
    outcomes = services.do_import_sources(project, sources) if sources else []
    failed = bool(refused) or any(o.error for o in outcomes)
    return JsonResponse({"files": refused + [outcome_json(o) for o in outcomes]}, status=400 if failed else 200)


@api_view("POST", ingest=True)
def otlp_traces(request: HttpRequest):
    """OTLP/HTTP trace export: JSON or protobuf (`application/x-protobuf`), optionally gzip. Spans
    whose id is stored with other content are counted in `partialSuccess.rejectedSpans`."""
    project = get_write_project(request, "sending OTLP traces")
    if project is None:
        return _error(403, "you are not a member of any project")
    protobuf = request.content_type in ("application/x-protobuf", "application/protobuf")
    try:
        body = _read_body(request)
        doc = None if protobuf else _parse_body(body)
    except (ValueError, OSError, EOFError, zlib.error) as exc:
        return _error(400, f"unreadable OTLP request: {exc.detail if isinstance(exc, TraceFormatError) else exc}")
    if doc == {}:
        doc = {"resourceSpans": []}  # an empty ExportTraceServiceRequest
    if doc is not None and not otlp.sniff(doc):
        return _error(400, "not an OTLP ExportTraceServiceRequest (no resourceSpans)")
    rejected = 0
    try:
        chunks = otlp.decode_protobuf(body) if protobuf else otlp.split(doc)
        with transaction.atomic():  # every trace of the request, or none
            for trace_id, spans in chunks.items():
                rejected += services.do_ingest_spans(project, otlp, trace_id, spans, source="OTLP/HTTP").rejected
    except (core.TraceValidationError, KeyError, TypeError, ValueError, AttributeError) as exc:
        return _error(400, f"invalid spans: {exc!r}" if isinstance(exc, KeyError) else f"invalid spans: {exc}")
    message = f"{rejected} span(s) reuse a stored span id with other content; the stored span is kept" \
        if rejected else ""
    if protobuf:
        return HttpResponse(otlp.encode_response(rejected, message), content_type="application/x-protobuf")
    return JsonResponse({"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": message}
                         if rejected else {}})
