"""LangSmith runs: run trees and the run-ingest payloads, decoded as spans for the shared mapping.

Shapes read (all JSON; a JSONL file is a list of its lines):

- a run tree: a run with its children nested in `child_runs` (what `RunTree`, `client.read_run(...,
  load_child_runs=True)` and the UI's export give), or a list of them;
- a run-ingest batch: `{"post": [run, ...], "patch": [run, ...]}` (the body of `POST /runs/batch`;
  a patch completes the run of the same id with `end_time`, `outputs`, `error`, ...), or a list of
  such batches (one per line);
- a flat list of runs (`client.list_runs`, or one `POST /runs` body per line).

A run: `{id, trace_id, dotted_order, parent_run_id, name, run_type (llm | chain | tool | retriever |
embedding | prompt | parser), start_time, end_time (ISO 8601; no zone means UTC; a number is epoch
milliseconds, as the JS SDK sends), inputs, outputs, error, tags, session_name, extra: {metadata,
invocation_params}, prompt_tokens, completion_tokens, total_tokens}`. `dotted_order` is
`<YYYYMMDDTHHMMSSffffffZ><run uuid>` per ancestor joined by ".": the first segment's uuid is the
trace id, the one before the last the parent, the last the run (a JS patch carries no `id`).

Why spans and `build_trace`: a run tree is a span tree, and the orchestration structure the span
mapping derives (an invocation per agent, delegations to it, hand-off tools, returns, parallel
fan-out) is exactly what LangGraph runs need, with the agents its LangGraph rule finds. So each
run becomes an `otel.Span` with the attributes LangSmith's own OpenTelemetry exporter writes
(`langsmith.span.kind`, `langsmith.trace.name`, `langsmith.metadata.<key>`, `gen_ai.operation.name`
from the run type: llm -> chat, tool -> execute_tool; retriever -> execute_tool too (retrieval is a
tool call here, where the exporter writes "embeddings"); `gen_ai.request/response.model`,
`gen_ai.usage.*_tokens`), content as `gen_ai.input.messages` / `gen_ai.output.messages` (LangChain
messages converted to `{role, content, tool_calls}`) for LLM runs, `gen_ai.tool.call.arguments` /
`.result` for tools, `gen_ai.prompt` / `gen_ai.completion` (JSON) for the rest.

LangGraph: its metadata (`langgraph_node`, `langgraph_step`, `langgraph_checkpoint_ns`, ...) is
`langsmith.metadata.<key>`, as the exporter writes it, and the span mapping's LangGraph rule
(`otel.langgraph`, docs/otel-mapping.md "Agent identity") decides the agents, as for LangSmith's
OTel export of the same program: each node of a multi-agent graph is an agent (a supervisor and its
experts), the nodes of the sub-graph it runs (`agent`, `tools`) its steps (`graph_node`); the run of
a multi-agent top graph is the workflow, no agent; `transfer_to_<agent>` tool runs and a node's
`Command(goto=...)` output are hand-offs. A chain run reads as an OpenInference CHAIN span (as the
Langfuse importer reads the SDK's plain spans): a run tree has no service, so an agent that would
be named by one (a ReAct graph's, a `@traceable` function's) is named by its run (a graph's name,
`LangGraph` where the program gives none).

Tokens: `usage_metadata` (in the outputs, their messages, or `extra.metadata`), else
`outputs.llm_output.token_usage`, else the run's `prompt_tokens` / `completion_tokens`; cache
reads and writes as `gen_ai.usage.cache_read.input_tokens` / `cache_creation.input_tokens`. Session:
the thread metadata (`thread_id`, `session_id`, `conversation_id`) -> `trace.attributes["session_id"]`
(a run's `session_id` field is the tracing project, kept as `project_id`).

Ids: run ids are UUIDs; span ids are the first 16 hex digits of the SHA-256 of the run id (the run
id is kept as `langsmith.run_id`), the trace id is the trace's UUID as 32 hex digits. Bad input:
`split` raises ValueError naming the run (`post[3]`, `child_runs` path or list index, its id) and
field; a file fails as a whole.

Payload shapes follow the langsmith-sdk's recorded run payloads (github.com/langchain-ai/langsmith-sdk
@ bc8dd672a7b9e7d09bcb2fdada0baff80700f9b0: `python/tests/integration_tests/test_data/
langsmith_py_wrap_openai_.json`, `js/src/tests/test_data/langsmith_js_wrap_openai_default.json`,
`python/langsmith/_internal/otel/_otel_exporter.py`); LangGraph's metadata keys as LangGraph writes
them (its tests: `langgraph_triggers: ("branch:to:agent",)`, `langgraph_checkpoint_ns: "agent:<id>"`).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from swarmscope.model import TOKENS_RULE, Trace, is_token_count

from .otel import Span, build_trace, hex_id
from .otel.keys import OI_CHAIN, OI_SPAN_KIND
from .otel.tokens import check_tokens
from .otel_sdk import iso_ns

FORMAT = "langsmith"

#: Run type -> `gen_ai.operation.name` (LangSmith's exporter, but retrieval as a tool call).
OPERATIONS = {"llm": "chat", "tool": "execute_tool", "retriever": "execute_tool", "embedding": "embeddings"}
RUN_TYPES = frozenset({"llm", "chain", "tool", "retriever", "embedding", "prompt", "parser"})
#: Metadata keys naming the conversation thread (LangSmith's threads).
THREAD_KEYS = ("thread_id", "session_id", "conversation_id")
#: LangGraph's default name of a `ToolNode`.
TOOL_NODE = "tools"
#: LangChain message type -> chat role.
LC_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool", "chat": "user"}
LC_CLASS_ROLES = {
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
}


# --- ids and times, shared with the Langfuse importer --------------------------------------------


def span_id_of(value: Any) -> str | None:
    """A span id (16 hex digits) for any id: hex ids as they are, others (UUIDs, text) digested."""
    if value is None or value == "":
        return None
    try:
        found = hex_id(value, 8)
    except ValueError:
        found = None
    return found or hashlib.sha256(str(value).encode("utf-8")).hexdigest()[:16]


def trace_id_of(value: Any) -> str:
    """A trace id (32 hex digits): hex ids (UUIDs without dashes) as they are, other text digested."""
    try:
        found = hex_id(str(value).replace("-", ""), 16)
    except ValueError:
        found = None
    return found or hashlib.sha256(str(value).encode("utf-8")).hexdigest()[:32]


def time_ns(value: Any) -> int:
    """Nanoseconds since the Unix epoch of an ISO 8601 time (no zone: UTC) or epoch milliseconds.
    Raises ValueError for anything else."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, str):
        return iso_ns(value)
    return int(value * 1_000_000)


def dotted_segments(dotted_order: Any) -> list[tuple[str, str]]:
    """`(timestamp, run id)` of each ancestor in a `dotted_order`, root first; ValueError if malformed."""
    if not isinstance(dotted_order, str) or not dotted_order:
        raise ValueError(f"dotted_order {dotted_order!r} is not text")
    segments = []
    for part in dotted_order.split("."):
        stamp, _, run_id = part.partition("Z")
        if len(stamp) < 15 or not run_id:
            raise ValueError(f"dotted_order segment {part!r} is not <YYYYMMDDTHHMMSSffffff>Z<run id>")
        segments.append((stamp, run_id))
    return segments


def _dotted_time_ns(stamp: str) -> int:
    moment = datetime.strptime(stamp[:15], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1_000_000_000 + int(stamp[15:21].ljust(6, "0")) * 1_000


def jsonish(value: Any) -> str:
    """Text of a value for an attribute: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


# --- LangChain values -----------------------------------------------------------------------------


def _lc_message(value: Any) -> dict[str, Any] | None:
    """A LangChain message (serialized `{lc: 1, id: [..., "AIMessage"], kwargs}` or a dict with
    `type`) as `{role, content, tool_calls}`; None when `value` is not one."""
    if not isinstance(value, dict):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        ids = value.get("id") or [""]
        role = LC_CLASS_ROLES.get(str(ids[-1]))
        body = value["kwargs"]
    else:
        role, body = LC_ROLES.get(str(value.get("type", ""))), value
    if role is None:
        if "role" in value and "content" in value:
            return value
        return None
    message: dict[str, Any] = {"role": role, "content": body.get("content") or None}
    calls = body.get("tool_calls") or []
    if isinstance(calls, list) and calls:
        message["tool_calls"] = [
            {"name": c.get("name"), "arguments": jsonish(c.get("args", c.get("arguments", {})))}
            for c in calls
            if isinstance(c, dict)
        ]
    if body.get("name") and role == "tool":
        message["name"] = body["name"]
    return message


def _messages(value: Any) -> list[dict[str, Any]] | None:
    """A list (or list of lists, LangChain's batch shape) of messages converted, else None."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    if not isinstance(value, list) or not value:
        return None
    converted = [_lc_message(v) for v in value]
    return None if any(c is None for c in converted) else [c for c in converted if c is not None]


def _readable(value: Any) -> Any:
    """Inputs/outputs with LangChain messages made chat messages: `{"messages": [...]}` -> the list."""
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list) and (chat := _messages(value["messages"])) is not None:
            return chat
        message = _lc_message(value)
        if message is not None:
            return message
    return value


def _llm_output(outputs: Any) -> list[dict[str, Any]] | None:
    """The messages an LLM run produced: LangChain generations, or OpenAI `choices`."""
    if not isinstance(outputs, dict):
        return None
    generations = outputs.get("generations")
    if isinstance(generations, list) and generations:
        flat = [g for gs in generations for g in (gs if isinstance(gs, list) else [gs])]
        found = []
        for generation in flat:
            if not isinstance(generation, dict):
                continue
            message = _lc_message(generation.get("message"))
            if message is None and generation.get("text") is not None:
                message = {"role": "assistant", "content": generation["text"]}
            if message is not None:
                found.append(message)
        return found or None
    choices = outputs.get("choices")
    if isinstance(choices, list):
        found = [c["message"] for c in choices if isinstance(c, dict) and isinstance(c.get("message"), dict)]
        return found or None
    message = _lc_message(outputs)
    return [message] if message else None


def _llm_input(inputs: Any) -> list[dict[str, Any]] | None:
    if not isinstance(inputs, dict):
        return None
    if "messages" in inputs:
        return _messages(inputs["messages"])
    prompts = inputs.get("prompts")
    if isinstance(prompts, list) and all(isinstance(p, str) for p in prompts):
        return [{"role": "user", "content": p} for p in prompts]
    return None


def _usage_of(value: Any) -> dict[str, int] | None:
    """`usage_metadata` (input/output/total, cache details) or `token_usage` (prompt/completion).
    Raises ValueError naming the key of an integer that is no token count (`model.is_token_count`)."""
    if not isinstance(value, dict):
        return None
    found: dict[str, int] = {}
    for name, keys in (
        ("input", ("input_tokens", "prompt_tokens")),
        ("output", ("output_tokens", "completion_tokens")),
        ("total", ("total_tokens",)),
    ):
        number = next(
            (_count(value, k) for k in keys if isinstance(value.get(k), int) and not isinstance(value[k], bool)), None
        )
        if number is not None:
            found[name] = number
    details = value.get("input_token_details") or value.get("prompt_tokens_details") or {}
    if isinstance(details, dict):
        for name, keys in (("cache_read", ("cache_read", "cached_tokens")), ("cache_creation", ("cache_creation",))):
            number = next((_count(details, k) for k in keys if isinstance(details.get(k), int)), None)
            if number:
                found[name] = number
    return found if ("input" in found or "output" in found or "total" in found) else None


def _count(usage: dict[str, Any], key: str) -> int:
    """The token count `usage[key]` (an int); raises ValueError naming `key` when it is none."""
    if not is_token_count(usage[key]):
        raise ValueError(f"usage {key} {TOKENS_RULE}, got {usage[key]!r}")
    return usage[key]


def _run_usage(run: dict[str, Any]) -> dict[str, int] | None:
    outputs = _dict(run.get("outputs"))
    candidates: list[Any] = [outputs.get("usage_metadata")]
    generations = outputs.get("generations")
    if isinstance(generations, list):
        for generation in (g for gs in generations for g in (gs if isinstance(gs, list) else [gs])):
            message = generation.get("message") if isinstance(generation, dict) else None
            if isinstance(message, dict):
                candidates.append((message.get("kwargs") or message).get("usage_metadata"))
    llm_output = outputs.get("llm_output")
    if isinstance(llm_output, dict):
        candidates += [llm_output.get("token_usage"), llm_output.get("usage")]
    candidates += [outputs.get("usage"), _metadata(run).get("usage_metadata")]
    candidates.append({k: run[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens") if k in run})
    return next((u for c in candidates if (u := _usage_of(c))), None)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _metadata(run: dict[str, Any]) -> dict[str, Any]:
    extra = run.get("extra")
    metadata = extra.get("metadata") if isinstance(extra, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def _model(run: dict[str, Any]) -> tuple[str | None, str | None]:
    """(request model, response model) of an LLM run."""
    metadata = _metadata(run)
    params = _dict(_dict(run.get("extra")).get("invocation_params"))
    inputs = _dict(run.get("inputs"))
    request = metadata.get("ls_model_name") or params.get("model") or params.get("model_name") or inputs.get("model")
    outputs = _dict(run.get("outputs"))
    llm_output = _dict(outputs.get("llm_output"))
    response = llm_output.get("model_name") or outputs.get("model")
    return (str(request) if request else None), (str(response) if response else None)


# --- runs -> spans --------------------------------------------------------------------------------


@dataclass
class _Run:
    """A run merged from its post and patches, with where it came from (for errors)."""

    where: str
    data: dict[str, Any]


def _runs(doc: Any) -> list[tuple[str, dict[str, Any]]] | None:
    """`(where, run dict)` of every run in `doc` (trees flattened, post before patch), or None when
    `doc` is not LangSmith runs."""
    items = doc if isinstance(doc, list) else [doc]
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    found: list[tuple[str, dict[str, Any]]] = []
    for i, item in enumerate(items):
        where = f"[{i}]" if isinstance(doc, list) else ""
        if _is_batch(item):
            for part in ("post", "patch"):
                for j, run in enumerate(item.get(part) or []):
                    found.append((f"{where}{part}[{j}]", run))
        elif _is_run(item):
            _flatten(item, where or "run", None, None, found)
        else:
            return None
    return found if found else None


def _is_run(item: dict[str, Any]) -> bool:
    return (
        isinstance(item.get("run_type"), str)
        and item["run_type"] in RUN_TYPES
        and ("id" in item or "dotted_order" in item)
        and "name" in item
        and ("start_time" in item or "dotted_order" in item)
    )


def _is_batch(item: dict[str, Any]) -> bool:
    if not item or not set(item) <= {"post", "patch"}:
        return False
    parts = [item.get(k) or [] for k in ("post", "patch")]
    if not all(isinstance(p, list) and all(isinstance(r, dict) for r in p) for p in parts) or not any(parts):
        return False
    return all(_is_run(r) for r in parts[0]) and all(("id" in r or "dotted_order" in r) for r in parts[1])


def _flatten(run: dict, where: str, parent: str | None, trace: str | None, out: list) -> None:
    flat = {k: v for k, v in run.items() if k != "child_runs"}
    if parent is not None and not flat.get("parent_run_id"):
        flat["parent_run_id"] = parent
    if trace is not None and not flat.get("trace_id"):
        flat["trace_id"] = trace
    out.append((where, flat))
    children = run.get("child_runs") or []
    if not isinstance(children, list):
        raise ValueError(f"{where}: child_runs must be a list")
    for i, child in enumerate(children):
        if not isinstance(child, dict):
            raise ValueError(f"{where}.child_runs[{i}] is not an object")
        _flatten(child, f"{where}.child_runs[{i}]", flat.get("id"), flat.get("trace_id") or flat.get("id"), out)


def sniff(doc: Any) -> bool:
    try:
        return _runs(doc) is not None
    except ValueError:
        return True  # runs with a malformed child: `split` names it


def _identity(where: str, run: dict[str, Any]) -> tuple[str, str | None, str]:
    """(run id, parent run id, trace id) from the fields, else `dotted_order`."""
    segments = dotted_segments(run["dotted_order"]) if run.get("dotted_order") else []
    run_id = run.get("id") or (segments[-1][1] if segments else None)
    if not run_id:
        raise ValueError(f"{where}: no id (and no dotted_order)")
    parent = run.get("parent_run_id") or (segments[-2][1] if len(segments) > 1 else None)
    trace = run.get("trace_id") or (segments[0][1] if segments else None) or (None if parent else run_id)
    if not trace:
        raise ValueError(f"{where} (id {run_id!r}): no trace_id (and no dotted_order)")
    return str(run_id), (str(parent) if parent else None), str(trace)


def split(doc: Any) -> dict[str, list[_Run]]:
    """Trace id (32 hex) -> its runs, posts and patches merged by run id, in file order. Raises
    ValueError naming the run and field when an id or time is malformed or a run lacks both."""
    chunks: dict[str, dict[str, _Run]] = defaultdict(dict)
    for where, run in _runs(doc) or []:
        run_id, parent, trace = _identity(where, run)
        merged = chunks[trace_id_of(trace)].setdefault(run_id, _Run(where=where, data={}))
        merged.data.update({k: v for k, v in run.items() if v is not None or k not in merged.data})
        merged.data.update(id=run_id, parent_run_id=parent, trace_id=trace)
    result: dict[str, list[_Run]] = {}
    for trace, runs in chunks.items():
        for merged in runs.values():
            _check_times(merged)
        result[trace] = list(runs.values())
    return result


def _check_times(run: _Run) -> None:
    for key in ("start_time", "end_time"):
        value = run.data.get(key)
        if value is None:
            continue
        try:
            time_ns(value)
        except ValueError as exc:
            raise ValueError(f"{run.where} (id {run.data['id']!r}): {key}: {exc}") from None


def _start_ns(run: _Run) -> int:
    if run.data.get("start_time") is not None:
        return time_ns(run.data["start_time"])
    if run.data.get("dotted_order"):
        return _dotted_time_ns(dotted_segments(run.data["dotted_order"])[-1][0])
    raise ValueError(f"{run.where} (id {run.data['id']!r}): start_time: missing")


def _attributes(run: dict[str, Any]) -> dict[str, Any]:
    """The span attributes of a run (see the module docstring)."""
    run_type = str(run.get("run_type") or "chain")
    attributes: dict[str, Any] = {
        "langsmith.span.kind": run_type,
        "langsmith.trace.name": str(run.get("name") or ""),
        "langsmith.run_id": run["id"],
    }
    if run.get("session_name"):
        attributes["langsmith.trace.session_name"] = str(run["session_name"])
    if isinstance(run.get("tags"), list) and run["tags"]:
        attributes["langsmith.span.tags"] = ", ".join(str(t) for t in run["tags"])
    for key, value in _metadata(run).items():
        if value is not None:
            scalar = isinstance(value, (str, int, float, bool))
            attributes[f"langsmith.metadata.{key}"] = value if scalar else jsonish(value)
    if run_type in OPERATIONS:
        attributes["gen_ai.operation.name"] = OPERATIONS[run_type]
    elif run_type == "chain":
        attributes[OI_SPAN_KIND] = OI_CHAIN  # no service to name its agent: its run does
    if run_type == "llm":
        attributes.update(_llm_attributes(run))
    elif run_type in ("tool", "retriever"):
        attributes.update(_tool_attributes(run))
    else:
        if run.get("inputs"):
            attributes["gen_ai.prompt"] = jsonish(_readable(run["inputs"]))
        if run.get("outputs"):
            attributes["gen_ai.completion"] = jsonish(_readable(run["outputs"]))
    return attributes


#: Usage name (`_usage_of`) -> GenAI attribute.
USAGE_ATTRIBUTES = {
    "input": "gen_ai.usage.input_tokens",
    "output": "gen_ai.usage.output_tokens",
    "total": "gen_ai.usage.total_tokens",
    "cache_read": "gen_ai.usage.cache_read.input_tokens",
    "cache_creation": "gen_ai.usage.cache_creation.input_tokens",
}


def _llm_attributes(run: dict[str, Any]) -> dict[str, Any]:
    """Model, usage and chat content of an LLM run."""
    attributes: dict[str, Any] = {}
    inputs, outputs = run.get("inputs"), run.get("outputs")
    request, response = _model(run)
    if request:
        attributes["gen_ai.request.model"] = request
    if response:
        attributes["gen_ai.response.model"] = response
    usage = _run_usage(run) or {}
    attributes.update({USAGE_ATTRIBUTES[name]: number for name, number in usage.items()})
    chat_in, chat_out = _llm_input(inputs), _llm_output(outputs)
    if chat_in:
        attributes["gen_ai.input.messages"] = jsonish(chat_in)
    elif inputs:
        attributes["gen_ai.prompt"] = jsonish(inputs)
    if chat_out:
        attributes["gen_ai.output.messages"] = jsonish(chat_out)
    elif outputs:
        attributes["gen_ai.completion"] = jsonish(outputs)
    return attributes


def _tool_attributes(run: dict[str, Any]) -> dict[str, Any]:
    """Name, arguments and result of a tool or retriever run (a ToolMessage result: its content).
    Arguments: a tool's `input` (the text older LangChain tool runs record), else its inputs (the
    arguments themselves, as newer ones record them); a retriever's `query`."""
    attributes: dict[str, Any] = {"gen_ai.tool.name": str(run.get("name") or "")}
    inputs, outputs = run.get("inputs"), run.get("outputs")
    if inputs:
        key = "query" if run.get("run_type") == "retriever" else "input"
        value = inputs.get(key, inputs) if isinstance(inputs, dict) else inputs
        attributes["gen_ai.tool.call.arguments"] = jsonish(value)
    if outputs:
        value = outputs.get("output", outputs) if isinstance(outputs, dict) and len(outputs) == 1 else outputs
        message = _lc_message(value)
        if message is not None:
            if call_id := _dict(_dict(value).get("kwargs") or value).get("tool_call_id"):
                attributes["gen_ai.tool.call.id"] = str(call_id)
            value = message.get("content")
        attributes["gen_ai.tool.call.result"] = jsonish(value)
    return attributes


def _span(trace_id: str, run: _Run) -> Span:
    data = run.data
    start = _start_ns(run)
    end = time_ns(data["end_time"]) if data.get("end_time") is not None else start
    error = data.get("error")
    return Span(
        trace_id=trace_id,
        span_id=span_id_of(data["id"]),
        parent_id=span_id_of(data.get("parent_run_id")),
        name=str(data.get("name") or ""),
        start_ns=start,
        end_ns=max(end, start),
        attributes=_attributes(data),
        kind="client" if data.get("run_type") == "llm" else "internal",
        error=None if error in (None, "") else str(error),
    )


def _merged(records: list[_Run]) -> list[_Run]:
    """Records of one run id (a post and its patches from several files) merged, in order."""
    runs: dict[str, _Run] = {}
    for record in records:
        found = runs.setdefault(record.data["id"], _Run(where=record.where, data={}))
        found.data.update({k: v for k, v in record.data.items() if v is not None or k not in found.data})
    return list(runs.values())


def to_spans(trace_id: str, records: list[_Run]) -> list[Span]:
    """The runs of `split` decoded as spans (see the module docstring). Raises ValueError naming
    the run (where, id, name) and the field of a token count out of 0..MAX_TOKENS."""
    spans = []
    for run in _merged(records):
        try:
            spans.append(check_tokens(_span(trace_id, run)))
        except ValueError as exc:
            raise ValueError(f"{run.where} (id {run.data.get('id')!r}, {run.data.get('name')!r}): {exc}") from None
    return spans


def build(trace_id: str, records: list[_Run], sources: list[str]) -> Trace:
    """One orchestration trace from the runs of `split` (possibly from several files): the span
    mapping, then the trace-level facts of the root run (name, project, thread -> `session_id`)."""
    records = _merged(records)
    trace = build_trace(to_spans(trace_id, records), source_format=FORMAT, trace_id=trace_id, sources=sources)
    runs = [r.data for r in records]
    ids = {r["id"] for r in runs}
    root = next((r for r in runs if r.get("parent_run_id") not in ids), runs[0])
    trace.name = str(root.get("name") or trace.name)
    trace.attributes["langsmith_trace_id"] = str(root.get("trace_id") or root["id"])
    if root.get("session_name"):
        trace.attributes["project"] = str(root["session_name"])
    if root.get("session_id"):
        trace.attributes["project_id"] = str(root["session_id"])
    for run in [root] + runs:
        metadata = _metadata(run)
        thread = next((metadata[k] for k in THREAD_KEYS if metadata.get(k)), None)
        if thread is not None:
            trace.attributes["session_id"] = str(thread)
            break
    return trace
