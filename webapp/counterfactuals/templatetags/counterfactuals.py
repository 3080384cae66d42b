"""Template tags of the trace page: what its actions can run (`trace_actions`) and where a
derived trace comes from (`trace_origin`: a branch trace's parent and job, a training run's sample
episode's run and iteration)."""

from __future__ import annotations

import json
from typing import Any

from django import template

from webapp.counterfactuals.capabilities import action_capabilities
from webapp.counterfactuals.models import RolloutSample
from webapp.traces.models import Trace

register = template.Library()


WHAT_IF, ATTRIBUTE = "What if removed?", "Attribute this trace"


def _notice(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The page's note on its disabled actions: {title, items (one reason per backend), setting,
    docs}, or None when both run somewhere."""
    what_if, attribution = summary["what_if"]["available"], summary["attribution"]["available"]
    if what_if and attribution:
        return None
    backends = summary["backends"]
    if not what_if and not attribution:
        title = f"{WHAT_IF} and {ATTRIBUTE} are off: no rollout backend can run them on this trace."
        items = [
            f"{name}: {cap['reason'] or cap['what_if']['reason'] or cap['attribution']['reason']}"
            for name, cap in backends.items()
        ]
    else:
        action = "attribution" if what_if else "what_if"
        title = f"{ATTRIBUTE if what_if else WHAT_IF} is off on this trace."
        items = [f"{name}: {cap['reason'] or cap[action]['reason']}" for name, cap in backends.items()]
    setting = summary["what_if"]["setting"] or summary["attribution"]["setting"]
    return {"title": title, "items": items, "setting": setting, "docs": summary["docs"]}


@register.simple_tag
def trace_actions(trace: Trace) -> dict[str, Any]:
    """What the trace page's actions can run (`capabilities.action_capabilities`): the summary, its
    JSON (`json`, for `data-capabilities`) and the note on disabled actions (`notice`, or None)."""
    summary = action_capabilities(trace)
    return {**summary, "json": json.dumps(summary), "notice": _notice(summary)}


def _intervention_text(intervention: dict[str, Any]) -> str:
    targets = [f"event:{e}" for e in intervention.get("events") or []] + [
        f"agent:{a}" for a in intervention.get("agents") or []
    ]
    return f"{intervention.get('kind', 'remove')}({', '.join(targets)})"


#: The settings of a branch's `sampling` attribute the banner names, in its order, with their words.
SAMPLING_WORDS = (
    ("model", "model"),
    ("temperature", "temperature"),
    ("max_tokens", "max_tokens"),
    ("max_turns", "max_turns"),
    ("speaker_order", "speaker order"),
    ("scoring", "scoring"),
    ("choice_max_tokens", "choice_max_tokens"),
    ("verdict_max_tokens", "verdict_max_tokens"),
)


def sampling_text(sampling: Any) -> str:
    """A branch trace's `sampling` attribute (trainer.rollout.llm_plan.RolloutPlan.sampling_settings)
    in words: "model m, temperature 0.7, max_tokens 256, max_turns all, ..."; "" without one."""
    if not isinstance(sampling, dict):
        return ""
    words = []
    for key, word in SAMPLING_WORDS:
        if key in sampling:
            value = sampling[key]
            words.append(f"{word} {'all' if key == 'max_turns' and value == 0 else value}")
    return ", ".join(words)


@register.simple_tag
def trace_origin(trace: Trace) -> dict[str, Any] | None:
    """Where `trace` comes from, or None for an original: {kind: "branch", parent (Trace), job
    (id), intervention (its one-line form), seed, sampling (the settings it was sampled with, in
    words: `sampling_text`), compare_url} for a branch trace of a counterfactual
    job (`RolloutSample.branch_trace`), {kind: "episode", run (id), run_name, iteration} for a
    sample episode of a training run (`RunIteration.episodes`, read by its relation: training is a
    sibling app)."""
    sample = RolloutSample.objects.filter(branch_trace=trace).select_related("job__trace").first()
    if sample is not None:
        job = sample.job
        return {
            "kind": "branch",
            "parent": job.trace,
            "job": job.pk,
            "backend": job.backend,
            "intervention": _intervention_text(job.intervention or {}),
            "seed": sample.seed,
            "sampling": sampling_text((trace.attributes or {}).get("sampling")),
            "compare_url": f"/traces/compare/?left={job.trace_id}&right={trace.pk}",
        }
    iteration = trace.run_iterations.select_related("run").order_by("iteration").first()
    if iteration is not None:
        return {
            "kind": "episode",
            "run": iteration.run_id,
            "run_name": str(iteration.run),
            "iteration": iteration.iteration,
        }
    return None
