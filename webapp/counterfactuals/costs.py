"""Cost estimates of counterfactual and attribution jobs on LLM backends, before they run.

The estimate is the backend's own plan of the requests a job sends (`plan_paired` and `plan_call`,
trainer.rollout.openai; nothing is sent), chunk by chunk as the job runs, counted at
tok(x) = ceil(len(x) / CHARS_PER_TOKEN). A job on an LLM backend (one on LLM_QUEUE) needs the
caller's `confirmed: true` (`check_cost_confirmed`); a SwarmSim job costs no tokens.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from django.conf import settings

from swarmscope.interventions import Intervention, InterventionError, check_intervention
from webapp.traces.models import Trace
from webapp.traces.services import to_core_trace

from .models import CounterfactualJob
from .services import (
    ESTIMATORS,
    MAX_SAMPLES,
    JobRequestError,
    cannot_rerun_text,
    check_attribution,
    check_backend_runs,
    check_epsilon,
    check_int,
    get_backend_class,
    play_attribution_chunk,
)

#: Characters per token of the cost estimate: OpenAI's rule of thumb that one token is about 4
#: characters of common English text (OpenAI Help Center, "What are tokens and how to count them?"),
#: the estimate used wherever a trace has no token counts (docs/architecture.md). No tokenizer is downloaded.
CHARS_PER_TOKEN = 4
#: The queue of backends that call an LLM; their jobs need `confirmed: true` (LLM backends run on
#: `rollouts-gpu`, SwarmSim on `rollouts-cpu`).
LLM_QUEUE = "rollouts-gpu"
#: The request kinds of a backend's plan (`trainer.rollout.llm_plan.PlannedRequest.kind`).
REQUEST_KINDS = ("turn", "speaker", "verdict")


def is_llm_backend(backend: str) -> bool:
    """Whether backend `backend` (a key of SWARMSCOPE_ROLLOUT_BACKENDS) calls an LLM, i.e. runs on
    LLM_QUEUE. Raises JobRequestError for an unknown name."""
    return getattr(get_backend_class(backend), "queue", None) == LLM_QUEUE


def check_cost_confirmed(backend: Any, confirmed: Any) -> None:
    """Refuse a job on an LLM backend unless the caller confirmed its cost (`confirmed` is True,
    after `estimate_cost` / `estimate_attribution_cost`). Raises JobRequestError naming
    `confirmed` (or `backend` when unknown)."""
    if not isinstance(backend, str):
        raise JobRequestError("must be a string", "backend")
    if is_llm_backend(backend) and confirmed is not True:
        raise JobRequestError(
            f"the {backend} backend calls an LLM and costs tokens: ask for the estimate "
            "(POST .../counterfactuals/estimate/ or .../attributions/estimate/) and send "
            "confirmed: true",
            "confirmed",
        )


def _tokens(text: Any) -> int:
    """ceil(characters / CHARS_PER_TOKEN) of `text` (JSON for a non-string, 0 for None)."""
    if text is None:
        return 0
    if not isinstance(text, str):
        text = json.dumps(text, sort_keys=True)
    return -(-len(text) // CHARS_PER_TOKEN)


def _cost(requests: list, first_seed: int | None = None) -> dict[str, int]:
    """Requests, prompt and completion tokens of planned requests (`PlannedRequest`s): a request's
    prompt is Σ tok(part) over its `parts`, sent once whatever its `n`; its completions n · tok(answer).
    `turns`: the re-generated turns of the sample at `first_seed` (its "turn" requests; None: 0);
    `<kind>_requests` per REQUEST_KINDS."""
    sizes: dict[int, int] = {}  # requests of one slot share their parts list: each is counted once
    for r in requests:
        if id(r.parts) not in sizes:
            sizes[id(r.parts)] = sum(_tokens(part) for part in r.parts)
    cost = {
        "turns": sum(r.kind == "turn" and r.sample_seed == first_seed for r in requests),
        "requests": len(requests),
        "prompt_tokens": sum(sizes[id(r.parts)] for r in requests),
        "completion_tokens": sum(r.n * _tokens(r.answer) for r in requests),
    }
    cost.update({f"{kind}_requests": sum(r.kind == kind for r in requests) for kind in REQUEST_KINDS})
    return cost


def _add_cost(total: dict[str, int], cost: dict[str, int]) -> dict[str, int]:
    """`total` with every count of `cost` added (in place; returns it)."""
    for key, value in cost.items():
        total[key] = total.get(key, 0) + value
    return total


def _planner(backend: str, core_trace):
    """The backend instance whose plan is the estimate: `from_trace` (configured as a job's runner
    is: endpoint, scoring, speaker order, max turns). Raises JobRequestError naming `backend` when
    it cannot re-run the trace or cannot plan its requests."""
    try:
        runner = get_backend_class(backend).from_trace(core_trace)
    except ValueError as exc:
        raise JobRequestError(cannot_rerun_text(backend, exc), "backend") from exc
    if not hasattr(runner, "plan_paired"):
        raise JobRequestError(
            f"the {backend} backend calls an LLM but cannot plan its requests (no plan_paired): "
            "its cost cannot be estimated",
            "backend",
        )
    return runner


def _check_context(runner, requests: list, backend: str) -> None:
    """The backend's check of planned requests against the model's context (`check_context`, where
    it has one: the server's max_model_len). Raises JobRequestError naming `intervention`, with the
    agent and turn whose prompt is too long."""
    check = getattr(runner, "check_context", None)
    if check is None:
        return
    try:
        check(requests)
    except ValueError as exc:
        raise JobRequestError(f"the {backend} backend cannot send this job: {exc}", "intervention") from exc


def _chunks(n: int) -> list[tuple[int, int]]:
    """(start, stop) of the chunks of a job of n samples, as `services._missing_chunks` enqueues them."""
    size = settings.SWARMSCOPE_ROLLOUT_CHUNK
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def _totals(parts: dict[str, dict[str, dict[str, int]]]) -> dict[str, int]:
    total = {
        key: sum(cost[key] for part in parts.values() for cost in part.values())
        for key in ("requests", "prompt_tokens", "completion_tokens", *(f"{kind}_requests" for kind in REQUEST_KINDS))
    }
    total["total_tokens"] = total["prompt_tokens"] + total["completion_tokens"]
    return total


def _zero_cost() -> dict[str, int]:
    return {
        "turns": 0,
        "requests": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        **{f"{kind}_requests": 0 for kind in REQUEST_KINDS},
    }


def estimate_cost(
    trace: Trace, intervention: Intervention | dict, n: int, backend: str = "sim", epsilon: float | None = None
) -> dict[str, Any]:
    """The estimated LLM cost of a counterfactual job of `n` paired samples, from the trace's
    sizes: the requests the job's backend will send, as the backend itself plans them
    (`plan_paired`, trainer.rollout.openai; nothing is sent), counted at tok(x) = ceil(len(x) / 4)
    (CHARS_PER_TOKEN, OpenAI's rule of thumb).

    The plan follows the job: one `paired` call per chunk of SWARMSCOPE_ROLLOUT_CHUNK samples
    (each arm's first re-generated turn is one request with `n` = the chunk's samples: its prompt
    is sent once per chunk; every later turn one request per sample), and sample 0 re-run once in
    both arms for its branch trace (`branch`). It assumes each re-generated turn answers with the
    size of its recorded content and, where the trace's LLM orchestrator picks speakers, that it
    picks the recorded speaker (one "who speaks next" request per sample before every re-generated
    turn after the fork turn, its answer a name); under verifier scoring one verdict request per
    sample and arm (answer `{"correct": true}`). A request's prompt counts the texts it is made
    of — system prompt, the history's contents, the question or verifier prompt — not the chat
    formatting (role markers, the `[speaker] ` prefixes). With `epsilon`, n is the cap: an upper
    bound. A non-LLM backend (SwarmSim) costs no tokens: zeros and `confirmation_required` False.
    Every planned prompt is checked against the model's context before the job starts
    (`check_context`: the server's max_model_len from `/v1/models`, where it reports one).

    Returns {backend, llm, confirmation_required, n, fork_event, speaker_order, scoring, turns,
    requests, prompt_tokens, completion_tokens, total_tokens, turn_requests, speaker_requests,
    verdict_requests, chars_per_token, arms and branch:
    {control, intervention: {turns, requests, prompt_tokens, completion_tokens, turn_requests,
    speaker_requests, verdict_requests}}}; `turns` counts both arms' re-generated turns of one
    sample. Raises JobRequestError naming the field for a bad n or epsilon, an unknown backend, an
    intervention that does not fit the trace, a trace the backend cannot re-run, or a prompt over
    the model's context (field `intervention`, the message naming the agent and turn)."""
    n = check_int(n, "n", 2, MAX_SAMPLES)
    check_epsilon(epsilon)
    llm = is_llm_backend(backend)
    core_trace = to_core_trace(trace)
    try:
        if not isinstance(intervention, Intervention):
            intervention = Intervention.from_dict(intervention)
        check_intervention(core_trace, intervention)
    except InterventionError as exc:
        raise JobRequestError(exc.message, f"intervention.{exc.field}") from exc
    check_backend_runs(trace, backend, core_trace)  # the reason in words: which setting, what the trace lacks
    events = core_trace.events
    changed, agents = set(intervention.events), set(intervention.agents)
    fork = next(i for i, e in enumerate(events) if e.id in changed or e.agent in agents)
    arms = ("control", "intervention")
    if not llm:
        parts = {part: {arm: _zero_cost() for arm in arms} for part in ("arms", "branch")}
        return {
            "backend": backend,
            "llm": False,
            "confirmation_required": False,
            "n": n,
            "fork_event": events[fork].id,
            "speaker_order": None,
            "scoring": None,
            "turns": 0,
            **_totals(parts),
            "chars_per_token": CHARS_PER_TOKEN,
            **parts,
        }
    runner = _planner(backend, core_trace)
    try:
        runner.check(intervention)
    except InterventionError as exc:
        raise JobRequestError(exc.message, f"intervention.{exc.field}") from exc
    # Counted chunk by chunk, not kept: a long trace's plan has tens of thousands of requests.
    parts = {part: {arm: _zero_cost() for arm in arms} for part in ("arms", "branch")}
    for start, stop in _chunks(n):
        for arm, requests in runner.plan_paired(intervention, np.arange(start, stop)).items():
            _check_context(runner, requests, backend)
            _add_cost(parts["arms"][arm], _cost(requests, 0))
    for arm, requests in runner.plan_paired(intervention, np.arange(1)).items():
        _add_cost(parts["branch"][arm], _cost(requests, 0))
    return {
        "backend": backend,
        "llm": True,
        "confirmation_required": True,
        "n": n,
        "fork_event": events[fork].id,
        "speaker_order": getattr(runner, "speaker_order", None),
        "scoring": getattr(runner, "scoring", None),
        "turns": sum(cost["turns"] for cost in parts["arms"].values()),
        **_totals(parts),
        "chars_per_token": CHARS_PER_TOKEN,
        **parts,
    }


def estimate_attribution_cost(
    trace: Trace,
    method: Any,
    budget: Any,
    backend: Any = "sim",
    seed: Any = 0,
    players: Any = CounterfactualJob.MESSAGES,
) -> dict[str, Any]:
    """The estimated LLM cost of an "Attribute this trace" job (`request_attribution`'s
    arguments): the requests its chunk tasks will send, as the backend plans them (`plan_call`,
    nothing sent) for every rollout call of the estimator's coalition game, chunk by chunk as the
    job runs them (`play_attribution_chunk`: one call, so one batched fork request, per distinct
    coalition of a chunk), with the assumptions and token rule of `estimate_cost`. No branch
    traces are stored by attribution jobs. A non-LLM backend costs nothing; prompts are checked
    against the model's context as in `estimate_cost`.

    Returns {kind: "attribution", backend, llm, confirmation_required, method, players,
    player_kind, n (samples), rollouts (the budget used: n × rollouts per sample), speaker_order,
    scoring, requests, prompt_tokens, completion_tokens, total_tokens, turn_requests,
    speaker_requests, verdict_requests, chars_per_token}. Raises JobRequestError naming the field."""
    names, n, runner = check_attribution(trace, method, budget, backend, seed, players)
    llm = is_llm_backend(backend)
    estimate = {
        "kind": "attribution",
        "backend": backend,
        "llm": llm,
        "confirmation_required": llm,
        "method": method,
        "players": len(names),
        "player_kind": players,
        "n": n,
        "rollouts": n * ESTIMATORS[method].rollouts(len(names)),
        "speaker_order": None,
        "scoring": None,
        "chars_per_token": CHARS_PER_TOKEN,
    }
    cost = _zero_cost()
    if llm:
        if not hasattr(runner, "plan_call"):
            raise JobRequestError(
                f"the {backend} backend calls an LLM but cannot plan its requests (no plan_call): "
                "its cost cannot be estimated",
                "backend",
            )

        def planning_rollout(intervention: Intervention | None, seeds: np.ndarray) -> np.ndarray:
            requests = runner.plan_call(intervention, seeds)
            _check_context(runner, requests, backend)
            _add_cost(cost, _cost(requests))  # counted, not kept
            return np.zeros(len(seeds))

        for start, stop in _chunks(n):
            play_attribution_chunk(planning_rollout, method, names, players, n, seed, list(range(start, stop)))
        estimate.update(speaker_order=getattr(runner, "speaker_order", None), scoring=getattr(runner, "scoring", None))
    cost.pop("turns")
    estimate.update(cost, total_tokens=cost["prompt_tokens"] + cost["completion_tokens"])
    return estimate
