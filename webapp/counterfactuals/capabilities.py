"""What each rollout backend can run on a trace, and why not: the trace page's honest actions.

`backend_capabilities(trace)` answers, for every backend of SWARMSCOPE_ROLLOUT_BACKENDS (and the
LLM backend that is offered once an endpoint is configured, while it is not), whether it can
re-run the trace, and otherwise the reason in words, the setting that would change it and the
README section that says how (`DOCS_URL`, served by the app: `help_view`). `action_capabilities`
sums that up for the page's two actions, *What if removed?* and *Attribute this trace*: enabled
where some backend can run them, otherwise the reasons. The page reads it from `data-capabilities`
(the `counterfactuals` template tags), scripts from `GET /api/traces/<id>/counterfactuals/capabilities/`.

The messages of a trace (`message_events`: the events a What-if removes and an attribution credits,
one definition for the dialog, the attribution's players and the API) are the events of the
backend's message types (`player_types`): SwarmSim edits its `message` events only (its
delegations and returns are the simulator's own bookkeeping); an LLM backend re-prompts after any
message-like event (swarmscope.interventions.MESSAGE_LIKE_TYPES: message, delegate, return).

`describe_failure(exc)` words a job's failure for the people who read it (the stored `error`):
known exceptions by name, with their own (worded) message; anything else "the backend failed:
<class name>; see the worker log", the traceback going to the log only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import markdown
import nh3
from django.conf import settings
from django.http import Http404, HttpRequest
from django.shortcuts import render
from django.utils.module_loading import import_string
from django.utils.safestring import mark_safe

from swarmscope.interventions import MESSAGE_LIKE_TYPES, InterventionError
from webapp.traces.models import Trace
from webapp.traces.services import is_live, to_core_trace

#: The README section the disabled actions link to, as the app serves it (`help_view`).
README_ANCHOR = "what-if-needs-a-backend"
DOCS_URL = f"/help/what-if/#{README_ANCHOR}"
#: The LLM backend names the settings add once SWARMSCOPE_OPENAI_BASE_URL is set (webapp.config.settings).
LLM_BACKENDS = ("openai", "openai-verifier")
#: The settings an LLM backend needs.
ENDPOINT_SETTING, MODEL_SETTING = "SWARMSCOPE_OPENAI_BASE_URL", "SWARMSCOPE_OPENAI_MODEL"
#: The message types of a backend class (dotted path) that does not say them itself (`message_types`).
PLAYER_TYPES = {"trainer.rollout.sim.SimRollout": ("message",)}
#: The SwarmSim backend, whose answer starts with the trace's attributes.
SIM_PATH = "trainer.rollout.sim.SimRollout"
#: What a SwarmSim trace records to be re-simulated (trainer.sim.env.replay_trace).
SIM_ATTRIBUTES = ("task", "action_list", "sim_config", "seed")
#: The LLM queue (costs.LLM_QUEUE; repeated here so that costs may import this module).
LLM_QUEUE = "rollouts-gpu"
CHARS_PER_TOKEN = 4


def _path(backend_class) -> str:
    return f"{backend_class.__module__}.{backend_class.__qualname__}"


def player_types(backend_class) -> tuple[str, ...]:
    """The event types `backend_class` removes as messages: its `message_types`, else PLAYER_TYPES
    by its dotted path, else every message-like type."""
    explicit = getattr(backend_class, "message_types", None)
    if explicit:
        return tuple(explicit)
    return PLAYER_TYPES.get(_path(backend_class), MESSAGE_LIKE_TYPES)


def message_events(core_trace, backend_class) -> list:
    """The messages of `core_trace` for `backend_class` (module docstring), in trace order: the
    What-if dialog's targets and the players of a `messages` attribution."""
    types = player_types(backend_class)
    return [event for event in core_trace.events if event.type in types]


def message_agents(messages: list) -> list[str]:
    """The agents that send `messages`, in order of their first: the players of an `agents` attribution."""
    return list(dict.fromkeys(event.agent for event in messages))


def _is_llm(backend_class) -> bool:
    return getattr(backend_class, "queue", None) == LLM_QUEUE


def _unavailable(name: str, llm: bool, reason: str, setting: str | None = None, **extra) -> dict[str, Any]:
    return {
        "backend": name,
        "llm": llm,
        "available": False,
        "reason": reason,
        "setting": setting,
        "docs": DOCS_URL,
        "message_types": [],
        "messages": 0,
        "agents": 0,
        "what_if": {"available": False, "reason": reason},
        "attribution": {"available": False, "reason": reason},
        "notes": [],
        "scoring": None,
        **extra,
    }


def _endpoint_missing() -> tuple[str, str] | None:
    """(reason, setting) when no LLM endpoint is configured, else None."""
    # The backend reads the environment itself (trainer.rollout.chat.ChatClient.from_env); the settings mirror it.
    if not (settings.SWARMSCOPE_OPENAI_BASE_URL or os.environ.get(ENDPOINT_SETTING)):
        return (
            "No LLM endpoint is configured: set SWARMSCOPE_OPENAI_BASE_URL (an OpenAI-compatible server "
            "such as vllm serve) and SWARMSCOPE_OPENAI_MODEL, then restart the app and a rollouts-gpu worker.",
            ENDPOINT_SETTING,
        )
    if not (settings.SWARMSCOPE_OPENAI_MODEL or os.environ.get(MODEL_SETTING)):
        return (
            "No LLM model is configured: set SWARMSCOPE_OPENAI_MODEL to the model the server serves.",
            MODEL_SETTING,
        )
    return None


def _sim_reason(trace: Trace) -> str | None:
    """Why the sim backend cannot re-run `trace` from its attributes alone, else None."""
    attributes = trace.attributes if isinstance(trace.attributes, dict) else {}
    if not all(key in attributes for key in SIM_ATTRIBUTES):
        return (
            "The sim backend cannot re-run this trace: it is not a SwarmSim episode (sim re-simulates only "
            "traces that record their SwarmSim task, actions, environment config and seed; stream some with "
            "python -m trainer.sim.stream --level pivot-12)."
        )
    return None


def _build_reason(trace: Trace, name: str, llm: bool, exc: ValueError) -> tuple[str, str | None]:
    """A backend's `from_trace` refusal in words, and the setting that changes it. The sim backend
    refuses a trace still streaming (`is_live`: events are still arriving, so the re-simulated
    episode has events the trace has not yet), which is said as that."""
    trace_attributes = trace.attributes if isinstance(trace.attributes, dict) else {}
    if not llm and is_live(trace):
        return (
            f"The {name} backend cannot re-run this trace yet: the trace is still streaming; counterfactuals "
            "open once its stream ends (reload the page then).",
            None,
        )
    if not llm:
        return (
            "The sim backend cannot re-run this trace: its recorded SwarmSim task, actions, config and seed "
            "do not reproduce the trace's events.",
            None,
        )
    text = str(exc)
    if "ground_truth" not in trace_attributes and "exact match" in text:
        return (
            "The trace has no ground truth to score outcomes by exact match: use the openai-verifier backend, "
            "or set SWARMSCOPE_OPENAI_SCORING=verifier.",
            "SWARMSCOPE_OPENAI_SCORING",
        )
    if "is not set" in text:
        setting = MODEL_SETTING if MODEL_SETTING in text else ENDPOINT_SETTING
        return f"The {name} backend is not configured: set {setting}.", setting
    return f"The {name} backend cannot re-run this trace with its settings: {words(text)}.", None


def words(text: str, limit: int = 300) -> str:
    """`text` without reprs of exceptions (`KeyError('task')`), trimmed to `limit` characters."""
    text = re.sub(r"\b[A-Z]\w*(Error|Exception)\((.*?)\)", r"\2", text).strip().rstrip(".")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _content_chars(value: Any) -> int:
    if value is None:
        return 0
    return len(value) if isinstance(value, str) else len(str(value))


def backend_capability(trace: Trace, name: str, core_trace=None) -> dict[str, Any]:
    """Whether backend `name` can run What-if and attribution jobs on `trace` (module docstring):
    {backend, llm, available, reason ("" when available), setting (the setting to change, or
    None), docs (README section), message_types, messages, agents (counts), what_if and
    attribution ({available, reason}), notes (what the trace lacks that changes how it runs:
    verifier scoring without ground truth, a history over the model's context), scoring}.
    `available`: the backend can re-run the trace at all (What-if on agents, say, may still run
    where no message is removable). `core_trace`: `to_core_trace(trace)`, built here when needed
    and not given."""
    path = settings.SWARMSCOPE_ROLLOUT_BACKENDS.get(name)
    if path is None:
        if name in LLM_BACKENDS:
            missing = _endpoint_missing() or (f"The {name} backend is not offered by this app's settings.", None)
            return _unavailable(name, True, *missing)
        return _unavailable(name, False, f"There is no backend named {name!r}.")
    backend_class = import_string(path)
    llm = _is_llm(backend_class)
    attributes = trace.attributes if isinstance(trace.attributes, dict) else {}
    if llm:
        missing = _endpoint_missing()
        if missing:
            return _unavailable(name, True, *missing)
    elif path == SIM_PATH:
        reason = _sim_reason(trace)
        if reason:
            return _unavailable(name, False, reason)
    core_trace = core_trace if core_trace is not None else to_core_trace(trace)
    try:
        runner = backend_class.from_trace(core_trace)
    except ValueError as exc:
        return _unavailable(name, llm, *_build_reason(trace, name, llm, exc))
    messages = message_events(core_trace, backend_class)
    agents = message_agents(messages)
    notes: list[str] = []
    scoring = getattr(runner, "scoring", None)
    if llm:
        speakers = getattr(runner, "speakers", None)
        if speakers is not None and not speakers:
            return _unavailable(
                name,
                True,
                "No agent of this trace has turns an LLM wrote (only tool results, human turns or replayed "
                "events): there is nobody to re-prompt.",
            )
        if messages and not any(_content_chars(e.content) for e in messages):
            return _unavailable(
                name,
                True,
                "The trace's messages record no content: an LLM re-rollout re-prompts each agent with the "
                "recorded history.",
            )
        if scoring == "verifier" and "ground_truth" not in attributes:
            notes.append(
                "No ground truth: outcomes are scored by a verifier prompt on the same endpoint, not by exact match."
            )
        limit = getattr(getattr(runner, "client", None), "max_model_len", None)
        history = sum(_content_chars(e.content) for e in core_trace.events) // CHARS_PER_TOKEN
        if limit and history > limit:
            notes.append(
                f"The whole history is about {history:,} tokens, over the model's context of {limit:,} "
                "(SWARMSCOPE_OPENAI_MAX_MODEL_LEN): fork late in the trace or set SWARMSCOPE_OPENAI_MAX_TURNS; "
                "the estimate checks every prompt before a job starts."
            )
    types = list(player_types(backend_class))
    what_if = {"available": bool(messages), "reason": ""}
    if not messages:
        what_if["reason"] = f"The trace has no messages ({', '.join(types)} events) for the {name} backend to remove."
    attribution = {"available": len(messages) >= 2 or len(agents) >= 2, "reason": ""}
    if not attribution["available"]:
        attribution["reason"] = (
            f"Attribution needs at least 2 messages or 2 agents that send them; for the {name} backend this "
            f"trace has {len(messages)} message{'s' if len(messages) != 1 else ''} "
            f"({', '.join(types)} events)."
        )
    return {
        "backend": name,
        "llm": llm,
        "available": True,
        "reason": "",
        "setting": None,
        "docs": DOCS_URL,
        "message_types": types,
        "messages": len(messages),
        "agents": len(agents),
        "what_if": what_if,
        "attribution": attribution,
        "notes": notes,
        "scoring": scoring,
    }


def backend_capabilities(trace: Trace) -> dict[str, dict[str, Any]]:
    """`backend_capability` of every configured backend, and of the LLM backend while none is
    configured (so the page can say what would enable it): {name: capability}, sim first."""
    names = list(settings.SWARMSCOPE_ROLLOUT_BACKENDS)
    if not any(n in LLM_BACKENDS for n in names):
        names.append(LLM_BACKENDS[0])
    names.sort(key=lambda n: (n != "sim", n))
    core_trace = None
    result = {}
    for name in names:
        if core_trace is None and _needs_core(trace, name):
            core_trace = to_core_trace(trace)
        result[name] = backend_capability(trace, name, core_trace)
    return result


def _needs_core(trace: Trace, name: str) -> bool:
    """Whether `backend_capability` will look at the events (not when the answer is in the settings
    or the trace's attributes): a large trace is not loaded for nothing."""
    path = settings.SWARMSCOPE_ROLLOUT_BACKENDS.get(name)
    if path is None:
        return False
    if path == SIM_PATH:
        return _sim_reason(trace) is None
    return not (_is_llm(import_string(path)) and _endpoint_missing())


def action_capabilities(trace: Trace) -> dict[str, Any]:
    """The page's two actions on `trace`: {backends: `backend_capabilities`, what_if, attribution:
    {available, reason, setting, docs, backends (the names that can run it)}, docs}. An action is
    available where some backend can run it; otherwise its reason names every backend's."""
    backends = backend_capabilities(trace)
    summary: dict[str, Any] = {"backends": backends, "docs": DOCS_URL}
    for action in ("what_if", "attribution"):
        able = [name for name, cap in backends.items() if cap[action]["available"]]
        if able:
            summary[action] = {"available": True, "reason": "", "setting": None, "docs": DOCS_URL, "backends": able}
            continue
        what = "What-if" if action == "what_if" else "Attribution"
        reasons = " ".join(f"{name}: {cap[action]['reason']}" for name, cap in backends.items())
        setting = next((cap["setting"] for cap in backends.values() if cap["setting"]), None)
        summary[action] = {
            "available": False,
            "reason": f"{what} needs a rollout backend that can re-run this trace, and none can here. {reasons}",
            "setting": setting,
            "docs": DOCS_URL,
            "backends": [],
        }
    return summary


def refusal(trace: Trace, backend: str, core_trace=None) -> str | None:
    """Why backend `backend` (a configured one) cannot re-run `trace` at all, in words, or None
    when it can: what a job request answers before it looks at the intervention."""
    capability = backend_capability(trace, backend, core_trace)
    return None if capability["available"] else capability["reason"]


# --- job failures in words ------------------------------------------------------------------------

#: Exception class name -> how a failed job says it (the exception's own message follows).
KNOWN_FAILURES = {
    "PromptTooLongError": "a prompt was too long for the model's context",
    "VerdictError": "the verifier did not answer with a verdict",
    "OpenAIError": "the LLM server failed",
    "InterventionError": "the intervention does not fit this trace",
    "TimeoutError": "the LLM server did not answer in time",
    "ConnectionRefusedError": "the LLM server refused the connection (is it running?)",
    "ConnectionError": "the LLM server could not be reached",
    "JudgeParseError": "the verifier's answer could not be read",
}


def describe_failure(exc: BaseException) -> str:
    """A failed job's `error` for its readers: a known exception (KNOWN_FAILURES, by its class or
    a base class's name) as its words and its own message; a refusal to re-run the trace as that;
    anything else "the backend failed: <class name>; see the worker log"."""
    for cls in type(exc).__mro__:
        phrase = KNOWN_FAILURES.get(cls.__name__)
        if phrase:
            detail = words(exc.message if isinstance(exc, InterventionError) else str(exc))
            return f"{phrase[0].upper()}{phrase[1:]}" + (f": {detail}." if detail else ".")
    if type(exc) is ValueError:
        return f"The backend cannot re-run this trace: {words(str(exc))}."
    return f"The backend failed: {type(exc).__name__}; see the worker log."


# --- the README section, served --------------------------------------------------------------------


def readme_section(title: str = "What-if needs a backend") -> str:
    """The text of the README's section `title` (its `## ` heading to the next), "" when absent."""
    try:
        text = (Path(settings.BASE_DIR) / "README.md").read_text(encoding="utf-8")
    except OSError:
        return ""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    return match.group(1).strip() if match else ""


def help_view(request: HttpRequest):
    """`/help/what-if/`: the README's "What-if needs a backend" section, where the page's disabled
    actions link (anyone may read it), its Markdown rendered (Python-Markdown) and sanitised (nh3)."""
    section = readme_section()
    if not section:
        raise Http404("the README has no such section")
    html = nh3.clean(markdown.markdown(section, output_format="html"), link_rel="noopener noreferrer")
    return render(
        request,
        "counterfactuals/help_what_if.html",
        {
            "body": mark_safe(html),  # noqa: S308 - sanitised by nh3 just above
            "anchor": README_ANCHOR,
            "backends": sorted(settings.SWARMSCOPE_ROLLOUT_BACKENDS),
        },
    )
