"""Agent assignment: the span tree of one trace and the agent acting in each of its spans.

`SpanTree` adds placeholders for missing parents, cuts cycles, reads each span's role and received
message, then assigns the acting agent (`owner`) and the invocation of each span; `build.py` extends
it with events and edges. The rules: docs/otel-mapping.md, "Agent" and "Invocations and invokers".
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import cast

from . import keys, langgraph
from .openinference import span_name_agent
from .semconv import (
    AGENT,
    EVALUATION,
    HANDOFF,
    LLM,
    MONOCLE_REQUESTS,
    PLAN,
    SPAN_NAME,
    TOOL,
    UNKNOWN_SERVICE,
    WORKFLOW,
    WORKFLOW_EVENT,
    Message,
    agent_label_source,
    delegation_target,
    received_message,
    render,
    span_io,
    span_role,
)
from .span import Span, canonical_order, span_memo

NOT_NAME_CHARACTERS = re.compile(r"[^0-9a-z]")
#: The repr of a lazy Python value, one a tool returns for the framework to run later.
LAZY_VALUE = re.compile(r"^<(?:async_generator|generator|coroutine) object \S+ at 0x[0-9a-fA-F]+>$")
#: `named_by` of agents named by LangGraph's node metadata (`langgraph.graph_agents`).
LANGGRAPH = "langgraph"
#: `named_by` of an agent named by a delegation tool's arguments (`delegation_target`).
DELEGATION = "delegation"


def linked_messages(spans: Iterable[Span]) -> dict[str, Message]:
    """Messages between Agent Framework executors from the framework's own workflow spans: an edge
    group span naming both `message.source_id` and `message.target_id` delivered the send it links
    to; the span with `executor.id` = that target which links to the same send received it (a
    send an edge group broadcast names no target: no message). By receiving span id."""
    spans = list(spans)
    sent: dict[str, tuple[str, str]] = {}
    for span in spans:
        source, target = (span.attributes.get(k) for k in (keys.AF_MESSAGE_SOURCE_ID, keys.AF_MESSAGE_TARGET_ID))
        if isinstance(source, str) and isinstance(target, str) and source and target:
            for link in span.links:
                sent[link.span_id] = (source, target)
    if not sent:
        return {}
    received = {}
    for span in spans:
        executor = span.attributes.get(keys.AF_EXECUTOR_ID)
        for link in span.links:
            source, target = sent.get(link.span_id, (None, None))
            if target is not None and target == executor:
                received[span.sid] = Message(sender=source, receiver=target, key=None, from_span=None, workflow=True)
    return received


def canonical_name(name: str) -> str:
    """`name` case-folded with everything but letters and digits removed (to match agent names)."""
    return NOT_NAME_CHARACTERS.sub("", name.casefold())


@span_memo
def own_label(span: Span) -> tuple[str | None, str]:
    """`agent_label_source` of `span` in its own role (`span_role`): the agent it names itself."""
    return agent_label_source(span, span_role(span))


@span_memo
def span_texts(span: Span) -> tuple[str | None, str | None]:
    """(input, output) of `span` rendered as text (`span_io`, `render`)."""
    raw_input, raw_output = span_io(span)
    return render(raw_input), render(raw_output)


def _argument_names(span: Span) -> set[str]:
    """The text values of a tool span's arguments (its input, a JSON object), as `canonical_name`s."""
    arguments = render(span_io(span)[0])
    if isinstance(arguments, str) and arguments.startswith("{"):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return set()
    if not isinstance(arguments, dict):
        return set()
    return {canonical_name(value) for value in arguments.values() if isinstance(value, str)}


def _lazy_result(span: Span) -> bool:
    """Whether a tool span's output is a Python object's default repr (`<generator object … at
    0x…>`): the tool returned a lazy value, run after the span ended."""
    output = span.attributes.get(keys.OUTPUT_VALUE)
    return isinstance(output, str) and LAZY_VALUE.match(output) is not None


class SpanTree:
    """The span tree of one trace id's spans, with the agent acting in each span (built on creation).

    By span id: `by_id` (first record of each id in canonical order, placeholders added; `real`: without
    them, `linking`: those with span links), `parent`
    (cycles cut), `depth`, `children`, `role`, `message` (the message received), `owner` (the acting
    agent, None where unknown), `invocation` (its root span id), `delegated` (a delegation tool
    span -> the agent its arguments hand the work to), `workflows` (the OpenInference CHAIN spans
    that run agents and are none: `_agent_workflows`). By invocation root: `members`; `productive`
    (those that will have events). By agent: `named_by` (where its name came from); `label_source`
    (span id -> where its own label came from).
    Raises ValueError when there are no spans or a span has no id.
    """

    def __init__(self, spans: list[Span], trace_id: str):
        self.trace_id = trace_id
        self.by_id: dict[str, Span] = {}
        for span in canonical_order(spans):
            if not span.span_id:
                raise ValueError(f"span {span.name!r} has no span id")
            self.by_id.setdefault(span.span_id, span)
        if not self.by_id:
            raise ValueError(f"trace {trace_id} has no spans")
        self.real = list(self.by_id.values())
        self.linking = [span for span in self.real if span.links]
        self.t0 = min(span.start_ns for span in self.real)
        self.parent: dict[str, str | None] = {s.sid: s.parent_id for s in self.real}
        self._add_placeholders()
        self._adopt_tool_runs()
        self.depth = self._depths()
        self.order = sorted(self.by_id.values(), key=lambda s: (s.start_ns, self.depth[s.sid], s.sid))
        self.top_down = sorted(self.by_id.values(), key=lambda s: (self.depth[s.sid], s.start_ns, s.sid))
        self.children: dict[str, list[Span]] = defaultdict(list)
        for span in self.order:
            parent_id = self.parent[span.sid]
            if parent_id:
                self.children[parent_id].append(span)
        self.role = {sid: span_role(s) for sid, s in self.by_id.items()}
        self.graph = langgraph.graph_agents(self.by_id.values(), self.parent, self.role, LLM, TOOL)
        for sid in self.graph.workflow:
            if own_label(self.by_id[sid])[1] != keys.AGENT_NAME:
                self.role[sid] = WORKFLOW
        self.message: dict[str, Message] = {sid: m for sid, s in self.by_id.items() if (m := received_message(s))}
        for sid, message in linked_messages(self.by_id.values()).items():
            self.message.setdefault(sid, message)
        self.texts: dict[str, tuple[str | None, str | None]] = {}
        self.named_by: dict[str, str] = {}
        self.label_source: dict[str, str] = {}
        self.owner: dict[str, str | None] = {}
        self.invocation: dict[str, str | None] = {}
        self.delegated: dict[str, str] = {}
        self.workflows: set[str] = set()
        self.members: dict[str, list[Span]] = defaultdict(list)
        self.productive: set[str] = set()
        self.acting: set[str | None] = set()
        self.agents_by_canonical: dict[str, str] = {}
        self.step_runs: dict[str, str] = {}
        self._assign_agents()

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
                trace_id=self.trace_id,
                span_id=parent_id,
                parent_id=None,
                name="(missing span)",
                start_ns=min(k.start_ns for k in kids),
                end_ns=max(k.end_ns for k in kids),
                service=services.most_common(1)[0][0] if services else None,
                missing=True,
            )
            self.parent[parent_id] = None

    def _adopt_tool_runs(self) -> None:
        """An agent run recorded beside a tool span of its caller instead of inside it (the OTel
        context did not follow the tool into the run it started: Agno's `delegate_task_to_member`,
        a generator tool, runs the member with the team's span current) is that tool's work: a
        span naming an agent other than its parent's, within the time of a TOOL sibling, gets that
        tool span as its parent. Of several such tools, the one whose arguments name the agent (its
        name or an `…agent.id` attribute of the run, ignoring case and punctuation); where none or
        several do, the run stays where it is. A tool whose output is a Python object's default
        repr (`<generator object …>`: it returned a lazy value that the framework ran after the
        span ended; Agno 1.x's `transfer_task_to_member`) holds, besides, the run that its
        arguments name and that starts after it, before its caller's next model or tool call."""
        tools: dict[str, list[Span]] = defaultdict(list)
        for span in self.real:
            if (parent_id := self.parent[span.sid]) is not None and span_role(span) == TOOL:
                tools[parent_id].append(span)
        for span in self.real:
            parent_id = self.parent[span.sid]
            if parent_id not in tools or span_role(span) not in (AGENT, None):
                continue
            label = own_label(span)[0]
            if not label or label == own_label(self.by_id[parent_id])[0]:
                continue
            names = {canonical_name(label)} | {
                canonical_name(value)
                for key, value in span.attributes.items()
                if key.endswith("agent.id") and isinstance(value, str)
            }
            around = [t for t in tools[parent_id] if t.start_ns <= span.start_ns and span.end_ns <= t.end_ns]
            if len(around) > 1:
                around = [t for t in around if names & _argument_names(t)]
            if not around:
                around = [
                    t
                    for t in tools[parent_id]
                    if _lazy_result(t)
                    and t.end_ns <= span.start_ns
                    and names & _argument_names(t)
                    and not self._called_between(parent_id, t.end_ns, span.start_ns)
                ]
            if len(around) == 1:
                self.parent[span.sid] = around[0].sid

    def _called_between(self, parent_id: str, start_ns: int, end_ns: int) -> bool:
        """Whether a model or tool call of the span `parent_id` (a child of it) starts in [start, end)."""
        return any(
            self.parent[s.sid] == parent_id and start_ns <= s.start_ns < end_ns and span_role(s) in (LLM, TOOL)
            for s in self.real
        )

    def _depths(self) -> dict[str, int]:
        """Depth of every span (roots 0); a parent link that closes a cycle is cut."""
        depth: dict[str, int] = {}
        parents = self.parent
        for span_id in self.by_id:
            parent_id = parents[span_id]
            if span_id in depth:  # on the path of an earlier one
                continue
            if parent_id is None or parent_id in depth:  # a root, or its parent's depth known
                depth[span_id] = 0 if parent_id is None else depth[parent_id] + 1
                continue
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
        parent_id = self.parent[span.sid]
        return self.by_id[parent_id] if parent_id else None

    def _text(self, span: Span) -> tuple[str | None, str | None]:
        """(input, output) of `span` rendered as text, computed once (`span_texts`)."""
        if span.memo is not None:
            return span_texts(span)
        texts = self.texts.get(span.sid)
        if texts is None:
            texts = self.texts[span.sid] = span_texts(span)
        return texts

    def _descendants(self, span: Span) -> Iterable[Span]:
        stack = list(self.children.get(span.sid, ()))
        while stack:
            kid = stack.pop()
            yield kid
            stack.extend(self.children.get(kid.sid, ()))

    def _tree_root(self, span: Span) -> str:
        """The id of the top span of the span tree holding `span`."""
        sid = span.sid
        while (parent_id := self.parent[sid]) is not None:
            sid = parent_id
        return sid

    # -- agents and invocations

    def _assign_agents(self) -> None:
        """Fill `owner` (span id -> acting agent, None where unknown), `invocation` (span id -> the
        root of its invocation), `members` and `productive` (invocations that will have events: with
        an LLM, tool or hand-off span, an output, or an agent span that names their agent: see
        `_names_owner`)."""
        labels: dict[str, str | None] = {}
        graph_agents = self.graph.agents
        for sid, span in self.by_id.items():
            label, source = own_label(span)  # in the role `self.role` holds: span_role(span)
            if sid in graph_agents and source not in (keys.AGENT_NAME, "openinference"):
                label, source = graph_agents[sid], LANGGRAPH if graph_agents[sid] else ""
            labels[sid] = label
            if label:
                self.label_source[sid] = source
                self.named_by.setdefault(label, source)
        self._workflow_steps(labels)
        for message in self.message.values():
            for name in (message.sender, message.receiver):
                if name:
                    self.named_by.setdefault(name, "message")
        self._assign_owners(labels)
        self._assign_invocations()
        self.acting = {self.owner[inv] for inv in self.productive}
        self.agents_by_canonical = {canonical_name(name): name for name in self.named_by}

    def _assign_owners(self, labels: dict[str, str | None]) -> None:
        """Fill `owner`, top down, from the spans' `labels` (docs/otel-mapping.md, "Agent")."""
        acting, workflow_labels = self._workflow_labels(labels)
        claims = self._claims(labels)
        runners = self._agent_workflows(labels)
        known = {canonical_name(name): name for name in self.named_by}
        in_tool: dict[str, bool] = {}
        owners, parents, roles, messages, named_by = self.owner, self.parent, self.role, self.message, self.named_by
        for span in self.top_down:
            sid = span.sid
            parent_id = parents[sid]
            label = labels[sid] if labels[sid] not in workflow_labels else None
            message = messages.get(sid)
            owner: str | None
            in_tool[sid] = under_tool = parent_id is not None and (roles[parent_id] == TOOL or in_tool[parent_id])
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
            elif parent_id is not None and parent_id in self.delegated:
                owner = self.delegated[parent_id]
            elif (
                parent_id is not None
                and owners[parent_id] is not None
                and (
                    under_tool
                    or not (service := self.by_id[parent_id].service)
                    or not span.service
                    or service == span.service
                )
            ):
                owner = owners[parent_id]
            else:
                owner = span.service or UNKNOWN_SERVICE
                named_by.setdefault(owner, "service")
            if sid in runners and not under_tool:
                self.workflows.add(sid)
            elif not under_tool and named_by.get(owner or "") == "service" and self._names_by_span_name(span):
                owner = cast(str, span_name_agent(span))
                named_by.setdefault(owner, SPAN_NAME)
            owners[sid] = owner
            if roles[sid] == TOOL and (target := delegation_target(span)):
                self.delegated[sid] = target = known.get(canonical_name(target), target)
                named_by.setdefault(target, DELEGATION)

    def _assign_invocations(self) -> None:
        """Fill `invocation`, then `members` and `productive` (see `_assign_agents`)."""
        owners, parents, invocation = self.owner, self.parent, self.invocation
        delegated_runs: dict[str, str] = {}  # delegation tool span -> the run's first span
        for span in self.top_down:
            sid = span.sid
            parent_id, owner = parents[sid], owners[sid]
            if owner is None:
                invocation[sid] = None
            elif (first := self.step_runs.get(sid, sid)) != sid and owners[first] == owner:
                invocation[sid] = invocation[first]  # the next step of an agent's run in a workflow
            elif sid in self.message and self._sender(span):
                invocation[sid] = sid
            elif parent_id is not None and parent_id in self.delegated and owner == self.delegated[parent_id]:
                # the spans the delegated agent runs inside the tool span: one invocation
                invocation[sid] = delegated_runs.setdefault(parent_id, sid)
            elif parent_id is None or owners[parent_id] != owner:
                invocation[sid] = sid
            else:
                invocation[sid] = invocation[parent_id]
        members, productive, roles = self.members, self.productive, self.role
        for span in self.order:
            inv = invocation[span.sid]
            if inv is None:
                continue
            members[inv].append(span)
            if inv in productive or span.missing:
                continue
            role = roles[span.sid]
            if (
                role in (LLM, TOOL, HANDOFF, PLAN)
                or (
                    role not in (WORKFLOW, EVALUATION)
                    and span.sid not in self.workflows
                    and self._text(span)[1] is not None
                )
                or self._names_owner(span)
            ):
                productive.add(inv)

    def _workflow_steps(self, labels: dict[str, str | None]) -> None:
        """The steps of an agent workflow (LlamaIndex AgentWorkflow): the children of a span that
        received workflow events naming agents (`WORKFLOW_EVENT` labels). A step whose event names
        none (`call_tool`, `aggregate_tool_results`, `init_run`) acts for the workflow's current
        agent: the one the latest earlier step named, else the first later one; the span running
        the steps, when it names no agent, is the workflow (role WORKFLOW: no agent, no events); and
        consecutive steps of one agent are one invocation (`step_runs`: step span id -> the first
        step of its run). Fills `labels` and `label_source` for those steps."""
        sources = self.label_source
        runners = {self.parent[sid] for sid, source in sources.items() if source == WORKFLOW_EVENT}
        for parent_id in sorted(filter(None, runners)):
            steps = self.children[parent_id]
            current = next(labels[s.sid] for s in steps if sources.get(s.sid) == WORKFLOW_EVENT)
            previous, first = None, ""
            for step in steps:
                if labels[step.sid] is None:
                    labels[step.sid], sources[step.sid] = current, WORKFLOW_EVENT
                name = labels[step.sid]
                if sources.get(step.sid) == WORKFLOW_EVENT:
                    current = name
                if name != previous:
                    first = step.sid
                self.step_runs[step.sid], previous = first, name
            if labels[parent_id] is None:
                self.role[parent_id] = WORKFLOW

    def _workflow_labels(self, labels: dict[str, str | None]) -> tuple[dict[str, str], set[str]]:
        """Executors Monocle labelled with the workflow's name: span id -> the agent that acted
        there, and the labels that name workflows (docs/otel-mapping.md, "Messages between agents")."""
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

    def _agent_workflows(self, labels: dict[str, str | None]) -> set[str]:
        """OpenInference CHAIN spans that name no agent and run agents without acting themselves:
        agent spans (AGENT or unkinded spans that name an agent) below them, and no LLM, tool,
        hand-off or plan span outside those. Such a chain is the run of a workflow of agents (CrewAI's
        `Crew.kickoff`, a Flow's kickoff and steps, OpenAI Agents' `Agent workflow`), like a GenAI
        `invoke_workflow` span: no agent, and its output (the workflow's result) no turn. So is a
        Monocle request span (`MONOCLE_REQUESTS`) that names no agent and only runs agents: the
        request that reached the agent system from outside, its output the answer handed back."""
        runs_agent: dict[str, bool] = {}
        works: dict[str, bool] = {}
        roles, children = self.role, self.children
        for span in reversed(self.top_down):  # children first
            sid, role = span.sid, self.role[span.sid]
            if labels[sid] and role in (AGENT, None):
                runs_agent[sid], works[sid] = True, False
                continue
            kids = children.get(sid, ())
            runs_agent[sid] = any(runs_agent[kid.sid] for kid in kids)
            works[sid] = roles[sid] in (LLM, TOOL, HANDOFF, PLAN) or any(works[kid.sid] for kid in kids)
        return {
            sid
            for sid, span in self.by_id.items()
            if runs_agent[sid]
            and not works[sid]
            and not labels[sid]
            and (
                span.attributes.get(keys.OI_SPAN_KIND) == keys.OI_CHAIN
                or span.attributes.get("span.type") in MONOCLE_REQUESTS
            )
        }

    def _claims(self, labels: dict[str, str | None]) -> dict[str, str]:
        """Span id -> the one agent that its labelled LLM and tool children name (their caller)."""
        claims: dict[str, str] = {}
        roles = self.role
        for sid, kids in self.children.items():
            named: str | None = None
            for kid in kids:
                if roles[kid.sid] in (LLM, TOOL) and (label := labels[kid.sid]):
                    if named is None:
                        named = label
                    elif label != named:  # two agents: no claim
                        named = None
                        break
            if named is not None:
                claims[sid] = named
        return claims

    def _names_owner(self, span: Span) -> bool:
        """Whether `span` is an agent span (not an LLM, tool or hand-off span) whose
        `gen_ai.agent.name` is the agent acting there: a GenAI `invoke_agent` span, a turn of that
        agent even when nothing is instrumented below it. Monocle's agent entities do not count: an
        Agent Framework executor span without inference below it only buffered a message."""
        return (
            not span.missing
            and self.role[span.sid] in (AGENT, None)
            and self.label_source.get(span.sid) in (keys.AGENT_NAME, "openinference")
            and own_label(span)[0] == self.owner[span.sid]
        )

    @staticmethod
    def _names_by_span_name(span: Span) -> bool:
        """Whether an OpenInference CHAIN span names its agent by its span name: where nothing
        else names it (its agent would be a service)."""
        return span.attributes.get(keys.OI_SPAN_KIND) == keys.OI_CHAIN and span_name_agent(span) is not None

    def _sender(self, span: Span) -> str | None:
        """The agent that sent the message `span` received, when another than the span's agent."""
        message = self.message.get(span.sid)
        sender = message.sender if message else None
        return sender if sender and sender != self.owner[span.sid] else None
