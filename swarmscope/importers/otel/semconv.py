"""Attribute readers for the semantic conventions that agent exporters write: OpenTelemetry GenAI,
Monocle, OpenInference, Traceloop and AGNTCY observe (role, agent name, tool, model, tokens,
input/output content, received messages). Attribute names: `keys` (from the convention packages);
OpenInference's flattened lists: `openinference`; transfers, callers, evaluations: `genai`.

Which attribute of which convention is read, and in what order: docs/otel-mapping.md.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import genai, keys, langchain, openinference
from .span import Span, as_int, hex_id, span_memo

AGENT, LLM, TOOL, HANDOFF = "agent", "llm", "tool", "handoff"
#: GenAI `invoke_workflow` (the trace root), `plan` (an orchestrator decision), `create_agent`
#: (a spawn) and evaluation spans.
WORKFLOW, PLAN, CREATE, EVALUATION = "workflow", "plan", "create", "evaluation"

#: `gen_ai.operation.name` -> span role (GenAI semantic conventions).
OPERATION_ROLES = {
    keys.INVOKE_AGENT: AGENT,
    keys.EXECUTE_TOOL: TOOL,
    keys.CHAT: LLM,
    keys.TEXT_COMPLETION: LLM,
    keys.GENERATE_CONTENT: LLM,
    "completion": LLM,
    keys.INVOKE_WORKFLOW: WORKFLOW,
    keys.PLAN: PLAN,
    keys.CREATE_AGENT: CREATE,
    keys.RETRIEVAL: TOOL,
    **{operation: TOOL for operation in keys.MEMORY_OPERATIONS},
}
#: Monocle `span.type` -> span role.
MONOCLE_ROLES = {
    "agentic.invocation": AGENT,
    "agentic.turn": AGENT,
    "agentic.request": AGENT,
    "agentic.delegation": HANDOFF,
    "agentic.tool.invocation": TOOL,
    "agentic.mcp.invocation": TOOL,
    "retrieval": TOOL,
    "inference": LLM,
    "inference.framework": LLM,
    "inference.modelapi": LLM,
}
#: Monocle span types of the request an agent system received from outside (monocle_apptrace's
#: `SPAN_TYPES.AGENTIC_REQUEST` = "agentic.turn": "the initial request sent to an agent from an
#: external source"; "agentic.request" its earlier name). Agent Framework's and ADK's name no agent.
MONOCLE_REQUESTS = frozenset({"agentic.turn", "agentic.request"})
#: `openinference.span.kind` -> span role.
OPENINFERENCE_ROLES = {keys.OI_AGENT: AGENT, keys.OI_LLM: LLM, keys.OI_TOOL: TOOL, keys.OI_RETRIEVER: TOOL}
#: `traceloop.span.kind` / `ioa_observe.span.kind` -> span role.
KIND_ROLES = {"agent": AGENT, "tool": TOOL}
#: Tool-name prefixes of hand-offs: OpenAI Agents SDK, Microsoft Agent Framework.
HANDOFF_TOOL_PREFIXES = ("transfer_to_", "handoff_to_")
#: `named_by` of an agent named by its span name (OpenInference AGENT / CHAIN spans that nothing else
#: names): like a service, it invokes another agent only where it acts itself.
SPAN_NAME = "span_name"
#: `named_by` of an agent named by the workflow event a step span received (LlamaIndex AgentWorkflow's
#: `current_agent_name`, `openinference.workflow_event_agent`).
WORKFLOW_EVENT = "workflow_event"
#: Service name when a span has none (the OpenTelemetry SDK default).
UNKNOWN_SERVICE = "unknown_service"
#: Values that name no model.
NO_MODEL = {"", "unknown", "none"}

#: Input / output attributes, first found wins; OpenInference's `llm.input_messages` /
#: `llm.output_messages` (flattened) and `llm.prompts` are read by `openinference`.
INPUT_KEYS = (
    keys.TOOL_CALL_ARGUMENTS,
    keys.PYDANTIC_AI_TOOL_ARGUMENTS,
    keys.INPUT_MESSAGES,
    keys.PROMPT,
    keys.RETRIEVAL_QUERY_TEXT,
    keys.MEMORY_QUERY_TEXT,
    keys.LLM_INPUT_MESSAGES,
    keys.LLM_PROMPTS,
    keys.INPUT_VALUE,
    "traceloop.entity.input",
    "gen_ai.task.input",
    "ioa_observe.entity.input",
    keys.ADK_TOOL_CALL_ARGS,
    keys.ADK_LLM_REQUEST,
)
OUTPUT_KEYS = (
    keys.TOOL_CALL_RESULT,
    keys.PYDANTIC_AI_TOOL_RESPONSE,
    keys.OUTPUT_MESSAGES,
    keys.COMPLETION,
    keys.RETRIEVAL_DOCUMENTS,
    keys.MEMORY_RECORDS,
    keys.LLM_OUTPUT_MESSAGES,
    keys.OUTPUT_VALUE,
    "traceloop.entity.output",
    "gen_ai.task.output",
    "ioa_observe.entity.output",
    keys.ADK_TOOL_RESPONSE,
    keys.ADK_LLM_RESPONSE,
)
#: Values Google ADK writes into its `gcp.vertex.agent.*` content attributes where there is no
#: content (`{}` on tool spans for the LLM request and response, content capture off; `N/A`).
ADK_PLACEHOLDERS = frozenset({"{}", "N/A"})
#: Span events carrying input / output: event name -> attribute keys, first found wins.
INPUT_EVENTS = {
    "data.input": ("input",),
    "gen_ai.content.prompt": ("gen_ai.prompt",),
    "gen_ai.client.inference.operation.details": ("gen_ai.input.messages",),
}
OUTPUT_EVENTS = {
    "data.output": ("response", "output"),
    "gen_ai.content.completion": ("gen_ai.completion",),
    "gen_ai.client.inference.operation.details": ("gen_ai.output.messages",),
    "gen_ai.choice": ("message", "content"),
}
#: Older GenAI conventions: one span event per chat message, its text in `content`.
MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
#: The fields of a Gemini `FunctionResponse` (google-genai `types.FunctionResponse`).
FUNCTION_RESPONSE_KEYS = frozenset({"id", "name", "response", "parts", "will_continue", "scheduling"})
#: Fields beside `message` that make a dict a GenAI `gen_ai.choice` event body (events.yaml).
CHOICE_KEYS = frozenset({"index", "finish_reason"})
#: Roles of chat messages written as `{role: parts}` (Monocle's OpenAI Responses inputs).
CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "model", "function"})
INDEXED_PROMPT = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(role|content)$")
INPUT_TOKEN_KEYS = (
    keys.USAGE_INPUT_TOKENS,
    keys.USAGE_PROMPT_TOKENS,
    keys.LLM_TOKENS_PROMPT,
    "llm.usage.prompt_tokens",
    "prompt_tokens",
    "input_tokens",
)
OUTPUT_TOKEN_KEYS = (
    keys.USAGE_OUTPUT_TOKENS,
    keys.USAGE_COMPLETION_TOKENS,
    keys.LLM_TOKENS_COMPLETION,
    "llm.usage.completion_tokens",
    "completion_tokens",
    "output_tokens",
)
TOTAL_TOKEN_KEYS = ("gen_ai.usage.total_tokens", "llm.usage.total_tokens", keys.LLM_TOKENS_TOTAL, "total_tokens")
#: Usage attributes that make a span without another role an LLM call.
USAGE_ATTRIBUTE_KEYS = (
    keys.USAGE_INPUT_TOKENS,
    keys.USAGE_OUTPUT_TOKENS,
    keys.USAGE_PROMPT_TOKENS,
    keys.USAGE_COMPLETION_TOKENS,
    keys.LLM_TOKENS_PROMPT,
    keys.LLM_TOKENS_COMPLETION,
)
#: Attributes naming the workflow, for the trace name (else the root span's name).
WORKFLOW_NAME_KEYS = ("workflow.name", keys.WORKFLOW_NAME, "ioa_observe.workflow.name", "traceloop.workflow.name")
#: Trace attribute <- the first of these span attributes found on any span (conversation / session
#: ids; `session_id` is the key the app groups traces into sessions by).
TRACE_ATTRIBUTE_KEYS = {
    "conversation_id": (keys.CONVERSATION_ID,),
    "session_id": (keys.CONVERSATION_ID, keys.SESSION_ID),
}

WORKFLOW_MESSAGE = "WorkflowMessage("
MESSAGE_SOURCE = re.compile(r"\bsource_id='([^']+)'")
MESSAGE_TARGET = re.compile(r"\btarget_id='([^']+)'")
MESSAGE_KEY = re.compile(r"\bsource_span_ids=\[([^\]]*)\]")
ENTITY_KEY = re.compile(r"^entity\.(\d+)\.(\w+)$")


@dataclass(frozen=True)
class Message:
    """A message a span received: from `sender` to `receiver` (None: not named), `key` identifying
    one send delivered to several executors, and `from_span` the span whose turn came before."""

    sender: str | None
    receiver: str | None
    key: str | None
    from_span: str | None
    workflow: bool


#: Python's repr of None, which instrumentations write for a value that was None (agno's output of a
#: tool-calling turn): no content.
PYTHON_NONE = "None"
#: A Python object's repr that lists its fields (`RunResponse(content=None, model='x')`), not text.
OBJECT_FIELDS_REPR = re.compile(r"^[A-Z]\w*\(\w+=.*, \w+=.*\)$", re.DOTALL)


def _json(text: str) -> Any:
    """`text` decoded as JSON when it looks like JSON, else None."""
    if not text or text[0] not in '[{"':
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def render(value: Any) -> str | None:
    """Readable text of an input or output value (None when empty).

    Chat messages (GenAI `parts`, OpenAI `content`, Monocle `{role: parts}` strings) become
    "role: text" lines (one message: its text), tool calls "name(arguments)", a list of parts
    their texts; LangChain values (serialized messages, `generations`, LangSmith's `{"output": x}`:
    `langchain.unwrap`) the same; Gemini `Content` and its wrappers (`_gemini_body`) the same; a
    JSON string literal its text; other JSON stays as given (values that are not strings are
    dumped as JSON).
    """
    if value is None or value == "" or value == [] or value == {} or value == PYTHON_NONE:
        return None
    decoded = _json(value) if isinstance(value, str) else value
    if isinstance(decoded, dict) and any(isinstance(v, str) and OBJECT_FIELDS_REPR.match(v) for v in decoded.values()):
        return _arguments_text(decoded)
    if isinstance(decoded, str):
        return decoded
    if decoded is None and isinstance(value, str):
        if (said := langchain.message_str(value)) is not None:
            return said
        if (literal := langchain.python_literal(value)) is not None:  # a Python repr: read, then shown as JSON
            return render(json.dumps(literal, ensure_ascii=False, default=str))
    body = _gemini_body(decoded)
    if body is not decoded:
        return render(body)
    unwrapped = langchain.unwrap(decoded) if decoded is not None else None
    if unwrapped is not None:
        if not isinstance(unwrapped, list | dict):
            return render(unwrapped)
        decoded = unwrapped
    text = _chat_text(decoded) if decoded is not None else None
    if (
        text is None
        and isinstance(decoded, list)
        and decoded
        and all(isinstance(part, dict) and ("type" in part or _converse_block(part)) for part in decoded)
    ):
        text = _parts_text(decoded, [])  # a bare list of parts (`gen_ai.system_instructions`, Converse blocks)
    if text is not None:
        return text
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _arguments_text(arguments: dict) -> str | None:
    """A framework method's bound arguments holding its own objects by their reprs (agno's
    `Agent._run(run_response, run_messages, session_id, message)`): without those objects and ids
    (`*_id`), the one argument left (its text), else those left as JSON; None when none is left."""
    left = {
        k: v
        for k, v in arguments.items()
        if not (isinstance(v, str) and OBJECT_FIELDS_REPR.match(v)) and not k.endswith("_id") and v is not None
    }
    if len(left) == 1:
        return render(next(iter(left.values())))
    return json.dumps(left, ensure_ascii=False, default=str) if left else None


def _gemini_body(value: Any) -> Any:
    """What a Gemini / Google ADK wrapper object holds (google-genai types, as Google ADK's legacy
    `gcp.vertex.agent.*` attributes and OpenInference's `input.value` / `output.value` dump them):
    a `FunctionResponse` (`name`, `response`, maybe `id`) its `response`; an `LlmResponse`, ADK
    `Event` or response candidate (no `role`, a `content` message with `parts`) that message; an
    `LlmRequest` (`contents`, a list of messages with `parts`) those messages. Anything else:
    `value` itself."""
    if not isinstance(value, dict) or "role" in value:
        return value
    if (choices := _completion_choices(value)) is not None:
        return choices  # an OpenAI Chat Completions response body: its choices' messages
    if isinstance(value.get("name"), str) and "response" in value and set(value) <= FUNCTION_RESPONSE_KEYS:
        return value["response"]
    content = value.get("content")
    if isinstance(content, dict) and isinstance(content.get("parts"), list):
        return content
    contents = value.get("contents")
    if isinstance(contents, list) and contents and all(isinstance(c, dict) and "parts" in c for c in contents):
        return contents
    return value


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
    """(role, text) of one chat message, or None when `message` is not one. A GenAI `gen_ai.choice`
    event body (`{index, finish_reason, message: {role, content, tool_calls}}`, the body the
    instrumentations wrote before `gen_ai.output.messages`; pydantic-ai's `events`) is its message."""
    if not isinstance(message, dict):
        return None
    if "role" not in message and isinstance(choice := message.get("message"), dict) and CHOICE_KEYS & set(message):
        message = {"role": "assistant", **choice}
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
    """ "name(arguments)" of a tool call (GenAI `tool_call` part, OpenAI function, Monocle
    `tool_function`, Anthropic `tool_use` content block: `input`), else None."""
    name = item.get("name", item.get("tool_function"))
    arguments = item.get("arguments", item.get("tool_arguments"))
    if item.get("type") == "tool_use" and arguments is None:
        arguments = item.get("input") or {}
    if not isinstance(name, str) or (arguments is None and item.get("type") not in ("tool_call", "function_call")):
        return None
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, default=str)
    return f"{name}({arguments})"


def _function_calls(text: str) -> list[dict] | None:
    """The `function` objects of a JSON list of OpenAI tool calls, else None."""
    decoded = _json(text)
    if not isinstance(decoded, list) or not decoded:
        return None
    functions = [item.get("function") if isinstance(item, dict) else None for item in decoded]
    if all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in functions):
        return functions  # type: ignore[return-value]
    return None


#: Content blocks of the Bedrock Converse API's messages, one key each (Strands Agents' content).
CONVERSE_BLOCKS = frozenset(
    {"text", "toolUse", "toolResult", "reasoningContent", "image", "document", "video", "cachePoint", "guardContent"}
)


def _converse_block(part: dict) -> str | None:
    """Text of a Bedrock Converse content block (`{"text": ...}`, `{"toolUse": {name, input}}`,
    `{"toolResult": {content: [blocks]}}`; Strands Agents writes its messages so): a tool use
    "name(input)", a tool result its content's text, reasoning and cache points "" (no text),
    media `[image]`; None when `part` is no such block."""
    if len(part) != 1 or next(iter(part)) not in CONVERSE_BLOCKS:
        return None
    kind, body = next(iter(part.items()))
    if kind == "text":
        return body if isinstance(body, str) else None
    if kind == "toolUse" and isinstance(body, dict) and isinstance(body.get("name"), str):
        return _tool_call_text({"name": body["name"], "arguments": body.get("input") or {}})
    if kind == "toolResult" and isinstance(body, dict):
        content = body.get("content")
        return _parts_text(content, []) if isinstance(content, list) else render(content) or ""
    if kind in ("reasoningContent", "cachePoint"):
        return ""
    return f"[{kind}]"


def _parts_text(body: Any, calls: list[dict]) -> str | None:
    """Text of a message body: a string or a list of parts (text, tool calls, tool results). A string
    that is the JSON of a list of OpenAI tool calls (`[{"function": {name, arguments}, ...}]`: Koog's
    Langfuse integration writes a tool-calling reply so) is those calls. An empty text beside tool
    calls is left out."""
    if isinstance(body, str) and body[:2] == "[{" and (listed := _function_calls(body)) is not None:
        body, calls = [], listed + calls
    elif isinstance(body, str) and body[:2] == "[{" and isinstance(blocks := _json(body), list):
        if all(isinstance(block, dict) and _converse_block(block) is not None for block in blocks):
            body = blocks  # Converse content blocks as JSON text (Strands' message events)
    parts = [body] if isinstance(body, str) else [] if body is None else body
    if not isinstance(parts, list):
        return None
    texts = []
    for part in parts + calls:
        if isinstance(part, str):
            if part or not calls:
                texts.append(part)
        elif not isinstance(part, dict):
            return None
        elif (call := _tool_call_text(part)) is not None:
            texts.append(call)
        elif isinstance(gemini_call := part.get("function_call"), dict) and isinstance(gemini_call.get("name"), str):
            arguments = json.dumps(gemini_call.get("args") or {}, ensure_ascii=False, default=str)
            texts.append(f"{gemini_call['name']}({arguments})")
        elif part.get("type") == "tool_result" and "tool_use_id" in part:  # Anthropic: its content's text
            content = part.get("content")
            texts.append(_parts_text(content, []) or "" if isinstance(content, list) else render(content) or "")
        elif isinstance(gemini_response := part.get("function_response"), dict):
            texts.append(render(gemini_response.get("response")) or "")
        elif (block := _converse_block(part)) is not None:
            if block:
                texts.append(block)
        else:
            text = next(
                (
                    part[key]
                    for key in ("text", "content", "response", "result", "output")
                    if isinstance(part.get(key), str)
                ),
                None,
            )
            texts.append(text if text is not None else json.dumps(part, ensure_ascii=False, default=str))
    return "\n".join(texts)


# --- reading one span -----------------------------------------------------------------------------


@span_memo
def entities(span: Span) -> list[dict[str, Any]]:
    """Monocle's `entity.N.*` attributes as dicts ordered by N (`type`, `name`, `from_agent`, ...)."""
    found: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in span.attributes.items():
        match = ENTITY_KEY.match(key)
        if match:
            found[int(match.group(1))][match.group(2)] = value
    return [found[number] for number in sorted(found)]


def _entity_names(span: Span, prefix: str) -> list[str]:
    return [str(e["name"]) for e in entities(span) if str(e.get("type", "")).startswith(prefix) and e.get("name")]


@span_memo
def span_role(span: Span) -> str | None:
    """AGENT, LLM, TOOL, HANDOFF or None (docs/otel-mapping.md, "Role")."""
    attributes = span.attributes
    for key, roles in (
        (keys.OPERATION_NAME, OPERATION_ROLES),
        ("span.type", MONOCLE_ROLES),
        (keys.OI_SPAN_KIND, OPENINFERENCE_ROLES),
        ("traceloop.span.kind", KIND_ROLES),
        ("ioa_observe.span.kind", KIND_ROLES),
    ):
        value = attributes.get(key)
        if isinstance(value, str) and value in roles:
            if key == keys.OI_SPAN_KIND and value == keys.OI_LLM and not openinference.reports_model_call(span):
                return None  # a method of an LLM object that calls no model (LlamaIndex)
            return roles[value]
    if genai.is_evaluation_span(span):
        return EVALUATION
    if any(key in attributes for key in USAGE_ATTRIBUTE_KEYS):
        return LLM
    if keys.TOOL_NAME in attributes:
        return TOOL
    return None


def agent_label(span: Span, role: str | None) -> str | None:
    """The agent a span names itself (see `agent_label_source`), or None."""
    return agent_label_source(span, role)[0]


def agent_label_source(span: Span, role: str | None) -> tuple[str | None, str]:
    """(agent, where the name came from) a span names itself: `gen_ai.agent.name` (else pydantic-ai's
    `agent_name`) unless it repeats the framework, else on a GenAI agent span (`invoke_agent`)
    without a `gen_ai.agent.name` its `gen_ai.agent.id`, else (hand-off spans)
    `entity.N.from_agent`, else a Monocle agent entity, else
    OpenInference `agent.name` / `graph.node.name` / `graph.node.id`, else an OpenInference AGENT
    span's name. A `create_agent` span names the agent it creates, not the one acting: None."""
    attributes = span.attributes
    if role == CREATE:
        return None, ""
    frameworks = {str(attributes.get(key, "")).casefold() for key in (keys.PROVIDER_NAME, keys.SYSTEM)}
    for key in (keys.AGENT_NAME, keys.PYDANTIC_AI_AGENT_NAME):
        name = attributes.get(key)
        if isinstance(name, str) and name and name.casefold() not in frameworks:
            return name, key
    agent_id = attributes.get(keys.AGENT_ID)
    if (
        isinstance(agent_id, str)
        and agent_id
        and keys.AGENT_NAME not in attributes
        and attributes.get(keys.OPERATION_NAME) == keys.INVOKE_AGENT
    ):
        return agent_id, keys.AGENT_ID  # a GenAI agent span that names its agent by id only (Koog)
    if role == HANDOFF:
        sender = next((e["from_agent"] for e in entities(span) if e.get("from_agent")), None)
        if sender:
            return str(sender), "entity"
    names = _entity_names(span, "agent")
    if names:
        return names[0], "entity"
    oi_name = openinference.agent_name(span)
    if oi_name:
        named = any(attributes.get(k) for k in (keys.OI_AGENT_NAME, keys.GRAPH_NODE_NAME, keys.GRAPH_NODE_ID))
        return oi_name, "openinference" if named or oi_name == openinference.argument_agent(span) else SPAN_NAME
    event_agent = openinference.workflow_event_agent(span)
    if event_agent:
        return event_agent, WORKFLOW_EVENT
    return None, ""


@span_memo
def tool_name(span: Span) -> str:
    """`gen_ai.tool.name`, `tool.name`, a Monocle tool entity, a GenAI retrieval / memory operation's
    name, else the span name without "execute_tool "."""
    for key in (keys.TOOL_NAME, keys.OI_TOOL_NAME):
        if span.attributes.get(key):
            return str(span.attributes[key])
    names = _entity_names(span, "tool")
    if names:
        return names[0]
    operation = span.attributes.get(keys.OPERATION_NAME)
    if operation == keys.RETRIEVAL or operation in keys.MEMORY_OPERATIONS:
        return str(operation)
    if span.attributes.get("traceloop.span.kind") == "tool" and span.attributes.get("traceloop.entity.name"):
        return str(span.attributes["traceloop.entity.name"])
    return span.name.removeprefix("execute_tool ").strip() or span.name


@span_memo
def delegation_target(span: Span) -> str | None:
    """The agent a delegation tool hands its work to, named by the tool's arguments (the span's
    input, a JSON object): CrewAI's "Delegate work to coworker" / "Ask question to coworker"
    `coworker` (`keys.DELEGATION_TARGET_ARGUMENTS`), read as CrewAI reads it: a list's first
    item, whitespace collapsed, quotes dropped. None when the arguments name none."""
    arguments = span_io(span)[0]
    if not isinstance(arguments, dict):
        arguments = render(arguments)  # also arguments a tool-message event holds
    if isinstance(arguments, str) and not any(key in arguments for key in keys.DELEGATION_TARGET_ARGUMENTS):
        return None
    if isinstance(arguments, str) and arguments.startswith("{"):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    found = (arguments.get(key) for key in keys.DELEGATION_TARGET_ARGUMENTS)
    target = next((value.strip() for value in found if isinstance(value, str) and value.strip()), None)
    if target is None:
        return None
    if target.startswith("[") and target.endswith("]"):
        target = target[1:-1].split(",")[0]
    return " ".join(target.replace('"', "").split()) or None


def model_name(span: Span) -> str | None:
    """The model of an LLM span: response/request model, a Monocle model entity, else a LangChain
    `ls_model_name` association property; None when unknown."""
    candidates = [span.attributes.get(key) for key in (keys.RESPONSE_MODEL, keys.REQUEST_MODEL, keys.LLM_MODEL_NAME)]
    candidates += _entity_names(span, "model")
    candidates += [value for key, value in span.attributes.items() if key.endswith(".ls_model_name")]
    return next((str(c) for c in candidates if c is not None and str(c).casefold() not in NO_MODEL), None)


def usage(span: Span) -> tuple[int | None, int | None, int | None]:
    """(input, output, total) tokens from usage attributes or Monocle's `metadata` event."""
    sources = [span.attributes] + [e.attributes for e in span.events if e.name == "metadata"]

    def first(keys: tuple[str, ...]) -> int | None:
        return next((n for source in sources for key in keys if (n := as_int(source.get(key))) is not None), None)

    found = first(INPUT_TOKEN_KEYS), first(OUTPUT_TOKEN_KEYS), first(TOTAL_TOKEN_KEYS)
    if found == (None, None, None) and (reported := _response_usage(span)) is not None:
        sources = [reported]
        found = first(INPUT_TOKEN_KEYS), first(OUTPUT_TOKEN_KEYS), first(TOTAL_TOKEN_KEYS)
    return found


def _response_usage(span: Span) -> dict[str, Any] | None:
    """The `usage` of an OpenAI Chat Completions response body that an LLM span records as its output
    (`output.value`: `{"id", "choices": [...], "usage": {prompt_tokens, completion_tokens,
    total_tokens}}`; openinference-instrumentation-agno 0.1 writes the raw response and no token
    counts), else None."""
    value = span.attributes.get(keys.OUTPUT_VALUE)
    if not isinstance(value, str) or '"usage"' not in value or '"choices"' not in value:
        return None
    decoded = _json(value)
    if _completion_choices(decoded) is None or not isinstance(decoded.get("usage"), dict):
        return None
    return decoded["usage"]


def _completion_choices(value: Any) -> list[dict] | None:
    """The choices of an OpenAI Chat Completions response body (`{"choices": [{index, finish_reason,
    message}], ...}`), else None."""
    if not isinstance(value, dict):
        return None
    choices = value.get("choices")
    if (
        isinstance(choices, list)
        and choices
        and all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices)
    ):
        return choices
    return None


def span_io(span: Span) -> tuple[Any, Any]:
    """(input, output) values of a span, raw (render them with `render`); None where absent.
    OpenInference `input.value` / `output.value` are read as the call had them (`_as_called`)."""
    found_in = _io(span, INPUT_KEYS, INPUT_EVENTS, "prompt")
    found_out = _io(span, OUTPUT_KEYS, OUTPUT_EVENTS, "completion")
    return _as_called(span, keys.INPUT_VALUE, found_in), _as_called(span, keys.OUTPUT_VALUE, found_out)


def _as_called(span: Span, key: str, value: Any) -> Any:
    """`value`, read from the OpenInference attribute `key` of `span`, as the call had it: bound
    arguments unwrapped (`openinference.call_arguments`; an AGENT span's run: its task,
    `openinference.run_task`), a LlamaIndex `ToolOutput` dump as its text
    (`openinference.tool_output_text`). A value read from elsewhere: as given."""
    if value is None or value is not span.attributes.get(key):
        return value
    if key == keys.OUTPUT_VALUE:
        return openinference.tool_output_text(value)
    value = openinference.call_arguments(value)
    return openinference.run_task(value) if span.attributes.get(keys.OI_SPAN_KIND) == keys.OI_AGENT else value


def _io(span: Span, names: tuple[str, ...], event_keys: Mapping[str, tuple[str, ...]], indexed: str) -> Any:
    for key in names:
        if key in (keys.LLM_INPUT_MESSAGES, keys.LLM_OUTPUT_MESSAGES):
            if chat := openinference.messages(span, key):
                return chat
        elif key == keys.LLM_PROMPTS:
            if texts := openinference.prompts(span):
                return texts[0] if len(texts) == 1 else texts
        elif (value := span.attributes.get(key)) not in (None, "", [], {}) and not (
            isinstance(value, str) and value in ADK_PLACEHOLDERS and key.startswith("gcp.vertex.agent.")
        ):
            return value
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
        chat = [
            {"role": MESSAGE_EVENTS[e.name], "content": e.attributes.get("content")}
            | (
                {"tool_call_id": e.attributes["id"]}
                if e.name == "gen_ai.tool.message" and e.attributes.get("id")
                else {}
            )
            for e in span.events
            if e.name in MESSAGE_EVENTS
        ]
        return chat or None
    return None


@span_memo
def received_message(span: Span) -> Message | None:
    """The message an executor span received (Agent Framework `WorkflowMessage` in its input,
    else Monocle `entity.N.from_agent`, else the `gen_ai.caller.name` of an `invoke_agent` span), or None."""
    chained = next((e for e in entities(span) if e.get("from_agent") or e.get("from_agent_span_id")), {})
    try:
        from_span = hex_id(chained.get("from_agent_span_id"), 8)
    except ValueError:
        from_span = None
    text, _ = span_io(span)
    if isinstance(text, str) and text.startswith(WORKFLOW_MESSAGE):
        source, target, key = (MESSAGE_SOURCE.search(text), MESSAGE_TARGET.search(text), MESSAGE_KEY.search(text))
        return Message(
            sender=source.group(1) if source else None,
            receiver=target.group(1) if target else None,
            key=key.group(1) if key else None,
            from_span=from_span,
            workflow=True,
        )
    if chained:
        sender = chained.get("from_agent")
        return Message(
            sender=str(sender) if sender else None, receiver=None, key=None, from_span=from_span, workflow=False
        )
    remote_caller = genai.caller(span)
    if remote_caller is not None:
        return Message(sender=remote_caller, receiver=None, key=None, from_span=None, workflow=False)
    return None
