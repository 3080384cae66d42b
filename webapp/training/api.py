"""Runs API (token or session auth, as webapp.traces.api): external trainers report runs here
(swarmscope/client.py), and the run pages read snapshots.

`POST /api/runs/` {name?, config} -> 201 run; `POST /api/runs/<id>/iterations/` one iteration dict
(the contract of trainer/recipes/train_orchestrator.py) -> 201; `POST /api/runs/<id>/finish/`
{status?, error?, summary?}; `GET /api/runs/<id>/`; `GET /api/runs/<id>/snapshot/`;
`POST /api/runs/<id>/cancel/` and `/resume/`. Bad input: 400 `{"error", "field"}`, nothing stored.
Reading needs membership; every POST needs the reviewer or admin role in the run's project (a
token: its user's role in the token's project), else 403 naming the role; unknown and foreign
runs answer 404 alike.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse

from webapp.web.api import BodyError, api_view, check_write, get_write_project, json_body, json_error

from . import services
from .models import Run


def _body(request: HttpRequest) -> Any:
    """The JSON body; raises RunInputError naming the field (`json_body`'s checks)."""
    try:
        return json_body(request)
    except BodyError as exc:
        raise services.RunInputError(str(exc), exc.field) from None


def _run(request: HttpRequest, run_id: int, write: str = "") -> Run | None:
    """The run, or None for an unknown or foreign id; `write` names a write the caller must be
    allowed (raises PermissionRefused, answered 403 by api_view)."""
    run = services.get_run_for(run_id, request.project_ids)
    if run is not None and write:
        check_write(request, run.project_id, write)
    return run


@api_view("GET", "POST")
def runs(request: HttpRequest):
    """GET: the caller's runs (newest first, at most 200). POST: create an external run."""
    if request.method == "GET":
        return JsonResponse(
            {"results": [services.run_summary(r) for r in services.list_runs(request.project_ids)[:200]]}
        )
    project = get_write_project(request, "reporting a run")
    if project is None:
        return json_error(403, "you are not a member of any project")
    try:
        doc = _body(request)
        if not isinstance(doc, dict):
            raise services.RunInputError("must be a JSON object", "body")
        if not isinstance(doc.get("name") or "", str):
            raise services.RunInputError("must be a string", "name")
        run = services.do_create_run(project, doc.get("config"), name=doc.get("name") or "", external=True)
    except services.RunInputError as exc:
        return JsonResponse(exc.as_dict(), status=400)
    return JsonResponse(services.run_summary(run), status=201)


@api_view("GET")
def run_detail(request: HttpRequest, run_id: int):
    run = _run(request, run_id)
    if run is None:
        return json_error(404, "no such run")
    return JsonResponse(services.run_summary(run))


@api_view("GET")
def run_snapshot(request: HttpRequest, run_id: int):
    run = _run(request, run_id)
    if run is None:
        return json_error(404, "no such run")
    return JsonResponse(services.get_snapshot(run))


@api_view("POST")
def run_iterations(request: HttpRequest, run_id: int):
    run = _run(request, run_id, "reporting a run's iterations")
    if run is None:
        return json_error(404, "no such run")
    if not run.external:
        return json_error(
            409, "the app trains this run; only runs created through this API take iterations", field="run"
        )
    if run.status not in Run.ACTIVE:
        return json_error(409, f"the run is {run.status}; it takes no more iterations", field="status")
    try:
        row = services.do_record_iteration(run, _body(request))
    except services.RunInputError as exc:
        return JsonResponse(exc.as_dict(), status=400)
    return JsonResponse(
        {"iteration": row.iteration, "seq": row.seq, "episodes": list(row.episodes.values_list("pk", flat=True))},
        status=201,
    )


@api_view("POST")
def run_finish(request: HttpRequest, run_id: int):
    run = _run(request, run_id, "finishing a run")
    if run is None:
        return json_error(404, "no such run")
    if not run.external:
        return json_error(409, "the app trains this run; cancel it instead", field="run")
    if run.status not in Run.ACTIVE:
        return json_error(409, f"the run is already {run.status}", field="status")
    try:
        doc = _body(request)
        if not isinstance(doc, dict):
            raise services.RunInputError("must be a JSON object", "body")
        if not isinstance(doc.get("error") or "", str):
            raise services.RunInputError("must be a string", "error")
        run = services.do_finish(
            run, status=doc.get("status") or Run.FINISHED, error=doc.get("error") or "", summary=doc.get("summary")
        )
    except services.RunInputError as exc:
        return JsonResponse(exc.as_dict(), status=400)
    return JsonResponse(services.run_summary(run))


@api_view("POST")
def run_cancel(request: HttpRequest, run_id: int):
    run = _run(request, run_id, "cancelling a run")
    if run is None:
        return json_error(404, "no such run")
    try:
        run = services.do_request_cancel(run)
    except services.RunInputError as exc:
        return JsonResponse(exc.as_dict(), status=409)
    return JsonResponse(services.run_summary(run))


@api_view("POST")
def run_resume(request: HttpRequest, run_id: int):
    run = _run(request, run_id, "resuming a run")
    if run is None:
        return json_error(404, "no such run")
    try:
        run = services.request_resume(run)
    except services.RunInputError as exc:
        return JsonResponse(exc.as_dict(), status=409)
    return JsonResponse(services.run_summary(run))
