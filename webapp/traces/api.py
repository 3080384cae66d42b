"""REST API under /api/ and OTLP/HTTP at /v1/traces and /v1/logs: parse, authorise, call services, serialise.

Authentication, limits and error bodies are `webapp.web.api`'s (OTLP's errors: a `google.rpc.Status`,
`otlp_endpoint`); every write here (creating a trace, adding events, uploads, OTLP) needs WRITE_ROLE.
"""

from __future__ import annotations

import functools
import json
import math
import re
import secrets
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.multipartparser import MultiPartParserError
from django.views.decorators.csrf import csrf_exempt

from swarmscope import model as core
from swarmscope.importers import SourceFile, TraceFormatError, otlp, survey
from swarmscope.importers.scores import reward_score_name
from swarmscope.ingest import IngestConflict
from webapp.web.api import (
    BODY_ERRORS,
    NUL_ESCAPE,
    api_view,
    bad_body,
    check_no_nul,
    check_write,
    get_write_project,
    json_error,
    parse_body,
    read_body,
)
from webapp.web.validation import (
    MAX_JSON_DEPTH,
    InputError,
    json_problem,
    max_length,
    parse_int,
    query_int,
    text_problem,
)

from . import idempotency, ingest, live, services, span_ingest
from .models import Trace
from .write_turn import write_turn

MAX_PAGE_SIZE = 200


def get_trace(request: HttpRequest, trace_id: int) -> Trace | None:
    return Trace.objects.select_related("project").filter(pk=trace_id, project_id__in=request.project_ids).first()


#: Keys of an object batch; an object with none of them is taken as a single event (but one whose
#: only key is `attributes`: an event needs an `id`, and attributes alone are the trace's).
BATCH_KEYS = frozenset({"events", "edges", "agents", "labels", "rewards", "costs", "metrics"})


def is_batch_object(doc: dict[str, Any]) -> bool:
    """Whether the JSON object `doc` is a batch (BATCH_KEYS), not a single event."""
    return bool(BATCH_KEYS & doc.keys()) or doc.keys() == {"attributes"}


_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is not finite")
    return value


def _not_a_number(text: str) -> None:
    raise ValueError(f"number {text} is not finite")


#: JSON as `parse_body` reads it (non-finite numbers refused), one value at a time.
_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_not_a_number)


def events_of_array(body: bytes) -> list[core.Event] | None:
    """The events of a body that is one JSON array of events, decoded an element at a time: each
    is built into an Event and its parsed form dropped before the next is read, so a big batch
    never holds the parsed form of all of its events (json.loads of 10^6 events: about 600 MB).
    None for any other body, and for any problem in this one (not JSON, a NUL, too deep, a bad
    event): `parse_body` and `_fragment_from_batch` then read it again and name the problem."""
    # `in` is a memchr-speed scan; the NUL_ESCAPE regex (about 5 s on 30 MB, holding the GIL) runs
    # only where its literal occurs
    if b"\x00" in body or (b"\\u0000" in body and NUL_ESCAPE.search(body) is not None):
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    index = _WHITESPACE.match(text).end()
    if not text.startswith("[", index):
        return None
    events: list[core.Event] = []
    index = _WHITESPACE.match(text, index + 1).end()
    try:
        if text.startswith("]", index):
            index += 1
        else:
            while True:
                item, index = _DECODER.raw_decode(text, index)
                if json_problem(item, MAX_JSON_DEPTH - 1, text=False) is not None:
                    return None
                events.append(core.event_from_dict(item, len(events)))
                index = _WHITESPACE.match(text, index).end()
                if text.startswith(",", index):
                    index = _WHITESPACE.match(text, index + 1).end()
                elif text.startswith("]", index):
                    index += 1
                    break
                else:
                    return None
    except (ValueError, RecursionError, core.TraceValidationError):  # JSONDecodeError is a ValueError
        return None
    return events if _WHITESPACE.match(text, index).end() == len(text) else None


def _consume(items: list[Any], build) -> list[Any]:
    """`[build(item, index) ...]`, emptying `items` as it goes: each parsed JSON object is freed
    once built, so a big batch never holds both forms of all of its events."""
    built = []
    for index in range(len(items)):
        built.append(build(items[index], index))
        items[index] = None
    return built


def _fragment_from_batch(trace: Trace, doc: Any) -> core.Trace:
    """An API batch (events array, or {events, edges, agents, labels, rewards, costs, metrics,
    attributes}) as a trace fragment; the four objects merge into the trace's, key by key, even
    in a batch without events (`ingest.do_ingest`)."""
    if isinstance(doc, list):
        doc = {"events": doc}
    if not isinstance(doc, dict):
        raise core.TraceValidationError("body must be a JSON array of events or an object with 'events'", kind="body")
    for name in ("events", "edges", "agents", "labels"):
        if not isinstance(doc.get(name) or [], list):
            raise core.TraceValidationError("must be an array", field=name, kind="body")
    fragment = core.Trace(source_format=trace.source_format, source_id=trace.source_id)
    fragment.events = _consume(doc.get("events") or [], core.event_from_dict)
    fragment.edges = _consume(doc.get("edges") or [], core.edge_from_dict)
    fragment.agents = _consume(doc.get("agents") or [], core.agent_from_dict)
    fragment.labels = _consume(doc.get("labels") or [], core.label_from_dict)
    for name in ("rewards", "costs", "metrics", "attributes"):
        value = doc.get(name)
        if value is not None:
            if not isinstance(value, dict):
                raise core.TraceValidationError("must be an object", field=name, kind="body")
            # rewards, costs, metrics: every number within float range (400 naming the key)
            setattr(fragment, name, value if name == "attributes" else core.float_range_values(value, name))
    return fragment


def attribute_rewards(attributes: dict[str, Any]) -> dict[str, float]:
    """The finite numbers of `attributes["rewards"]` (channel -> reward), {} when it is no object;
    an integer past float range (10**400) is left out like NaN."""
    found = attributes.get("rewards")
    if not isinstance(found, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in found.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and core.within_float_range(v)
    }


def busy(exc: ingest.TraceBusy | ingest.StagingLost) -> JsonResponse:
    """503 with Retry-After: the trace is taking another large batch in chunks (TraceBusy), or was
    changed under this one (StagingLost); nothing of the batch was stored, so sending it again is safe."""
    retry_after = exc.retry_after_s if isinstance(exc, ingest.TraceBusy) else 1
    response = json_error(503, str(exc), code="trace_busy", retry_after_s=retry_after)
    response["Retry-After"] = str(retry_after)
    return response


def _ingest(project, fragment: core.Trace, trace: Trace | None = None) -> ingest.IngestResult | JsonResponse:
    """`ingest.do_ingest` of a live batch, or the answer refusing it (409, 400, 503)."""
    try:
        return ingest.do_ingest(project, fragment, trace=trace, live=True)
    except IngestConflict as exc:
        return JsonResponse(exc.error.as_dict(), status=409)
    except core.TraceValidationError as exc:
        return JsonResponse(exc.as_dict(), status=400)
    except (ingest.TraceBusy, ingest.StagingLost) as exc:
        return busy(exc)


def _batch_answer(trace: Trace, seq: int, added: int, updated: int, status: int) -> JsonResponse:
    summary = services.trace_summary(trace)
    return JsonResponse({"trace": summary, "seq": seq, "events_added": added, "events_updated": updated}, status=status)


def _ingest_response(project, fragment: core.Trace, trace: Trace | None = None, *, status: int = 200):
    result = _ingest(project, fragment, trace)
    if isinstance(result, JsonResponse):
        return result
    return _batch_answer(
        result.trace, result.seq, result.events_added, result.events_updated, 201 if result.created else status
    )


#: `IdempotencyKey.endpoint` of trace creation.
CREATE_TRACE = "POST /api/traces/"


def _create_once(request: HttpRequest, project, fragment: core.Trace, key: str, body: bytes) -> JsonResponse:
    """Create the trace of `fragment` under `Idempotency-Key` `key` (webapp.traces.idempotency):
    the creation and its first batch are one transaction with the key's claim, so a refused batch
    frees the key. A repeat of the request answers the trace the first created, with its status
    (201, or 200 where `source_id` found a stored trace), the trace as it is now and no events
    added; the same key with another body answers 422."""
    with transaction.atomic():
        try:
            claim = idempotency.do_claim(project, key, CREATE_TRACE, idempotency.request_hash(request, body))
        except idempotency.KeyProblem as exc:
            return exc.response()
        if claim.object_id is not None:
            stored = Trace.objects.filter(pk=claim.object_id).first()
            if stored is None:
                return json_error(404, f"the trace created with this {idempotency.HEADER} was deleted")
            return idempotency.replayed(_batch_answer(stored, stored.seq, 0, 0, claim.status or 201))
        result = _ingest(project, fragment)
        if isinstance(result, JsonResponse):
            transaction.set_rollback(True)  # the key is free again: nothing was created
            return result
        status = 201 if result.created else 200
        idempotency.do_bind(claim, result.trace.pk, status)
        return _batch_answer(result.trace, result.seq, result.events_added, result.events_updated, status)


@api_view("GET", "POST", ingest=True)
def traces(request: HttpRequest):
    """GET: paginated list (`page`, `page_size`, `q`, `session`: one session's traces, `project`:
    repeatable, the traces of these projects; one the caller does not read lists nothing, as an
    unknown session does; not a positive integer: 400). POST: create
    a trace (`name`, `system`, `source_id`, `attributes`, and optionally a first batch of
    `events`/`edges`/`agents`/`labels` and its `rewards`/`costs`/`metrics`; without `rewards`, the
    numbers of `attributes.rewards` are its rewards); with an `Idempotency-Key` header, a retry creates nothing
    (`_create_once`)."""
    if request.method == "GET":
        try:
            size = query_int(request.GET, "page_size", 50, low=1, high=MAX_PAGE_SIZE, clamp=True)
            number = query_int(request.GET, "page", 1, low=1, clamp=True)
            projects = [parse_int(p, field="project", low=1) for p in request.GET.getlist("project") if p]
        except InputError as exc:
            return json_error(400, exc.message, field=exc.field)
        listed = services.list_traces(
            request.project_ids,
            query=request.GET.get("q", ""),
            session=request.GET.get("session", ""),
            projects=projects,
        )
        page = Paginator(listed, size)
        current = page.get_page(number)
        return JsonResponse(
            {
                "count": page.count,
                "page": current.number,
                "pages": page.num_pages,
                "results": [services.trace_summary(t) for t in current.object_list],
            }
        )
    project = get_write_project(request, "creating a trace")
    if project is None:
        return json_error(403, "you are not a member of any project")
    try:
        key = idempotency.check_key(request)
    except idempotency.KeyProblem as exc:
        return exc.response()
    try:
        body = read_body(request)
        doc = parse_body(body or b"{}")
        if not isinstance(doc, dict):
            raise core.TraceValidationError("body must be a JSON object", kind="body")
        for name in ("name", "system", "source_id"):
            if not isinstance(doc.get(name) or "", str):
                raise core.TraceValidationError("must be a string", field=name, kind="body")
            problem = text_problem(doc.get(name) or "", max_length(Trace, name))
            if problem is not None:  # before the name is hashed into an identity
                raise core.TraceValidationError(problem, field=name, kind="body")
        if not isinstance(doc.get("attributes") or {}, dict):
            raise core.TraceValidationError("must be an object", field="attributes", kind="body")
        fragment = core.Trace(
            source_format="api",
            source_id=doc.get("source_id") or "",
            name=doc.get("name") or "",
            system=doc.get("system") or "",
            attributes=doc.get("attributes") or {},
        )
        if not fragment.source_id:
            fragment.source_id = core.content_hash(f"{project.pk}:{fragment.name}:{secrets.token_hex(8)}")
        batch = _fragment_from_batch(Trace(source_format="api", source_id=fragment.source_id), doc)
        fragment.events, fragment.edges, fragment.agents, fragment.labels = (
            batch.events,
            batch.edges,
            batch.agents,
            batch.labels,
        )
        fragment.rewards, fragment.costs, fragment.metrics = batch.rewards, batch.costs, batch.metrics
        if not fragment.rewards:  # senders that put them in the attributes (trainer.sim.stream before 2026-12)
            fragment.rewards = attribute_rewards(fragment.attributes)
    except BODY_ERRORS as exc:
        return bad_body(exc)
    if key is not None:
        return _create_once(request, project, fragment, key, body)
    return _ingest_response(project, fragment)


@api_view("GET")
def trace_detail(request: HttpRequest, trace_id: int):
    """The trace resource (services.trace_summary) with `metrics` its computed metrics
    (swarmscope.metrics, cached on the row for its seq: the trace page's figures) and
    `source_metrics` those its source gave (the summary's `metrics` in lists and snapshots)."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    computed = services.get_computed_metrics(trace)  # first: it stores the cost and models too
    summary = services.trace_summary(trace)
    return JsonResponse({**summary, "metrics": computed, "source_metrics": summary["metrics"]})


@api_view("POST", ingest=True)
def trace_events(request: HttpRequest, trace_id: int):
    """Append a batch: a JSON array of events, NDJSON, or {events, edges, agents, labels, rewards,
    costs, metrics, attributes}. A batch of rewards (costs, ...) alone is stored like any other
    (new seq, a delta to viewers); one changing nothing keeps the seq. A re-sent event (same id,
    same content) is a no-op, so resending a batch whose answer was lost stores nothing twice.
    400 names the bad event's index and field; 409 when it contradicts stored events."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    check_write(request, trace.project_id, "adding events to a trace")
    try:
        body = read_body(request)
        events = events_of_array(body)
        if events is not None:
            fragment = core.Trace(source_format=trace.source_format, source_id=trace.source_id, events=events)
        else:
            doc = parse_body(body)
            if isinstance(doc, dict) and doc and not is_batch_object(doc):
                doc = [doc]  # one event (a one-line NDJSON body): refused with its field if it is not one
            fragment = _fragment_from_batch(trace, doc)
    except BODY_ERRORS as exc:
        return bad_body(exc)
    return _ingest_response(trace.project, fragment, trace)


@api_view("POST")
def trace_close(request: HttpRequest, trace_id: int):
    """The sender's stream into the trace has ended: its live state clears now (the trace page's
    and the trace list's Live badge), not after SWARMSCOPE_LIVE_IDLE_S without events. No body
    needed (one is ignored). 200 `{"trace": summary, "seq": N, "closed": bool}`, `closed` false
    when there was nothing to end (closed before, never streamed: closing is idempotent); 404 for
    an unknown or foreign trace, 403 for a viewer, 503 with Retry-After while a large batch is
    being stored in chunks. A later batch makes the trace live again."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    check_write(request, trace.project_id, "closing a trace's stream")
    try:
        result = live.do_close_stream(trace.pk)
    except ingest.TraceBusy as exc:
        return busy(exc)
    if result is None:
        return json_error(404, "no such trace")
    return JsonResponse(
        {"trace": services.trace_summary(result.trace), "seq": result.trace.seq, "closed": result.closed}
    )


@api_view("GET")
def trace_snapshot(request: HttpRequest, trace_id: int):
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
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
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    fmt = request.GET.get("format", "native")
    if fmt not in ("native", "survey"):
        return json_error(400, "format must be 'native' or 'survey'", field="format")
    try:
        document, not_carried = export_document(trace, fmt)
    except ValueError as exc:  # what the survey schema cannot hold (a trace without events)
        return json_error(400, f"{exc}; the native format exports any trace", field="format")
    response = HttpResponse(json.dumps(document, indent=1, ensure_ascii=False), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="trace-{trace.pk}-{fmt}.json"'
    if not_carried:
        response["X-Swarmscope-Not-Carried"] = "; ".join(not_carried)[:4000]
    return response


@api_view("GET")
def traces_export_jsonl(request: HttpRequest):
    """Many traces as native JSONL, one trace per line: `?ids=1,2,3` or every trace the caller reads.
    400 for ids that are not comma-separated positive integers; 404 naming (`missing`) the ids of
    the list that are unknown or that the caller may not read (alike: which exist is not told)."""
    qs = Trace.objects.filter(project_id__in=request.project_ids).order_by("id")
    if "ids" in request.GET:
        try:
            ids = [parse_int(i.strip(), field="ids", low=1) for i in request.GET["ids"].split(",") if i.strip()]
        except InputError:
            ids = []
        if not ids:
            return json_error(400, "ids must be comma-separated positive integers", field="ids")
        qs = qs.filter(pk__in=ids)
    traces_to_send = list(qs)  # read before streaming: an error in a stream would hang the client
    if "ids" in request.GET:
        found = {t.pk for t in traces_to_send}
        missing = sorted({i for i in ids if i not in found})
        if missing:
            named = ", ".join(map(str, missing))
            return json_error(
                404, f"no such trace{'s' if len(missing) > 1 else ''}: {named}", field="ids", missing=missing
            )

    def lines():
        for trace in traces_to_send:
            yield json.dumps(services.to_core_trace(trace).to_dict(), ensure_ascii=False) + "\n"

    response = StreamingHttpResponse(lines(), content_type="application/x-ndjson")
    response["Content-Disposition"] = 'attachment; filename="traces.jsonl"'
    return response


def upload_sources(request: HttpRequest) -> Iterator[SourceFile]:
    """Files of a multipart upload (`file`, repeatable), else the raw body named by `?filename=`:
    each read when its turn comes (uploaded files wait spooled to disk), so that one file's bytes
    at a time are held, not every file's."""
    if request.FILES:
        for upload in request.FILES.getlist("file"):
            yield SourceFile(name=upload.name, data=upload.read())
        return
    yield SourceFile(name=request.GET.get("filename") or "request body", data=read_body(request))


def outcome_json(outcome: ingest.FileOutcome) -> dict[str, Any]:
    return {
        "file": outcome.name,
        "traces": [services.trace_summary(t) for t in outcome.traces],
        "skipped": outcome.skipped,
        "error": outcome.error,
        "report": outcome.lines,
    }


@api_view("POST", ingest=True)
def traces_upload(request: HttpRequest):
    """Import trace files in any supported format; 200 with a per-file report, 400 if any failed
    or `?reward_score=` (the evaluation score that is each trace's reward; default: the project's
    setting, else a score named `reward`) is not a score name; `notes`: the import's notes (a reward
    score that no imported trace has, `ingest.check_reward_score`)."""
    project = get_write_project(request, "uploading traces")
    if project is None:
        return json_error(403, "you are not a member of any project")
    try:
        reward_score = reward_score_name(request.GET.get("reward_score"))
    except ValueError as exc:
        return json_error(400, str(exc), field="reward_score")
    try:
        files = request.FILES
    except MultiPartParserError as exc:
        return json_error(400, f"malformed multipart/form-data body: {exc}")
    if not files and request.content_type == "multipart/form-data":  # its body is read: nothing else to import
        return json_error(400, "a multipart/form-data body needs at least one file (field 'file')", field="file")
    if not files:  # a raw body: its Content-Encoding undone before any file is read
        try:
            sources: Iterable[SourceFile] = list(upload_sources(request))
        except (OSError, EOFError, zlib.error) as exc:
            return json_error(400, f"unreadable body: {exc}")
    else:
        sources = upload_sources(request)
    # one file at a time, gzip decompressed as a stream within the import's budget (a gzip file's header has NULs)
    outcomes = ingest.do_import_sources(project, sources, reward_score=reward_score, check=check_no_nul)
    failed = any(o.error for o in outcomes)
    return JsonResponse(
        {
            "files": [outcome_json(o) for o in outcomes],
            "notes": ingest.check_reward_score(project, outcomes, reward_score),
        },
        status=400 if failed else 200,
    )


#: What decoding and storing an OTLP request can fail with (answered 400, nothing stored).
OTLP_ERRORS = (core.TraceValidationError, KeyError, TypeError, ValueError, AttributeError)
#: The request bodies of OTLP/HTTP (OTLP spec, "OTLP/HTTP Request"); others are answered 415.
OTLP_PROTOBUF = ("application/x-protobuf", "application/protobuf")
OTLP_CONTENT_TYPES = (*OTLP_PROTOBUF, "application/json")
#: HTTP status of an OTLP/HTTP error -> the `google.rpc.Code` (name) of its Status body (the gRPC
#: status OTLP/gRPC answers the same failure with: webapp.traces.otlp_grpc.GRPC_STATUS); else INTERNAL.
OTLP_STATUS_CODES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    413: "RESOURCE_EXHAUSTED",
    415: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}


def otlp_endpoint(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """An OTLP/HTTP endpoint's error answers as the OTLP spec wants them ("OTLP/HTTP Response"):
    every 4xx and 5xx body a `google.rpc.Status` (code, message; a `RetryInfo` detail with the
    Retry-After delay), protobuf-encoded for a protobuf request, else its JSON form; status and
    headers (Retry-After) as the view gave them. Goes
    outside `api_view`, so that its refusals (401, 413, 429, ...) are answered the same way."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        return response if response.status_code < 400 else _otlp_status(request, response)

    return csrf_exempt(wrapper)


def _otlp_status(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """`response` (an error) with its message as a Status body in the request's encoding."""
    # protobuf is heavy: loaded on the first error, not when the app starts
    from google.protobuf.json_format import MessageToDict  # noqa: PLC0415
    from google.rpc import code_pb2  # noqa: PLC0415
    from google.rpc.error_details_pb2 import RetryInfo  # noqa: PLC0415
    from google.rpc.status_pb2 import Status  # noqa: PLC0415

    try:
        body = json.loads(response.content)
        message, field = str(body["error"]), body.get("field")
        if isinstance(field, str) and field not in message:
            message = f"{field}: {message}"
    except (ValueError, KeyError, TypeError):
        message = response.content.decode(errors="replace") or response.reason_phrase
    code = code_pb2.Code.Value(OTLP_STATUS_CODES.get(response.status_code, "INTERNAL"))
    status = Status(code=code, message=message)
    if response.has_header("Retry-After"):  # throttled or busy: when to retry, as OTLP/gRPC says it
        retry = RetryInfo()
        retry.retry_delay.seconds = int(response["Retry-After"])
        status.details.add().Pack(retry)
    if request.content_type in OTLP_PROTOBUF:
        answer = HttpResponse(status.SerializeToString(), content_type="application/x-protobuf")
    else:
        answer = JsonResponse(MessageToDict(status))
    answer.status_code = response.status_code
    for header, value in response.items():
        if header.lower() not in ("content-type", "content-length"):
            answer[header] = value
    return answer


def _read_otlp(request: HttpRequest, action: str, root: str, sniff) -> tuple[Any, bool, bytes, Any] | HttpResponse:
    """(project, protobuf?, body, JSON document or None for protobuf) of an OTLP/HTTP export, or the
    answer refusing it: 403 without a project to write in, 400 for an unreadable body or a JSON
    document that `sniff` does not take for the request whose list is `root` (`resourceSpans`,
    `resourceLogs`). An empty JSON object is the empty request. How a transport other than HTTP
    (the gRPC bridge) sets `request.otlp_transport`: webapp.traces.otlp_grpc. 415 for a
    Content-Type other than OTLP's (OTLP_CONTENT_TYPES)."""
    if request.content_type not in OTLP_CONTENT_TYPES:
        return json_error(
            415,
            f"unsupported Content-Type {request.content_type!r}: OTLP/HTTP takes {', '.join(OTLP_CONTENT_TYPES)}",
            field="Content-Type",
        )
    project = get_write_project(request, action)
    if project is None:
        return json_error(403, "you are not a member of any project")
    protobuf = request.content_type in OTLP_PROTOBUF
    try:
        body = read_body(request)
        doc = None if protobuf else parse_body(body)
    except (ValueError, OSError, EOFError, zlib.error) as exc:
        return json_error(400, f"unreadable OTLP request: {exc.detail if isinstance(exc, TraceFormatError) else exc}")
    if doc == {}:
        doc = {root: []}  # an empty Export*ServiceRequest
    if doc is not None and not sniff(doc):
        message = "ExportTraceServiceRequest" if root == "resourceSpans" else "ExportLogsServiceRequest"
        return json_error(400, f"not an OTLP {message} (no {root})")
    return project, protobuf, body, doc


def _invalid_otlp(what: str, exc: Exception) -> JsonResponse:
    return json_error(400, f"invalid {what}: {exc!r}" if isinstance(exc, KeyError) else f"invalid {what}: {exc}")


def _otlp_answer(protobuf: bool, encode, rejected_key: str, rejected: int, message: str) -> HttpResponse:
    """The Export*ServiceResponse in the request's encoding: `partialSuccess` with the count under
    `rejected_key` (and `message`) when something was rejected, else empty (OTLP spec)."""
    if protobuf:
        return HttpResponse(encode(rejected, message), content_type="application/x-protobuf")
    return JsonResponse({"partialSuccess": {rejected_key: str(rejected), "errorMessage": message} if rejected else {}})


@otlp_endpoint
@api_view("POST", ingest=True)
def otlp_traces(request: HttpRequest):
    """OTLP/HTTP trace export: JSON or protobuf (`application/x-protobuf`), optionally gzip. Spans
    whose id is stored with other content are counted in `partialSuccess.rejectedSpans`."""
    read = _read_otlp(request, "sending OTLP traces", "resourceSpans", otlp.sniff)
    if isinstance(read, HttpResponse):
        return read
    project, protobuf, body, doc = read
    source = getattr(request, "otlp_transport", "OTLP/HTTP")
    rejected = 0
    try:
        with span_ingest.collector_paused():
            chunks = otlp.decode_protobuf(body) if protobuf else otlp.split(doc)
            with write_turn(), transaction.atomic():  # every trace of the request, or none
                for trace_id, spans in chunks.items():
                    rejected += span_ingest.do_ingest_spans(project, otlp, trace_id, spans, source=source).rejected
    except OTLP_ERRORS as exc:
        return _invalid_otlp("spans", exc)
    except ingest.TraceBusy as exc:  # OTLP exporters retry a 503 (OTLP/HTTP spec)
        return busy(exc)
    message = (
        f"{rejected} span(s) reuse a stored span id with other content; the stored span is kept" if rejected else ""
    )
    return _otlp_answer(protobuf, otlp.encode_response, "rejectedSpans", rejected, message)


@otlp_endpoint
@api_view("POST", ingest=True)
def otlp_logs(request: HttpRequest):
    """OTLP/HTTP logs export (`ExportLogsServiceRequest`; JSON or protobuf, optionally gzip), for
    the GenAI content events (`gen_ai.user.message`, `gen_ai.choice`,
    `gen_ai.client.inference.operation.details`, ...) that the GenAI events API sends as log
    records: each is kept and added to its span (trace id + span id) as a span event, whichever of
    the two arrives first (`span_ingest.do_ingest_log_records`). Auth, limits and errors as
    `otlp_traces`; a malformed record is a 400 naming it
    (`resourceLogs[i].scopeLogs[j].logRecords[k]`) and its field, and nothing is stored."""
    read = _read_otlp(request, "sending OTLP logs", "resourceLogs", otlp.sniff_logs)
    if isinstance(read, HttpResponse):
        return read
    project, protobuf, body, doc = read
    try:
        records = otlp.decode_logs_protobuf(body) if protobuf else otlp.split_logs(doc)
        span_ingest.do_ingest_log_records(
            project, otlp, records, source=getattr(request, "otlp_transport", "OTLP/HTTP")
        )
    except OTLP_ERRORS as exc:
        return _invalid_otlp("log records", exc)
    except ingest.TraceBusy as exc:
        return busy(exc)
    return _otlp_answer(protobuf, otlp.encode_logs_response, "rejectedLogRecords", 0, "")
