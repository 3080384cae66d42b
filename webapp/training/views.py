"""HTML pages: runs list, New run, run page (live), compare. Thin: parse, authorise, call services.

Members read; starting, cancelling and resuming runs need the reviewer or admin role (a viewer
gets the 403 page naming it, and sees those controls disabled with READ_ONLY_HINT as tooltip)."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from webapp.accounts.services import (
    READ_ONLY_HINT,
    WRITE_ROLE,
    has_role,
)
from webapp.traces import access
from webapp.web.api import check_write, get_write_project, writable_projects
from webapp.web.validation import InputError, parse_int

from . import services
from .forms import NewRunForm
from .models import Run
from .sweeps import get_sweep_summary

log = logging.getLogger(__name__)
MAX_COMPARE = 4
#: Rows the runs list shows (newest first; live arrivals push the oldest out).
RUN_LIST_ROWS = 200
#: Seed groups one compare page takes when they span several n (a credit-diffusion sweep's arms x n).
MAX_SWEEP_COMPARE = 40


def _run_or_404(request: HttpRequest, run_id: int):
    run = services.get_run_for(run_id, access.project_ids_for(request.user))
    if run is None:
        raise Http404("no such run")
    return run


def _recipe_defaults() -> tuple[dict, list[str]]:
    recipe = services.recipe()
    defaults = recipe.RunConfig().to_dict()
    levels = list(getattr(recipe, "LEVELS", None) or [defaults.get("level", "long")])
    return defaults, levels


def _policy_defaults() -> dict[str, dict]:
    """The recipe's config changes per policy other than its default (POLICY_DEFAULTS; none: one policy)."""
    return dict(getattr(services.recipe(), "POLICY_DEFAULTS", None) or {})


@login_required
def run_list(request: HttpRequest):
    """Newest runs first (`?group=<seed group>` shows one seed group); each row with its seed group
    (one run per seed; a repeated seed's other runs are marked as left out of the group's mean).
    Live (static/js/pages/runs_list.js): runs created later arrive over `/ws/projects/<id>/runs/`,
    one socket per project, from the newest run id at render time (`live_config`)."""
    project_ids = access.project_ids_for(request.user)
    # read before the rows: a run created in between is in both, and the page keeps one row of it
    sockets = [
        {"project": p, "url": f"/ws/projects/{p}/runs/", "seq": services.last_run_id(p)} for p in sorted(project_ids)
    ]
    qs = services.list_runs(project_ids)
    group = request.GET.get("group", "").strip()
    if group:
        qs = qs.filter(seed_group=group)
    runs = list(qs[:RUN_LIST_ROWS])
    groups = services.list_seed_groups([r.seed_group for r in runs], project_ids)
    rows = [
        {
            "run": r,
            "summary": services.run_summary(r),
            "group": groups[r.seed_group],
            "repeat_of": groups[r.seed_group].kept_for.get(r.pk),
        }
        for r in runs
    ]
    can_write = any(has_role(request.user, pid, WRITE_ROLE) for pid in project_ids)
    return render(
        request,
        "runs/run_list.html",
        {
            "rows": rows,
            "max_compare": MAX_COMPARE,
            "group": group,
            "can_write": can_write,
            "read_only_hint": READ_ONLY_HINT,
            "live_config": {"sockets": sockets, "group": group, "max_rows": RUN_LIST_ROWS},
        },
    )


@login_required
def run_new(request: HttpRequest):
    """GET: the form, its Project preselected (`?project=<id>`, else the first project where the
    user may start runs; disabled, with a notice, for a viewer). POST: start the run in the chosen
    project (a form error on that field for one where they only read); 403 page for a viewer
    everywhere, 404 for a user of no project."""
    projects = writable_projects(request.user)
    if request.method == "POST" and not projects:
        get_write_project(request, "starting a run")  # raises PermissionRefused (403) for a viewer
        raise Http404("you are not a member of any project")
    defaults, levels = _recipe_defaults()
    wanted = request.GET.get("project", "")
    preselected = next((p for p in projects if str(p.pk) == wanted), None)
    form = NewRunForm(
        request.POST or None,
        defaults=defaults,
        levels=levels,
        projects=projects,
        project=preselected,
        policy_defaults=_policy_defaults(),
    )
    if request.method == "POST" and form.is_valid():
        try:
            run = services.do_start_run(form.cleaned_data["project"], form.config(), name=form.cleaned_data["name"])
        except services.RunInputError as exc:
            form.add_config_error(exc.field, exc.message)
        else:
            return redirect("run-detail", run.pk)
    return render(
        request,
        "runs/run_new.html",
        {
            "form": form,
            "can_write": bool(projects),
            "read_only_hint": READ_ONLY_HINT,
            "policy_rules": _policy_rules(form, defaults),
        },
    )


def _policy_rules(form: NewRunForm, defaults: dict) -> dict[str, dict]:
    """Per policy the form offers, what choosing it does on the page (static/js/pages/run_new.js):
    `set`, the form fields it changes (POLICY_DEFAULTS; the default policy puts back the recipe's
    values), `credits`, the credit schemes it trains with (POLICY_CREDITS; none: all), and what the
    page's estimate of an iteration reads: `episodes` and `max_steps` (the policy's config), and
    `decision_s`, the measured seconds of a decision by where it is sampled and of its update
    (POLICY_DECISION_S: {"server" | "local" | "update": [low, high]}; absent: not measured)."""
    recipe = services.recipe()
    policies, credits = _policy_defaults(), dict(getattr(recipe, "POLICY_CREDITS", None) or {})
    costs = dict(getattr(recipe, "POLICY_DECISION_S", None) or {})
    fields = {name for changes in policies.values() for name in changes if name in form.fields}
    rules = {
        policy: {"set": {k: v for k, v in changes.items() if k in form.fields}} for policy, changes in policies.items()
    }
    default = str(defaults.get("policy", ""))
    rules[default] = {"set": {name: defaults.get(name) for name in fields}}
    for policy, rule in rules.items():
        config = {**defaults, **(policies.get(policy, {}) if policy != default else {})}
        rule.update(episodes=config.get("episodes_per_iteration"), max_steps=config.get("max_steps"))
        if policy in costs:
            rule["decision_s"] = {where: list(span) for where, span in costs[policy].items()}
    for policy, allowed in credits.items():
        rules.setdefault(policy, {"set": {}})["credits"] = list(allowed)
    return rules


@login_required
def run_detail(request: HttpRequest, run_id: int):
    run = _run_or_404(request, run_id)
    return render(
        request,
        "runs/run_detail.html",
        {
            "run": run,
            "budget_spent": services.budget_spent(run),
            "ws_url": f"/ws/runs/{run.pk}/",
            "snapshot_url": reverse("api-run-snapshot", args=[run.pk]),
            "can_write": has_role(request.user, run.project_id, WRITE_ROLE),
            "read_only_hint": READ_ONLY_HINT,
        },
    )


@login_required
@require_POST
def run_cancel(request: HttpRequest, run_id: int):
    run = _run_or_404(request, run_id)
    check_write(request, run.project_id, "cancelling a run")
    try:
        run = services.do_request_cancel(run)
    except services.RunInputError as exc:  # not active: nothing to cancel
        messages.error(request, f"Run {run.pk}: {exc.message}.")
    else:
        state = "cancelling at the end of this iteration" if run.status == Run.CANCELLING else run.status
        messages.info(request, f"Run {run.pk}: {state}.")
    return redirect("run-detail", run.pk)


@login_required
@require_POST
def run_resume(request: HttpRequest, run_id: int):
    run = _run_or_404(request, run_id)
    check_write(request, run.project_id, "resuming a run")
    was_queued = run.status == Run.QUEUED
    try:
        services.request_resume(run)
    except services.RunInputError as exc:
        messages.error(request, f"Run {run.pk}: {exc.message}.")
    else:
        messages.info(
            request,
            f"Run {run.pk}: its training task was sent again."
            if was_queued
            else f"Run {run.pk} resumes from its last checkpoint.",
        )
    return redirect("run-detail", run.pk)


@login_required
def run_compare(request: HttpRequest):
    """`?runs=1&runs=2` (2–4 runs) or `?groups=<seed group>&groups=...`: each group is drawn as the
    mean of its runs, one per seed, with a 95 % band (static/js/runs_model.js); repeated runs of a
    seed are left out and listed (`left_out`). Seed groups spanning several episode lengths
    (`n_subtasks`) add the summary vs n (sweeps.get_sweep_summary, `sweep-summary` JSON) and may be
    up to MAX_SWEEP_COMPARE; the curves are then drawn one n at a time."""
    project_ids = access.project_ids_for(request.user)
    try:
        raw = [i.strip() for i in request.GET.getlist("runs") if i.strip()]
        run_ids = list(dict.fromkeys(parse_int(i, field="runs", low=1) for i in raw))
    except InputError:
        raise Http404("runs must be run ids") from None
    group_keys = list(dict.fromkeys(g for g in request.GET.getlist("groups") if g.strip()))
    series = []
    for run_id in run_ids:
        run = services.get_run_for(run_id, project_ids)
        if run is None:
            raise Http404(f"no such run {run_id}")
        series.append({"label": run.name, "kind": "run", "runs": [services.get_snapshot(run)]})
    groups = services.list_seed_groups(group_keys, project_ids)
    for key in group_keys:
        group = groups.get(key)
        if group is None:
            raise Http404(f"no such seed group {key}")
        label = f"{group.runs[0].name.rsplit(' seed ', 1)[0]} ({group.seeds} seed{'s' if group.seeds != 1 else ''})"
        series.append(
            {
                "label": label,
                "kind": "group",
                "group": key,
                "description": group.describe(),
                "runs": [services.get_snapshot(r) for r in group.runs],
                "left_out": [
                    {"id": r.pk, "seed": r.config.get("seed"), "kept": group.kept_for[r.pk]} for r in group.repeats
                ],
            }
        )
    summary = get_sweep_summary([snap for s in series for snap in s["runs"]])
    cap = MAX_SWEEP_COMPARE if summary is not None and not run_ids else MAX_COMPARE
    if not 2 <= len(series) <= cap:
        return render(request, "runs/run_compare.html", {"series": None, "count": len(series), "cap": cap}, status=400)
    return render(request, "runs/run_compare.html", {"series": series, "count": len(series), "summary": summary})
