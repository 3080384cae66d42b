"""Who&When failure logs ("Which Agent Causes Task Failures and When?", Zhang et al., ICML 2025).

Source: github.com/mingyin1/Agents_Failure_Attribution, `Who&When/`. One JSON object per file:

    {question, ground_truth, history: [{content, role, name?}], mistake_agent,
     mistake_step: "<0-based index into history>", mistake_reason, question_ID,
     is_correct?, level?, system_prompt?: {agent: prompt}, ...}

Two subsets, told apart by `system_prompt` / `name` (Algorithm-Generated has them):

- Hand-Crafted (Magentic-One): the speaker is `role`. "Orchestrator (thought)" is an
  `orchestrator_decision`, "Orchestrator (-> X)" a `delegate` to X, "Orchestrator (termination
  condition)" a `stop`; "human" is the task `message` (a `human_intervention` once agents have
  spoken); terminal output (ComputerTerminal) is a `tool_result`; other agents' turns are messages.
- Algorithm-Generated (AG2 / CaptainAgent group chat): the speaker is `name`, `role` is the chat
  role (kept as the event attribute `chat_role`); every turn is a `message`, terminal output
  (Computer_terminal, or a turn starting "exitcode:") a `tool_result`.

One event per history entry, id "h<index>", t = index (`synthetic_time`). Edges:

- `temporal` between consecutive entries;
- a delegation: `message` from the `delegate` to X's next turn (unless the delegator delegates
  again first); X's turn becomes a `return` (a `tool_result` stays one) with a `return` edge to
  the delegator's next event;
- group-chat broadcast: AG2's chat manager sends every message to all agents and the log does not
  say who read what, so a message, human or tool turn that answers no delegation gets a `message`
  edge to the next turn when another agent speaks it (that speaker is the one who reacted);
  orchestrator thoughts and stops are private and get none;
- `tool_dependency` into a tool result from the turn whose code it ran: the nearest earlier turn
  that is not a tool result, orchestrator thought or stop.

Agents: the agent that first delegates to X is X's parent (Magentic-One's Orchestrator and its
team). AG2 agents are peers with no parent: the chat manager that picks speakers never speaks in
the log, and an agent without events would distort fan-out and the spawn tree. System prompts are
kept per agent. Agent names compare case-insensitively ("Websurfer" is WebSurfer).

Labels: `mistake_agent` (agent set where it names one), `mistake_step` (value as given, event_id
the event at that index), `mistake_reason` and any `mistake_type` / `labels`, kept as given. Where
the step's speaker is not the mistake agent (a few upstream logs), a `mistake_step_speaker_mismatch`
label records both. Question, ground truth, level, is_correct and other keys become attributes.

Identity: "<subset>:<question_ID>:<first 12 hex digits of the record's SHA-256>": question_ID is a
task id, shared across subsets (and possibly by several runs), so the hash makes it one per log.
"""

from __future__ import annotations

import json
import re
from typing import Any

from swarmscope.model import Agent, Edge, Event, Label, Trace, content_hash

from .chatlog import AgentNames, estimate_missing_tokens, temporal_chain

FORMAT = "whowhen"
SOURCE = "who&when"
HAND_CRAFTED = "hand-crafted"
ALGORITHM_GENERATED = "algorithm-generated"
SYSTEMS = {HAND_CRAFTED: "Magentic-One", ALGORITHM_GENERATED: "AG2 (CaptainAgent)"}
HUMAN = "human"
MISMATCH = "mistake_step_speaker_mismatch"
UNRESOLVED = "mistake_step_unresolved"
#: Record keys kept as labels, as given.
LABEL_KEYS = ("mistake_reason", "mistake_type", "labels")
#: Record keys carried by the trace's events, agents, identity or labels (the rest become attributes).
STRUCTURE_KEYS = ("history", "system_prompt", "question_ID", "mistake_agent", "mistake_step") + LABEL_KEYS
#: Speakers whose turns are the output of executed code, lower case without separators.
TERMINALS = frozenset({"computerterminal", "terminal", "codeexecutor"})
#: Turn types that reach the next speaker by broadcast when they answer no delegation.
BROADCAST_TYPES = ("message", "human_intervention", "tool_result")
#: Turn types that cannot hold the code a terminal runs.
NOT_CODE_TYPES = ("tool_result", "orchestrator_decision", "stop")

_SPEAKER_NOTE = re.compile(r"^\s*(?P<agent>[^()]+?)\s*\((?P<note>[^()]*)\)\s*$")
_ADDRESSEE = re.compile(r"^->\s*(?P<to>.+?)\s*$")
_EXIT_CODE = re.compile(r"^\s*exitcode:", re.IGNORECASE)


def _is_log(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and "question" in doc
        and isinstance(doc.get("history"), list)
        and all(isinstance(entry, dict) and "content" in entry for entry in doc["history"])
    )


def sniff(doc: Any) -> bool:
    return _is_log(doc) or (isinstance(doc, list) and bool(doc) and all(_is_log(d) for d in doc))


def parse(doc: Any, source: str) -> list[Trace]:
    """One trace per Who&When log (a file holds one; a list of logs gives one trace each)."""
    return [_trace(record) for record in (doc if isinstance(doc, list) else [doc])]


def subset_of(record: dict[str, Any]) -> str:
    """ALGORITHM_GENERATED when the log has system prompts or `name` speakers, else HAND_CRAFTED."""
    if "system_prompt" in record or any("name" in entry for entry in record["history"]):
        return ALGORITHM_GENERATED
    return HAND_CRAFTED


def _trace(record: dict[str, Any]) -> Trace:
    subset = subset_of(record)
    names = AgentNames()
    events: list[Event] = []
    agents_spoke = False
    for index, entry in enumerate(record["history"]):
        events.append(_event(index, entry, names, agents_spoke))
        agents_spoke = agents_spoke or events[-1].agent.casefold() != HUMAN
    edges = _edges(events)
    digest = content_hash(json.dumps(record, sort_keys=True, ensure_ascii=False))
    question_id = record.get("question_ID")
    attributes = {key: value for key, value in record.items() if key not in STRUCTURE_KEYS}
    attributes.update(subset=subset, synthetic_time=True)
    delegators = {event.agent for event in events if event.type == "delegate"}
    return Trace(
        source_format=FORMAT,
        source_id=f"{subset}:{question_id}:{digest[:12]}" if question_id else f"{subset}:{digest}",
        name=str(record.get("question") or "").strip().split("\n", 1)[0][:120],
        system=SYSTEMS[subset],
        topology="centralized" if delegators else "unknown",
        task_id=str(question_id or ""),
        agents=_agents(events, record.get("system_prompt") or {}, names),
        events=events,
        edges=edges,
        labels=_labels(record, events, names),
        attributes=attributes,
    )


def _event(index: int, entry: dict[str, Any], names: AgentNames, agents_spoke: bool) -> Event:
    """The event of history entry `index`; `agents_spoke`: whether a non-human turn came before."""
    speaker = str(entry.get("name") or entry.get("role") or "unknown")
    content = entry["content"] if isinstance(entry["content"], str) else json.dumps(entry["content"])
    attributes: dict[str, Any] = {key: value for key, value in entry.items() if key not in ("content", "name", "role")}
    if "name" in entry and "role" in entry:
        attributes["chat_role"] = entry["role"]
    to = None
    match = _SPEAKER_NOTE.match(speaker)
    if match:
        agent, note = names(match["agent"]), match["note"].strip()
        attributes.update(speaker=speaker, note=note)
        addressee = _ADDRESSEE.match(note)
        if addressee:
            event_type, to = "delegate", names(addressee["to"])
        elif note.casefold() == "termination condition":
            event_type = "stop"
        else:
            event_type = "orchestrator_decision"
    else:
        agent = names(speaker.strip())
        if is_terminal(agent, content):
            event_type = "tool_result"
        elif agent.casefold() == HUMAN and agents_spoke:
            event_type = "human_intervention"
        else:
            event_type = "message"
    return estimate_missing_tokens(
        Event(
            id=f"h{index}",
            t=float(index),
            type=event_type,
            agent=agent,
            to=to,
            tool=agent if event_type == "tool_result" else None,
            content=content,
            attributes=attributes,
        )
    )


def is_terminal(agent: str, content: str) -> bool:
    """Whether a turn is the output of executed code: a terminal speaker, or AG2's "exitcode:" reply."""
    return re.sub(r"[\W_]", "", agent.casefold()) in TERMINALS or bool(_EXIT_CODE.match(content))


def _edges(events: list[Event]) -> list[Edge]:
    """The edges described in the module docstring; turns that answer a delegation become
    `return` events here (in place)."""
    edges = temporal_chain(events)
    delegate_of: dict[int, int] = {}  # index of a turn answering a delegation -> index of the delegate
    for index, event in enumerate(events):
        if event.type == "delegate" and event.to:
            answer = _answer(events, index)
            if answer is not None:
                edges.append(Edge(event.id, events[answer].id, "message"))
                delegate_of[answer] = index
    for index, event in enumerate(events):
        if event.type == "tool_result":
            source = next((k for k in range(index - 1, -1, -1) if events[k].type not in NOT_CODE_TYPES), None)
            if source is not None:
                edges.append(Edge(events[source].id, event.id, "tool_dependency"))
        following = events[index + 1] if index + 1 < len(events) else None
        if index in delegate_of:
            delegator = events[delegate_of[index]].agent
            if event.type == "message":
                event.type, event.from_, event.to = "return", event.agent, delegator
            back = next((e for e in events[index + 1 :] if e.agent == delegator), None)
            if back is not None:
                edges.append(Edge(event.id, back.id, "return"))
        elif (
            event.type in BROADCAST_TYPES
            and following is not None
            and following.agent != event.agent
            and following.type != "tool_result"
        ):
            edges.append(Edge(event.id, following.id, "message"))
    return edges


def _answer(events: list[Event], delegate: int) -> int | None:
    """Index of the turn of the delegate's addressee that answers it; None when the delegator
    delegates again first (the delegation was superseded) or the addressee never speaks."""
    delegator, addressee = events[delegate].agent, events[delegate].to
    for index in range(delegate + 1, len(events)):
        if events[index].agent == addressee:
            return index
        if events[index].agent == delegator and events[index].type == "delegate":
            return None
    return None


def _agents(events: list[Event], prompts: dict[str, str], names: AgentNames) -> list[Agent]:
    agents: dict[str, Agent] = {}
    for event in events:
        agent = agents.setdefault(event.agent, Agent(name=event.agent))
        if event.type == "delegate":
            agent.role = "orchestrator"
            if event.to:
                addressee = agents.setdefault(event.to, Agent(name=event.to))
                addressee.parent = addressee.parent or event.agent
        elif event.type == "tool_result":
            agent.role = agent.role or "tool"
        elif event.agent.casefold() == HUMAN:
            agent.role = HUMAN
    for name, prompt in prompts.items():
        canonical = names(name)
        agents.setdefault(canonical, Agent(name=canonical)).system_prompt = prompt
    return list(agents.values())


def mistake_step_index(value: Any, n_events: int) -> int | None:
    """The 0-based history index held by a `mistake_step` value ("12" or 12); None if not one."""
    try:
        index = int(str(value).strip())
    except ValueError:
        return None
    return index if 0 <= index < n_events else None


def _labels(record: dict[str, Any], events: list[Event], names: AgentNames) -> list[Label]:
    labels = []
    mistake_agent = record.get("mistake_agent")
    if mistake_agent is not None:
        labels.append(Label("mistake_agent", mistake_agent, agent=names.find(str(mistake_agent)), source=SOURCE))
    step = mistake_step_index(record.get("mistake_step"), len(events))
    if "mistake_step" in record:
        labels.append(
            Label(
                "mistake_step",
                record["mistake_step"],
                event_id=events[step].id if step is not None else None,
                source=SOURCE,
            )
        )
        if step is None:
            labels.append(
                Label(
                    UNRESOLVED,
                    f"mistake_step {record['mistake_step']!r} is not an index into the {len(events)} history entries",
                    source="swarmscope",
                )
            )
    labels.extend(Label(key, record[key], source=SOURCE) for key in LABEL_KEYS if key in record)
    if (
        step is not None
        and mistake_agent is not None
        and events[step].agent.casefold() != str(mistake_agent).casefold()
    ):
        labels.append(
            Label(
                MISMATCH,
                {"mistake_agent": mistake_agent, "step_speaker": events[step].agent},
                event_id=events[step].id,
                agent=events[step].agent,
                source="swarmscope",
            )
        )
    return labels
