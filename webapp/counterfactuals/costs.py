"""Cost estimates of counterfactual and attribution jobs on LLM backends, before they run.

The estimate is the backend's own plan of the requests a job sends (`plan_paired` and `plan_call`,
trainer.rollout.openai; nothing is sent but the tokenizer counts below), chunk by chunk as the job
runs. Its requests are exact (the plan follows the job's rules). Its tokens:

- a text is tok(x) = ceil(len(x) / c) tokens, c the characters per token of the server's own
  tokenizer measured on the trace (`measure_tokenizer`: vLLM's `/tokenize`, 3.3-4.4 on Who&When
  logs with SmolLM2's), else CHARS_PER_TOKEN; a prompt adds its `[speaker] ` prefixes and its chat
  formatting (per message and per request, measured likewise, else MESSAGE_TOKENS and REPLY_TOKENS);
- a re-generated turn, as a completion and in every later prompt that holds it, is r + s (m - r)
  tokens: r its recorded length up to m, its max_tokens, and s the share of the cap a turn of this
  model is expected to use (`cap_share`: the setting SWARMSCOPE_OPENAI_CAP_SHARE, else measured on
  the model's finished jobs, else CAP_SHARE: a small model's turns often run to the cap whatever the
  recorded turn was). Its range is in `recorded_length` (every turn as long as recorded, s = 0) and
  `at_cap` (every turn at its cap, s = 1: no job sends more completion tokens);
- a speaker pick or verdict answers its planned name or verdict (constrained on vLLM).

A job on an LLM backend (one on LLM_QUEUE) needs the caller's `confirmed: true`
(`check_cost_confirmed`) and keeps the estimate it was confirmed with (`job_estimate`); a SwarmSim
job costs no tokens.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
from django.conf import settings

from swarmscope.interventions import Intervention, InterventionError, check_intervention
from webapp.traces.models import Trace
from webapp.traces.services import to_core_trace

from . import pilot
from .capabilities import describe_failure
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

log = logging.getLogger(__name__)

#: Characters per token of the cost estimate: OpenAI's rule of thumb that one token is about 4
#: characters of common English text (OpenAI Help Center, "What are tokens and how to count them?"),
#: the estimate used wherever a trace has no token counts (docs/architecture.md). No tokenizer is downloaded.
CHARS_PER_TOKEN = 4
#: The queue of backends that call an LLM; their jobs need `confirmed: true` (LLM backends run on
#: `rollouts-gpu`, SwarmSim on `rollouts-cpu`).
LLM_QUEUE = "rollouts-gpu"
#: The request kinds of a backend's plan (`trainer.rollout.llm_plan.PlannedRequest.kind`).
REQUEST_KINDS = ("turn", "speaker", "verdict")
#: Tokens of the chat formatting around each message: ChatML's `<|im_start|>{role}\n` and
#: `<|im_end|>\n` (SmolLM2, Qwen) are 5, as are Llama 3's header and `<|eot_id|>`; OpenAI's own
#: format counts 3 (OpenAI Cookbook, "How to count tokens with tiktoken").
MESSAGE_TOKENS = 5
#: Tokens that open the reply (ChatML's `<|im_start|>assistant\n`; 3 in the Cookbook too).
REPLY_TOKENS = 3
#: How prompts are counted where the server cannot count them (no vLLM `/tokenize`): the rule of
#: thumb and the chat formatting above; else the backend measures its tokenizer on the trace
#: (`measure_tokenizer`, trainer.rollout.llm_plan), the same keys.
RULE_OF_THUMB = {
    "chars_per_token": CHARS_PER_TOKEN,
    "message_tokens": MESSAGE_TOKENS,
    "request_tokens": REPLY_TOKENS,
    "request_tokens_no_system": REPLY_TOKENS,
}
#: The share of its cap beyond its recorded length a re-generated turn is expected to add where
#: neither the setting nor the model's finished jobs say (trainer.rollout.llm_plan.CAP_SHARE: its source).
CAP_SHARE = 0.35
#: The calibrated cap share (`measured_cap_share`) reads the latest CALIBRATION_JOBS finished jobs of
#: the model, and replaces CAP_SHARE once they re-generated CALIBRATION_TURNS turns between them.
CALIBRATION_JOBS = 20
CALIBRATION_TURNS = 16
#: The figures of an estimate a job keeps (`job_estimate`): what the job page compares its usage with,
#: and what `measured_cap_share` calibrates on.
JOB_ESTIMATE_KEYS = (
    "requests",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "recorded_length",
    "at_cap",
    "turn_completions",
    "turn_max_tokens",
    "model",
    "temperature",
    "tokenizer",
    "cap_share",
    "prompt_cap_share",
    "cap_share_source",
)


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


def _tokens(text: Any, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """ceil(characters / chars_per_token) of `text` (JSON for a non-string, 0 for None)."""
    if text is None:
        return 0
    if not isinstance(text, str):
        text = json.dumps(text, sort_keys=True)
    return math.ceil(len(text) / chars_per_token)


#: The lengths a re-generated turn is counted at: "expected" (the headline: `_turn_tokens`),
#: "recorded" (as long as its recorded content) and "cap" (its max_tokens: no completion is longer).
LENGTHS = ("expected", "recorded", "cap")


def _turn_tokens(recorded: int, max_tokens: int, length: str, share: float) -> int:
    """The tokens of a re-generated turn whose recorded answer is `recorded` tokens and whose limit
    is `max_tokens`, at `length` (LENGTHS): `max_tokens` at "cap"; r = recorded up to max_tokens at
    "recorded"; r + s (max_tokens - r) at "expected", s = `share` (the rule's `cap_share` for a
    completion, `prompt_cap_share` for a turn held in a later prompt: `cap_share`)."""
    recorded = min(recorded, max_tokens)
    if length == "cap":
        return max_tokens
    if length == "recorded":
        return recorded
    return round(recorded + share * (max_tokens - recorded))


def _prompt(request, rule: dict[str, float], turn_extra) -> tuple[int, ...]:
    """The prompt tokens of one planned request by `rule` (RULE_OF_THUMB's keys), at each of
    LENGTHS: Σ tok(part) over its `parts`, each re-generated turn in it (its `assumed` chain)
    counted as `_turn_tokens`, plus its `[speaker] ` prefixes and the chat formatting
    (message_tokens a part, and request_tokens, or request_tokens_no_system without a system
    message). `turn_extra(assumed)`: what a chain of re-generated turns adds to their recorded
    tokens at each length (memoised by the caller: later prompts share the chain)."""
    cpt = rule["chars_per_token"]
    opening = rule["request_tokens"] if request.system else rule["request_tokens_no_system"]
    base = (
        sum(math.ceil(len(part) / cpt) for part in request.parts)
        + math.ceil(request.prefix_chars / cpt)
        + rule["message_tokens"] * len(request.parts)
        + opening
    )
    extra = turn_extra(request.assumed)
    return tuple(int(base + e) for e in extra)


def _completion(request, rule: dict[str, float]) -> tuple[int, ...]:
    """The tokens of one completion of a planned request at each of LENGTHS: a re-generated turn
    (`_turn_tokens`), or a speaker name or verdict (tok(answer): constrained to the listed answers
    on vLLM)."""
    answer = _tokens(request.answer, rule["chars_per_token"])
    if request.kind == "turn":
        return tuple(_turn_tokens(answer, request.max_tokens, length, rule["cap_share"]) for length in LENGTHS)
    return (min(answer, request.max_tokens or answer),) * len(LENGTHS)


def _cost(requests: list, first_seed: int | None = None, rule: dict[str, float] | None = None) -> dict[str, int]:
    """Requests, prompt and completion tokens of planned requests (`PlannedRequest`s, the module
    docstring's rule; tokens by `rule`, RULE_OF_THUMB where None): a request's prompt (`_prompt`)
    is sent once whatever its `n`; its completions are n answers (`_completion`); the re-generated
    turns, in completions and in later prompts, at their expected length (`prompt_tokens`,
    `completion_tokens`), as long as recorded (`recorded_prompt_tokens`, ...) and at their cap
    (`cap_prompt_tokens`, ...). `turns`: the re-generated turns of the sample at `first_seed` (its
    "turn" requests; None: 0); `turn_completions` the turns all requests re-generate (Σ n);
    `<kind>_requests` per REQUEST_KINDS."""
    rule = rule or {**RULE_OF_THUMB, "cap_share": CAP_SHARE}
    held = rule.get("prompt_cap_share", rule["cap_share"])  # a re-generated turn inside a later prompt
    none = (0,) * len(LENGTHS)
    extras: dict[int, tuple[int, ...]] = {}  # by the chain's id: the chains are alive while `requests` is

    def turn_extra(assumed) -> tuple[int, ...]:
        """What the chain `assumed` adds over its recorded tokens at each length (the older part first)."""
        pending = []
        while assumed is not None and id(assumed) not in extras:
            pending.append(assumed)
            assumed = assumed.previous
        total = none if assumed is None else extras[id(assumed)]
        for turn in reversed(pending):
            recorded = _tokens(turn.text, rule["chars_per_token"])
            total = tuple(
                t + _turn_tokens(recorded, turn.max_tokens, length, held) - recorded
                for t, length in zip(total, LENGTHS)
            )
            extras[id(turn)] = total
        return total

    sizes: dict[int, tuple[int, ...]] = {}  # requests of one slot share their parts: each counted once
    answers: dict[tuple[int, str, int], tuple[int, ...]] = {}  # and their answer
    for r in requests:
        if id(r.parts) not in sizes:
            sizes[id(r.parts)] = _prompt(r, rule, turn_extra)
        if (id(r.answer), r.kind, r.max_tokens) not in answers:
            answers[id(r.answer), r.kind, r.max_tokens] = _completion(r, rule)
    cost = {
        "turns": sum(r.kind == "turn" and r.sample_seed == first_seed for r in requests),
        "requests": len(requests),
        "turn_completions": sum(r.n for r in requests if r.kind == "turn"),
    }
    for k, length in enumerate(LENGTHS):
        prefix = "" if length == "expected" else f"{length}_"
        cost[f"{prefix}prompt_tokens"] = sum(sizes[id(r.parts)][k] for r in requests)
        cost[f"{prefix}completion_tokens"] = sum(r.n * answers[id(r.answer), r.kind, r.max_tokens][k] for r in requests)
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


def _turn_cap(runner) -> int | None:
    """The max_tokens of a re-generated turn of `runner` (its client's), None where it has none."""
    cap = getattr(getattr(runner, "client", None), "max_tokens", None)
    return cap if isinstance(cap, int) else None


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


#: The counts of a cost beside `turns`, summed by `_totals`.
COUNTS = (
    "requests",
    "turn_completions",
    *(f"{prefix}{key}" for prefix in ("", "recorded_", "cap_") for key in ("prompt_tokens", "completion_tokens")),
    *(f"{kind}_requests" for kind in REQUEST_KINDS),
)


def _totals(parts: dict[str, dict[str, dict[str, int]]]) -> dict[str, Any]:
    """The sums of COUNTS over `parts` (part -> arm -> cost): the totals at the re-generated turns'
    expected length with `total_tokens`, and as {prompt_tokens, completion_tokens, total_tokens}
    at the recorded lengths (`recorded_length`) and at every turn's cap (`at_cap`)."""
    total: dict[str, Any] = {key: sum(cost[key] for part in parts.values() for cost in part.values()) for key in COUNTS}
    total["total_tokens"] = total["prompt_tokens"] + total["completion_tokens"]
    for prefix, name in (("recorded_", "recorded_length"), ("cap_", "at_cap")):
        figures = {key: total.pop(f"{prefix}{key}") for key in ("prompt_tokens", "completion_tokens")}
        total[name] = {**figures, "total_tokens": figures["prompt_tokens"] + figures["completion_tokens"]}
    return total


def _zero_cost() -> dict[str, int]:
    return {"turns": 0, **dict.fromkeys(COUNTS, 0)}


def _sampling(runner) -> tuple[str | None, float | None]:
    """The model and temperature of `runner`'s client (None where it has none)."""
    client = getattr(runner, "client", None)
    model, temperature = getattr(client, "model", None), getattr(client, "temperature", None)
    return (model if isinstance(model, str) else None), (
        float(temperature) if isinstance(temperature, (int, float)) else None
    )


def measured_cap_share(
    model: str, max_tokens: int, temperature: float | None, trace_id: int | None = None
) -> tuple[float, float | None, int, int] | None:
    """The cap shares the model's own finished jobs measured: ŝ = Σ (c - r) / Σ (a - r) over the
    latest CALIBRATION_JOBS done jobs (all their samples run; of trace `trace_id` where given) whose
    estimate names `model`, `max_tokens` a turn and `temperature`, c a job's completion tokens as
    the server counted them, r and a its estimate's completion tokens with every turn as long as
    recorded and at its cap (the ratio estimator: turns weighted by the room their cap leaves),
    clamped to [0, 1]; ŝ_p the same of prompt tokens (the re-generated turns later prompts hold:
    which turns run long matters there, since an early turn is in more prompts; bench/RESULTS.md,
    issue 29: 0.92 of the room in prompts against 0.77 in completions on one log, 0.19 against 0.33
    on another), None where no job's prompts held one. Returns (ŝ, ŝ_p, jobs, re-generated turns),
    or None before they hold CALIBRATION_TURNS turns."""
    jobs = CounterfactualJob.objects.filter(status=CounterfactualJob.DONE, estimate__model=model)
    if trace_id is not None:
        jobs = jobs.filter(trace_id=trace_id)
    jobs = (
        jobs.exclude(usage={})
        .order_by("-finished_at")
        .only("estimate", "usage", "done_count", "n_samples")[: CALIBRATION_JOBS * 4]
    )
    finished = (
        (job.estimate, job.usage)
        for job in jobs
        if job.estimate.get("turn_max_tokens") == max_tokens
        and job.estimate.get("temperature") == temperature
        # an epsilon job stopped early: its estimate is for more samples than it ran
        and job.done_count == job.n_samples
        and isinstance(job.usage.get("completion_tokens"), int)
    )
    return cap_share_of(finished)


def cap_share_of(
    finished: Iterable[tuple[dict[str, Any], dict[str, Any]]], min_turns: int = CALIBRATION_TURNS
) -> tuple[float, float | None, int, int] | None:
    """`measured_cap_share`'s ratio estimator over (estimate, usage) of finished jobs, newest first
    (the first CALIBRATION_JOBS count): (ŝ, ŝ_p, jobs, re-generated turns), or None before they
    hold `min_turns` turns."""
    used = sent_room = room = turns = prompt_sent_room = prompt_room = 0
    for e, usage in finished:
        recorded, at_cap = e["recorded_length"]["completion_tokens"], e["at_cap"]["completion_tokens"]
        sent_room += usage["completion_tokens"] - recorded
        room += at_cap - recorded
        prompt_recorded = e["recorded_length"]["prompt_tokens"]
        prompt_sent_room += usage.get("prompt_tokens", 0) - prompt_recorded
        prompt_room += e["at_cap"]["prompt_tokens"] - prompt_recorded
        turns += e["turn_completions"]
        used += 1
        if used == CALIBRATION_JOBS:
            break
    if turns < min_turns or room <= 0:
        return None
    prompt_share = min(1.0, max(0.0, prompt_sent_room / prompt_room)) if prompt_room > 0 else None
    return min(1.0, max(0.0, sent_room / room)), prompt_share, used, turns


def cap_share(
    runner, trace_id: int | None = None, pilot_found: dict[str, Any] | None = None
) -> tuple[float, float, str]:
    """The share of its cap a re-generated turn of `runner`'s model is expected to use beyond its
    recorded length, in completions and in the later prompts that hold it, and where they come
    from: the backend's setting (`runner.cap_share()`, SWARMSCOPE_OPENAI_CAP_SHARE: both), else the
    model's finished jobs (`measured_cap_share`; the prompts' share is the completions' where
    their prompts held no re-generated turn) on trace `trace_id`, else the job's done pilot
    (`pilot_found`, webapp.counterfactuals.pilot), else the model's jobs on any trace, else
    CAP_SHARE ("default"). The trace's own jobs and pilot come first: how far a model's turns run
    differs from trace to trace (bench/RESULTS.md, issue 29: 77 % of the room on one Who&When
    log, 33 % on a hand-made chat)."""
    if (share := _share_setting(runner)) is not None:
        return share, share, "setting SWARMSCOPE_OPENAI_CAP_SHARE"
    model, temperature = _sampling(runner)
    cap = _turn_cap(runner)
    if model and cap and trace_id is not None:
        if (measured := measured_cap_share(model, cap, temperature, trace_id)) is not None:
            return _measured(measured, "on this trace")
    if pilot_found and pilot_found["status"] == "done":
        measured = cap_share_of([(pilot_found["plan"], pilot_found["usage"])], min_turns=1)
        if measured is not None:
            share, held, _, _ = measured
            return share, share if held is None else held, "measured by this job's pilot"
    if model and cap and (measured := measured_cap_share(model, cap, temperature)) is not None:
        return _measured(measured, f"of {model}")
    return CAP_SHARE, CAP_SHARE, "default"


def _share_setting(runner) -> float | None:
    """The backend's cap share setting (`runner.cap_share()`), None where it has none."""
    setting = getattr(runner, "cap_share", None)
    return setting() if callable(setting) else None


def _measured(measured: tuple[float, float | None, int, int], where: str) -> tuple[float, float, str]:
    """`cap_share`'s answer from `measured_cap_share`'s."""
    share, held, jobs, turns = measured
    source = f"measured on {jobs} finished job{'s' if jobs != 1 else ''} {where} ({turns:,} turns)"
    return share, share if held is None else held, source


def needs_pilot(runner, trace_id: int) -> bool:
    """Whether a job of `runner` on trace `trace_id` is estimated better with a pilot: no cap share
    setting, no finished job of its model (at its cap and temperature) on the trace, and none queued
    or running there (it will say soon, and would take no pilot)."""
    model, temperature = _sampling(runner)
    cap = _turn_cap(runner)
    if _share_setting(runner) is not None or not model or not cap:
        return False
    jobs = CounterfactualJob.objects.filter(trace_id=trace_id, estimate__model=model)
    if jobs.filter(status__in=CounterfactualJob.ACTIVE).exists():
        return False
    return measured_cap_share(model, cap, temperature, trace_id) is None


def token_rule(
    runner, trace_id: int | None = None, pilot_found: dict[str, Any] | None = None
) -> tuple[dict[str, Any], str]:
    """How the estimate counts `runner`'s prompts, and where that comes from: the server's own
    tokenizer and chat template measured on the trace (`measure_tokenizer`: "server"), else
    RULE_OF_THUMB ("rule of thumb"); with the turns' `cap_share`, `prompt_cap_share` and their
    `cap_share_source` (`cap_share`: trace `trace_id`'s jobs, then the pilot `pilot_found`, first)."""
    measure = getattr(runner, "measure_tokenizer", None)
    measured = measure() if callable(measure) else None
    rule, source = (measured, "server") if measured else (RULE_OF_THUMB, "rule of thumb")
    share, held, share_source = cap_share(runner, trace_id, pilot_found)
    return {**rule, "cap_share": share, "prompt_cap_share": held, "cap_share_source": share_source}, source


def job_estimate(estimate: dict[str, Any]) -> dict[str, Any]:
    """The figures of an estimate (`estimate_cost`, `estimate_attribution_cost`) a job keeps
    (JOB_ESTIMATE_KEYS); {} for one that needs no confirmation (SwarmSim)."""
    if not estimate.get("llm"):
        return {}
    return {key: estimate.get(key) for key in JOB_ESTIMATE_KEYS}


def plan_cost(
    runner, intervention: Intervention, n: int, check: Any = None, rule: dict[str, float] | None = None
) -> dict[str, dict[str, dict[str, int]]]:
    """The cost (`_cost`) of a counterfactual job of `n` paired samples on `runner` (a backend
    instance with `plan_paired`), as the job sends it: {arms, branch: {control, intervention:
    cost}}, the samples' chunks of SWARMSCOPE_ROLLOUT_CHUNK then the branch re-run of sample 0.
    `check(requests)`, when given, is called on every chunk's planned requests (the context check);
    tokens by `rule` (`token_rule`; RULE_OF_THUMB where None).
    Counted chunk by chunk, not kept: a long trace's plan has tens of thousands of requests."""
    arms = ("control", "intervention")
    parts = {part: {arm: _zero_cost() for arm in arms} for part in ("arms", "branch")}
    for start, stop in _chunks(n):
        for arm, requests in runner.plan_paired(intervention, np.arange(start, stop)).items():
            if check is not None:
                check(requests)
            _add_cost(parts["arms"][arm], _cost(requests, 0, rule))
    for arm, requests in runner.plan_paired(intervention, np.arange(1)).items():
        _add_cost(parts["branch"][arm], _cost(requests, 0, rule))
    return parts


def pilot_plan(runner, intervention: Intervention, samples: int, rule: dict[str, Any]) -> dict[str, Any]:
    """The planned tokens of a cost pilot (webapp.counterfactuals.pilot): one `paired` call of
    `samples` samples, no branch re-run: {recorded_length, at_cap: {prompt_tokens,
    completion_tokens, total_tokens}, turn_completions}, what `cap_share_of` reads."""
    planned = runner.plan_paired(intervention, np.arange(samples))
    totals = _totals({"arms": {arm: _cost(requests, 0, rule) for arm, requests in planned.items()}})
    return {key: totals[key] for key in ("recorded_length", "at_cap", "turn_completions")}


def measure_pilot(runner, intervention: Intervention, seed: int, samples: int) -> dict[str, Any]:
    """A done cost pilot's state (webapp.counterfactuals.pilot): `samples` paired samples of
    `intervention` at seeds seed .. seed + samples - 1 sent by `runner` (a fresh backend: its usage
    is the pilot's), with their plan (`pilot_plan`, at the server's tokenizer where it has one).
    Raises what `paired` raises."""
    started = time.time()
    rule, _ = token_rule(runner)
    plan = pilot_plan(runner, intervention, samples, rule)
    pairs = runner.paired(intervention, seed + np.arange(samples))
    return {
        "status": "done",
        "samples": samples,
        "started": started,
        "seconds": round(time.time() - started, 1),
        "usage": runner.usage(),
        "plan": plan,
        "control": [float(r) for r in pairs.control],
        "treated": [float(r) for r in pairs.treated],
    }


def do_run_pilot(key: str, trace_id: int, backend: str, intervention: dict, seed: int) -> dict[str, Any]:
    """Run the cost pilot under `key` (the task's body): samples 0 .. P - 1 of the job on a fresh
    backend (`measure_pilot`), its state stored (`pilot.store`); a failure (the server, a trace
    gone) is stored as "failed" with its reason, never raised. Returns the stored state."""
    started = time.time()
    count = pilot.samples()
    pilot.store(key, {"status": "running", "samples": count, "started": started})
    try:
        runner = get_backend_class(backend).from_trace(to_core_trace(Trace.objects.get(pk=trace_id)))
        found = measure_pilot(runner, Intervention.from_dict(intervention), seed, count)
    except Exception as exc:  # noqa: BLE001 - the estimate says why and falls back; the worker goes on
        log.warning("cost pilot %s failed", key, exc_info=True)
        found = {"status": "failed", "samples": count, "started": started, "reason": describe_failure(exc)}
    return pilot.store(key, found)


def estimate_cost(
    trace: Trace,
    intervention: Intervention | dict,
    n: int,
    backend: str = "sim",
    epsilon: float | None = None,
    seed: int = 0,
    pilot_mode: str | None = None,
) -> dict[str, Any]:
    """The estimated LLM cost of a counterfactual job of `n` paired samples, from the trace's
    sizes: the requests the job's backend will send, as the backend itself plans them
    (`plan_paired`, trainer.rollout.openai; nothing is sent), their tokens by the module
    docstring's rules (`token_rule`, `_cost`).

    The plan follows the job: one `paired` call per chunk of SWARMSCOPE_ROLLOUT_CHUNK samples
    (each arm's first re-generated turn is one request with `n` = the chunk's samples: its prompt
    is sent once per chunk; every later turn one request per sample), and sample 0 re-run once in
    both arms for its branch trace (`branch`). It assumes each re-generated turn answers with the
    expected length of the module docstring and, where the trace's LLM orchestrator picks speakers, that it
    picks the recorded speaker (one "who speaks next" request per sample before every re-generated
    turn after the fork turn, its answer a name); under verifier scoring one verdict request per
    sample and arm (answer `{"correct": true}`). A request's prompt counts the texts it is made
    of — system prompt, the history's contents, the question or verifier prompt — with their
    `[speaker] ` prefixes and chat formatting. With `epsilon`, n is the cap: an upper
    bound. A non-LLM backend (SwarmSim) costs no tokens: zeros and `confirmation_required` False.
    Every planned prompt is checked against the model's context before the job starts
    (`check_context`: the server's max_model_len from `/v1/models`, where it reports one).

    Returns {backend, llm, confirmation_required, n, fork_event, speaker_order, scoring, turns,
    requests, prompt_tokens, completion_tokens, total_tokens, recorded_length and at_cap:
    {prompt_tokens, completion_tokens, total_tokens}, turn_completions, turn_requests,
    speaker_requests, verdict_requests, turn_max_tokens, model, temperature (the client's: None
    off an LLM backend), chars_per_token, tokenizer ("server" | "rule of thumb"), cap_share,
    prompt_cap_share and cap_share_source (`cap_share`), pilot, arms and branch: {control, intervention: {turns,
    requests, turn_completions, prompt_tokens, completion_tokens, recorded_prompt_tokens, ..., cap_prompt_tokens,
    ..., turn_requests, speaker_requests, verdict_requests}}}; `turns` counts both arms' re-generated
    turns of one sample. Raises JobRequestError naming the field for a bad n or epsilon, an unknown backend, an
    intervention that does not fit the trace, a trace the backend cannot re-run, or a prompt over
    the model's context (field `intervention`, the message naming the agent and turn).

    `pilot_mode` "start" (the estimate endpoint, for a caller who may start jobs) starts the job's
    cost pilot where `needs_pilot` and P < n (webapp.counterfactuals.pilot: samples 0 .. P - 1 at
    `seed`), "use" only reads a done one (the job request), None neither; the shares come from a
    done pilot (`cap_share`), and `pilot` in the answer is its state (`pilot.public`; None where there is none)."""
    n = check_int(n, "n", 2, MAX_SAMPLES)
    seed = check_int(seed, "seed", 0, 2**62)
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
            "turn_max_tokens": None,
            "model": None,
            "temperature": None,
            "chars_per_token": CHARS_PER_TOKEN,
            "tokenizer": None,
            "cap_share": None,
            "prompt_cap_share": None,
            "cap_share_source": None,
            "pilot": None,
            **parts,
        }
    runner = _planner(backend, core_trace)
    try:
        runner.check(intervention)
    except InterventionError as exc:
        raise JobRequestError(exc.message, f"intervention.{exc.field}") from exc
    found = None
    if pilot_mode and 0 < pilot.samples() < n and needs_pilot(runner, trace.pk):
        key = pilot.pilot_key(trace, len(events), backend, runner.environment(), intervention, seed)
        if pilot_mode == "start":
            found = pilot.start(key, trace, backend, get_backend_class(backend).queue, intervention, seed)
        else:
            found = pilot.state(key)
    rule, tokenizer = token_rule(runner, trace.pk, found)
    model, temperature = _sampling(runner)
    parts = plan_cost(runner, intervention, n, lambda requests: _check_context(runner, requests, backend), rule)
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
        "turn_max_tokens": _turn_cap(runner),
        "model": model,
        "temperature": temperature,
        "chars_per_token": rule["chars_per_token"],
        "tokenizer": tokenizer,
        "cap_share": rule["cap_share"],
        "prompt_cap_share": rule["prompt_cap_share"],
        "cap_share_source": rule["cap_share_source"],
        "pilot": pilot.public(found),
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
    scoring, requests, prompt_tokens, completion_tokens, total_tokens, recorded_length, at_cap,
    turn_completions, turn_requests, speaker_requests, verdict_requests, turn_max_tokens,
    model, temperature, chars_per_token, tokenizer, cap_share, prompt_cap_share, cap_share_source}. Raises
    JobRequestError naming the field."""
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
        "turn_max_tokens": _turn_cap(runner) if llm else None,
        "model": None,
        "temperature": None,
        "chars_per_token": CHARS_PER_TOKEN,
        "tokenizer": None,
        "cap_share": None,
        "prompt_cap_share": None,
        "cap_share_source": None,
    }
    cost = _zero_cost()
    if llm:
        rule, tokenizer = token_rule(runner, trace.pk)
        model, temperature = _sampling(runner)
        estimate.update(
            model=model,
            temperature=temperature,
            chars_per_token=rule["chars_per_token"],
            tokenizer=tokenizer,
            cap_share=rule["cap_share"],
            prompt_cap_share=rule["prompt_cap_share"],
            cap_share_source=rule["cap_share_source"],
        )
        if not hasattr(runner, "plan_call"):
            raise JobRequestError(
                f"the {backend} backend calls an LLM but cannot plan its requests (no plan_call): "
                "its cost cannot be estimated",
                "backend",
            )

        def planning_rollout(intervention: Intervention | None, seeds: np.ndarray) -> np.ndarray:
            requests = runner.plan_call(intervention, seeds)
            _check_context(runner, requests, backend)
            _add_cost(cost, _cost(requests, None, rule))  # counted, not kept
            return np.zeros(len(seeds))

        for start, stop in _chunks(n):
            play_attribution_chunk(planning_rollout, method, names, players, n, seed, list(range(start, stop)))
        estimate.update(speaker_order=getattr(runner, "speaker_order", None), scoring=getattr(runner, "scoring", None))
    estimate.update(_totals({"calls": {"all": cost}}))
    return estimate
