"""MAST / MAD traces ("Why Do Multi-Agent LLM Systems Fail?", Cemri et al., NeurIPS 2025 D&B).

Source: HF dataset mcemri/MAST-Data, `MAD_human_labelled_dataset.json`. A file is a JSON list of
records (a single record object is read too):

    {round, mas_name, benchmark_name, trace_id, trace: "<raw log text>",
     annotations: [{"failure mode": "<code> <name>\\n\\n<definition>", annotator_1: bool|NaN, ...}]}

The raw log is cut into turns at each framework's own speaker markers (`FRAMEWORKS`, found by
`mas_name` or `benchmark_name`: upstream swaps them in some records). A log that is a JSON object
with a `trajectory` list of message objects (AG2 records) gets one turn per message, spoken by its
`name`. An unknown framework, or a log without its framework's markers, is cut with whichever known
marker set finds the most turns, else kept as a single turn. Text before the first marker (task,
config) and after a JSON trajectory (the annotators' note) are turns of the `system` agent.
A log that is a JSON object keeps its scalar top-level fields in `attributes["log_fields"]`; its
`instance_id` is the trace's task id.

One event per turn, id "turn<index>", t = index (`synthetic_time`), agent = the speaker (names
compare case-insensitively), content = the exact text: the contents concatenate back to the raw
log. Edges: `temporal` between consecutive turns, and between consecutive turns of different
speakers a `tool_dependency` into a tool result, a `return` out of a return, else a `message`.
Agents are peers: the logs state no spawn structure.

Labels: one `failure_mode` label (value "<code> <name>") per mode that most of its non-blank
annotators marked; all annotations (definition and votes, NaN as None) stay in
`attributes["annotations"]`. The labels are whole-trace and unreliable (see the data README): for
display, not attribution ground truth. Identity: SHA-256 of the record (`trace_id` is an index
into one release file, not unique across files).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, cast

from swarmscope.model import (
    Agent,
    Edge,
    Event,
    Label,
    Trace,
    TraceValidationError,
    content_hash,
)

from .chatlog import AgentNames, estimate_missing_tokens, temporal_chain

FORMAT = "mast"
SOURCE = "mast"
#: Speaker of text that no agent wrote: task preambles, log headers, evaluations, notes.
SYSTEM = "system"
#: Speaker of code-execution and tool output.
ENVIRONMENT = "environment"
SINGLE_TURN = "single turn"
JSON_TRAJECTORY = "JSON trajectory"
_MARKER_TEXT_LIMIT = 200
_LOG_FIELD_LIMIT = 1000


@dataclass(frozen=True)
class Marker:
    """A speaker marker: a new turn starts where `pattern` matches (re.MULTILINE).

    The speaker is `agent` when set, else the pattern's `agent` group. Optional groups: `to`,
    `tool`, `role` (event fields), `time` (kept as `log_time`), and `a` / `b` for a pair "A<->B"
    whose other party is `to`.
    """

    pattern: re.Pattern[str]
    type: str = "message"
    agent: str | None = None


def _marker(regex: str, **fields: Any) -> Marker:
    return Marker(re.compile(regex, re.MULTILINE), **fields)


@dataclass(frozen=True)
class Framework:
    """A multi-agent framework: its display name, the names records give it, its speaker markers."""

    name: str
    aliases: tuple[str, ...]
    markers: tuple[Marker, ...]


_LOGURU = r"(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) \| \w+ *\| [\w.]+:\w+:\d+ - "
_HYPERAGENT = r"""^[ \t]*"?HyperAgent_\S+ - INFO - """

FRAMEWORKS: tuple[Framework, ...] = (
    Framework(
        "ChatDev",
        ("chatdev",),
        (
            # "[2025-17-01 11:36:46 INFO] Chief Product Officer: **Chief Product Officer<->Chief
            #  Executive Officer on : DemandAnalysis, turn 0**", "[... INFO] System: **[chatting]**"
            _marker(
                r"^\[(?P<time>[^\]\n]+?) INFO\] (?P<agent>[^:\n*\[\]]+?): \*\*"
                r"(?:(?P<a>[^*\n]+?)<->(?P<b>[^*\n]+?) on )?"
            ),
        ),
    ),
    Framework(
        "MetaGPT",
        ("metagpt",),
        (
            # run record: "... | INFO     | metagpt.roles.role:_act:391 - Alice(SimpleCoder): to do ..."
            _marker(_LOGURU + r"(?P<agent>\w+)\((?P<role>\w+)\): "),
            # communication log: "[2025-03-27 01:21:03] FROM: Human TO: {'<all>'}"
            _marker(r"^\[(?P<time>[^\]\n]+)\] FROM: (?P<agent>\S+) TO: "),
            # "[2025-03-27 01:21:11] NEW MESSAGES:\n\nSimpleCoder: "
            _marker(r"^\[(?P<time>[^\]\n]+)\] NEW MESSAGES:[ \t]*\n\s*(?P<agent>\w+): "),
        ),
    ),
    Framework(
        "AG2",
        ("ag2", "autogen", "pyautogen"),
        (
            # console: "mathproxyagent (to assistant):" (JSON records: see JSON_TRAJECTORY)
            _marker(r"^(?P<agent>[^\s()][^\n()]*?) \(to (?P<to>[^\n()]+)\):[ \t]*$"),
        ),
    ),
    Framework(
        "HyperAgent",
        ("hyperagent",),
        (
            # '"HyperAgent_<instance> - INFO - Inner-Navigator-Assistant's Response: ...' (Navigator)
            _marker(_HYPERAGENT + r"(?:Inner-)?(?P<agent>[\w-]+?)(?:-Assistant)?'s Response:"),
            # '... - INFO - Navigator->Planner: ...': a sub-agent reports back to the planner
            _marker(_HYPERAGENT + r"(?P<agent>[\w-]+)->(?P<to>[\w-]+):", type="return"),
            _marker(_HYPERAGENT + r"Initialized ", agent=SYSTEM),
        ),
    ),
    Framework(
        "AppWorld",
        ("appworld",),
        (
            _marker(r"^[ \t]*Response from (?P<tool>\w+) API[ \t]*$", type="tool_result", agent=ENVIRONMENT),
            _marker(r"^[ \t]*Response from (?P<agent>[^\n]+?)[ \t]*$"),
            # the input an agent gets: the supervisor's request, or its own code's output
            _marker(r"^[ \t]*Message to (?P<to>[^\n]+?)[ \t]*$", agent=ENVIRONMENT),
            _marker(r"^Code Execution Output[ \t]*$", type="tool_result", agent=ENVIRONMENT),
            _marker(r"^Evaluation[ \t]*$", agent=SYSTEM),
        ),
    ),
    Framework(
        "Magentic-One",
        ("magenticone", "magentic"),
        (
            # AutoGen AgentChat console: "---------- WebSurfer ----------"
            _marker(r"^-{5,} (?P<agent>[^\n]+?) -{5,}[ \t]*$"),
        ),
    ),
    Framework(
        "OpenManus",
        ("openmanus", "manus"),
        (
            # "2025-03-31 20:33:34.369 | INFO     | app.agent.toolcall:think:81 - ✨ Manus's thoughts: "
            _marker("^" + _LOGURU + r"\W*(?P<agent>[^\n']+?)'s thoughts:"),
            _marker(
                "^" + _LOGURU + r"\W*Tool '(?P<tool>[^'\n]+)' completed its mission!",
                type="tool_result",
                agent=ENVIRONMENT,
            ),
            _marker(
                r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) \| \w+ *\| app\.flow\.[\w.]+:\w+:\d+ - ",
                agent="PlanningFlow",
            ),
            _marker(
                r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) \| \w+ *\| __main__:\w+:\d+ - ", agent=SYSTEM
            ),
        ),
    ),
)


@dataclass
class Turn:
    """A slice text[start:end] of a raw log and what its marker says about it."""

    start: int
    end: int
    agent: str
    type: str = "message"
    to: str | None = None
    tool: str | None = None
    role: str | None = None
    marker: str | None = None
    log_time: str | None = None
    chat_role: str | None = None


def _is_record(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and "trace" in doc
        and any(key in doc for key in ("mas_name", "annotations", "benchmark_name"))
    )


def sniff(doc: Any) -> bool:
    return _is_record(doc) or (isinstance(doc, list) and bool(doc) and all(_is_record(d) for d in doc))


def parse(doc: Any, source: str) -> list[Trace]:
    """One trace per record. Raises TraceValidationError naming a record whose `trace` is not text."""
    records = doc if isinstance(doc, list) else [doc]
    for index, record in enumerate(records):
        if not isinstance(record["trace"], str):
            raise TraceValidationError(
                f"must be the raw trace text, got {type(record['trace']).__name__}",
                index=index,
                field="trace",
                kind="record",
            )
    return [_trace(record) for record in records]


def framework_of(record: dict[str, Any]) -> tuple[Framework | None, str]:
    """The framework a record names and the field naming it: `mas_name`, or `benchmark_name` where
    upstream swapped the two (its GAIA records); (None, "mas_name") when neither names one."""
    for field in ("mas_name", "benchmark_name"):
        key = re.sub(r"[\W_]", "", str(record.get(field) or "").casefold())
        for framework in FRAMEWORKS:
            if key in framework.aliases:
                return framework, field
    return None, "mas_name"


def split_turns(text: str, framework: Framework | None = None) -> tuple[list[Turn], str]:
    """Cut a raw log into contiguous turns covering all of it, and name the splitter used.

    `framework`'s markers first; then (unknown framework, or none of its markers found) the known
    marker set that finds the most turns; else one `system` turn. Empty text gives no turns.
    """
    if not text:
        return [], SINGLE_TURN
    trajectory = _json_trajectory(text)
    if trajectory and all(isinstance(item, dict) for _, _, item in trajectory):
        return _trajectory_turns(text, trajectory), JSON_TRAJECTORY
    body_end = trajectory[-1][1] if trajectory else len(text)
    epilogue = [Turn(body_end, len(text), SYSTEM)] if body_end < len(text) else []
    if framework is not None:
        turns = _marker_turns(text, body_end, framework.markers)
        if turns:
            return turns + epilogue, framework.name
    found = [(_marker_turns(text, body_end, f.markers), f.name) for f in FRAMEWORKS]
    turns, name = max(found, key=lambda pair: len(pair[0]))
    if turns:
        return turns + epilogue, f"generic ({name} markers)"
    return [Turn(0, len(text), SYSTEM)], SINGLE_TURN


def _json_trajectory(text: str) -> list[tuple[int, int, Any]] | None:
    """(start, end, item) of each item of the top-level `trajectory` list, where `text` is a JSON
    object with a non-empty one (MAST's AG2 and HyperAgent records); else None."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("trajectory"), list) or not doc["trajectory"]:
        return None
    opening = re.search(r'"trajectory"\s*:\s*\[', text)
    if opening is None:
        return None
    decoder, separator = json.JSONDecoder(), re.compile(r"[\s,]*")
    spans, position = [], opening.end()
    for _ in doc["trajectory"]:
        position = cast(re.Match[str], separator.match(text, position)).end()  # `[\s,]*` matches anywhere
        try:
            item, end = decoder.raw_decode(text, position)
        except ValueError:
            return None
        spans.append((position, end, item))
        position = end
    return spans if [item for _, _, item in spans] == doc["trajectory"] else None


def _trajectory_turns(text: str, trajectory: list[tuple[int, int, dict[str, Any]]]) -> list[Turn]:
    """A `system` preamble, one turn per message (up to the next one), a `system` epilogue."""
    turns = [Turn(0, trajectory[0][0], SYSTEM)]
    for index, (start, end, item) in enumerate(trajectory):
        stop = trajectory[index + 1][0] if index + 1 < len(trajectory) else end
        speaker = str(item.get("name") or item.get("role") or "unknown")
        turns.append(Turn(start, stop, speaker, chat_role=item.get("role") if item.get("name") else None))
    turns.append(Turn(trajectory[-1][1], len(text), SYSTEM))
    return [turn for turn in turns if turn.end > turn.start]


def _marker_turns(text: str, end: int, markers: tuple[Marker, ...]) -> list[Turn]:
    """Turns of text[:end] at `markers` (the first marker listed wins a position), led by a
    `system` turn for any text before the first marker; [] when no marker matches."""
    starts: dict[int, tuple[Marker, re.Match[str]]] = {}
    for marker in markers:
        for match in marker.pattern.finditer(text, 0, end):
            starts.setdefault(match.start(), (marker, match))
    if not starts:
        return []
    positions = sorted(starts)
    turns = [Turn(0, positions[0], SYSTEM)] if positions[0] > 0 else []
    for index, position in enumerate(positions):
        marker, match = starts[position]
        groups = match.groupdict()
        agent = (marker.agent or groups.get("agent") or SYSTEM).strip()
        to = groups.get("to")
        if groups.get("a") and groups.get("b"):
            to = groups["b"] if groups["a"].strip().casefold() == agent.casefold() else groups["a"]
        turns.append(
            Turn(
                start=position,
                end=positions[index + 1] if index + 1 < len(positions) else end,
                agent=agent,
                type=marker.type,
                to=to.strip() if to else None,
                tool=groups.get("tool"),
                role=groups.get("role"),
                marker=_first_line(text, position),
                log_time=groups.get("time"),
            )
        )
    return turns


def _first_line(text: str, start: int) -> str:
    """The line of `text` that starts at `start`, stripped, at most _MARKER_TEXT_LIMIT characters."""
    line_end = text.find("\n", start, start + _MARKER_TEXT_LIMIT)
    return text[start : line_end if line_end >= 0 else start + _MARKER_TEXT_LIMIT].strip()


def _trace(record: dict[str, Any]) -> Trace:
    text = record["trace"]
    framework, framework_field = framework_of(record)
    benchmark = record.get("mas_name" if framework_field == "benchmark_name" else "benchmark_name")
    turns, splitter = split_turns(text, framework)
    names = AgentNames()
    events = [_event(index, turn, text, names) for index, turn in enumerate(turns)]
    agents: dict[str, Agent] = {}
    for event in events:
        agent = agents.setdefault(event.agent, Agent(name=event.agent))
        agent.role = agent.role or event.role
    annotations = [_annotation(a) for a in record.get("annotations") or [] if isinstance(a, dict)]
    attributes: dict[str, Any] = {
        key: _json_safe(record[key]) for key in ("round", "mas_name", "benchmark_name", "trace_id") if key in record
    }
    log_fields = _log_fields(text)
    if log_fields:
        attributes["log_fields"] = log_fields
    attributes.update(benchmark=benchmark, annotations=annotations, splitter=splitter, synthetic_time=True)
    system = framework.name if framework else str(record.get("mas_name") or "")
    return Trace(
        source_format=FORMAT,
        source_id=content_hash(json.dumps(_json_safe(record), sort_keys=True, ensure_ascii=False)),
        name=" ".join(str(part) for part in (system, benchmark, f"#{record.get('trace_id')}") if part),
        system=system,
        task_id=str(log_fields.get("instance_id") or ""),
        agents=list(agents.values()),
        events=events,
        edges=_edges(events),
        labels=[Label("failure_mode", a["failure_mode"], source=SOURCE) for a in annotations if a["majority"]],
        attributes=attributes,
    )


def _event(index: int, turn: Turn, text: str, names: AgentNames) -> Event:
    attributes = {
        key: value
        for key, value in (("marker", turn.marker), ("log_time", turn.log_time), ("chat_role", turn.chat_role))
        if value is not None
    }
    return estimate_missing_tokens(
        Event(
            id=f"turn{index}",
            t=float(index),
            type=turn.type,
            agent=names(turn.agent),
            to=names(turn.to) if turn.to else None,
            tool=turn.tool,
            role=turn.role,
            content=text[turn.start : turn.end],
            attributes=attributes,
        )
    )


def _edges(events: list[Event]) -> list[Edge]:
    """`temporal` edges, plus one edge between consecutive turns of different speakers."""
    edges = temporal_chain(events)
    for previous, event in zip(events, events[1:]):
        if previous.agent == event.agent:
            continue
        if event.type == "tool_result":
            kind = "tool_dependency"
        else:
            kind = "return" if previous.type == "return" else "message"
        edges.append(Edge(previous.id, event.id, kind))
    return edges


def _annotation(annotation: dict[str, Any]) -> dict[str, Any]:
    """{failure_mode: "<code> <name>", definition, votes: {annotator: bool|None}, majority: bool}."""
    title, _, definition = str(annotation.get("failure mode") or "").strip().partition("\n")
    votes = {key: _json_safe(value) for key, value in annotation.items() if key != "failure mode"}
    cast = [bool(vote) for vote in votes.values() if vote is not None]
    return {
        "failure_mode": title.strip(),
        "definition": definition.strip(),
        "votes": votes,
        "majority": bool(cast) and sum(cast) * 2 > len(cast),
    }


def _log_fields(text: str) -> dict[str, Any]:
    """The scalar top-level fields of a log that is a JSON object (instance_id, run_id, cost, ...);
    strings over _LOG_FIELD_LIMIT characters are log text, which the events already hold."""
    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    return {
        key: _json_safe(value)
        for key, value in doc.items()
        if isinstance(value, (int, float, bool)) or (isinstance(value, str) and len(value) <= _LOG_FIELD_LIMIT)
    }


def _json_safe(value: Any) -> Any:
    """`value` with NaN / infinities (which the MAST file holds as annotator votes) as None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_safe(item) for item in value]
    return value
