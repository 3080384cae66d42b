"""REST API of counterfactual jobs and attributions: parse, authorise, call services, serialise.

Authorised like the rest of the API (`webapp.traces.api.api_view`); a job or trace of another
project answers 404, like an unknown one. Reading (jobs, attributions, cost estimates) needs
membership; requesting, cancelling and retrying jobs need the reviewer or admin role
(`check_write`): a viewer gets 403 naming the role.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse

from webapp.traces import idempotency
from webapp.traces.api import get_trace
from webapp.web.api import BodyError, api_view, check_write, check_write_rate, json_body, json_error, may_write
from webapp.web.validation import InputError, query_int

from . import capabilities, costs, services, wire

CSV_COLUMNS = (
    "id",
    "trace",
    "job",
    "target",
    "method",
    "estimate",
    "ci_low",
    "ci_high",
    "n_rollouts",
    "backend",
    "seed",
    "code_version",
    "created_at",
    "intervention",
    "environment",
)


#: Paired samples of a "What if removed?" job when the request names none.
DEFAULT_SAMPLES = 32
COUNTERFACTUAL_FIELDS = {"intervention", "n", "backend", "seed", "epsilon", "confirmed"}


def _json_object(request: HttpRequest, fields: set[str], required: tuple[str, ...]) -> dict | JsonResponse:
    """The request's JSON object body, or a 400 naming `body`, an unknown field or a missing one."""
    try:
        body = json_body(request)
    except BodyError as exc:
        return json_error(400, str(exc), field=exc.field)
    if not isinstance(body, dict):
        return json_error(400, "body must be a JSON object", field="body")
    unknown = sorted(set(body) - fields)
    if unknown:
        return json_error(400, "unknown field", field=unknown[0])
    for name in required:
        if name not in body:
            return json_error(400, "is required", field=name)
    return body


@api_view("POST")
def trace_counterfactuals(request: HttpRequest, trace_id: int):
    """Request a job: `{"intervention": {...}, "n": N, "backend": "sim", "seed": 0, "epsilon": ε?,
    "confirmed": bool}` -> 202 with the job; 400 `{"error", "field"}` for what cannot run. A job on
    an LLM backend needs `"confirmed": true` (after `.../counterfactuals/estimate/`), else 400
    naming `confirmed`. With an `Idempotency-Key` header (webapp.traces.idempotency) a repeat of
    the request answers the first's job (202, `Idempotent-Replayed: true`) and starts none; the
    key with another body answers 422."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    check_write(request, trace.project_id, "requesting a counterfactual job")
    try:
        key = idempotency.check_key(request)
    except idempotency.KeyProblem as exc:
        return exc.response()
    body = _json_object(request, COUNTERFACTUAL_FIELDS, ("intervention",))
    if isinstance(body, JsonResponse):
        return body
    try:
        costs.check_cost_confirmed(body.get("backend", "sim"), body.get("confirmed"))
        estimate = _confirmed_estimate(
            lambda: _estimate(trace, body, pilot_mode="use"),
            body,
        )
        with transaction.atomic():  # the key's claim and the job: both or neither
            claim = None
            if key is not None:
                endpoint = f"POST /api/traces/{trace.pk}/counterfactuals/"
                claim = idempotency.do_claim(
                    trace.project, key, endpoint, idempotency.request_hash(request, request.body)
                )
                if claim.object_id is not None:
                    return _replayed_job(request, claim.object_id)
            job = services.request_counterfactual(
                trace,
                body["intervention"],
                body.get("n", DEFAULT_SAMPLES),
                body.get("backend", "sim"),
                body.get("seed", 0),
                body.get("epsilon"),
                estimate,
            )
            check_write_rate(request, "job", trace.project_id, job.n_samples)  # a job costs its samples
            if claim is not None:
                idempotency.do_bind(claim, job.pk, 202)
    except services.JobRequestError as exc:
        return json_error(400, exc.message, field=exc.field)
    except idempotency.KeyProblem as exc:
        return exc.response()
    return JsonResponse(wire.job_wire(job), status=202)


def _estimate(trace, body: dict[str, Any], pilot_mode: str) -> dict[str, Any]:
    """`costs.estimate_cost` of a job request's body (its defaults filled in) with `pilot_mode`."""
    return costs.estimate_cost(
        trace,
        body["intervention"],
        body.get("n", DEFAULT_SAMPLES),
        body.get("backend", "sim"),
        body.get("epsilon"),
        body.get("seed", 0),
        pilot_mode=pilot_mode,
    )


def _confirmed_estimate(estimate: Callable[[], dict[str, Any]], body: dict[str, Any]) -> dict[str, Any] | None:
    """The estimate a confirmed job on an LLM backend keeps (`costs.job_estimate` of `estimate()`,
    computed again here: the client's copy is not trusted), None for a backend that needs no
    confirmation. Raises JobRequestError as the estimate endpoints do."""
    if not costs.is_llm_backend(body.get("backend", "sim")):
        return None
    return costs.job_estimate(estimate())


def _replayed_job(request: HttpRequest, job_id: int) -> JsonResponse:
    """The answer to a repeat of a job request (same `Idempotency-Key` and body): the job the first
    created, as it is now, 202 like the first; 404 where it was deleted since."""
    job = services.get_job_for(job_id, request.project_ids)
    if job is None:
        return json_error(404, f"the job created with this {idempotency.HEADER} was deleted")
    return idempotency.replayed(JsonResponse(wire.job_wire(job), status=202))


@api_view("POST")
def trace_counterfactual_estimate(request: HttpRequest, trace_id: int):
    """The estimated cost of a job before it is requested: the body of `.../counterfactuals/`
    (`confirmed` is ignored) -> 200 with `costs.estimate_cost` (prompt and completion tokens,
    requests, whether confirmation is required, the cost pilot it started at `seed` and its state:
    ask again while `pilot.status` is "queued" or "running"; only a caller who may start the job
    starts a pilot, which spends tokens); 400 naming the field."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    body = _json_object(request, COUNTERFACTUAL_FIELDS, ("intervention",))
    if isinstance(body, JsonResponse):
        return body
    try:
        estimate = _estimate(trace, body, "start" if may_write(request, trace.project_id) else "use")
    except services.JobRequestError as exc:
        return json_error(400, exc.message, field=exc.field)
    return JsonResponse(estimate)


@api_view("GET")
def trace_capabilities(request: HttpRequest, trace_id: int):
    """What the trace's actions can run (`capabilities.action_capabilities`): {backends: {name:
    {available, reason, setting, docs, message_types, messages, agents, what_if, attribution,
    notes, scoring}}, what_if, attribution: {available, reason, setting, docs, backends}, docs}."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    return JsonResponse(capabilities.action_capabilities(trace))


ATTRIBUTION_FIELDS = {"method", "budget", "backend", "seed", "players", "confirmed"}


@api_view("POST")
def trace_attribution_estimate(request: HttpRequest, trace_id: int):
    """The estimated cost of an "Attribute this trace" job before it is requested: the body of
    `.../attributions/run/` (`confirmed` is ignored) -> 200 with `costs.estimate_attribution_cost`
    (requests, prompt and completion tokens, samples and rollouts, whether confirmation is
    required); 400 naming the field."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    body = _json_object(request, ATTRIBUTION_FIELDS, ("method", "budget"))
    if isinstance(body, JsonResponse):
        return body
    try:
        estimate = costs.estimate_attribution_cost(
            trace,
            body["method"],
            body["budget"],
            body.get("backend", "sim"),
            body.get("seed", 0),
            body.get("players", "messages"),
        )
    except services.JobRequestError as exc:
        return json_error(400, exc.message, field=exc.field)
    return JsonResponse(estimate)


@api_view("GET")
def trace_jobs(request: HttpRequest, trace_id: int):
    """The trace's jobs, newest first (`?limit=`, default 50, at most 500): `{"results": [...]}`
    of `wire.job_summary_wire`."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    try:
        limit = query_int(request.GET, "limit", 50, low=1, high=500)
    except InputError as exc:
        return json_error(400, exc.message, field=exc.field)
    return JsonResponse({"results": [wire.job_summary_wire(j) for j in services.list_jobs(trace, limit)]})


@api_view("POST")
def trace_attribution_run(request: HttpRequest, trace_id: int):
    """ "Attribute this trace": `{"method": "loo"|"shapley"|"kernelshap"|"shapley2", "budget": rollouts,
    "seed": 0, "backend": "sim", "players": "messages"|"agents", "confirmed": bool}` -> 202 with
    the job (its `results`, once done, one attribution per message or agent, highest credit
    first); 400 `{"error", "field"}` for what cannot run (an LLM backend needs `"confirmed": true`,
    after `.../attributions/estimate/`)."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    check_write(request, trace.project_id, "attributing a trace")
    body = _json_object(request, ATTRIBUTION_FIELDS, ("method", "budget"))
    if isinstance(body, JsonResponse):
        return body
    try:
        costs.check_cost_confirmed(body.get("backend", "sim"), body.get("confirmed"))
        args = (
            trace,
            body["method"],
            body["budget"],
            body.get("backend", "sim"),
            body.get("seed", 0),
            body.get("players", "messages"),
        )
        estimate = _confirmed_estimate(lambda: costs.estimate_attribution_cost(*args), body)
        with transaction.atomic():  # the job undone when it is over the rate
            job = services.request_attribution(*args, estimate)
            check_write_rate(request, "job", trace.project_id, job.n_samples)
    except services.JobRequestError as exc:
        return json_error(400, exc.message, field=exc.field)
    return JsonResponse(wire.job_wire(job), status=202)


def _job_response(request: HttpRequest, job_id: int, action=None, what: str = "") -> JsonResponse:
    """The job (after `action(job)`, when given: a write named `what`, which needs the reviewer
    role) as JSON, or 404 for an unknown or foreign id."""
    job = services.get_job_for(job_id, request.project_ids)
    if job is None:
        return json_error(404, "no such job")
    if action is not None:
        check_write(request, job.trace.project_id, what)
    return JsonResponse(wire.job_wire(action(job) if action else job))


@api_view("GET")
def job_detail(request: HttpRequest, job_id: int):
    return _job_response(request, job_id)


@api_view("POST")
def job_cancel(request: HttpRequest, job_id: int):
    return _job_response(request, job_id, services.do_cancel_job, "cancelling a job")


@api_view("POST")
def job_retry(request: HttpRequest, job_id: int):
    return _job_response(request, job_id, services.do_retry_job, "retrying a job")


@api_view("GET")
def trace_export_otlp(request: HttpRequest, trace_id: int):
    """The trace as OTLP/JSON with the GenAI conventions, its attributions and, for a branch trace,
    its parent (`services.otlp_export`); a download that any OTLP/HTTP JSON receiver accepts,
    streamed. 413 for a trace of over SWARMSCOPE_EXPORT_MAX_EVENTS events; over
    SWARMSCOPE_EXPORT_LARGE_EVENTS, 403 unless the caller may write in its project (not a viewer)."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    events, most = trace.event_count, settings.SWARMSCOPE_EXPORT_MAX_EVENTS
    if events > most:
        return json_error(
            413, f"this trace has {events} events, over the {most} an export may hold (SWARMSCOPE_EXPORT_MAX_EVENTS)"
        )
    large = settings.SWARMSCOPE_EXPORT_LARGE_EVENTS
    if events > large:  # a download of this size costs what a write does: not for viewers
        check_write(
            request, trace.project_id, f"exporting a trace of over {large} events (SWARMSCOPE_EXPORT_LARGE_EVENTS)"
        )
    # streamed: the spans are made as the client reads them, one chunk held at a time
    response = StreamingHttpResponse(services.otlp_export_chunks(trace), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="trace-{trace.pk}-otlp.json"'
    return response


@api_view("GET")
def trace_attributions(request: HttpRequest, trace_id: int):
    """The trace's attributions, newest first: JSON `{"results": [...]}`, or `?format=csv`."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    fmt = request.GET.get("format", "json")
    if fmt not in ("json", "csv"):
        return json_error(400, "format must be 'json' or 'csv'", field="format")
    rows = [wire.attribution_wire(a) for a in services.list_attributions(trace)]
    if fmt == "json":
        return JsonResponse({"results": rows})
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow(
            [json.dumps(row[c], sort_keys=True) if isinstance(row[c], dict) else row[c] for c in CSV_COLUMNS]
        )
    response = HttpResponse(out.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="trace-{trace.pk}-attributions.csv"'
    return response
