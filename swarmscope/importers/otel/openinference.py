"""OpenInference readers: flattened chat messages, advertised tools, hand-off spans, agent names,
and the values instrumentors write as a call's bound arguments or a framework's object dump.

OpenInference flattens lists into numbered attributes
(https://github.com/Arize-ai/openinference/blob/main/spec/semantic_conventions.md, "†"):
`llm.input_messages.N.message.{role, content, name, tool_call_id}`,
`llm.input_messages.N.message.contents.M.message_content.{type, text}`,
`llm.input_messages.N.message.tool_calls.K.tool_call.{id, function.name, function.arguments}`
(likewise `llm.output_messages`), `llm.tools.N.tool.json_schema`, `llm.prompts.N.prompt.text`.
A decoder that keeps them nested (a list of `{"message": {...}}`) is read the same way. Messages
come back as `{"role", "content": [parts], "tool_calls": [...]}` dicts, the shape `render` reads.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

from . import keys
from .span import Span, span_memo

NUMBERED = re.compile(r"^(\d+)\.(.+)$")
#: Google ADK names its agent spans `agent_run [<agent>]` (OpenInference and ADK's own tracer).
BRACKETED_AGENT = re.compile(r"^agent_run \[(.+)\]$")
#: OpenAI Agents SDK hand-off spans as the OpenInference processor names them (`handoff to <agent>`).
HANDOFF_SPAN = re.compile(r"^handoff to (.+)$")
#: A method that runs an agent, at the end of an agent span's name: the span describes the agent named
#: before it (smolagents' OpenInference instrumentor names an agent's run `<agent>.run`).
RUN_METHOD = re.compile(r"^(.+?)(?:\.|\s+)(?:run|arun|run_sync|run_stream|invoke|ainvoke|__call__)$")
#: A Python object's default repr: a value a framework injects into a call (LlamaIndex's workflow
#: `ctx`), not an argument the model gave.
OBJECT_REPR = re.compile(r"^<[\w.]+ object at 0x[0-9a-fA-F]+>$")
#: LlamaIndex AgentWorkflow's events name the agent acting (`AgentInput`, `AgentSetup`,
#: `AgentOutput`: `current_agent_name='x'`, in the Python repr a workflow step's span receives).
CURRENT_AGENT = re.compile(r"\bcurrent_agent_name=(['\"])(.+?)\1")
#: Attributes of a model call on an OpenInference LLM span (messages, prompts or token counts).
MODEL_CALL_KEYS = (
    keys.LLM_INPUT_MESSAGES,
    keys.LLM_OUTPUT_MESSAGES,
    keys.LLM_PROMPTS,
    keys.LLM_TOKENS_PROMPT,
    keys.LLM_TOKENS_COMPLETION,
    keys.LLM_TOKENS_TOTAL,
)


def _numbered(attributes: dict[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """`prefix.N.rest` attributes as {N: {rest: value}}."""
    found: dict[int, dict[str, Any]] = defaultdict(dict)
    start = prefix + "."
    for key, value in attributes.items():
        if key.startswith(start) and (match := NUMBERED.match(key[len(start) :])):
            found[int(match.group(1))][match.group(2)] = value
    return found


def _items(attributes: dict[str, Any], key: str, inner: str) -> list[dict[str, Any]]:
    """The list at `key` as flat dicts of `inner.*` fields: flattened (`key.N.inner.field`) or
    nested (`key: [{inner: {...}}]` or `[{"inner.field": ...}]`), in order of N."""
    value = attributes.get(key)
    if isinstance(value, str) and value[:1] == "[":
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if isinstance(value, list):
        items = []
        for item in value:
            if isinstance(item, dict):
                body = item.get(inner, item)
                nested = isinstance(body, dict) and body is not item
                items.append({f"{inner}.{k}": v for k, v in body.items()} if nested else item)
        return items
    numbered = _numbered(attributes, key)
    return [numbered[n] for n in sorted(numbered)]


def _message(fields: dict[str, Any]) -> dict[str, Any] | None:
    """One flattened message (`message.role`, `message.contents.M...`, ...) as a chat message.

    `message.content` and `message.contents` are two forms of one content (OpenInference's semantic
    conventions; the OpenAI Agents instrumentor writes both for a Responses message): the text
    parts of `contents` where it has any, else `content`; non-text parts show as `[type]`.
    """
    parts: list[Any] = []
    contents = _numbered(fields, keys.MESSAGE_CONTENTS)
    texts = [contents[m].get(keys.CONTENT_TEXT) for m in sorted(contents)]
    content = fields.get(keys.MESSAGE_CONTENT)
    if content not in (None, "") and not any(isinstance(text, str) for text in texts):
        parts.append(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str))
    for m, text in zip(sorted(contents), texts):
        kind = contents[m].get(keys.CONTENT_TYPE, "text")
        if isinstance(text, str):
            if text:  # no empty part beside tool calls (LlamaIndex's streamed tool-call message)
                parts.append({"type": "text", "text": text})
        elif kind != "text":
            parts.append(f"[{kind}]")
    calls = _numbered(fields, keys.MESSAGE_TOOL_CALLS)
    for k in sorted(calls):
        call = calls[k]
        name = call.get(keys.TOOL_CALL_NAME)
        if isinstance(name, str) and name:
            arguments = call.get(keys.TOOL_CALL_ARGUMENTS_JSON)
            parts.append({"type": "tool_call", "name": name, "arguments": "" if arguments is None else arguments})
    role = fields.get(keys.MESSAGE_ROLE)
    if not parts and role is None:
        return None
    return {"role": str(role or "user"), "content": parts}


def messages(span: Span, key: str) -> list[dict[str, Any]] | None:
    """The chat messages at `key` (`llm.input_messages` / `llm.output_messages`), else None."""
    found = [m for fields in _items(span.attributes, key, "message") if (m := _message(fields))]
    return found or None


def prompts(span: Span) -> list[str] | None:
    """Completion-API prompts, `llm.prompts.N.prompt.text` (or a list of strings), else None."""
    texts = []
    for fields in _items(span.attributes, keys.LLM_PROMPTS, "prompt"):
        text = fields.get("prompt.text")
        if isinstance(text, str):
            texts.append(text)
    value = span.attributes.get(keys.LLM_PROMPTS)
    if not texts and isinstance(value, list):
        texts = [v for v in value if isinstance(v, str)]
    return texts or None


@span_memo
def tool_names(span: Span) -> list[str]:
    """Names of the tools advertised to the model (`llm.tools.N.tool.json_schema`), in order."""
    names = []
    for fields in _items(span.attributes, keys.LLM_TOOLS, "tool"):
        schema = fields.get(keys.TOOL_JSON_SCHEMA)
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except ValueError:
                schema = None
        name = None
        if isinstance(schema, dict):
            function = schema.get("function")
            name = function.get("name") if isinstance(function, dict) else schema.get("name")
        name = name or fields.get(keys.TOOL_SCHEMA_NAME)
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


def agent_name(span: Span) -> str | None:
    """The agent an OpenInference span names: `agent.name`, `graph.node.name`, `graph.node.id`;
    else, on an AGENT span, the role of the agent its recorded call ran (`argument_agent`), else
    its span name (`agent_run [x]`: x). None when it names none."""
    for key in (keys.OI_AGENT_NAME, keys.GRAPH_NODE_NAME, keys.GRAPH_NODE_ID):
        value = span.attributes.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    if span.attributes.get(keys.OI_SPAN_KIND) == keys.OI_AGENT:
        return argument_agent(span) or span_name_agent(span)
    return None


#: A `role` field in a pydantic repr (`role='Researcher'`), as older instrumentors record an agent.
REPR_ROLE = re.compile(r"""(?:^|[\s(,])role=(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")""")


@span_memo
def argument_agent(span: Span) -> str | None:
    """The `role` of the `agent` argument in a span's recorded call (`input.value`, a JSON object of
    the call's arguments): OpenInference's CrewAI instrumentor records `Task._execute_core(agent,
    ...)` with the agent as an object (1.x: `{"agent": {"role": ...}}`) or as its pydantic repr
    (0.1.x: `{"agent": "id=UUID(...) role='...' goal=..."}`), under a span named after the method
    (`Task._execute_core`) where 1.x also sets `graph.node.id`. None when there is none."""
    value = span.attributes.get(keys.INPUT_VALUE)
    if not isinstance(value, str) or not value.startswith("{"):
        return None
    try:
        arguments = json.loads(value)
    except ValueError:
        return None
    agent = arguments.get(keys.AGENT_ARGUMENT) if isinstance(arguments, dict) else None
    role: Any = None
    if isinstance(agent, dict):
        role = agent.get(keys.AGENT_ROLE)
    elif isinstance(agent, str) and (match := REPR_ROLE.search(agent)):
        role = match.group(1) if match.group(1) is not None else match.group(2)
    return role.strip() if isinstance(role, str) and role.strip() else None


@span_memo
def span_name_agent(span: Span) -> str | None:
    """An agent named by its span name (`agent_run [x]`: x; `x.run`, `x run`: x, see `RUN_METHOD`);
    None for an empty name."""
    match = BRACKETED_AGENT.match(span.name)
    name = (match.group(1) if match else span.name).strip()
    run = RUN_METHOD.match(name)
    name = run.group(1).strip() if run else name
    if not name:
        return None
    # the name as an attribute of the span writes it (one named `….agent`, `….team`, `….name`), where
    # it is the same name up to case and punctuation (openinference-instrumentation-agno 0.1: span
    # `Editorial_Team.run`, `agno.team` "Editorial Team")
    wanted = _plain(name)
    spelled = sorted(
        (key, value)
        for key, value in span.attributes.items()
        if key.rsplit(".", 1)[-1] in NAMING_KEYS
        and isinstance(value, str)
        and value != name
        and len(value) <= 200
        and _plain(value) == wanted
    )
    return spelled[0][1] if spelled and wanted else name


#: The last part of the attribute names that may spell an agent's name (`span_name_agent`).
NAMING_KEYS = frozenset({"agent", "team", "name"})


def _plain(name: str) -> str:
    """`name` case-folded, only its letters and digits (as `agents.canonical_name`)."""
    return "".join(c for c in name.casefold() if c.isalnum())


@span_memo
def workflow_event_agent(span: Span) -> str | None:
    """The agent that the workflow event a step span received names (LlamaIndex: the step's
    `input.value` holds its bound arguments, `{"ctx": ..., "ev": "<event repr>"}`, and AgentWorkflow's
    events carry `current_agent_name`), else None."""
    value = _json_object(span.attributes.get(keys.INPUT_VALUE))
    event = value.get("ev") if value else None
    match = CURRENT_AGENT.search(event) if isinstance(event, str) else None
    if match is None:
        return None
    return match.group(2).strip() or None


def reports_model_call(span: Span) -> bool:
    """Whether an OpenInference LLM span reports a model call: messages, prompts or token counts.
    LlamaIndex gives the LLM kind to every instrumented method of an LLM object, the request's
    preparation (`_prepare_chat_with_tools`) too, which reports none of them."""
    return any(key.startswith(MODEL_CALL_KEYS) for key in span.attributes)


def _json_object(value: Any) -> dict[str, Any] | None:
    """`value` as a JSON object (decoded from text), else None."""
    if isinstance(value, str) and value[:1] == "{":
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float))


def call_arguments(value: Any) -> Any:
    """The arguments of a call whose OpenInference `input.value` is the instrumented function's
    bound arguments: a function called as `f(*args, **kwargs)` reads `{"args": [...], "kwargs":
    {...}}`, beside the function's own keyword options (smolagents' `Tool.__call__`
    `sanitize_inputs_outputs`; LlamaIndex `FunctionTool.acall` writes `{"kwargs": {...}}`). The
    arguments are the keyword arguments, without the values the framework injected (object reprs:
    LlamaIndex's `ctx`), as JSON; positional ones alone: the one argument, else their list; both:
    `{"args", "kwargs"}`. Any other value: as given."""
    bound = _json_object(value)
    if not bound or not ({"args", "kwargs"} & bound.keys()):
        return value
    args, kwargs = bound.get("args", []), bound.get("kwargs", {})
    others = [v for k, v in bound.items() if k not in ("args", "kwargs")]
    if not isinstance(args, list) or not isinstance(kwargs, dict) or not all(_scalar(v) for v in others):
        return value
    kwargs = {k: v for k, v in kwargs.items() if not (isinstance(v, str) and OBJECT_REPR.match(v))}
    if not args:
        arguments: Any = kwargs
    elif not kwargs:
        arguments = args[0] if len(args) == 1 else args
    else:
        arguments = {"args": args, "kwargs": kwargs}
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)


def run_task(value: Any) -> Any:
    """The task of an agent run whose OpenInference AGENT span's `input.value` is the run method's
    bound arguments (smolagents: `{"task": "...", "stream": false, "reset": true, "images": null,
    ...}`): its one text argument when every other is null, a boolean or a number. Any other value:
    as given."""
    bound = _json_object(value)
    if not bound:
        return value
    texts = [v for v in bound.values() if isinstance(v, str) and v.strip()]
    others = [v for v in bound.values() if not isinstance(v, str)]
    if len(texts) == 1 and len(texts) + len(others) == len(bound) and all(_scalar(v) for v in others):
        return texts[0]
    return value


def tool_output_text(value: Any) -> Any:
    """The text of a LlamaIndex `ToolOutput` dump (OpenInference `output.value` of a FunctionTool
    call: `tool_name`, `raw_input`, `raw_output`, and `content` (older) or `blocks`): `content`, else
    the text blocks joined, else `raw_output`. Any other value: as given."""
    output = _json_object(value)
    if not output or not {"tool_name", "raw_input", "raw_output"} <= output.keys():
        return value
    if isinstance(output.get("content"), str):
        return output["content"]
    blocks = output.get("blocks")
    if isinstance(blocks, list):
        texts = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
        if texts:
            return "\n".join(texts)
    raw = output["raw_output"]
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)


def argument_text(arguments: Any, names: tuple[str, ...]) -> str | None:
    """The first of the arguments `names` that is non-empty text in `arguments` (a call's arguments
    as a JSON object, or its text), else None. Text naming none of them is not parsed."""
    if isinstance(arguments, str) and not any(name in arguments for name in names):
        return None
    found = _json_object(arguments)
    values = (found.get(name) for name in names) if found else ()
    return next((v.strip() for v in values if isinstance(v, str) and v.strip()), None)


@span_memo
def handoff_span_target(span: Span) -> str | None:
    """The target of an OpenAI Agents hand-off span (TOOL span `handoff to <agent>`, whose
    `output.value` is the target and `input.value` the source), else None."""
    match = HANDOFF_SPAN.match(span.name)
    if not match:
        return None
    output = span.attributes.get(keys.OUTPUT_VALUE)
    return output.strip() if isinstance(output, str) and output.strip() else match.group(1).strip()
