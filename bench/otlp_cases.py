"""OTLP test cases for bench_otlp_vs_phoenix: multi-agent traces as OpenTelemetry GenAI spans.

Each case is one trace, built deterministically from a seed (a `random.Random` of the case name and
seed draws the 16-byte trace id, 8-byte span ids, durations, token counts and message text) on
simulated time from 2025-01-01 UTC.
Spans follow the GenAI semantic conventions: `invoke_agent <agent>` (`gen_ai.agent.name`),
`chat <model>` (`gen_ai.usage.input_tokens` / `output_tokens`, `gen_ai.input.messages` /
`gen_ai.output.messages` as JSON text) and `execute_tool <tool>` (`gen_ai.tool.name`, call id,
arguments, result); the resource names the process (`service.name`).

- `fanout-33k`: an orchestrator (`invoke_agent orchestrator`, the root) runs 10 rounds; in each,
  one chat turn asks for 300 tool calls at once, each an `execute_tool ask_worker_NNN` span whose
  child is `invoke_agent worker_NNN` (all 300 run concurrently); a worker chats, calls 4 tools
  with a chat turn after each. A last chat turn answers. 301 agents, 33,012 spans.
- `fanout-100k`: the same with 30 rounds: 301 agents, 99,032 spans (not in the side-by-side run's
  default cases: Phoenix takes about half an hour for it).
- `fanout100`: the same with 100 workers and 1 round: 101 agents, 1,103 spans.
- `supervisor` (LangGraph-style): under `invoke_agent supervisor`, 8 cycles of a supervisor chat
  turn that calls `transfer_to_<worker>` (an `execute_tool` span) and then the worker's
  `invoke_agent` span (a sibling: the graph runs the worker node next) with chat, tool, chat;
  3 workers (each called at least once), 50 spans.
- `roundrobin` (AutoGen-style): a team span (no GenAI operation) over 5 alternating turns of
  `writer` and `critic` (`invoke_agent` with one chat turn; the writer's first turn calls a tool):
  2 agents, 12 spans.

`requests(case, batch)` cuts them up as an OpenTelemetry SDK's batch exporter sends them: finished spans in
end-time order (children before parents), `batch` spans per `ExportTraceServiceRequest`;
`to_json` is the OTLP/JSON form of one (hex ids, 64-bit integers as strings, enums as integers).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    InstrumentationScope,
    KeyValue,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

#: Simulated time starts here: 2025-01-01T00:00:00Z, in ns.
EPOCH_NS = 1_735_689_600 * 10**9
MODEL = "gpt-4o-mini"
SCOPE = InstrumentationScope(name="bench.otlp_cases", version="1")
WORDS = (
    "agent",
    "shard",
    "summary",
    "index",
    "report",
    "query",
    "result",
    "source",
    "table",
    "draft",
    "review",
    "plan",
    "metric",
    "record",
    "answer",
    "cache",
    "batch",
    "error",
    "retry",
    "schema",
)
TOOLS = ("search", "read_file", "run_sql", "fetch_url", "calculator")


@dataclass
class Case:
    """One trace: its spans (in creation order), the agents that act in it, and its resource."""

    name: str
    service: str
    trace_id: bytes
    agents: set[str] = field(default_factory=set)
    spans: list[Span] = field(default_factory=list)


class Builder:
    """Makes one case's spans on simulated time (seconds from EPOCH_NS) from a seeded RNG."""

    def __init__(self, name: str, service: str, seed: int):
        self.rng = random.Random(f"{name}:{seed}")
        self.case = Case(name, service, self.rng.randbytes(16))

    def open(self, name: str, parent: Span | None, t: float, kind: int, **attributes: str | int) -> Span:
        """A span started at `t`; its end is set by `close`."""
        span = Span(
            trace_id=self.case.trace_id,
            span_id=self._span_id(),
            name=name,
            kind=kind,
            start_time_unix_nano=EPOCH_NS + round(t * 1e9),
            attributes=[
                KeyValue(key=k, value=AnyValue(int_value=v) if isinstance(v, int) else AnyValue(string_value=v))
                for k, v in attributes.items()
            ],
        )
        if parent is not None:
            span.parent_span_id = parent.span_id
        self.case.spans.append(span)
        return span

    def close(self, span: Span, t: float) -> float:
        span.end_time_unix_nano = EPOCH_NS + round(t * 1e9)
        return t

    def _span_id(self) -> bytes:
        while not any(span_id := self.rng.randbytes(8)):
            pass
        return span_id

    def text(self, words: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(words))

    def agent(self, name: str, parent: Span | None, t: float) -> Span:
        self.case.agents.add(name)
        return self.open(
            f"invoke_agent {name}",
            parent,
            t,
            Span.SPAN_KIND_INTERNAL,
            **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
        )

    def chat(
        self, parent: Span, t: float, prompt: list[dict], reply: str = "", tool_calls: list[tuple[str, str, dict]] = ()
    ) -> float:
        """An LLM call from `t` answering `prompt` (GenAI messages) with `reply` text and/or
        `tool_calls` [(call id, tool name, arguments)]; returns its end."""
        parts = ([{"type": "text", "content": reply}] if reply else []) + [
            {"type": "tool_call", "id": call_id, "name": tool, "arguments": arguments}
            for call_id, tool, arguments in tool_calls
        ]
        output = [{"role": "assistant", "parts": parts, "finish_reason": "tool_call" if tool_calls else "stop"}]
        span = self.open(
            f"chat {MODEL}",
            parent,
            t,
            Span.SPAN_KIND_CLIENT,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": MODEL,
                "gen_ai.response.model": MODEL,
                "gen_ai.usage.input_tokens": self.rng.randint(200, 4000),
                "gen_ai.usage.output_tokens": self.rng.randint(20, 600),
                "gen_ai.input.messages": json.dumps(prompt),
                "gen_ai.output.messages": json.dumps(output),
            },
        )
        return self.close(span, t + self.rng.uniform(0.4, 2.5))

    def tool(
        self,
        parent: Span,
        t: float,
        call: tuple[str, str, dict],
        result: str,
        run: Callable[[Span, float], float] | None = None,
    ) -> float:
        """An `execute_tool` span from `t` for `call` (id, tool name, arguments) that returns
        `result`; `run(span, t)` makes what runs inside it (a delegated agent) and returns when
        that ends, else the tool takes a random short time. Returns the span's end."""
        call_id, tool, arguments = call
        span = self.open(
            f"execute_tool {tool}",
            parent,
            t,
            Span.SPAN_KIND_INTERNAL,
            **{
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.arguments": json.dumps(arguments),
                "gen_ai.tool.call.result": result,
            },
        )
        end = run(span, t + 0.001) if run else t + self.rng.uniform(0.02, 0.6)
        return self.close(span, end + 0.001)

    def call(self, tool: str, **arguments: str) -> tuple[str, str, dict]:
        return f"call_{self.rng.randbytes(6).hex()}", tool, arguments


def _messages(*pairs: tuple[str, str]) -> list[dict]:
    return [{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in pairs]


def _tool_results(calls: list[tuple[str, str, dict]], results: list[str]) -> list[dict]:
    return [
        {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": call_id, "response": result}
                for (call_id, _, _), result in zip(calls, results)
            ],
        }
    ]


def _worker(b: Builder, name: str, task: str, tool_calls: int) -> Callable[[Span, float], float]:
    """A worker's `invoke_agent` span: chat, then `tool_calls` times tool and chat."""

    def run(parent: Span, t: float) -> float:
        span = b.agent(name, parent, t)
        prompt = _messages(("system", f"You are {name}. Use tools, then answer briefly."), ("user", task))
        t += 0.002
        for _ in range(tool_calls):
            call, result = b.call(b.rng.choice(TOOLS), query=b.text(6)), b.text(20)
            t = b.chat(span, t, prompt, tool_calls=[call])
            t = b.tool(span, t + 0.001, call, result) + 0.001
            prompt = _tool_results([call], [result])
        t = b.chat(span, t, prompt, reply=b.text(40))
        return b.close(span, t + 0.002)

    return run


def fanout(name: str, seed: int, workers: int, rounds: int, tool_calls: int = 4) -> Case:
    b = Builder(name, "fanout-orchestrator", seed)
    root = b.agent("orchestrator", None, 0.0)
    t = 0.002
    prompt = _messages(
        ("system", "You are the orchestrator. Split the job among your workers."),
        ("user", f"Survey all {workers} shards, {rounds} passes. " + b.text(20)),
    )
    for round_ in range(rounds):
        calls = [
            b.call(f"ask_worker_{i:03d}", task=f"pass {round_ + 1}, shard {i}: {b.text(8)}") for i in range(workers)
        ]
        results = [b.text(12) for _ in calls]
        t = b.chat(root, t, prompt, tool_calls=calls)
        t = (
            max(
                b.tool(
                    root,
                    t + 0.001 * (i + 1),
                    call,
                    result,
                    _worker(b, call[1].removeprefix("ask_"), call[2]["task"], tool_calls),
                )
                for i, (call, result) in enumerate(zip(calls, results))
            )
            + 0.002
        )
        prompt = _tool_results(calls, results)
    t = b.chat(root, t, prompt, reply=b.text(80))
    b.close(root, t + 0.002)
    return b.case


def supervisor(name: str, seed: int, cycles: int = 8) -> Case:
    b = Builder(name, "langgraph-supervisor", seed)
    root = b.agent("supervisor", None, 0.0)
    t = 0.002
    prompt = _messages(("system", "You are a supervisor managing researcher, coder and writer."), ("user", b.text(25)))
    workers = b.rng.sample(("researcher", "coder", "writer"), 3)
    for cycle in range(cycles):
        worker = workers[cycle % 3] if cycle < 3 else b.rng.choice(workers)
        call = b.call(f"transfer_to_{worker}")
        t = b.chat(root, t, prompt, tool_calls=[call])
        t = b.tool(root, t + 0.001, call, f"Successfully transferred to {worker}")
        t = _worker(b, worker, b.text(15), 1)(root, t + 0.001)
        prompt = _messages(("assistant", f"[{worker}] {b.text(30)}"))
    t = b.chat(root, t + 0.001, prompt, reply=b.text(60))
    b.close(root, t + 0.002)
    return b.case


def roundrobin(name: str, seed: int, turns: int = 5) -> Case:
    b = Builder(name, "autogen-roundrobin", seed)
    team = b.open("autogen run RoundRobinGroupChat", None, 0.0, Span.SPAN_KIND_INTERNAL)
    t = 0.002
    message = ("user", "Write a short report on " + b.text(8))
    for turn in range(turns):
        agent = ("writer", "critic")[turn % 2]
        span = b.agent(agent, team, t)
        prompt = _messages(("system", f"You are the {agent}."), message)
        if turn == 0:  # the writer looks something up; the tool's result is its message
            call, result = b.call("search", query=b.text(5)), b.text(30)
            t = b.chat(span, t + 0.001, prompt, tool_calls=[call])
            t = b.tool(span, t + 0.001, call, result)
        else:
            result = b.text(40) + (" APPROVE" if turn == turns - 1 else "")
            t = b.chat(span, t + 0.001, prompt, reply=result)
        t = b.close(span, t + 0.001) + 0.002
        message = ("user", f"[{agent}] {result}")
    b.close(team, t)
    return b.case


#: Case name -> builder of it from a seed.
CASES: dict[str, Callable[[int], Case]] = {
    "supervisor": lambda seed: supervisor("supervisor", seed),
    "roundrobin": lambda seed: roundrobin("roundrobin", seed),
    "fanout100": lambda seed: fanout("fanout100", seed, workers=100, rounds=1),
    "fanout-33k": lambda seed: fanout("fanout-33k", seed, workers=300, rounds=10),
    "fanout-100k": lambda seed: fanout("fanout-100k", seed, workers=300, rounds=30),
}


def requests(case: Case, batch: int) -> list[ExportTraceServiceRequest]:
    """The case's spans in end-time order, `batch` per request, under its resource and scope."""
    order = sorted(range(len(case.spans)), key=lambda i: (case.spans[i].end_time_unix_nano, -i))
    resource = Resource(attributes=[KeyValue(key="service.name", value=AnyValue(string_value=case.service))])
    return [
        ExportTraceServiceRequest(
            resource_spans=[
                ResourceSpans(
                    resource=resource,
                    scope_spans=[ScopeSpans(scope=SCOPE, spans=[case.spans[i] for i in order[start : start + batch]])],
                )
            ]
        )
        for start in range(0, len(order), batch)
    ]


def to_json(request: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON of `request`: the protobuf JSON mapping with integer enums, ids as hex."""
    doc = MessageToDict(request, use_integers_for_enums=True)
    for resource_doc, resource_spans in zip(doc["resourceSpans"], request.resource_spans):
        for scope_doc, scope_spans in zip(resource_doc["scopeSpans"], resource_spans.scope_spans):
            for span_doc, span in zip(scope_doc["spans"], scope_spans.spans):
                span_doc["traceId"], span_doc["spanId"] = span.trace_id.hex(), span.span_id.hex()
                if span.parent_span_id:
                    span_doc["parentSpanId"] = span.parent_span_id.hex()
    return json.dumps(doc, separators=(",", ":")).encode()
