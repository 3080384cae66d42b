"""BeeAI's emitter-event spans, folded into the runs they describe before the mapping reads them.

A BeeAI run (an agent's, a tool's, a chat model's) reports its progress as events of its emitter,
each named by a path `<namespace>.<event>` (namespaces `agent.react`, `tool.search.wikipedia`,
`backend.openai.chat`, ...; events `start`, `update`, `partial_update`, `success`, `error`,
`retry`, `finish`; beeai-framework `emitter`). openinference-instrumentation-beeai up to 0.1.6
records one span per event: attributes `target` (the path) and `name` (the event), the span named
`<path>-<N>`, with the OpenInference kind of the run that emitted it (AGENT, TOOL, LLM), parented
to the latest event of the run that started it, all under one span for the instrumented run
(`beeai-framework-main`: its kind, `source` the class of the agent, `beeai.version`). Later versions
record a span per run (events as span events) and a child span for an event they keep apart
(`retry`, `error`, ...: the span named by the event, the path in `metadata.path`, the parent's kind).

The rules (docs/otel-mapping.md, "Agent identity"), each about the spans a run's events make:

- an event span is no agent and no call of its own: it records a moment of its run;
- the events of one tool or chat-model run (per namespace, in time order: `start` to `finish`)
  are that one call: one span with the `start` event's id, parent and start, ending at the run's
  last event (its start: 0.1.6 ends every event span when it writes the tree, after the run);
  input the `start` event's (a tool's arguments: `tool.parameters`), output the
  `success` event's (a streamed chat output lists a message per chunk: joined), error the
  `error` event's; a tool is named as the agent's event above it names it (`tool.name` of the ReAct
  `update` that called it), else by the namespace's last part;
- an agent's own event spans (`start`, `update`, `partial_update`, `success`: kind AGENT) are
  steps of the agent whose run span is above them: their kind is dropped, their content kept;
- a ReAct `update` event holding a tool's name, arguments and output (`tool.name`,
  `tool.parameters`, `output.value`) records a tool call of its iteration: where the iteration has
  no tool events of its own (the instrumentation drops the events of a run it parented to a
  `partial_update` it discarded), the call is made from it (from the first `update` with those
  arguments to it);
- the instrumented run's span names its agent by `source` (the agent's class) where nothing else
  names it.

Spans of any other instrumentation pass through unchanged (the same objects).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import replace
from typing import Any

from . import keys
from .span import Span, canonical_order

#: openinference-instrumentation-beeai <= 0.1.6: the event's path and name.
TARGET, EVENT = "target", "name"
#: Later versions: an event span's path (the event meta, unpacked under OpenInference `metadata`).
META_PATH = "metadata.path"
#: The instrumented run's span (<= 0.1.6): the instance's class, and the framework version.
SOURCE, VERSION = "source", "beeai.version"
#: Arguments of a tool call as BeeAI's tool `start` event (and the ReAct `update`) carry them.
TOOL_PARAMETERS = "tool.parameters"
START, SUCCESS, ERROR, FINISH, UPDATE = "start", "success", "error", "finish", "update"
#: Events of a run in the order they come at one instant.
EVENT_ORDER = {START: 0, FINISH: 2}
CALL_KINDS = (keys.OI_TOOL, keys.OI_LLM)
#: Usage attributes (OpenInference's, and GenAI's that an importer may have filled in).
USAGE_PREFIXES = ("llm.token_count.", "gen_ai.usage.")
#: An event span's name (<= 0.1.6, `IdNameManager`): `<namespace>.<event>-<N>`.
NAMED_EVENT = re.compile(r"^(.+)\.(start|update|partial_update|success|error|retry|finish)-\d+$")


def event_path(span: Span) -> tuple[str, str] | None:
    """(namespace, event) of a BeeAI event span, else None."""
    attributes = span.attributes
    target, event = attributes.get(TARGET), attributes.get(EVENT)
    if isinstance(target, str) and isinstance(event, str) and event and target.endswith("." + event):
        return target[: -len(event) - 1], event
    path = attributes.get(META_PATH)
    if isinstance(path, str) and span.name and path.endswith("." + span.name):
        return path[: -len(span.name) - 1], span.name
    return None


def named_event_path(span: Span) -> tuple[str, str] | None:
    """(namespace, event) from the span name `<path>-<N>` of an event span that lost its `target`
    and `name` to the OpenTelemetry SDK's attribute count limit (128 by default: a streamed chat
    output's `llm.output_messages.N` fill it), where it kept its OpenInference kind."""
    match = NAMED_EVENT.match(span.name)
    if match is None or span.attributes.get(keys.OI_SPAN_KIND) not in (*CALL_KINDS, keys.OI_AGENT):
        return None
    return match.group(1), match.group(2)


def fold_event_spans(spans: list[Span]) -> list[Span]:
    """`spans` with BeeAI's event spans folded into their runs (module docstring); `spans` itself
    when there are none."""
    events = {s.span_id: path for s in spans if s.span_id and (path := event_path(s)) is not None}
    if not events:
        return spans
    by_id = _unique(_with_named_events(spans, events))
    folded: dict[str, Span] = {}  # span id -> its new record
    gone: dict[str, str] = {}  # span id of an event folded into a run -> the run's span id
    runs: dict[str, list[Span]] = defaultdict(list)  # namespace -> its tool / model events
    for sid, (namespace, _) in events.items():
        span = by_id[sid]
        if TARGET in span.attributes and span.attributes.get(keys.OI_SPAN_KIND) in CALL_KINDS:
            runs[namespace].append(span)
        else:  # an agent's own event, or a later version's event child span: a step, no kind
            folded[sid] = _without_kind(span)
    called: set[str] = set()  # parents of tool runs (the agent events that called them)
    for namespace, members in runs.items():
        for run in _runs(members, events):
            first = run[0]
            folded[first.sid] = _call(first, run, namespace, by_id.get(first.parent_id or ""))
            gone.update((span.sid, first.sid) for span in run[1:])
            if first.attributes.get(keys.OI_SPAN_KIND) == keys.OI_TOOL and first.parent_id:
                called.add(first.parent_id)
    for update in _update_calls(by_id, events, called):
        folded[update.sid] = update
    for sid, span in by_id.items():
        if sid not in events and (named := _named_by_source(span)) is not None:
            folded[sid] = named
    kept = [_reparented(folded.get(sid, span), gone) for sid, span in by_id.items() if sid not in gone]
    return [s for s in spans if not s.span_id] + kept  # a span without an id: SpanTree says so


def _with_named_events(spans: list[Span], events: dict[str, tuple[str, str]]) -> list[Span]:
    """`spans`, those that lost `target` and `name` given them back from their span name
    (`named_event_path`); `events` gets their paths."""
    found = []
    for span in spans:
        if span.span_id and span.span_id not in events and (path := named_event_path(span)) is not None:
            events[span.span_id] = path
            span = replace(span, attributes={**span.attributes, TARGET: ".".join(path), EVENT: path[1]})
        found.append(span)
    return found


def _unique(spans: list[Span]) -> dict[str, Span]:
    """Span id -> its record (the earliest-starting of an id seen twice, as `SpanTree` keeps)."""
    unique: dict[str, Span] = {}
    for span in canonical_order(spans):
        if span.span_id:
            unique.setdefault(span.span_id, span)
    return unique


def _named_by_source(span: Span) -> Span | None:
    """The instrumented run's AGENT span (`beeai.version`) named by `source` where nothing names it."""
    source = span.attributes.get(SOURCE)
    if (
        span.attributes.get(keys.OI_SPAN_KIND) != keys.OI_AGENT
        or VERSION not in span.attributes
        or not isinstance(source, str)
        or not source
        or _names_agent(span)
    ):
        return None
    return replace(span, attributes={**span.attributes, keys.OI_AGENT_NAME: source})


def _reparented(span: Span, gone: dict[str, str]) -> Span:
    """`span` under the run its parent event was folded into, where it was."""
    parent = span.parent_id
    while parent in gone:
        parent = gone[parent]
    return span if parent == span.parent_id else replace(span, parent_id=parent)


def _names_agent(span: Span) -> bool:
    return any(span.attributes.get(key) for key in (keys.AGENT_NAME, keys.OI_AGENT_NAME))


def _without_kind(span: Span) -> Span:
    attributes = {k: v for k, v in span.attributes.items() if k != keys.OI_SPAN_KIND}
    return replace(span, attributes=attributes)


def _runs(members: list[Span], events: dict[str, tuple[str, str]]) -> list[list[Span]]:
    """The events of one namespace split into runs: a `start` opens one, a `finish` closes it."""
    ordered = sorted(members, key=lambda s: (s.start_ns, EVENT_ORDER.get(events[s.sid][1], 1), s.sid))
    runs: list[list[Span]] = []
    current: list[Span] | None = None
    for span in ordered:
        event = events[span.sid][1]
        if event == START or current is None:
            current = [span]
            runs.append(current)
        else:
            current.append(span)
        if event == FINISH:
            current = None
    return runs


def _call(first: Span, run: list[Span], namespace: str, parent: Span | None) -> Span:
    """One span for the events of one tool or model run (module docstring)."""
    by_event: dict[Any, Span] = {}
    for span in run:
        by_event.setdefault(span.attributes.get(EVENT), span)
    start, success, error = by_event.get(START), by_event.get(SUCCESS), by_event.get(ERROR)
    attributes = dict(first.attributes)
    if start is not None:
        attributes.update(start.attributes)
    for key, value in (success.attributes if success is not None else {}).items():
        if (key == keys.OUTPUT_VALUE or key.startswith(USAGE_PREFIXES)) and value not in (None, ""):
            attributes[key] = value  # the output, and the usage a chat model reports on success
    if attributes.get(keys.OI_SPAN_KIND) == keys.OI_TOOL:
        arguments = start.attributes.get(TOOL_PARAMETERS) if start is not None else None
        if arguments not in (None, "") and not attributes.get(keys.INPUT_VALUE):
            attributes[keys.INPUT_VALUE] = arguments
        named = parent.attributes.get(keys.OI_TOOL_NAME) if parent is not None else None
        attributes[keys.OI_TOOL_NAME] = named if isinstance(named, str) and named else namespace.rsplit(".", 1)[-1]
    elif success is not None and keys.OUTPUT_VALUE not in attributes:
        text = _chunks_text(success.attributes)
        if text is not None:
            attributes[keys.OUTPUT_VALUE] = text
    failed = error.attributes.get("exception.message") if error is not None else None
    return replace(
        first,
        attributes=attributes,
        end_ns=max(s.start_ns for s in run),  # an event is a moment: its span ends when the tree is written
        error=str(failed) if failed is not None else next((s.error for s in run if s.error is not None), None),
    )


def _chunks_text(attributes: dict[str, Any]) -> str | None:
    """The text of a streamed BeeAI chat output: its `llm.output_messages.N` (one per chunk) joined."""
    prefix = keys.LLM_OUTPUT_MESSAGES + "."
    suffix = "." + keys.MESSAGE_CONTENT
    chunks: dict[int, str] = {}
    for key, value in attributes.items():
        if key.startswith(prefix) and key.endswith(suffix) and isinstance(value, str):
            index = key[len(prefix) : -len(suffix)]
            if index.isdigit():
                chunks[int(index)] = value
    return "".join(chunks[n] for n in sorted(chunks)) if chunks else None


def _update_calls(by_id: dict[str, Span], events: dict[str, tuple[str, str]], called: set[str]) -> list[Span]:
    """Tool calls recorded only by a ReAct agent's `update` events (module docstring): per iteration
    (the updates under one parent), the last update with a tool's name, arguments and output,
    where no tool run's events sit under an update of that iteration."""
    iterations: dict[str | None, list[Span]] = defaultdict(list)
    for sid, (_, event) in events.items():
        span = by_id[sid]
        if event in (UPDATE, "partial_update") and span.attributes.get(keys.OI_SPAN_KIND) == keys.OI_AGENT:
            iterations[span.parent_id].append(span)
    calls = []
    for updates in iterations.values():
        if any(u.sid in called for u in updates):
            continue
        updates.sort(key=lambda s: (s.start_ns, s.sid))
        done = [
            u
            for u in updates
            if events[u.sid][1] == UPDATE
            and u.attributes.get(keys.OI_TOOL_NAME)
            and _arguments(u) is not None
            and u.attributes.get(keys.OUTPUT_VALUE) not in (None, "")
        ]
        if not done:
            continue
        last = done[-1]
        arguments = _arguments(last)
        tool = last.attributes[keys.OI_TOOL_NAME]
        first = next(u for u in updates if u.attributes.get(keys.OI_TOOL_NAME) == tool and _arguments(u) == arguments)
        attributes = {k: v for k, v in last.attributes.items() if k not in (TARGET, EVENT)}
        attributes.update({keys.OI_SPAN_KIND: keys.OI_TOOL, keys.INPUT_VALUE: arguments})
        start = min(first.start_ns, last.start_ns)
        calls.append(replace(last, attributes=attributes, start_ns=start, end_ns=last.start_ns))
    return calls


def _arguments(span: Span) -> str | None:
    """The tool arguments an event carries (`tool.parameters`; "null" is none)."""
    value = span.attributes.get(TOOL_PARAMETERS)
    if not isinstance(value, str) or not value:
        return None
    try:
        return None if json.loads(value) is None else value
    except ValueError:
        return value
