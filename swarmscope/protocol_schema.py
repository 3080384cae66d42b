"""JSON Schemas (draft 2020-12) of every message of the four live sockets (swarmscope.protocol;
docs/architecture.md "Live protocol"), and a validator.

`SERVER_MESSAGES[socket][type]` is the schema of a server -> client message of `socket`
("trace": `/ws/traces/<id>/`, "run": `/ws/runs/<id>/`, "review": `/ws/projects/<id>/`,
"notifications": `/ws/users/<id>/notifications/`) whose `type` is `type`;
`CLIENT_MESSAGES["resume"]` the one client -> server message. Records carry
the `seq` of the batch that last wrote them. Summaries (`trace`, `run`, `job`) are the API's
resources: their required keys are checked, further keys are allowed.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator, ValidationError

DRAFT = "https://json-schema.org/draft/2020-12/schema"

SEQ: dict[str, Any] = {"type": "integer", "minimum": 0}
_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}
_NUM = {"type": "number"}
_NUM_OR_NULL = {"type": ["number", "null"]}
_OBJ = {"type": "object"}
_COUNT_OR_NULL = {"type": ["integer", "null"], "minimum": 0}


def _record(required: dict[str, Any], optional: dict[str, Any] | None = None, *, closed: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "required": sorted(required),
        "properties": {**required, **(optional or {})},
    }
    if closed:
        schema["additionalProperties"] = False
    return schema


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


# --- /ws/traces/<id>/ ------------------------------------------------------------------------------

EVENT = _record(
    {"id": _STR, "t": _NUM, "type": _STR, "agent": _STR, "seq": SEQ},
    {
        "t_end": _NUM,
        "role": _STR,
        "from": _STR,
        "to": _STR,
        "tool": _STR,
        "content": _STR,
        "content_ref": _STR,
        "tokens": {"type": "integer"},
        "trusted": {"type": "boolean"},
        "attributes": _OBJ,
    },
)
AGENT = _record(
    {"name": _STR, "seq": SEQ},
    {
        "role": _STR_OR_NULL,
        "parent": _STR_OR_NULL,
        "spawned_at": _NUM_OR_NULL,
        "despawned_at": _NUM_OR_NULL,
        "system_prompt": _STR_OR_NULL,
        "attributes": {"type": ["object", "null"]},
    },
)
EDGE = _record({"src": _STR, "dst": _STR, "type": _STR, "seq": SEQ})
LABEL = _record({"key": _STR, "value": {}, "seq": SEQ}, {"event_id": _STR, "agent": _STR, "source": _STR})
TRACE_SUMMARY = _record(
    {
        "id": {"type": "integer"},
        "project": {"type": "integer"},
        "seq": SEQ,
        "event_count": {"type": "integer"},
        "live": {"type": "boolean"},
    },
    # measured usage (null: none measured) and the estimate kept apart from it (swarmscope.tokens);
    # `reset_seq`: the seq of the trace's last rebuild (a restart): a client holding an older seq
    # replaces what it holds with the snapshot instead of merging it
    {"total_tokens": _COUNT_OR_NULL, "estimated_tokens": {"type": "integer", "minimum": 0}, "reset_seq": SEQ},
    closed=False,
)
_TRACE_COLLECTIONS = {"agents": _array(AGENT), "events": _array(EVENT), "edges": _array(EDGE), "labels": _array(LABEL)}

TRACE_SNAPSHOT = {
    "$schema": DRAFT,
    "title": "trace snapshot",
    **_record({"type": {"const": "snapshot"}, "seq": SEQ, "trace": TRACE_SUMMARY, **_TRACE_COLLECTIONS}),
}
TRACE_DELTA = {
    "$schema": DRAFT,
    "title": "trace delta",
    **_record({"type": {"const": "delta"}, "seq": SEQ, **_TRACE_COLLECTIONS}, {"trace": TRACE_SUMMARY}),
}
#: A job's server usage (webapp.counterfactuals.wire.usage_wire): counts, None for a backend that
#: reports none; `cache_hit_rate` = cached / prompt tokens in [0, 1]; `wall_s` seconds since the start.
JOB_USAGE = _record(
    {
        "requests": _COUNT_OR_NULL,
        "prompt_tokens": _COUNT_OR_NULL,
        "cached_tokens": _COUNT_OR_NULL,
        "completion_tokens": _COUNT_OR_NULL,
        "cache_hit_rate": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "truncated": _COUNT_OR_NULL,
        "retries": _COUNT_OR_NULL,
        "wall_s": {"type": ["number", "null"], "minimum": 0},
    }
)
JOB = {
    "$schema": DRAFT,
    "title": "counterfactual job progress",
    **_record(
        {
            "type": {"const": "job"},
            "job": _record(
                {
                    "id": {"type": "integer"},
                    "trace": {"type": "integer"},
                    "status": _STR,
                    "done": {"type": "integer"},
                    "total": {"type": "integer"},
                    "usage": JOB_USAGE,
                },
                closed=False,
            ),
        }
    ),
}

#: A trace's metrics (swarmscope.metrics) recomputed by a worker while it streams, at trace seq `seq`
#: (webapp.traces.services.do_publish_metrics); not part of the delta stream: a client shows the
#: newest (highest `seq`) it has, and a snapshot carries its own in `trace.computed_metrics`.
METRICS = {
    "$schema": DRAFT,
    "title": "recomputed trace metrics",
    **_record({"type": {"const": "metrics"}, "seq": SEQ, "computed_metrics": _OBJ}),
}

# --- /ws/runs/<id>/ --------------------------------------------------------------------------------

ITERATION = _record(
    {
        "iteration": {"type": "integer", "minimum": 0},
        "env_steps": {"type": "integer", "minimum": 0},
        "wall_s": _NUM,
        "metrics": _OBJ,
        "stop": _OBJ,
        "credit": _OBJ,
        "episodes": _array({"type": "integer"}),
        "seq": SEQ,
    }
)
RUN_SUMMARY = _record(
    {"id": {"type": "integer"}, "project": {"type": "integer"}, "status": _STR, "seq": SEQ}, closed=False
)
RUN_SNAPSHOT = {
    "$schema": DRAFT,
    "title": "run snapshot",
    **_record({"type": {"const": "snapshot"}, "seq": SEQ, "run": RUN_SUMMARY, "iterations": _array(ITERATION)}),
}
RUN_DELTA = {
    "$schema": DRAFT,
    "title": "run delta",
    **_record({"type": {"const": "delta"}, "seq": SEQ, "run": RUN_SUMMARY, "iterations": _array(ITERATION)}),
}

# --- /ws/projects/<id>/ ----------------------------------------------------------------------------

ACTIVITY = _record(
    {
        "id": {"type": "integer", "minimum": 1},
        "project": {"type": "integer"},
        "verb": {"enum": ["commented", "edited", "deleted", "voted", "set_status", "labelled"]},
        "actor": _STR_OR_NULL,
        "target": _record({"kind": _STR, "id": _STR, "trace": {"type": ["integer", "null"]}}),
        "data": _OBJ,
        "mentions": _array(_STR),
        "created_at": _STR_OR_NULL,
        "link": _STR,
    }
)
REVIEW_SNAPSHOT = {
    "$schema": DRAFT,
    "title": "review feed snapshot",
    **_record(
        {"type": {"const": "snapshot"}, "seq": SEQ, "project": {"type": "integer"}, "activities": _array(ACTIVITY)}
    ),
}
REVIEW_DELTA = {
    "$schema": DRAFT,
    "title": "review feed delta",
    **_record({"type": {"const": "delta"}, "seq": SEQ, "project": {"type": "integer"}, "activities": _array(ACTIVITY)}),
}

# --- a user's notifications (`/ws/users/<id>/notifications/`): the header's bell ---------------------

NOTIFICATION = _record(
    {
        "id": {"type": "integer"},
        "project": {"type": "integer"},
        "actor": _STR,
        "comment": {"type": "integer"},
        "link": _STR,
    }
)
NOTIFICATIONS_SNAPSHOT = {
    "$schema": DRAFT,
    "title": "notifications snapshot",
    **_record({"type": {"const": "snapshot"}, "seq": SEQ, "user": {"type": "integer"}, "unread": SEQ}),
}
NOTIFICATIONS_DELTA = {
    "$schema": DRAFT,
    "title": "notifications delta",
    **_record(
        {
            "type": {"const": "delta"},
            "seq": SEQ,
            "user": {"type": "integer"},
            "unread": SEQ,
            "notifications": _array(NOTIFICATION),
        }
    ),
}

# --- every socket ----------------------------------------------------------------------------------

#: A bad client message (`message` only), or the referral of a snapshot or catch-up delta too big
#: for a websocket message: load the state over HTTP, then connect with `?seq=<seq>`.
ERROR = {
    "$schema": DRAFT,
    "title": "error",
    **_record({"type": {"const": "error"}, "message": _STR}, {"code": {"const": "snapshot_too_large"}, "seq": SEQ}),
    "dependentRequired": {"code": ["seq"], "seq": ["code"]},
}
RESUME = {"$schema": DRAFT, "title": "resume (client -> server)", **_record({"type": {"const": "resume"}, "seq": SEQ})}

SERVER_MESSAGES: dict[str, dict[str, dict[str, Any]]] = {
    "trace": {"snapshot": TRACE_SNAPSHOT, "delta": TRACE_DELTA, "error": ERROR, "job": JOB, "metrics": METRICS},
    "run": {"snapshot": RUN_SNAPSHOT, "delta": RUN_DELTA, "error": ERROR},
    "review": {"snapshot": REVIEW_SNAPSHOT, "delta": REVIEW_DELTA, "error": ERROR},
    "notifications": {"snapshot": NOTIFICATIONS_SNAPSHOT, "delta": NOTIFICATIONS_DELTA, "error": ERROR},
}
CLIENT_MESSAGES: dict[str, dict[str, Any]] = {"resume": RESUME}


def validate_message(socket: str, message: Any, *, client: bool = False) -> None:
    """Check `message` against the schema of its `type` on `socket` ("trace", "run", "review", "notifications"; with
    `client`, a client -> server message). Raises jsonschema.ValidationError (an unknown type
    included); KeyError on an unknown socket."""
    schemas = CLIENT_MESSAGES if client else SERVER_MESSAGES[socket]
    kind = message.get("type") if isinstance(message, dict) else None
    if kind not in schemas:
        raise ValidationError(f"{socket}: no message type {kind!r} (expected one of {sorted(schemas)})")
    Draft202012Validator(schemas[kind]).validate(message)
