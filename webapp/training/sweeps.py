"""Store a credit-diffusion sweep (bench/credit_diffusion.py's JSON) as finished external runs, so
the compare page draws each (arm, n) seed group as its mean curve with a 95 % band.

The sweep's runs of one n differ only in `credit` and `seed`, so each (arm, n) is one seed group
(`services.seed_group_of`). Each run is stored once, by name ("credit sweep n=<n> <arm> seed <s>"):
importing the same sweep again adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from webapp.accounts.models import Project

from . import services
from .models import Run

#: The metric the compare links open on: the training episodes' closed-form E[R].
SWEEP_METRIC = "expected_success"


@dataclass
class ImportedSweep:
    """`created` / `kept`: run ids stored now / found from an earlier import; `groups[n]`: arm ->
    seed group key; `compare_urls[n]`: the compare page of n's arms (at most 4 groups a page)."""

    created: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)
    groups: dict[int, dict[str, str]] = field(default_factory=dict)
    compare_urls: dict[int, str] = field(default_factory=dict)


def _run_name(doc: dict[str, Any]) -> str:
    return f"credit sweep n={doc['n']} {doc['arm']} seed {doc['seed']}"


def do_import_sweep(project: Project, sweep: Any) -> ImportedSweep:
    """Store every run of `sweep` (`runs`: arm, n, seed, config, iterations, env_steps, held_out)
    in `project` as a finished external run with its iterations. Raises services.RunInputError
    naming the run and field of a malformed entry (the runs before it stay stored)."""
    if not isinstance(sweep, dict) or not isinstance(sweep.get("runs"), list):
        raise services.RunInputError("must be bench/credit_diffusion.py's JSON: an object with a list of runs", "runs")
    out = ImportedSweep()
    for i, doc in enumerate(sweep["runs"]):
        if not isinstance(doc, dict) or not all(k in doc for k in ("arm", "n", "seed", "config", "iterations")):
            raise services.RunInputError("must have arm, n, seed, config and iterations", f"runs[{i}]")
        name = _run_name(doc)
        try:
            config = services.check_config(doc["config"])
        except services.RunInputError as exc:
            raise services.RunInputError(exc.message, f"runs[{i}].{exc.field}") from None
        group = services.seed_group_of(config)
        out.groups.setdefault(int(doc["n"]), {})[str(doc["arm"])] = group
        existing = Run.objects.filter(project=project, name=name, seed_group=group, status=Run.FINISHED).first()
        if existing is not None:
            out.kept.append(existing.pk)
            continue
        run = services.do_create_run(project, config, name=name, external=True)
        try:
            for j, iteration in enumerate(doc["iterations"]):
                try:
                    services.do_record_iteration(run, {**iteration, "budget_steps": doc.get("env_steps") or None})
                except services.RunInputError as exc:
                    raise services.RunInputError(exc.message, f"runs[{i}].iterations[{j}].{exc.field}") from None
        except services.RunInputError as exc:
            services.do_finish(run, status=Run.FAILED, error=f"{exc.field}: {exc.message}")
            raise
        services.do_finish(run, summary={"env_steps": doc.get("env_steps"), "held_out": doc.get("held_out")})
        out.created.append(run.pk)
    for n, arms in out.groups.items():
        keys = list(arms.values())[:4]
        out.compare_urls[n] = "/runs/compare/?" + urlencode([("groups", k) for k in keys] + [("metric", SWEEP_METRIC)])
    return out
