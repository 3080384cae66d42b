"""Langfuse trace exports: observations decoded as spans with their original OpenTelemetry attributes.

Shapes read (JSON; a JSONL file is a list of its lines):

- `{"trace": {...}, "observations": [...]}`, as the Langfuse UI downloads a trace (some exports
  repeat the observations in `trace.observations`: merged, deduplicated by id, the top-level
  record of an id winning), or a list of them;
- a bare trace `{id, ..., observations: [...], scores: [...]}` (`GET /api/public/traces/{id}`);
- an observations page `{"data": [observation, ...], "meta": {...}}` (`GET /api/public/observations`).

An observation: `{id, traceId, parentObservationId, type (SPAN | GENERATION | EVENT | AGENT | TOOL |
CHAIN | RETRIEVER | EMBEDDING | ...), name, startTime, endTime (ISO 8601), input, output, model,
usageDetails {input, output, total, <cache keys>} (token counts), level (ERROR -> error status),
statusMessage, metadata}`. `metadata` (an object, or JSON text of one) holds what the
instrumentation sent over OpenTelemetry: `attributes` (the span's own attributes, values as Langfuse
stored them, often stringified), `resourceAttributes` (`service.name` -> the span's service) and
`scope` (-> `otel.scope.name` / `otel.scope.version`); any other key (the LangChain callback
handler's `langgraph_node`, `thread_id`, ...) is kept as `langfuse.observation.metadata.<key>`.

Each observation becomes an `otel.Span` (id -> span id, `parentObservationId` -> parent) with those
attributes unchanged, so the OTLP span mapping (`build_trace`: OpenInference, GenAI, Monocle, ...)
reads them exactly as if the spans had come over OTLP. Langfuse's own fields fill in only what the
attributes lack (checked with the mapping's readers): `input` / `output` -> `input.value` /
`output.value`, `model` -> `gen_ai.request.model`, `usageDetails` -> `gen_ai.usage.*` (generations
and embeddings only: Langfuse infers usage for other types by tokenising their text), and, for a span
without a role, the observation type (GENERATION -> `gen_ai.operation.name` "chat", TOOL and
RETRIEVER -> "execute_tool"). A generation's total as Langfuse shows it (`usageDetails.total`, else
the sum of every usage type, reasoning and cache tokens included: `langfuse_total`) ->
`gen_ai.usage.total_tokens` where its attributes report no total, so its event counts what Langfuse
counts. `langfuse.observation.type` / `.id` are always added. The program's own plain spans
(Langfuse SDK spans without OpenTelemetry attributes) read as OpenInference CHAIN spans, so
LangGraph metadata (callback handler exports) names agents through the span mapping's LangGraph
rule (`otel.langgraph`, docs/otel-mapping.md "Agent identity"); the tools a `ToolNode` ran are
tool calls (`to_spans`).

Trace level: `sessionId` -> `trace.attributes["session_id"]` (over any `session.id` attribute;
without one, the LangChain handler's `thread_id` / `session_id` / `conversation_id` metadata),
`userId`, `tags`, `langfuse_trace_id`; scores (`trace.scores`) -> a `Label` each (key: the score
name, value: the number, or the text of categorical scores; `event_id` when the score is about an
observation; source `langfuse:<source>`), numeric and boolean trace scores also ->
`attributes["score_values"][name]` (the latest of a name), all of them in full (comment, data
type, ...) in `attributes["scores"]`. Scores are evaluations, not rewards: a trace scored
`hallucination = 1` did not succeed. A score becomes the reward only when it is named `reward` or
named by the import (`read_files(reward_score=...)`, `--reward-score`, the project's setting):
`scores.select_reward`.

Ids: hex ids as they are, other ids (Langfuse SDK v2 UUIDs, custom text) digested to hex
(`langsmith.span_id_of`). Bad input: `split` raises ValueError naming the observation
(`observations[3]`, its id) and field; a file fails as a whole.

Source of the shapes: the framework exports in Langfuse's own tests (github.com/langfuse/langfuse @
62751446149b702b419a9292ddfc2280cdf74b8c, `worker/src/__tests__/chatml/framework-traces/`, in
`../shared/data/langfuse-exports/`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from swarmscope.model import MAX_TOKENS, TOKENS_RULE, Label, Trace, is_token_count

from .langsmith import THREAD_KEYS, TOOL_NODE, jsonish, span_id_of, time_ns, trace_id_of
from .otel import Span, build_trace, model_name, span_io, span_role, usage
from .otel.keys import OI_CHAIN, OI_SPAN_KIND
from .otel.tokens import token_refusal
from .scores import SCORE_VALUES

FORMAT = "langfuse"

#: Observation types whose `usageDetails` are the model's reported usage.
GENERATION_TYPES = frozenset({"GENERATION", "EMBEDDING"})
#: Observation type -> `gen_ai.operation.name`, for spans whose attributes give no role.
TYPE_OPERATIONS = {"GENERATION": "chat", "TOOL": "execute_tool", "RETRIEVER": "execute_tool", "EMBEDDING": "embeddings"}
#: `usageDetails` key -> GenAI usage attribute (the total: `langfuse_total`).
USAGE_KEYS = {
    "input": "gen_ai.usage.input_tokens",
    "output": "gen_ai.usage.output_tokens",
    "input_cache_read": "gen_ai.usage.cache_read.input_tokens",
    "prompt_details.cache_read": "gen_ai.usage.cache_read.input_tokens",
    "cache_read_input_tokens": "gen_ai.usage.cache_read.input_tokens",
    "input_cache_creation": "gen_ai.usage.cache_creation.input_tokens",
    "cache_creation_input_tokens": "gen_ai.usage.cache_creation.input_tokens",
    "output_reasoning": "gen_ai.usage.reasoning.output_tokens",
    "output_reasoning_tokens": "gen_ai.usage.reasoning.output_tokens",
    "completion_details.reasoning": "gen_ai.usage.reasoning.output_tokens",
}
#: The GenAI attribute the observation's Langfuse total goes to (the span mapping counts a
#: reported total before input + output).
TOTAL_ATTRIBUTE = "gen_ai.usage.total_tokens"
METADATA_PREFIX = "langfuse.observation.metadata."
#: The instrumentation scope of what the program records through Langfuse's SDKs (v3+, Python and JS).
SDK_SCOPE = "langfuse-sdk"
#: The tag LangGraph puts on its own bookkeeping runs (`ChannelWrite<...>`, hidden in LangSmith).
HIDDEN_TAG = "langsmith:hidden"
OBSERVATION_KEYS = ("id", "traceId", "startTime")


@dataclass
class TraceRecord:
    """The trace-level part of an export (everything but its observations)."""

    trace: dict[str, Any]


@dataclass
class Observation:
    """One observation decoded: its span, and the Langfuse fields the trace level needs."""

    span: Span
    type: str
    metadata: dict[str, Any] = field(default_factory=dict)
    #: Whether the observation came with OpenTelemetry attributes of its own (`metadata.attributes`).
    otel: bool = False


def _is_observation(item: Any) -> bool:
    return isinstance(item, dict) and all(k in item for k in OBSERVATION_KEYS) and "type" in item


def _exports(doc: Any) -> list[tuple[str, dict | None, list]] | None:
    """`(where, trace or None, observations)` of each export in `doc`, or None when not Langfuse."""
    items = doc if isinstance(doc, list) else [doc]
    found: list[tuple[str, dict | None, list]] = []
    for i, item in enumerate(items):
        where = f"[{i}]" if isinstance(doc, list) else ""
        if not isinstance(item, dict):
            return None
        trace = item.get("trace")
        if isinstance(trace, dict) and "id" in trace and isinstance(item.get("observations"), list):
            found.append((where, trace, item["observations"]))
        elif "id" in item and "projectId" in item and isinstance(item.get("observations"), list):
            found.append((where, item, item["observations"]))
        elif (
            isinstance(item.get("data"), list)
            and isinstance(item.get("meta"), dict)
            and item["data"]
            and all(_is_observation(o) for o in item["data"])
        ):
            found.append((where, None, item["data"]))
        else:
            return None
    if not found:
        return None
    for _, trace, observations in found:
        nested = trace.get("observations") if trace else None
        candidates = observations + (nested if isinstance(nested, list) else [])
        if not all(isinstance(o, dict) and ("id" in o or "traceId" in o) for o in candidates):
            return None
    return found


def sniff(doc: Any) -> bool:
    return _exports(doc) is not None


def _metadata(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"metadata": value}
    return value if isinstance(value, dict) else ({} if value is None else {"metadata": value})


def _observation(where: str, trace_id: str, obs: dict[str, Any]) -> Observation:
    """An observation decoded (see the module docstring). Raises ValueError naming `where` and the field."""
    label = f"{where} (id {obs.get('id')!r})"
    if not obs.get("id"):
        raise ValueError(f"{where}: id: missing")
    try:
        start = time_ns(obs.get("startTime"))
    except ValueError as exc:
        raise ValueError(f"{label}: startTime: {exc}") from None
    try:
        end = time_ns(obs["endTime"]) if obs.get("endTime") is not None else start
    except ValueError as exc:
        raise ValueError(f"{label}: endTime: {exc}") from None
    metadata = _metadata(obs.get("metadata"))
    own = metadata.get("attributes")
    attributes: dict[str, Any] = dict(own) if isinstance(own, dict) else {}
    resource = metadata.get("resourceAttributes")
    resource = resource if isinstance(resource, dict) else {}
    scope = metadata.get("scope")
    if isinstance(scope, dict):
        for key in ("name", "version"):
            if scope.get(key):
                attributes.setdefault(f"otel.scope.{key}", scope[key])
    extra = {k: v for k, v in metadata.items() if k not in ("attributes", "resourceAttributes", "scope")}
    for key, value in extra.items():
        if value is not None:
            attributes.setdefault(
                METADATA_PREFIX + key, value if isinstance(value, (str, int, float, bool)) else jsonish(value)
            )
    type_ = str(obs.get("type") or "SPAN").upper()
    attributes.setdefault("langfuse.observation.type", type_.lower())
    attributes.setdefault("langfuse.observation.id", str(obs["id"]))
    level = str(obs.get("level") or "").upper()
    span = Span(
        trace_id=trace_id,
        span_id=span_id_of(obs["id"]),
        parent_id=span_id_of(obs.get("parentObservationId")),
        name=str(obs.get("name") or ""),
        start_ns=start,
        end_ns=max(end, start),
        attributes=attributes,
        service=resource.get("service.name"),
        error=str(obs.get("statusMessage") or "") if level == "ERROR" else None,
    )
    try:
        refusal = token_refusal(span)  # its own attributes, before Langfuse's usage fills them in
        if refusal is not None:
            raise ValueError(refusal)
        _fill_in(span, obs, type_)
        refusal = token_refusal(span)  # input + output where no total
        if refusal is not None:
            raise ValueError(refusal)
    except ValueError as exc:
        raise ValueError(f"{label} ({span.name!r}): {exc}") from None
    return Observation(span=span, type=type_, metadata=extra, otel=bool(own) if isinstance(own, dict) else False)


def _fill_in(span: Span, obs: dict[str, Any], type_: str) -> None:
    """Langfuse's fields where the attributes lack them (read with the span mapping's readers)."""
    attributes = span.attributes
    raw_in, raw_out = span_io(span)
    if raw_in is None and obs.get("input") not in (None, "", [], {}):
        attributes["input.value"] = jsonish(obs["input"])
    if raw_out is None and obs.get("output") not in (None, "", [], {}):
        attributes["output.value"] = jsonish(obs["output"])
    if model_name(span) is None and obs.get("model"):
        attributes["gen_ai.request.model"] = str(obs["model"])
    details = obs.get("usageDetails")
    if type_ in GENERATION_TYPES and isinstance(details, dict):
        n_in, n_out, n_total = usage(span)
        if (n_in, n_out, n_total) == (None, None, None):
            for key, attribute in USAGE_KEYS.items():
                if (value := _count(details, key)) is not None and attribute not in attributes:
                    attributes[attribute] = value
        total = langfuse_total(details)
        if n_total is None and total is not None:
            attributes[TOTAL_ATTRIBUTE] = total
    if span_role(span) is None and type_ in TYPE_OPERATIONS:
        attributes["gen_ai.operation.name"] = TYPE_OPERATIONS[type_]
        if TYPE_OPERATIONS[type_] == "execute_tool":
            attributes.setdefault("gen_ai.tool.name", span.name)


def _count(details: dict[str, Any], key: str) -> int | None:
    """The usage count `details[key]` (a number) as an int, else None (absent, not a number). Raises
    ValueError naming `usageDetails.<key>` for a number that is no token count (`model.is_token_count`:
    negative, fractional, over MAX_TOKENS)."""
    value = details.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    count = int(value) if isinstance(value, float) and math.isfinite(value) and value.is_integer() else value
    if not is_token_count(count):
        raise ValueError(f"usageDetails.{key} {TOKENS_RULE}, got {value!r}")
    return int(count)


def langfuse_total(details: dict[str, Any]) -> int | None:
    """The total Langfuse shows for an observation's `usageDetails`: its `total`, else the sum of
    every usage type (Langfuse's rule where no total was ingested: reasoning, cache and audio
    tokens its SDKs split off input and output count); None without any count. Raises ValueError
    naming the field of a bad count, or when the sum is over MAX_TOKENS."""
    total = _count(details, "total")
    if total is not None:
        return total
    counts = [n for key in details if (n := _count(details, key)) is not None]
    if sum(counts) > MAX_TOKENS:
        raise ValueError(f"usageDetails: its counts sum to {sum(counts)}, over {MAX_TOKENS} (and it has no total)")
    return sum(counts) if counts else None


def split(doc: Any) -> dict[str, list[TraceRecord | Observation]]:
    """Trace id (32 hex) -> `[TraceRecord, Observation, ...]` (the trace part, where the export has
    one, then its observations decoded, deduplicated by id). Raises ValueError naming the
    observation and field of a malformed id or time."""
    chunks: dict[str, list[TraceRecord | Observation]] = {}
    for where, trace, observations in _exports(doc) or []:
        records: list[tuple[str, dict]] = [(f"{where}observations[{i}]", o) for i, o in enumerate(observations)]
        if trace is not None and trace.get("observations") is not observations:
            nested: list = trace["observations"] if isinstance(trace.get("observations"), list) else []
            records += [(f"{where}trace.observations[{i}]", o) for i, o in enumerate(nested)]
        seen: set[str] = set()
        for place, obs in records:
            if not isinstance(obs, dict):
                raise ValueError(f"{place} is not an object")
            if str(obs.get("id")) in seen:
                continue
            seen.add(str(obs.get("id")))
            raw_trace = obs.get("traceId") or (trace or {}).get("id")
            if not raw_trace:
                raise ValueError(f"{place} (id {obs.get('id')!r}): traceId: missing")
            trace_id = trace_id_of(raw_trace)
            chunks.setdefault(trace_id, []).append(_observation(place, trace_id, obs))
        if trace is not None:
            trace_id = trace_id_of(trace["id"])
            head = {k: v for k, v in trace.items() if k != "observations"}
            chunks.setdefault(trace_id, []).insert(0, TraceRecord(trace=head))
    return chunks


def to_spans(trace_id: str, records: list[TraceRecord | Observation]) -> list[Span]:
    """The observations of `split` as spans. A plain span that the program recorded through
    Langfuse's SDK (type SPAN, no OpenTelemetry attributes of its own, scope `langfuse-sdk` or none:
    an `@observe`d function, `start_span`, a chain run of Langfuse's LangChain callback handler) is
    what OpenInference calls a `CHAIN` span, and reads as one: the span mapping's rules then name
    its agent by it where it would be the service, or make it the run of a workflow of agents, and
    read a LangGraph run the handler exported (`langgraph_*` metadata, kept as
    `langfuse.observation.metadata.*`) as they read OpenInference's export of it. A run the handler
    recorded as a plain span directly under a LangGraph `ToolNode` task (the node `tools`:
    LangGraph's prebuilt agents, LangChain's `createAgent`) is a tool call, unless LangGraph marks
    it as its own bookkeeping (`langsmith:hidden`: `ChannelWrite<...>`)."""
    observations = [r for r in records if isinstance(r, Observation)]
    by_id = {o.span.sid: o for o in observations}
    graphed = any(o.metadata.get("langgraph_node") for o in observations)
    spans = []
    for o in observations:
        span = o.span
        own = not o.otel and span.attributes.get("otel.scope.name") in (None, SDK_SCOPE)
        if own and span_role(span) is None:
            parent = by_id.get(span.parent_id or "")
            if graphed and parent is not None and _tool_node_run(o, parent):
                span.attributes.setdefault("gen_ai.operation.name", "execute_tool")
                span.attributes.setdefault("gen_ai.tool.name", span.name)
            elif o.type == "SPAN":
                span.attributes.setdefault(OI_SPAN_KIND, OI_CHAIN)
        spans.append(span)
    return spans


def _tool_node_run(observation: Observation, parent: Observation) -> bool:
    """Whether `observation` is a tool the ToolNode task `parent` ran (see `to_spans`)."""
    node = parent.metadata.get("langgraph_node")
    tags = observation.metadata.get("tags")
    return (
        node == TOOL_NODE
        and parent.span.name == node
        and observation.metadata.get("langgraph_node") == node
        and not (isinstance(tags, list) and HIDDEN_TAG in tags)
    )


def _score_value(score: dict[str, Any]) -> Any:
    if str(score.get("dataType", "")).upper() == "CATEGORICAL" and score.get("stringValue") is not None:
        return score["stringValue"]
    value = score.get("value")
    return value if value is not None else score.get("stringValue")


def build(trace_id: str, records: list[TraceRecord | Observation], sources: list[str]) -> Trace:
    """One orchestration trace: the span mapping over the observations, then the trace-level facts
    (name, session, user, tags, scores) of the export's trace part. Raises ValueError when the
    trace has no observations."""
    spans = to_spans(trace_id, records)
    if not spans:
        raise ValueError("a Langfuse trace without observations")
    trace = build_trace(spans, source_format=FORMAT, trace_id=trace_id, sources=sources)
    heads = [r.trace for r in records if isinstance(r, TraceRecord)]
    head: dict[str, Any] = {}
    for part in heads:
        head.update({k: v for k, v in part.items() if v is not None})
    if head.get("id"):
        trace.attributes["langfuse_trace_id"] = str(head["id"])
    if head.get("name"):
        trace.name = str(head["name"])
    thread = next(
        (
            o.metadata[key]
            for o in records
            if isinstance(o, Observation)
            for key in THREAD_KEYS
            if isinstance(o.metadata.get(key), (str, int)) and o.metadata[key] != ""
        ),
        None,
    )
    if head.get("sessionId") or thread is not None:
        trace.attributes["session_id"] = str(head.get("sessionId") or thread)
    if head.get("userId"):
        trace.attributes["user_id"] = str(head["userId"])
    if isinstance(head.get("tags"), list) and head["tags"]:
        trace.attributes["tags"] = [str(t) for t in head["tags"]]
    _scores(trace, [s for part in heads for s in (part.get("scores") or []) if isinstance(s, dict)])
    return trace


def _scores(trace: Trace, scores: list[dict[str, Any]]) -> None:
    """Scores -> labels, numeric trace scores -> `attributes["score_values"]` (no reward: see
    `scores.select_reward`), everything -> `attributes["scores"]`."""
    unique = {str(s.get("id") or i): s for i, s in enumerate(scores)}
    span_events: dict[str, str] = {}
    for event in sorted(trace.events, key=lambda e: e.type != "message"):
        span_events.setdefault(str(event.attributes.get("span_id")), event.id)
    kept = []
    values: dict[str, float] = {}
    for score in sorted(unique.values(), key=lambda s: str(s.get("timestamp") or "")):
        name = str(score.get("name") or "score")
        value = _score_value(score)
        observation = score.get("observationId")
        event_id = None
        if observation:
            event_id = span_events.get(str(span_id_of(observation)))
        trace.labels.append(Label(name, value, event_id=event_id, source=f"langfuse:{score.get('source') or 'score'}"))
        if not observation and isinstance(value, (int, float)):
            values[name] = float(value)
        kept.append(
            {
                k: score[k]
                for k in ("name", "value", "stringValue", "dataType", "source", "comment", "observationId", "timestamp")
                if score.get(k) is not None
            }
        )
    if kept:
        trace.attributes["scores"] = kept
    if values:  # after the evaluations the span mapping found, where the export has some
        trace.attributes[SCORE_VALUES] = {**trace.attributes.get(SCORE_VALUES, {}), **values}
