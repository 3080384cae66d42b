"""LangGraph's agents: which agent a span of a LangGraph run acts for, read from the metadata that
LangGraph puts on every run of a node task, and the `Command(goto=...)` hand-offs.

LangGraph (langgraph/pregel) adds to the config metadata of each node task `langgraph_node` (the
node's name), `langgraph_step`, `langgraph_triggers`, `langgraph_path` and `langgraph_checkpoint_ns`:
`<node>:<task id>` in the top graph, `<node>:<task id>|<inner node>:<task id>` inside a sub-graph run
by that node, and so on down. Instrumentations export it with every span of the task:
OpenInference's LangChain tracer as the JSON attribute `metadata`; LangSmith's OTel exporter as
`langsmith.metadata.<key>`; Langfuse as `langfuse.observation.metadata.<key>`; OpenLLMetry as
`traceloop.association.properties.<key>` (any `<prefix>.<key>` is read).

The rule (docs/otel-mapping.md, "Agent identity"): a graph is a multi-agent graph when two or more
of its nodes call a model (an LLM span runs in them, not inside a tool of theirs); each node of a
multi-agent graph is an agent named by the node, with everything that runs in it (its sub-graph,
its bookkeeping spans); the deepest multi-agent graph a span runs in decides. A node of a multi-agent
graph that calls no model (a `ToolNode`, a router) acts for the agent node that ran before it in that
graph (else the one after). A graph with one model node (a ReAct agent: `agent` + `tools`) is one
agent: inside a multi-agent graph, the node that runs it; at the top, the agent that runs the graph
(its spans name none of their own: the framework's span names `agent`, `call_model` are steps, and
the graph run's span is named by the other rules). The nodes below the agent's are its steps
(`graph_node`). The run of a multi-agent top graph (the span above its node tasks, no metadata of
its own) and its `__start__` task are the workflow: no agent.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import keys
from .span import Span, span_memo

NODE, NAMESPACE, STEP = "langgraph_node", "langgraph_checkpoint_ns", "langgraph_step"
#: OpenInference's LangChain tracer: the run's metadata as JSON text.
OI_METADATA = "metadata"
#: LangGraph's names: the graph's entry and exit nodes (`langgraph.constants.START` / `END`), the
#: name a compiled graph gets when the program gives none, and `Command.PARENT`.
START, END, DEFAULT_GRAPH_NAME = "__start__", "__end__", "LangGraph"
#: A node task: (node name, task key) - the checkpoint namespace segment.
Segment = tuple[str, str]


@span_memo
def metadata(span: Span) -> dict[str, Any]:
    """The LangGraph metadata keys of `span` (`langgraph_node`, `langgraph_checkpoint_ns`,
    `langgraph_step`) from OpenInference's `metadata` JSON or any `<prefix>.<key>` attribute."""
    found: dict[str, Any] = {}
    raw = span.attributes.get(OI_METADATA)
    if isinstance(raw, str) and raw[:1] == "{":
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    if isinstance(raw, dict):
        found = {key: raw[key] for key in (NODE, NAMESPACE, STEP) if key in raw}
    if NODE not in found:
        for key, value in span.attributes.items():
            name = key.rsplit(".", 1)[-1]
            if name in (NODE, NAMESPACE, STEP) and name not in found:
                found[name] = value
    return found


@span_memo
def position(span: Span) -> tuple[Segment, ...] | None:
    """The node tasks `span` runs in, outermost first: `langgraph_checkpoint_ns` split into
    (node, task) segments; without one, (`langgraph_node`, step) in the top graph; else None."""
    found = metadata(span)
    node = found.get(NODE)
    if not isinstance(node, str) or not node:
        return None
    namespace = found.get(NAMESPACE)
    if isinstance(namespace, str) and namespace:
        segments = tuple((part.split(":", 1)[0], part) for part in namespace.split("|") if part)
        if segments and all(name for name, _ in segments):
            return segments
    return ((node, f"{node}:{found.get(STEP)}"),)


def _goto(value: Any) -> list[str]:
    """Node names a `Command.goto` names: a node, a `Send` (`{"node": ...}`) or a list of them."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict) and isinstance(value.get("node"), str):
        return [value["node"]]
    if isinstance(value, list):
        return [name for item in value for name in _goto(item)]
    return []


@span_memo
def command_goto(span: Span) -> tuple[str, ...]:
    """The nodes a LangGraph `Command` in the span's output goes to (`END` left out): a JSON object
    with `goto` beside `update` / `graph` / `resume` (OpenInference `output.value`; LangSmith's
    `gen_ai.completion`, wrapped as `{"output": ...}`)."""
    for key in (keys.OUTPUT_VALUE, keys.COMPLETION):
        value = span.attributes.get(key)
        if not isinstance(value, str) or "goto" not in value:
            continue
        try:
            decoded = json.loads(value)
        except ValueError:
            continue
        if isinstance(decoded, dict) and set(decoded) == {"output"}:
            decoded = decoded["output"]
        if isinstance(decoded, str) and (named := _repr_goto(decoded)) is not None:
            return tuple(name for name in named if name != END)
        if isinstance(decoded, dict) and "goto" in decoded and {"update", "graph"} & set(decoded):
            return tuple(name for name in _goto(decoded["goto"]) if name != END)
    return ()


#: A `Command`'s repr (`Command(goto='x')`, `Command(update={...}, goto=['a', Send(node='b', arg=...)])`):
#: the text after `goto=`; the node names in it: a `Send`'s `node='…'`, else the quoted names.
COMMAND_REPR = re.compile(r"^Command\(.*\bgoto=(.*)\)$", re.DOTALL)
SEND_NODE = re.compile(r"""\bnode=(?:'([^']*)'|"([^"]*)")""")
QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")


def _repr_goto(text: str) -> list[str] | None:
    """The nodes a LangGraph `Command` written as its repr goes to (OpenInference's LangChain tracer
    before 0.1.5x records a node's `Command` output as `str()` of it), else None: `goto='x'`, a
    list of names, `Send(node='x', arg=...)` or a list of those."""
    match = COMMAND_REPR.match(text)
    if match is None:
        return None
    goto = match.group(1).strip()
    if goto.startswith("Send(") or goto.startswith("[Send("):
        found = SEND_NODE.findall(goto)
    elif goto[:1] in ("'", '"', "["):
        end = goto.find("]") + 1 if goto.startswith("[") else len(goto)
        found = QUOTED.findall(goto[:end] if goto.startswith("[") else goto.split(",")[0])
    else:
        return None
    return [a or b for a, b in found]


@dataclass
class GraphAgents:
    """`agents`: span id -> the agent it acts for (None: the agent that runs the graph, named by the
    other rules); `steps`: span id -> its node path below that
    agent's node ("agent", "tools"); `workflow`: span ids of the graph run and its `__start__`
    task (no agent); `node_runs`: the outermost span of each node task (a `Command` it returns is
    the node's hand-off)."""

    agents: dict[str, str | None] = field(default_factory=dict)
    steps: dict[str, str] = field(default_factory=dict)
    workflow: set[str] = field(default_factory=set)
    node_runs: set[str] = field(default_factory=set)


def graph_agents(
    spans: Iterable[Span], parent: Mapping[str, str | None], role: Mapping[str, str | None], llm: str, tool: str
) -> GraphAgents:
    """The agents of the LangGraph runs among `spans` (module docstring); `parent` and `role` by
    span id (`llm` / `tool`: the roles of model and tool calls)."""
    spans = list(spans)
    found = GraphAgents()
    positions = {s.sid: p for s in spans if not s.missing and (p := position(s)) is not None}
    if not positions:
        return found
    by_id = {s.sid: s for s in spans}
    for sid in _in_agent_runs(positions, parent, by_id):
        del positions[sid]
    model_nodes = _model_nodes(positions, parent, role, llm, tool)
    multi = {graph for graph, nodes in model_nodes.items() if len(nodes) >= 2}
    acting_for = _acting_for(positions, by_id, model_nodes, multi)
    for sid, where in positions.items():
        agent, level = None, -1
        for depth in range(len(where)):
            if where[:depth] in multi and (name := acting_for.get(where[: depth + 1])):
                agent, level = name, depth
        if agent is None and () in multi and where[0][0] == START:
            found.workflow.add(sid)
            continue
        found.agents[sid] = agent
        below = [name for name, _ in where[level + 1 :]]
        if below:
            found.steps[sid] = "/".join(below)
        above = parent.get(sid)
        if above is None or positions.get(above) != where:
            found.node_runs.add(sid)
    if () in multi:
        found.workflow.update(_graph_runs(positions, parent, by_id))
    return found


Path = tuple[Segment, ...]


def _model_nodes(
    positions: Mapping[str, Path], parent: Mapping[str, str | None], role: Mapping[str, str | None], llm: str, tool: str
) -> dict[Path, set[str]]:
    """Graph (the node tasks above it) -> its nodes in which a model is called: an LLM span runs
    in the node, not inside a tool of the node (a model called inside a tool counts for the graphs
    inside that tool only)."""
    model_nodes: dict[Path, set[str]] = defaultdict(set)
    for sid, where in positions.items():
        if role.get(sid) != llm:
            continue
        depth = 0
        ancestor = parent.get(sid)
        while ancestor is not None:
            if role.get(ancestor) == tool and (tool_at := positions.get(ancestor)) is not None:
                depth = max(depth, len(tool_at))
            ancestor = parent.get(ancestor)
        for level in range(depth, len(where)):
            model_nodes[where[:level]].add(where[level][0])
    return model_nodes


def _acting_for(
    positions: Mapping[str, Path], by_id: Mapping[str, Span], model_nodes: Mapping[Path, set[str]], multi: set[Path]
) -> dict[Path, str]:
    """Node task of a multi-agent graph -> the agent it acts for: its node where the node calls a
    model, else the model node whose task started last before it in that graph (else the first)."""
    starts: dict[Path, int] = {}
    for sid, where in positions.items():
        start = by_id[sid].start_ns
        for level in range(len(where)):
            task = where[: level + 1]
            if task not in starts or start < starts[task]:
                starts[task] = start
    tasks: dict[Path, list[tuple[int, Path]]] = defaultdict(list)
    for task, start in starts.items():
        if task[:-1] in multi:
            tasks[task[:-1]].append((start, task))
    acting_for: dict[Path, str] = {}
    for graph, members in tasks.items():
        members.sort()
        agent_tasks = [(start, task) for start, task in members if task[-1][0] in model_nodes[graph]]
        for start, task in members:
            if task[-1][0] in model_nodes[graph]:
                acting_for[task] = task[-1][0]
                continue
            before = [t for s, t in agent_tasks if s <= start]
            chosen = before[-1] if before else (agent_tasks[0][1] if agent_tasks else None)
            if chosen is not None:
                acting_for[task] = chosen[-1][0]
    return acting_for


def _in_agent_runs(positions: Mapping[str, tuple[Segment, ...]], parent: Mapping[str, str | None], by_id) -> set[str]:
    """The spans with LangGraph metadata that run inside a GenAI agent invocation (an `invoke_agent`
    span at or above them): the nodes of that one agent's strategy graph, its steps, no agents
    (Koog's Langfuse integration writes `langgraph_node` / `langgraph_step` on its strategy nodes
    for Langfuse's graph view)."""
    inside: dict[str, bool] = {}

    def under_agent(sid: str | None) -> bool:
        path = []
        while sid is not None and sid not in inside:
            span = by_id.get(sid)
            if span is not None and span.attributes.get(keys.OPERATION_NAME) == keys.INVOKE_AGENT:
                inside[sid] = True
                break
            path.append(sid)
            sid = parent.get(sid)
        found = inside.get(sid, False) if sid is not None else False
        for step in path:
            inside[step] = found
        return found

    return {sid for sid in positions if under_agent(sid)}


def _graph_runs(positions: Mapping[str, tuple[Segment, ...]], parent: Mapping[str, str | None], by_id) -> set[str]:
    """Spans without LangGraph metadata that a node task runs directly under: the graph runs."""
    return {
        above
        for sid in positions
        if (above := parent.get(sid)) is not None and above not in positions and not by_id[above].missing
    }
