"""Interventions on an orchestration trace: the counterfactual vocabulary (docs/architecture.md "Credit").

On message-like events (MESSAGE_LIKE_TYPES: what one agent sends another): `remove` them
(everything after the first is re-generated), `mask` them (same position, placeholder content),
`resample` them from the policy, `replace` them with given `text`. On agents: `remove` every event
of theirs. One intervention may name several events or agents (a coalition removed together);
`union` joins removals, as the Shapley estimators of `swarmscope.credit` do.

`Intervention` is a frozen value with a JSON round trip (`to_dict` / `from_dict`);
`check_intervention` validates it against a trace. Both raise `InterventionError`, which names
the offending field. `branch_source_id` is the identity of a branch trace (one re-rollout under an
intervention).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from swarmscope.model import Trace

INTERVENTION_KINDS = ("remove", "mask", "resample", "replace")
#: Characters of a branch's source id before its digest (the stored source id holds 300).
BRANCH_ID_READABLE = 240
#: Event types an intervention may target: what one agent sends to another.
MESSAGE_LIKE_TYPES = ("message", "delegate", "return")


class InterventionError(ValueError):
    """An intervention is malformed or does not fit its trace; `field` names the offending field."""

    def __init__(self, message: str, field: str):
        self.message = message
        self.field = field
        super().__init__(f"field {field!r}: {message}")


@dataclass(frozen=True)
class Intervention:
    """`kind` (INTERVENTION_KINDS) applied to the message-like `events` (ids) and, for `remove`
    only, to every event of the `agents` (names); `text` is the replacement of `replace`.

    Lists are stored as tuples. Raises InterventionError when no target is named, a target is
    repeated or empty, `agents` comes with another kind than `remove`, or `text` is missing for
    `replace` (or given for another kind).
    """

    kind: str
    events: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    text: str | None = None

    def __post_init__(self):
        if self.kind not in INTERVENTION_KINDS:
            raise InterventionError(f"must be one of {INTERVENTION_KINDS}, got {self.kind!r}", "kind")
        for name in ("events", "agents"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise InterventionError("must be a list of strings", name)
            value = tuple(value)
            if not all(isinstance(v, str) and v for v in value):
                raise InterventionError("must hold non-empty strings", name)
            if len(set(value)) != len(value):
                raise InterventionError("names a target twice", name)
            object.__setattr__(self, name, value)
        if not self.events and not self.agents:
            raise InterventionError("an intervention needs at least one event or agent", "events")
        if self.agents and self.kind != "remove":
            raise InterventionError(f"agents can only be removed, not {self.kind!r}", "agents")
        if (self.kind == "replace") != (self.text is not None):
            raise InterventionError("replace needs a text; other kinds take none", "text")
        if self.text is not None and not isinstance(self.text, str):
            raise InterventionError("must be a string", "text")

    @property
    def targets(self) -> tuple[str, ...]:
        """The targets as `event:<id>` and `agent:<name>` strings, events first."""
        return tuple(f"event:{e}" for e in self.events) + tuple(f"agent:{a}" for a in self.agents)

    def describe(self) -> str:
        """A one-line form, e.g. `remove(event:m3, agent:critic)`."""
        return f"{self.kind}({', '.join(self.targets)})"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: `kind`, and `events`, `agents`, `text` where set."""
        d: dict[str, Any] = {"kind": self.kind}
        if self.events:
            d["events"] = list(self.events)
        if self.agents:
            d["agents"] = list(self.agents)
        if self.text is not None:
            d["text"] = self.text
        return d

    @classmethod
    def from_dict(cls, data: Any) -> Intervention:
        """Inverse of `to_dict`. Raises InterventionError for a non-object or an unknown field."""
        if not isinstance(data, dict):
            raise InterventionError("an intervention must be a JSON object", "intervention")
        unknown = sorted(set(data) - {"kind", "events", "agents", "text"})
        if unknown:
            raise InterventionError("unknown field", unknown[0])
        if "kind" not in data:
            raise InterventionError("is required", "kind")
        return cls(data["kind"], data.get("events", ()), data.get("agents", ()), data.get("text"))


def union(interventions: Iterable[Intervention]) -> Intervention:
    """One `remove` of every event and agent the given removals name (in order, without repeats).

    Raises InterventionError when there are none or one is not a `remove`.
    """
    interventions = list(interventions)
    if not interventions:
        raise InterventionError("a union needs at least one intervention", "events")
    if any(i.kind != "remove" for i in interventions):
        raise InterventionError("only removals can be joined", "kind")
    events = dict.fromkeys(e for i in interventions for e in i.events)
    agents = dict.fromkeys(a for i in interventions for a in i.agents)
    return Intervention("remove", tuple(events), tuple(agents))


def check_intervention(trace: Trace, intervention: Intervention) -> None:
    """Check that every targeted event exists in `trace` and is message-like, and that every
    targeted agent acts in it. Raises InterventionError naming `events` or `agents`."""
    types = {event.id: event.type for event in trace.events}
    for event_id in intervention.events:
        if event_id not in types:
            raise InterventionError(f"no event {event_id!r} in the trace", "events")
        if types[event_id] not in MESSAGE_LIKE_TYPES:
            raise InterventionError(
                f"event {event_id!r} is a {types[event_id]}, not one of {MESSAGE_LIKE_TYPES}", "events"
            )
    acting = {event.agent for event in trace.events}
    for agent in intervention.agents:
        if agent not in acting:
            raise InterventionError(f"no event of agent {agent!r} in the trace", "agents")


def branch_source_id(
    factual: str, intervention: Intervention, seed: int, settings: dict[str, Any] | None = None
) -> str:
    """The source id of the branch trace of `factual` (a source id) under `intervention` at `seed`:
    `<factual>/<intervention.describe()>/seed-<seed>`, then `/s-<digest>` where anything else
    changes what was sampled: the intervention's replacement text and the backend's `settings`
    (JSON: model, sampling parameters, scoring, ...). Digest: the first 12 hex digits of BLAKE2b of
    their canonical JSON. So a job repeated with other settings stores its own branch, and the same
    job (a redelivered chunk) the same one. A readable part over BRANCH_ID_READABLE characters is
    cut there, the digest then covering the whole."""
    readable = f"{factual}/{intervention.describe()}"
    identity: dict[str, Any] = dict(settings or {})
    if intervention.text is not None:
        identity["intervention"] = intervention.to_dict()
    if len(readable) > BRANCH_ID_READABLE:
        identity.update(factual=factual, intervention=intervention.to_dict())
        readable = readable[:BRANCH_ID_READABLE]
    source_id = f"{readable}/seed-{int(seed)}"
    if identity:
        canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
        source_id += f"/s-{hashlib.blake2b(canonical.encode(), digest_size=6).hexdigest()}"
    return source_id
