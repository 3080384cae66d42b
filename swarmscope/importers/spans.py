"""OpenTelemetry spans -> orchestration trace: the mapping shared by the Jaeger, OTel SDK and OTLP
importers, which only decode their encoding into `Span` and call `build_trace`.

Reading a span (OpenTelemetry GenAI semantic conventions, plus the Monocle, OpenInference,
Traceloop and AGNTCY observe attributes that real exporters write):

- role: `gen_ai.operation.name` (`invoke_agent`, `execute_tool`, `chat`, ...), else Monocle's
  `span.type`, `openinference.span.kind`, `traceloop.span.kind` / `ioa_observe.span.kind`, else
  token usage (an LLM call) or `gen_ai.tool.name` (a tool). Other spans (transport, queues,
  framework plumbing) give structure, never events.
- agent: `gen_ai.agent.name`, unless it repeats the framework (`gen_ai.provider.name`: LangGraph
  names every graph "LangGraph"); else a Monocle entity `entity.N.name` whose `entity.N.type`
  starts with `agent` (models and tools named in `entity.N` are not agents); else the one agent
  that the span's LLM and tool children name; else the parent span's agent within the same
  service; else the service (`service.name`, Jaeger `serviceName`): one agent per service.
- messages between agents: Microsoft Agent Framework executor spans (Monocle) carry the
  `WorkflowMessage` they received in their `data.input` event: `source_id` sends to `target_id`
  (None: to the executor the span runs); `entity.N.from_agent_span_id` names the span whose turn
  came before. Monocle labels some workflows' executors with the workflow's name (handoff): a label
  on the executor that took the raw workflow input (no message) while the turns chained from it
  are sent as another executor id is such a workflow label, so the sender is who acted there and
  spans with that label are attributed by their messages instead. Explicit hand-offs: Monocle
  `agentic.delegation` spans (`entity.N.from_agent` -> `entity.N.to_agent`) and tools named
  `transfer_to_<agent>` (OpenAI Agents SDK) or `handoff_to_<agent>` (Agent Framework).

Mapping to the orchestration trace (DESIGN.md "Domain"):

- an invocation is a span where the acting agent changes (or that received a message) with its
  descendants of the same agent; one that makes no event and received no message (transport
  spans) is ignored. Its invoker is the agent that sent the message, else the sender of a pending
  hand-off to it, else the agent of the enclosing span (a call across agents or services) when
  that agent acts somewhere or is named (a bare service wrapping the run is not an agent), else
  the sender of a pending broadcast whose receivers were not named. The invoker gets a `delegate`
  event (t = invocation start) with a `message` edge to the invoked agent's next event. The first
  time an agent is invoked, a `spawn` event of the invoker precedes it (`spawn` edge to the
  agent's first event) and the invoker becomes its parent. When the invocation ends, its last
  event returns (`return` edge; a `message` event becomes a `return` event) to the invoker's next
  event, else to the next event of the agent whose span encloses the invocation. An event that
  receives returns from two or more agents is an `aggregate`. Agents known only as message
  senders (the group chat orchestrator, a dispatcher) have no spans that say who started them:
  they are roots. Invocations in one span tree that nobody invoked, taken by two or more agents
  one after another, are group chat turns: each is a message to the next speaker.
- LLM spans are the agents' turns: a `message` event (content: the output, else the input,
  flagged `content_from: "input"`; model and token usage kept), innermost span where calls nest.
  Tool spans: `tool_call` (arguments) and, where there is a result or an error, `tool_result`,
  joined by a `tool_dependency` edge; a tool span that runs another agent is the delegation
  instead. An invocation without LLM or tool events is one turn: a `message` event spanning it,
  with the output of its agent span (a remote agent seen only from outside), else with its input;
  it needs an output or an agent span whose `gen_ai.agent.name` names the agent (exporters that
  instrument only `invoke_agent` spans: OpenAI Agents SDK, CrewAI, LangGraph). Tokens from usage.
- a delegation's content is the invoked agent's input; an Agent Framework `WorkflowMessage` is a
  Python repr naming objects, not text, so it is kept as the attribute `message` instead. Copies
  of one send to executors that no name identifies make one delegate, which goes to the next
  agent that starts acting without an invoker (the hand-off target), else stays a `message`.
- `from_agent_span_id` gives a `causal` edge from the last event of the turn at that span to the
  message that followed. Spans under a tool span belong to the tool's caller unless they name an
  agent. Edges only point forward in time; the order within an agent is implicit (graph lanes).
- times: t = seconds from the earliest span start (kept as the trace attribute
  `start_time_unix_nano`), t_end from the span end. Tokens from usage
  attributes (input + output), else estimated from content and flagged. Event attributes keep
  `span_id`, `parent_span_id` and `trace_id` (hex). Spans whose parent never arrived are grouped
  under a placeholder for it, whose agent is the one its LLM and tool children name.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

from swarmscope.model import Agent, Edge, Event, Trace

from .chatlog import TOKENS_ESTIMATED, estimate_missing_tokens

AGENT, LLM, TOOL, HANDOFF = "agent", "llm", "tool", "handoff"

#: `gen_ai.operation.name` -> span role (GenAI semantic conventions).
OPERATION_ROLES = {"invoke_agent": AGENT, "execute_tool": TOOL, "chat": LLM,
                   "text_completion": LLM, "generate_content": LLM, "completion": LLM}
#: Monocle `span.type` -> span role.
MONOCLE_ROLES = {"agentic.invocation": AGENT, "agentic.turn": AGENT, "agentic.request": AGENT,
                 "agentic.delegation": HANDOFF, "agentic.tool.invocation": TOOL,
                 "agentic.mcp.invocation": TOOL, "retrieval": TOOL, "inference": LLM,
                 "inference.framework": LLM, "inference.modelapi": LLM}
#: `openinference.span.kind` -> span role.
OPENINFERENCE_ROLES = {"AGENT": AGENT, "LLM": LLM, "TOOL": TOOL, "RETRIEVER": TOOL}
#: `traceloop.span.kind` / `ioa_observe.span.kind` -> span role.
KIND_ROLES = {"agent": AGENT, "tool": TOOL}
#: Tool-name prefixes of hand-offs: OpenAI Agents SDK, Microsoft Agent Framework.
HANDOFF_TOOL_PREFIXES = ("transfer_to_", "handoff_to_")
#: Service name when a span has none (the OpenTelemetry SDK default).
UNKNOWN_SERVICE = "unknown_service"
#: Values that name no model.
NO_MODEL = {"", "unknown", "none"}

INPUT_KEYS = ("gen_ai.tool.call.arguments", "gen_ai.input.messages", "gen_ai.prompt", "input.value",
              "traceloop.entity.input", "gen_ai.task.input", "ioa_observe.entity.input")
OUTPUT_KEYS = ("gen_ai.tool.call.result", "gen_ai.output.messages", "gen_ai.completion",
               "output.value", "traceloop.entity.output", "gen_ai.task.output",
               "ioa_observe.entity.output")
#: Span events carrying input / output: event name -> attribute keys, first found wins.
INPUT_EVENTS = {"data.input": ("input",), "gen_ai.content.prompt": ("gen_ai.prompt",),
                "gen_ai.client.inference.operation.details": ("gen_ai.input.messages",)}
OUTPUT_EVENTS = {"data.output": ("response", "output"), "gen_ai.content.completion": ("gen_ai.completion",),
                 "gen_ai.client.inference.operation.details": ("gen_ai.output.messages",),
                 "gen_ai.choice": ("message", "content")}
#: Older GenAI conventions: one span event per chat message, its text in `content`.
MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                  "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
#: Roles of chat messages written as `{role: parts}` (Monocle's OpenAI Responses inputs).
CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "model", "function"})
INDEXED_PROMPT = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(role|content)$")
INPUT_TOKEN_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt",
                    "llm.usage.prompt_tokens", "prompt_tokens", "input_tokens")
OUTPUT_TOKEN_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                     "llm.token_count.completion", "llm.usage.completion_tokens", "completion_tokens",
                     "output_tokens")
TOTAL_TOKEN_KEYS = ("gen_ai.usage.total_tokens", "llm.usage.total_tokens", "llm.token_count.total",
                    "total_tokens")
#: Usage attributes that make a span without another role an LLM call.
USAGE_ATTRIBUTE_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.prompt_tokens",
                        "gen_ai.usage.completion_tokens", "llm.token_count.prompt", "llm.token_count.completion")
#: Attributes naming the workflow, for the trace name (else the root span's name).
WORKFLOW_NAME_KEYS = ("workflow.name", "gen_ai.workflow.name", "ioa_observe.workflow.name",
                      "traceloop.workflow.name")
#: Trace attribute <- first span attribute found (conversation / session ids).
TRACE_ATTRIBUTE_KEYS = {"conversation_id": "gen_ai.conversation.id", "session_id": "session.id"}

WORKFLOW_MESSAGE = "WorkflowMessage("
MESSAGE_SOURCE = re.compile(r"\bsource_id='([^']+)'")
MESSAGE_TARGET = re.compile(r"\btarget_id='([^']+)'")
MESSAGE_KEY = re.compile(r"\bsource_span_ids=\[([^\]]*)\]")
ENTITY_KEY = re.compile(r"^entity\.(\d+)\.(\w+)$")


@dataclass(frozen=True)
class SpanEvent:
    """A span event (Jaeger: a log): `time_ns` in nanoseconds since the Unix epoch, or None."""

    name: str
    time_ns: int | None
    attributes: dict[str, Any]


@dataclass
class Span:
    """One OpenTelemetry span, decoded from any encoding.

    Ids are lower-case hex (`trace_id` 32 digits, span ids 16). Times are integer nanoseconds
    since the Unix epoch. `attributes` are flat key -> scalar/list/dict values. `service` is the
    resource's `service.name`; `kind` the span kind in lower case ("client", "server", ...);
    `error` the status description when the status is ERROR ("" when it gave none), else None.
    `missing` marks a placeholder for a parent span that never arrived.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    service: str | None = None
    kind: str | None = None
    error: str | None = None
    missing: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.service, str) or not self.service:
            self.service = None  # a service name that is not text names nothing

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (how OTLP spans are stored between requests); `from_dict` reads it."""
        data = {name: getattr(self, name) for name in SPAN_FIELDS}
        data["attributes"] = self.attributes
        data["events"] = [{"name": e.name, "time_ns": e.time_ns, "attributes": e.attributes} for e in self.events]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Span":
        return cls(**{name: data.get(name) for name in SPAN_FIELDS}, attributes=data.get("attributes") or {},
                   events=[SpanEvent(e["name"], e.get("time_ns"), e.get("attributes") or {})
                           for e in data.get("events") or []])


SPAN_FIELDS = ("trace_id", "span_id", "parent_id", "name", "start_ns", "end_ns", "service", "kind", "error")


@dataclass(frozen=True)
class Message:
    """A message a span received: from `sender` to `receiver` (None: not named), `key` identifying
    one send delivered to several executors, and `from_span` the span whose turn came before."""

    sender: str | None
    receiver: str | None
    key: str | None
    from_span: str | None
    workflow: bool


@dataclass
class Delivery:
    """A delegation: `event` (the sender's delegate event) reaching `receiver` in the invocation
    rooted at `root` (None while a broadcast or hand-off waits for its receiver)."""

    event: Event
    sender: str
    receiver: str | None
    root: Span | None = None


# --- ids and values -------------------------------------------------------------------------------


HEX_ID = re.compile(r"[0-9a-f]+")


def hex_id(value: Any, size: int, *, prefix: bool = False) -> str | None:
    """A trace (`size` 16 bytes) or span (8 bytes) id written as hex text, as lower-case hex of
    `2 * size` digits (shorter text is left-padded: Jaeger writes 64-bit trace ids); None when
    empty or all zeros (no id, OTLP spec). `prefix` allows the "0x" the OTel SDK's JSON writes.

    Raises ValueError naming the value when it is not hex of at most `2 * size` digits.
    """
    if value is None or value == "":
        return None
    text = str(value).strip().lower()
    if prefix and text.startswith("0x"):
        text = text[2:]
    if not HEX_ID.fullmatch(text) or len(text) > 2 * size:
        raise ValueError(f"id {value!r} is not hex of at most {2 * size} digits")
    text = text.zfill(2 * size)
    return None if text.count("0") == len(text) else text


def bytes_id(raw: bytes, size: int) -> str | None:
    """An id given as bytes (OTLP/protobuf) as lower-case hex; None when empty or all zeros.

    Raises ValueError when it is not `size` bytes long.
    """
    if not raw:
        return None
    if len(raw) != size:
        raise ValueError(f"id {raw.hex()!r} is {len(raw)} bytes, expected {size}")
    return None if raw.count(0) == size else raw.hex()


def as_int(value: Any) -> int | None:
    """An integer attribute value (also given as a string or an integral float), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _json(text: str) -> Any:
    """`text` decoded as JSON when it looks like JSON, else None."""
    if not text or text[0] not in "[{\"":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def render(value: Any) -> str | None:
    """Readable text of an input or output value (None when empty).

    Chat messages (GenAI `parts`, OpenAI `content`, Monocle `{role: parts}` strings) become
    "role: text" lines (one message: its text), tool calls "name(arguments)", a list of parts
    their texts; a JSON string literal its text; other JSON
    stays as given (values that are not strings are dumped as JSON).
    """
    if value is None or value == "" or value == [] or value == {}:
        return None
    decoded = _json(value) if isinstance(value, str) else value
    if isinstance(decoded, str):
        return decoded
    text = _chat_text(decoded) if decoded is not None else None
    if text is None and isinstance(decoded, list) and decoded and all(
            isinstance(part, dict) and "type" in part for part in decoded):
        text = _parts_text(decoded, [])  # a bare list of parts (`gen_ai.system_instructions`)
    if text is not None:
        return text
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _chat_text(value: Any) -> str | None:
    items = value if isinstance(value, list) else [value]
    lines = []
    for item in items:
        line = _message_line(_json(item) if isinstance(item, str) else item)
        if line is None:
            return None
        lines.append(line)
    if len(lines) == 1:
        return lines[0][1]
    return "\n".join(f"{role}: {text}" for role, text in lines) if lines else None


def _message_line(message: Any) -> tuple[str, str] | None:
    """(role, text) of one chat message, or None when `message` is not one."""
    if not isinstance(message, dict):
        return None
    call = _tool_call_text(message)
    if "role" in message:
        body = message.get("parts", message.get("content"))
        calls = [call.get("function", call) for call in message.get("tool_calls") or [] if isinstance(call, dict)]
        role, text = message["role"], _parts_text(body, calls)
    elif call is not None:
        role, text = "assistant", call
    elif "call_id" in message and "output" in message:
        role, text = "tool", _parts_text(message["output"], [])
    elif len(message) == 1 and next(iter(message)) in CHAT_ROLES:
        role, body = next(iter(message.items()))
        text = _parts_text(body, [])
    else:
        return None
    return None if text is None else (str(role), text)


def _tool_call_text(item: dict) -> str | None:
    """"name(arguments)" of a tool call (GenAI `tool_call` part, OpenAI function, Monocle
    `tool_function`), else None."""
    name = item.get("name", item.get("tool_function"))
    arguments = item.get("arguments", item.get("tool_arguments"))
    if not isinstance(name, str) or (arguments is None and item.get("type") not in ("tool_call", "function_call")):
        return None
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, default=str)
    return f"{name}({arguments})"


def _parts_text(body: Any, calls: list[dict]) -> str | None:
    """Text of a message body: a string or a list of parts (text, tool calls, tool results)."""
    parts = [body] if isinstance(body, str) else [] if body is None else body
    if not isinstance(parts, list):
        return None
    texts = []
    for part in parts + calls:
        if isinstance(part, str):
            texts.append(part)
        elif not isinstance(part, dict):
            return None
        elif (call := _tool_call_text(part)) is not None:
            texts.append(call)
        else:
            text = next((part[key] for key in ("text", "content", "response", "result", "output")
                         if isinstance(part.get(key), str)), None)
            texts.append(text if text is not None else json.dumps(part, ensure_ascii=False, default=str))
    return "\n".join(texts)


# --- reading one span -----------------------------------------------------------------------------


def entities(span: Span) -> list[dict[str, Any]]:
    """Monocle's `entity.N.*` attributes as dicts ordered by N (`type`, `name`, `from_agent`, ...)."""
    found: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in span.attributes.items():
        match = ENTITY_KEY.match(key)
        if match:
            found[int(match.group(1))][match.group(2)] = value
    return [found[number] for number in sorted(found)]


def _entity_names(span: Span, prefix: str) -> list[str]:
    return [str(e["name"]) for e in entities(span)
            if str(e.get("type", "")).startswith(prefix) and e.get("name")]


def span_role(span: Span) -> str | None:
    """AGENT, LLM, TOOL, HANDOFF or None (see the module docstring for the attributes read)."""
    attributes = span.attributes
    for key, roles in (("gen_ai.operation.name", OPERATION_ROLES), ("span.type", MONOCLE_ROLES),
                       ("openinference.span.kind", OPENINFERENCE_ROLES), ("traceloop.span.kind", KIND_ROLES),
                       ("ioa_observe.span.kind", KIND_ROLES)):
        value = attributes.get(key)
        if isinstance(value, str) and value in roles:
            return roles[value]
    if any(key in attributes for key in USAGE_ATTRIBUTE_KEYS):
        return LLM
    if "gen_ai.tool.name" in attributes:
        return TOOL
    return None


def agent_label(span: Span, role: str | None) -> str | None:
    """The agent a span names itself: `gen_ai.agent.name` unless it repeats the framework, else
    (hand-off spans) `entity.N.from_agent`, else a Monocle agent entity; None when it names none."""
    attributes = span.attributes
    name = attributes.get("gen_ai.agent.name")
    frameworks = {str(attributes.get(key, "")).casefold() for key in ("gen_ai.provider.name", "gen_ai.system")}
    if isinstance(name, str) and name and name.casefold() not in frameworks:
        return name
    if role == HANDOFF:
        sender = next((e["from_agent"] for e in entities(span) if e.get("from_agent")), None)
        if sender:
            return str(sender)
    names = _entity_names(span, "agent")
    return names[0] if names else None


def tool_name(span: Span) -> str:
    """`gen_ai.tool.name`, `tool.name`, a Monocle tool entity, else the span name without "execute_tool "."""
    for key in ("gen_ai.tool.name", "tool.name"):
        if span.attributes.get(key):
            return str(span.attributes[key])
    names = _entity_names(span, "tool")
    if names:
        return names[0]
    if span.attributes.get("traceloop.span.kind") == "tool" and span.attributes.get("traceloop.entity.name"):
        return str(span.attributes["traceloop.entity.name"])
    return span.name.removeprefix("execute_tool ").strip() or span.name


def model_name(span: Span) -> str | None:
    """The model of an LLM span: response/request model, a Monocle model entity, else a LangChain
    `ls_model_name` association property; None when unknown."""
    candidates = [span.attributes.get(key) for key in ("gen_ai.response.model", "gen_ai.request.model",
                                                       "llm.model_name")]
    candidates += _entity_names(span, "model")
    candidates += [value for key, value in span.attributes.items() if key.endswith(".ls_model_name")]
    return next((str(c) for c in candidates if c is not None and str(c).casefold() not in NO_MODEL), None)


def usage(span: Span) -> tuple[int | None, int | None, int | None]:
    """(input, output, total) tokens from usage attributes or Monocle's `metadata` event."""
    sources = [span.attributes] + [e.attributes for e in span.events if e.name == "metadata"]

    def first(keys: tuple[str, ...]) -> int | None:
        return next((n for source in sources for key in keys
                     if (n := as_int(source.get(key))) is not None), None)

    return first(INPUT_TOKEN_KEYS), first(OUTPUT_TOKEN_KEYS), first(TOTAL_TOKEN_KEYS)


def span_io(span: Span) -> tuple[Any, Any]:
    """(input, output) values of a span, raw (render them with `render`); None where absent."""
    return _io(span, INPUT_KEYS, INPUT_EVENTS, "prompt"), _io(span, OUTPUT_KEYS, OUTPUT_EVENTS, "completion")


def _io(span: Span, keys: tuple[str, ...], event_keys: dict[str, tuple[str, ...]], indexed: str) -> Any:
    for key in keys:
        if span.attributes.get(key) not in (None, "", [], {}):
            return span.attributes[key]
    numbered: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in span.attributes.items():
        match = INDEXED_PROMPT.match(key)
        if match and match.group(1) == indexed:
            numbered[int(match.group(2))][match.group(3)] = value
    if numbered:
        return [numbered[n] for n in sorted(numbered)]
    for event in span.events:
        for key in event_keys.get(event.name, ()):
            if event.attributes.get(key) not in (None, "", [], {}):
                return event.attributes[key]
    if indexed == "prompt":
        chat = [{"role": MESSAGE_EVENTS[e.name], "content": e.attributes.get("content")}
                for e in span.events if e.name in MESSAGE_EVENTS]
        return chat or None
    return None


def received_message(span: Span) -> Message | None:
    """The message an executor span received (Agent Framework `WorkflowMessage` in its input,
    else Monocle `entity.N.from_agent`), or None."""
    chained = next((e for e in entities(span) if e.get("from_agent") or e.get("from_agent_span_id")), {})
    try:
        from_span = hex_id(chained.get("from_agent_span_id"), 8)
    except ValueError:
        from_span = None
    text, _ = span_io(span)
    if isinstance(text, str) and text.startswith(WORKFLOW_MESSAGE):
        source, target, key = (MESSAGE_SOURCE.search(text), MESSAGE_TARGET.search(text),
                               MESSAGE_KEY.search(text))
        return Message(sender=source.group(1) if source else None,
                       receiver=target.group(1) if target else None,
                       key=key.group(1) if key else None, from_span=from_span, workflow=True)
    if chained:
        sender = chained.get("from_agent")
        return Message(sender=str(sender) if sender else None, receiver=None, key=None,
                       from_span=from_span, workflow=False)
    return None


def _canonical(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.casefold())


# --- building the trace ---------------------------------------------------------------------------


def build_trace(spans: Iterable[Span], *, source_format: str, trace_id: str,
                sources: Iterable[str] = ()) -> Trace:
    """The orchestration trace of one trace id's spans, given in any order (chunks merged).

    `trace_id` (hex) becomes `source_id`; `sources` names the files, kept in the trace attributes.
    The result depends on the set of spans only, not on their order; a span id seen twice keeps
    its earliest-starting record. Raises ValueError when there are no spans or a
    span has no id.
    """
    return _TraceBuilder(list(spans), source_format, trace_id, list(sources)).build()


class _TraceBuilder:
    """One use: `build()` reads the span tree, assigns agents, creates events, then edges.

    State by span id: `parent` (placeholders added, cycles cut), `role`, `message`, `owner` (the
    acting agent), `invocation` (its root span id). By event id: `rank` (sort key after `t`),
    `event_span`, `event_inv` (the invocation the event belongs to, for the invoked agent's own
    events). Delegations: `deliveries` (resolved), `pending_handoffs`, `pending_broadcasts`;
    `uninvoked` (span tree root id -> invocation roots nobody invoked: group chat turns).
    """

    def __init__(self, spans: list[Span], source_format: str, trace_id: str, sources: list[str]):
        self.source_format, self.trace_id, self.sources = source_format, trace_id, sources
        self.by_id: dict[str, Span] = {}
        for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id or "", s.end_ns, s.name)):
            if not span.span_id:
                raise ValueError(f"span {span.name!r} has no span id")
            self.by_id.setdefault(span.span_id, span)
        if not self.by_id:
            raise ValueError(f"trace {trace_id} has no spans")
        self.real = list(self.by_id.values())
        self.t0 = min(span.start_ns for span in self.real)
        self.parent: dict[str, str | None] = {s.span_id: s.parent_id for s in self.real}
        self._add_placeholders()
        self.depth = self._depths()
        self.order = sorted(self.by_id.values(), key=lambda s: (s.start_ns, self.depth[s.span_id], s.span_id))
        self.top_down = sorted(self.by_id.values(), key=lambda s: (self.depth[s.span_id], s.start_ns, s.span_id))
        self.children: dict[str, list[Span]] = defaultdict(list)
        for span in self.order:
            if self.parent[span.span_id]:
                self.children[self.parent[span.span_id]].append(span)
        self.role = {sid: span_role(s) for sid, s in self.by_id.items()}
        self.message = {sid: m for sid, s in self.by_id.items() if (m := received_message(s))}
        self.texts: dict[str, tuple[str | None, str | None]] = {}
        self.named_by: dict[str, str] = {}
        self.owner: dict[str, str | None] = {}
        self.invocation: dict[str, str | None] = {}
        self.members: dict[str, list[Span]] = defaultdict(list)
        self.productive: set[str] = set()
        self.acting: set[str] = set()
        self.agents_by_canonical: dict[str, str] = {}
        self.events: list[Event] = []
        self.rank: dict[str, tuple[int, int]] = {}
        self.event_span: dict[str, Span] = {}
        self.event_inv: dict[str, str | None] = {}
        self.appeared: dict[str, float] = {}
        self.parents: dict[str, str] = {}
        self.deliveries: list[Delivery] = []
        self.pending_handoffs: list[Delivery] = []
        self.pending_broadcasts: dict[tuple[str, str], Delivery] = {}
        self.uninvoked: dict[str | None, list[Span]] = defaultdict(list)
        self.broadcast_keys: set[tuple[str, str]] = set()
        self.tool_results: list[tuple[Event, Event]] = []
        self.spawns: list[tuple[Event, str]] = []
        self.position: dict[str, int] = {}
        self.lanes: dict[str, list[Event]] = defaultdict(list)
        self.lane_starts: dict[str, list[float]] = {}
        self.edge_types: dict[tuple[str, str], str] = {}

    def build(self) -> Trace:
        self._assign_agents()
        for span in self.order:
            sid = span.span_id
            if self.invocation[sid] == sid:
                self._invoke(span)
            elif self.owner[sid] is None and sid in self.message:
                self._broadcast(span)
            self._span_events(span)
        self._turn_events()
        edges = self._edges()
        root = self._root()
        return Trace(source_format=self.source_format, source_id=self.trace_id, name=self._name(root),
                     system=root.service or "", agents=self._agents(), events=self.events, edges=edges,
                     costs=self._costs(), attributes=self._attributes())

    # -- the span tree

    def _add_placeholders(self) -> None:
        """A placeholder span for each parent id that never arrived, spanning its children."""
        orphans: dict[str, list[Span]] = defaultdict(list)
        for span in self.real:
            if span.parent_id and span.parent_id not in self.by_id:
                orphans[span.parent_id].append(span)
        for parent_id, kids in orphans.items():
            services = Counter(k.service for k in kids if k.service)
            self.by_id[parent_id] = Span(
                trace_id=self.trace_id, span_id=parent_id, parent_id=None, name="(missing span)",
                start_ns=min(k.start_ns for k in kids), end_ns=max(k.end_ns for k in kids),
                service=services.most_common(1)[0][0] if services else None, missing=True)
            self.parent[parent_id] = None

    def _depths(self) -> dict[str, int]:
        """Depth of every span (roots 0); a parent link that closes a cycle is cut."""
        depth: dict[str, int] = {}
        for span_id in self.by_id:
            path: list[str] = []
            on_path: set[str] = set()
            node: str | None = span_id
            while node is not None and node not in depth:
                if node in on_path:
                    self.parent[path[-1]] = None
                    node = None
                    break
                path.append(node)
                on_path.add(node)
                node = self.parent[node]
            base = depth[node] + 1 if node is not None else 0
            for offset, sid in enumerate(reversed(path)):
                depth[sid] = base + offset
        return depth

    def _parent_span(self, span: Span) -> Span | None:
        parent_id = self.parent[span.span_id]
        return self.by_id[parent_id] if parent_id else None

    def _text(self, span: Span) -> tuple[str | None, str | None]:
        """(input, output) of `span` rendered as text, computed once."""
        if span.span_id not in self.texts:
            raw_input, raw_output = span_io(span)
            self.texts[span.span_id] = (render(raw_input), render(raw_output))
        return self.texts[span.span_id]

    # -- agents and invocations

    def _assign_agents(self) -> None:
        """Fill `owner` (span id -> acting agent, None where unknown), `invocation` (span id -> the
        root of its invocation), `members` and `productive` (invocations that will have events: with
        an LLM, tool or hand-off span, an output, or an agent span that names their agent: see
        `_names_owner`)."""
        labels = {sid: agent_label(s, self.role[sid]) for sid, s in self.by_id.items()}
        for sid, label in labels.items():
            if label:
                named = self.by_id[sid].attributes.get("gen_ai.agent.name") == label
                self.named_by.setdefault(label, "gen_ai.agent.name" if named else "entity")
        for message in self.message.values():
            for name in (message.sender, message.receiver):
                if name:
                    self.named_by.setdefault(name, "message")
        acting, workflow_labels = self._workflow_labels(labels)
        claims = self._claims(labels)
        in_tool: dict[str, bool] = {}
        for span in self.top_down:
            sid, parent = span.span_id, self._parent_span(span)
            label = labels[sid] if labels[sid] not in workflow_labels else None
            message = self.message.get(sid)
            in_tool[sid] = parent is not None and (self.role[parent.span_id] == TOOL or in_tool[parent.span_id])
            if sid in acting:
                owner = acting[sid]
            elif label:
                owner = label
            elif message is not None and message.workflow:
                owner = message.receiver or claims.get(sid)
            elif sid in claims:
                owner = claims[sid]
            elif span.missing:
                owner = None
            elif parent is not None and self.owner[parent.span_id] is not None and (
                    in_tool[sid] or not parent.service or not span.service or parent.service == span.service):
                owner = self.owner[parent.span_id]
            else:
                owner = span.service or UNKNOWN_SERVICE
                self.named_by.setdefault(owner, "service")
            self.owner[sid] = owner
        for span in self.top_down:
            sid, parent = span.span_id, self._parent_span(span)
            if self.owner[sid] is None:
                self.invocation[sid] = None
            elif parent is None or self.owner[parent.span_id] != self.owner[sid] or self._sender(span):
                self.invocation[sid] = sid
            else:
                self.invocation[sid] = self.invocation[parent.span_id]
        for span in self.order:
            inv = self.invocation[span.span_id]
            if inv is None:
                continue
            self.members[inv].append(span)
            if not span.missing and (self.role[span.span_id] in (LLM, TOOL, HANDOFF)
                                     or self._text(span)[1] is not None or self._names_owner(span)):
                self.productive.add(inv)
        self.acting = {self.owner[inv] for inv in self.productive}
        self.agents_by_canonical = {_canonical(name): name for name in self.named_by}

    def _workflow_labels(self, labels: dict[str, str | None]) -> tuple[dict[str, str], set[str]]:
        """Executors Monocle labelled with the workflow's name (module docstring, "messages"):
        span id -> the agent that acted there, and the labels that name workflows."""
        senders: dict[str, set[str]] = defaultdict(set)
        for message in self.message.values():
            if message.workflow and message.from_span and message.sender:
                senders[message.from_span].add(message.sender)
        acting: dict[str, str] = {}
        workflow_labels: set[str] = set()
        for sid, names in senders.items():
            label = labels.get(sid)
            if label and sid not in self.message and len(names) == 1 and label not in names:
                acting[sid] = next(iter(names))
                workflow_labels.add(label)
        return acting, workflow_labels

    def _claims(self, labels: dict[str, str | None]) -> dict[str, str]:
        """Span id -> the one agent that its labelled LLM and tool children name (their caller)."""
        claims = {}
        for sid, kids in self.children.items():
            named = {labels[k.span_id] for k in kids if self.role[k.span_id] in (LLM, TOOL) and labels[k.span_id]}
            if len(named) == 1:
                claims[sid] = named.pop()
        return claims

    def _names_owner(self, span: Span) -> bool:
        """Whether `span` is an agent span (not an LLM, tool or hand-off span) whose
        `gen_ai.agent.name` is the agent acting there: a GenAI `invoke_agent` span, a turn of that
        agent even when nothing is instrumented below it. Monocle's agent entities do not count: an
        Agent Framework executor span without inference below it only buffered a message."""
        return (not span.missing and self.role[span.span_id] in (AGENT, None)
                and span.attributes.get("gen_ai.agent.name") == self.owner[span.span_id])

    def _sender(self, span: Span) -> str | None:
        """The agent that sent the message `span` received, when another than the span's agent."""
        message = self.message.get(span.span_id)
        sender = message.sender if message else None
        return sender if sender and sender != self.owner[span.span_id] else None

    # -- events

    def _t(self, ns: int) -> float:
        return round(max(ns - self.t0, 0) / 1e9, 6)

    def _event(self, span: Span, agent: str, type_: str, event_id: str, *, t_ns: int | None = None,
               end_ns: int | None = None, attributes: dict[str, Any] | None = None, **fields: Any) -> Event:
        """Add an event made from `span` (its ids go to the attributes); tokens estimated if absent."""
        t = self._t(span.start_ns if t_ns is None else t_ns)
        span_attributes = {"span_id": span.span_id, "parent_span_id": self.parent[span.span_id],
                           "trace_id": span.trace_id, "span_name": span.name}
        if span.missing:
            span_attributes["span_missing"] = True
        event = estimate_missing_tokens(Event(
            id=event_id, t=t, t_end=None if end_ns is None else max(self._t(end_ns), t), type=type_,
            agent=agent, attributes={**span_attributes, **(attributes or {})}, **fields))
        self.rank[event_id] = (0 if type_ == "spawn" else 1, len(self.events))
        self.events.append(event)
        self.event_span[event_id] = span
        self.event_inv[event_id] = self.invocation[span.span_id] if self.owner[span.span_id] == agent else None
        self.appeared.setdefault(agent, t)
        return event

    def _span_events(self, span: Span) -> None:
        """The events of one span by its role (module docstring, "LLM spans")."""
        agent, role = self.owner[span.span_id], self.role[span.span_id]
        if agent is None or span.missing:
            return
        if role == LLM and not self._has_llm_below(span):
            self._message_event(span, agent)
        elif role == TOOL and not self._runs_other_agent(span) and not self._repeats_parent_tool(span):
            target = self._handoff_tool_target(span)
            if target:
                self._handoff_event(span, agent, target)
            else:
                self._tool_events(span, agent)
        elif role == HANDOFF:
            target = next((e["to_agent"] for e in entities(span) if e.get("to_agent")), None)
            if target:
                self._handoff_event(span, agent, str(target))

    def _descendants(self, span: Span) -> Iterable[Span]:
        stack = list(self.children.get(span.span_id, ()))
        while stack:
            kid = stack.pop()
            yield kid
            stack.extend(self.children.get(kid.span_id, ()))

    def _has_llm_below(self, span: Span) -> bool:
        """Whether an LLM span of the same agent nests inside this one (keep the innermost call)."""
        return any(self.role[kid.span_id] == LLM and self.owner[kid.span_id] == self.owner[span.span_id]
                   for kid in self._descendants(span))

    def _runs_other_agent(self, span: Span) -> bool:
        """Whether another agent acts inside this tool span (an agent called as a tool)."""
        return any(self.owner[kid.span_id] not in (None, self.owner[span.span_id])
                   for kid in self._descendants(span))

    def _repeats_parent_tool(self, span: Span) -> bool:
        parent = self._parent_span(span)
        return (parent is not None and self.role[parent.span_id] == TOOL
                and self.owner[parent.span_id] == self.owner[span.span_id]
                and tool_name(parent) == tool_name(span))

    def _handoff_tool_target(self, span: Span) -> str | None:
        name = tool_name(span)
        prefix = next((p for p in HANDOFF_TOOL_PREFIXES if name.startswith(p)), None)
        return self.agents_by_canonical.get(_canonical(name[len(prefix):])) if prefix else None

    @staticmethod
    def _usage_fields(span: Span) -> tuple[int | None, dict[str, Any]]:
        """(tokens, attributes) from usage: tokens = input + output, else the reported total."""
        n_in, n_out, n_total = usage(span)
        attributes = {key: n for key, n in (("input_tokens", n_in), ("output_tokens", n_out)) if n is not None}
        tokens = (n_in or 0) + (n_out or 0) if attributes else n_total
        return tokens, attributes

    @staticmethod
    def _status(span: Span) -> dict[str, Any]:
        return {} if span.error is None else {"status": "error", "error": span.error or True}

    def _message_event(self, span: Span, agent: str, *, t_ns: int | None = None, end_ns: int | None = None) -> None:
        """A `message` event of `span` (t, t_end: the span's unless given): content its output, else
        its input flagged `content_from: "input"` (an input beside an output is kept as `input`);
        model, token usage and error status kept."""
        text_in, text_out = self._text(span)
        tokens, attributes = self._usage_fields(span)
        model = model_name(span)
        if model:
            attributes["model"] = model
        if text_out is None and text_in is not None:
            attributes["content_from"] = "input"
        elif text_in is not None:
            attributes["input"] = text_in
        self._event(span, agent, "message", span.span_id, t_ns=t_ns, end_ns=span.end_ns if end_ns is None else end_ns,
                    content=text_out if text_out is not None else text_in, tokens=tokens,
                    attributes={**attributes, **self._status(span)})

    def _tool_events(self, span: Span, agent: str) -> None:
        text_in, text_out = self._text(span)
        tool = tool_name(span)
        call = self._event(span, agent, "tool_call", span.span_id, end_ns=span.end_ns, content=text_in, tool=tool)
        if text_out is not None or span.error is not None:
            result = self._event(span, agent, "tool_result", f"{span.span_id}:result", t_ns=span.end_ns,
                                 content=text_out, tool=tool, attributes=self._status(span))
            self.tool_results.append((call, result))

    def _handoff_event(self, span: Span, agent: str, target: str) -> None:
        """A hand-off span or tool: a delegate event waiting for the target's next invocation."""
        event = self._event(span, agent, "delegate", span.span_id, end_ns=span.end_ns,
                            content=self._text(span)[0], from_=agent, to=target,
                            tool=tool_name(span) if self.role[span.span_id] == TOOL else None)
        self.pending_handoffs.append(Delivery(event=event, sender=agent, receiver=target))

    def _turn_events(self) -> None:
        """An invocation without LLM or tool events is one turn: a `message` event spanning it, made
        from its outermost span (not LLM or tool) with an output, else from its outermost agent span
        that names its agent (`_names_owner`; content: that span's input). Agents instrumented only
        at agent level (`invoke_agent` spans without chat or tool children) act by these turns."""
        acted = set(filter(None, self.event_inv.values()))
        for root in self.order:
            root_id = root.span_id
            if root_id not in self.productive or root_id in acted:
                continue
            spans = [s for s in self.members[root_id] if not s.missing and self.role[s.span_id] in (AGENT, None)]
            turn = (next((s for s in spans if self._text(s)[1] is not None), None)
                    or next((s for s in spans if self._names_owner(s)), None))
            if turn is not None:
                self._message_event(turn, self.owner[root_id], t_ns=root.start_ns, end_ns=root.end_ns)

    # -- delegations

    def _invoke(self, root: Span) -> None:
        """Find who invoked the invocation rooted at `root` (module docstring, "invocation")."""
        agent, sender = self.owner[root.span_id], self._sender(root)
        if root.span_id not in self.productive and not sender:
            return
        start = self._t(root.start_ns)
        parent = self._parent_span(root)
        enclosing = self.owner[parent.span_id] if parent is not None else None
        handoffs = [d for d in self.pending_handoffs if d.receiver == agent and d.event.t <= start]
        if sender:
            self._delegate(sender, agent, root)
        elif handoffs:
            for delivery in handoffs:
                self.pending_handoffs.remove(delivery)
                self._deliver(delivery, agent, root)
        elif enclosing not in (None, agent) and (enclosing in self.acting or self.named_by[enclosing] != "service"):
            self._delegate(enclosing, agent, root)
        else:
            delivered = False
            for key, delivery in list(self.pending_broadcasts.items()):
                if delivery.sender != agent and delivery.event.t <= start:
                    del self.pending_broadcasts[key]
                    delivery.event.to = agent
                    self._deliver(delivery, agent, root)
                    delivered = True
            if not delivered:
                self.uninvoked[self._tree_root(root)].append(root)
        self.appeared.setdefault(agent, start)

    def _tree_root(self, span: Span) -> str:
        """The id of the top span of the span tree holding `span`."""
        sid = span.span_id
        while self.parent[sid] is not None:
            sid = self.parent[sid]
        return sid

    def _delegate(self, sender: str, receiver: str, root: Span) -> None:
        """A delegate event of `sender` at the start of `receiver`'s invocation; its content is the
        first input of the invocation's agent (not LLM or tool) spans, else the input of the span
        that called it (see `_message_content` for Agent Framework messages)."""
        content, attributes = self._message_content(root)
        parent = self._parent_span(root)
        if content is None and not attributes:
            content = next((text for span in self.members[root.span_id]
                            if self.role[span.span_id] in (AGENT, None) and (text := self._text(span)[0])),
                           self._text(parent)[0] if parent is not None else None)
        self.appeared.setdefault(sender, self._t(root.start_ns))
        self._spawn(sender, receiver, root, root.start_ns)
        event = self._event(root, sender, "delegate", f"{root.span_id}:delegate", content=content,
                            from_=sender, to=receiver, attributes=attributes)
        self.deliveries.append(Delivery(event=event, sender=sender, receiver=receiver, root=root))

    def _deliver(self, delivery: Delivery, receiver: str, root: Span) -> None:
        """A waiting hand-off or broadcast reaches `receiver`'s invocation at `root`."""
        delivery.receiver, delivery.root = receiver, root
        self._spawn(delivery.sender, receiver, root, self.event_span[delivery.event.id].start_ns)
        self.deliveries.append(delivery)

    def _broadcast(self, span: Span) -> None:
        """A message to an executor that no name identifies: one waiting delegate per send."""
        message = self.message[span.span_id]
        key = (message.sender or "", message.key or span.span_id)
        if not message.sender or key in self.broadcast_keys:
            return
        self.broadcast_keys.add(key)
        content, attributes = self._message_content(span)
        event = self._event(span, message.sender, "delegate", f"{span.span_id}:delegate", content=content,
                            from_=message.sender, attributes=attributes)
        self.pending_broadcasts[key] = Delivery(event=event, sender=message.sender, receiver=None)

    def _message_content(self, span: Span) -> tuple[str | None, dict[str, Any]]:
        """(content, attributes) of the message `span` received. An Agent Framework
        `WorkflowMessage` is a Python repr naming objects, not their text: it is kept as the
        attribute `message`, with no content."""
        message = self.message.get(span.span_id)
        if message is not None and message.workflow:
            return None, {"message": self._text(span)[0]}
        return None, {}

    def _spawn(self, sender: str, receiver: str, root: Span, t_ns: int) -> None:
        """The first invocation of `receiver` by another agent spawns it: a spawn event, a parent."""
        if receiver in self.appeared or receiver == sender:
            return
        self.parents[receiver] = sender
        event = self._event(root, sender, "spawn", f"{root.span_id}:spawn", t_ns=t_ns, from_=sender,
                            to=receiver)
        self.appeared[receiver] = event.t
        self.spawns.append((event, receiver))

    # -- edges

    def _edges(self) -> list[Edge]:
        """Sort the events, then add spawn, message, return, tool_dependency and causal edges
        (the first type given to a pair wins); only edges pointing forward in that order are kept."""
        self.events.sort(key=lambda e: (e.t, *self.rank[e.id]))
        self.position = {e.id: i for i, e in enumerate(self.events)}
        for event in self.events:
            self.lanes[event.agent].append(event)
        self.lane_starts = {agent: [e.t for e in lane] for agent, lane in self.lanes.items()}
        for spawn, agent in self.spawns:
            self._add(spawn, self._next_of(agent, spawn, spawn.t), "spawn")
        returns: dict[str, set[str]] = defaultdict(set)
        for delivery in self.deliveries:
            own = [e for e in self.lanes.get(delivery.receiver or "", [])
                   if self.event_inv[e.id] == delivery.root.span_id]
            first = own[0] if own else self._next_of(delivery.receiver, delivery.event, delivery.event.t)
            self._add(delivery.event, first, "message")
            if own:
                self._return(delivery, own, returns)
        for event in self.events:
            if event.type == "message" and len(returns.get(event.id, ())) >= 2:
                event.type = "aggregate"
        for call, result in self.tool_results:
            self._add(call, result, "tool_dependency")
        self._chained_turns()
        self._group_chat_turns()
        for delivery in self.pending_broadcasts.values():
            delivery.event.type = "message"
        return [Edge(src, dst, type_) for (src, dst), type_ in self.edge_types.items()]

    def _add(self, src: Event, dst: Event | None, type_: str) -> None:
        if dst is not None and self.position[src.id] < self.position[dst.id]:
            self.edge_types.setdefault((src.id, dst.id), type_)

    def _next_of(self, agent: str | None, after: Event, t: float) -> Event | None:
        """The first event of `agent` starting at or after `t` that comes after `after`."""
        lane = self.lanes.get(agent) if agent else None
        if not lane:
            return None
        start = bisect_left(self.lane_starts[agent], t)
        return next((e for e in lane[start:] if self.position[e.id] > self.position[after.id]), None)

    @staticmethod
    def _end(event: Event) -> float:
        return event.t_end if event.t_end is not None else event.t

    def _return(self, delivery: Delivery, own: list[Event], returns: dict[str, set[str]]) -> None:
        """The invocation's last event returns to the sender's next event after it ends, else to the
        next event of the agent whose span encloses it; a `message` becomes a `return` event.
        `returns` collects, per receiving event, the agents that returned to it."""
        last = max(own, key=lambda e: (self._end(e), *self.rank[e.id]))
        end = self._t(delivery.root.end_ns)
        parent = self._parent_span(delivery.root)
        enclosing = self.owner[parent.span_id] if parent is not None else None
        target = self._next_of(delivery.sender, last, end)
        if target is None and enclosing not in (None, delivery.receiver):
            target = self._next_of(enclosing, last, end)
        if target is None:
            return
        self._add(last, target, "return")
        returns[target.id].add(last.agent)
        if last.type == "message":
            last.type, last.from_, last.to = "return", last.agent, target.agent

    def _chained_turns(self) -> None:
        """`causal` edges along `from_agent_span_id`: the last event of the turn run at that span ->
        the delegate delivered at the span that names it, else that span's first event."""
        turns: dict[str, list[Event]] = defaultdict(list)
        delivered: dict[str, Event] = {}
        for event in self.events:
            if self.event_inv[event.id]:
                turns[self.event_inv[event.id]].append(event)
            elif event.type == "delegate":
                delivered.setdefault(self.event_span[event.id].span_id, event)
        for sid, message in self.message.items():
            before = turns.get(message.from_span or "")
            after = delivered.get(sid) or (turns[sid][0] if turns.get(sid) else None)
            if before and after is not None:
                self._add(max(before, key=lambda e: (self._end(e), *self.rank[e.id])), after, "causal")

    def _group_chat_turns(self) -> None:
        """Invocations in one span tree that nobody invoked (under a team, workflow or runtime
        span that is no agent) are the turns of a group chat when two or more agents take them
        one after another: the next speaker receives each turn (AutoGen's round robin). The last
        event of a turn gets a `message` edge to the next turn's first event, and a `message`
        event its receiver in `to`; a turn that starts before the previous one ends is no reply."""
        for roots in self.uninvoked.values():
            if len({self.owner[r.span_id] for r in roots}) < 2:
                continue
            for before, after in zip(roots, roots[1:]):
                sender, receiver = self.owner[before.span_id], self.owner[after.span_id]
                if sender == receiver or after.start_ns < before.end_ns:
                    continue
                said = [e for e in self.lanes.get(sender or "", []) if self.event_inv[e.id] == before.span_id]
                heard = [e for e in self.lanes.get(receiver or "", []) if self.event_inv[e.id] == after.span_id]
                if not said or not heard:
                    continue
                last = max(said, key=lambda e: (self._end(e), *self.rank[e.id]))
                self._add(last, heard[0], "message")
                if last.type == "message" and last.to is None:
                    last.to = receiver

    # -- trace-level fields

    def _root(self) -> Span:
        """The earliest span without a (received) parent."""
        return next((s for s in self.order if not s.missing and (
            self.parent[s.span_id] is None or self.by_id[self.parent[s.span_id]].missing)), self.order[0])

    def _name(self, root: Span) -> str:
        for span in [root] + self.real:
            name = next((span.attributes[key] for key in WORKFLOW_NAME_KEYS if span.attributes.get(key)), None)
            if name:
                return str(name)
        return root.name

    def _agents(self) -> list[Agent]:
        """Agents that act or spawn, in order of appearance. Attributes: `named_by` (where the name
        came from), `service` (when one), `id` / `description` (`gen_ai.agent.*`); the system
        prompt from the first `gen_ai.system_instructions` of its spans."""
        acting = {e.agent for e in self.events} | set(self.parents)
        services: dict[str, set[str]] = defaultdict(set)
        facts: dict[str, dict[str, Any]] = defaultdict(dict)
        for span in self.order:
            owner = self.owner[span.span_id]
            if owner is None:
                continue
            if span.service:
                services[owner].add(span.service)
            for key, fact in (("gen_ai.agent.id", "id"), ("gen_ai.agent.description", "description"),
                              ("gen_ai.system_instructions", "system_prompt")):
                if span.attributes.get(key):
                    facts[owner].setdefault(fact, span.attributes[key])
        agents = []
        for name, first in sorted(self.appeared.items(), key=lambda item: item[1]):
            if name not in acting:
                continue
            known = facts[name]
            attributes = {"named_by": self.named_by.get(name, "message"),
                          **{key: str(known[key]) for key in ("id", "description") if key in known}}
            if len(services[name]) == 1:
                attributes["service"] = next(iter(services[name]))
            agents.append(Agent(name=name, parent=self.parents.get(name), spawned_at=first,
                                system_prompt=render(known.get("system_prompt")), attributes=attributes))
        return agents

    def _costs(self) -> dict[str, float]:
        """tokens: the sum of reported usage (else of estimates), wall_clock_s, tool_calls."""
        reported = [e.tokens for e in self.events if e.tokens is not None and not e.attributes.get(TOKENS_ESTIMATED)]
        tokens = sum(reported) if reported else sum(e.tokens or 0 for e in self.events)
        end = max(s.end_ns for s in self.real)
        return {"tokens": tokens, "wall_clock_s": round((end - self.t0) / 1e9, 6),
                "tool_calls": sum(e.type == "tool_call" for e in self.events)}

    def _attributes(self) -> dict[str, Any]:
        """trace_id, sources, spans (count), `start_time_unix_nano` (the origin of `t`),
        conversation/session id, the first input, and `tokens_estimated` when no span reported usage."""
        attributes: dict[str, Any] = {"trace_id": self.trace_id, "sources": self.sources, "spans": len(self.real),
                                      "start_time_unix_nano": self.t0}
        for name, key in TRACE_ATTRIBUTE_KEYS.items():
            value = next((s.attributes[key] for s in self.order if s.attributes.get(key)), None)
            if value is not None:
                attributes[name] = value
        first_input = next((text for s in self.order if not s.missing and (text := self._text(s)[0])), None)
        if first_input is not None:
            attributes["input"] = first_input
        if not any(e.tokens is not None and not e.attributes.get(TOKENS_ESTIMATED) for e in self.events):
            attributes[TOKENS_ESTIMATED] = True
        return attributes
