"""The OpenAPI 3 document of the REST API (traces, OTLP/HTTP, review, counterfactual jobs and
attributions, training runs), served at /api/openapi.json. (Over 500 lines: the document's data, one schema per object.)

Written by hand next to the views it describes; tests/fuzz/test_schemathesis.py runs schemathesis
against it (every documented operation, checking status codes and that nothing answers 500), so
a view that drifts from this document fails there.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from swarmscope.model import EDGE_TYPES

ID = {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string"}},
    "additionalProperties": True,
}
OBJECT = {"type": "object", "additionalProperties": True}
#: An OTLP/HTTP error: google.rpc.Status in its JSON form (protobuf for a protobuf request), whose
#: `code` is the gRPC status code (opentelemetry.io/docs/specs/otlp, "OTLP/HTTP Response").
OTLP_STATUS = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "details": {"type": "array"}},
    "additionalProperties": True,
}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERROR_TEXT = {
    400: "bad input: `field` (and for events `index`) names what",
    401: "no or invalid credentials",
    403: "the caller's role does not allow this, or a CSRF failure",
    404: "unknown, or another project's",
    405: "method not allowed",
    409: "contradicts stored events; nothing of the batch is stored",
    413: "request body over SWARMSCOPE_MAX_UPLOAD_BYTES",
    422: "this `Idempotency-Key` was used for another request (another body or user); `field` names the header",
    429: "over the token's ingestion rate; the `Retry-After` header says when to try again",
}


def _errors(*codes: int) -> dict[str, Any]:
    return {str(c): _json(ERROR, ERROR_TEXT[c]) for c in codes}


def _otlp_errors(*codes: int) -> dict[str, Any]:
    """`_errors` as OTLP/HTTP answers them: a Status body; 415 for a Content-Type other than JSON or protobuf."""
    text = {
        **ERROR_TEXT,
        400: "bad input: `message` names the span and field",
        415: "Content-Type neither application/json nor application/x-protobuf",
    }
    return {str(c): _json(OTLP_STATUS, text[c]) for c in codes}


def _path_id(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": ID}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


#: The `Idempotency-Key` request header (IETF draft-ietf-httpapi-idempotency-key-header) of the
#: POSTs that create something (webapp.traces.idempotency).
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": 257},
    "description": "a fresh value per logical call (a UUID; quoted as an sf-string or bare), the same on "
    "its retries: a repeat with the same body answers the object the first request created, with the first's "
    "status and `Idempotent-Replayed: true`, and creates nothing; the same key with another body (or from "
    "another user) is a 422 naming the header; 1 to 255 printable ASCII characters, else 400. Keys are kept "
    "24 h; a request that failed leaves its key free.",
}


def _body(schema: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


EVENT = {
    "type": "object",
    "required": ["id", "t", "type", "agent"],
    "additionalProperties": True,
    "properties": {
        "id": {"type": "string"},
        "t": {"type": "number"},
        "t_end": {"type": ["number", "null"]},
        "type": {"type": "string"},
        "agent": {"type": "string"},
        "content": {"type": ["string", "null"]},
    },
}
#: An edge as `swarmscope.model.edge_from_dict` reads it (other keys are ignored).
EDGE = {
    "type": "object",
    "required": ["src", "dst", "type"],
    "additionalProperties": True,
    "description": "a typed arc between two event ids of the trace (stored, or in the same batch)",
    "properties": {
        "src": {"type": "string", "minLength": 1, "description": "the id of the event it starts at"},
        "dst": {"type": "string", "minLength": 1, "description": "the id of the event it ends at"},
        "type": {"type": "string", "enum": list(EDGE_TYPES)},
    },
}
#: An agent as `swarmscope.model.agent_from_dict` reads it (other keys are ignored).
AGENT = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": True,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "role": {"type": ["string", "null"]},
        "parent": {"type": ["string", "null"], "description": "the agent that spawned it"},
        "spawned_at": {"type": ["number", "null"]},
        "despawned_at": {"type": ["number", "null"]},
        "system_prompt": {"type": ["string", "null"]},
        "attributes": OBJECT,
    },
}
#: A label as `swarmscope.model.label_from_dict` reads it (other keys are ignored).
LABEL = {
    "type": "object",
    "required": ["key"],
    "additionalProperties": True,
    "properties": {
        "key": {"type": "string"},
        "value": {},
        "event_id": {"type": ["string", "null"]},
        "agent": {"type": ["string", "null"]},
        "source": {"type": ["string", "null"]},
    },
}
BATCH = {
    "oneOf": [
        {"type": "array", "items": EVENT},
        {
            "type": "object",
            "additionalProperties": True,
            "properties": {
                "events": {"type": "array", "items": EVENT},
                "edges": {"type": "array", "items": EDGE},
                "agents": {"type": "array", "items": AGENT},
                "labels": {"type": "array", "items": LABEL},
                "rewards": OBJECT,
                "costs": OBJECT,
                "metrics": OBJECT,
                "attributes": OBJECT,
            },
            "description": "`rewards`, `costs`, `metrics` and `attributes` merge into the trace's, key by key, "
            "also in a batch without events (an episode's reward reported at its end): a new seq and a delta to "
            "viewers where they change something",
        },
    ]
}
TARGET_KINDS = ["trace", "event", "attribution", "run"]
COMMENT = {
    "type": "object",
    "required": ["id", "target", "author", "body_html", "deleted"],
    "properties": {
        "id": {"type": "integer"},
        "target": OBJECT,
        "parent": {"type": ["integer", "null"]},
        "author": {"type": "string"},
        "body": {"type": ["string", "null"]},
        "body_html": {"type": "string"},
        "mentions": {"type": "array", "items": {"type": "string"}},
        "deleted": {"type": "boolean"},
        "link": {"type": "string"},
    },
}
VOTES = {
    "type": "object",
    "required": ["attribution", "agree", "disagree", "votes"],
    "properties": {
        "attribution": {"type": "integer"},
        "agree": {"type": "integer"},
        "disagree": {"type": "integer"},
        "votes": {"type": "array"},
    },
}
STATUS = {
    "type": "object",
    "required": ["trace", "status"],
    "properties": {
        "trace": {"type": "integer"},
        "status": {"type": "string", "enum": ["open", "in_review", "settled"]},
    },
}
FILES = {
    "type": "object",
    "required": ["files"],
    "properties": {
        "files": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["file", "traces", "error"],
                "properties": {
                    "file": {"type": "string"},
                    "traces": {"type": "array"},
                    "skipped": {"type": ["string", "null"]},
                    "error": {"type": ["string", "null"]},
                    "report": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
        "notes": {
            "type": "array",
            "items": {"type": "string"},
            "description": "the import's notes, e.g. a reward score that no imported trace has",
        },
    },
}
RESULTS = {
    "type": "object",
    "required": ["results"],
    "properties": {"results": {"type": "array"}},
    "additionalProperties": True,
}


#: A trace's summary (webapp.traces.services.trace_summary); its token figures as
#: docs/metrics.md "Tokens" defines them.
TRACE = {
    "type": "object",
    "additionalProperties": True,
    "required": ["id", "project", "total_tokens", "estimated_tokens"],
    "properties": {
        "id": ID,
        "project": ID,
        "total_tokens": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "measured token usage: the source's reported total (`costs.tokens`), else the sum of "
            "its events' measured tokens; null when the source measured none. Estimates are never added",
        },
        "estimated_tokens": {
            "type": "integer",
            "minimum": 0,
            "description": "an estimate, not a measurement: characters / 4 of the content of the events without "
            "measured tokens (an importer's flagged `tokens_estimated` figure where it made one); apart from "
            "`total_tokens`",
        },
        "costs": OBJECT,
        "reward": {"type": ["number", "null"], "description": "the headline reward of `rewards`; null: none"},
        "cost": {
            "type": "object",
            "description": "USD of its LLM calls at list prices (the genai-prices table, webapp/traces/prices.py): "
            "`usd` null when no model it names has a price, `estimated` where estimated tokens were priced, "
            "`models`, `unknown_models` (no price: not counted)",
        },
        "metrics": {
            "type": "object",
            "description": "in lists and snapshots: the metrics its source gave (often {}); in `GET "
            "/api/traces/<id>/`: the computed ones (TRACE_DETAIL)",
        },
    },
}
#: `GET /api/traces/<id>/`: the summary with `metrics` the computed metrics (the trace page's figures)
#: and the source's under `source_metrics`.
TRACE_DETAIL = {
    **TRACE,
    "required": [*TRACE["required"], "metrics", "source_metrics"],
    "properties": {
        **TRACE["properties"],
        "metrics": {
            "type": "object",
            "description": "swarmscope.metrics of the trace (docs/metrics.md), cached for its seq: the figures "
            "the trace page's metrics panel shows ({} for a trace without events)",
        },
        "source_metrics": {
            "type": "object",
            "description": "the metrics its source gave (an importer's or the sender's `metrics`), as given",
        },
    },
}


def _results(item: dict[str, Any]) -> dict[str, Any]:
    return {**RESULTS, "properties": {"results": {"type": "array", "items": item}}}


NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}

# --- counterfactuals (webapp.counterfactuals.api): counterfactual jobs and attributions -------------------
JOB_STATUSES = ["queued", "running", "done", "failed", "cancelled"]
METHODS = ["loo", "shapley", "kernelshap", "shapley2"]
ATTRIBUTION = {
    "type": "object",
    "additionalProperties": True,
    "required": [
        "id",
        "trace",
        "job",
        "target",
        "intervention",
        "method",
        "estimate",
        "ci_low",
        "ci_high",
        "n_rollouts",
        "backend",
        "seed",
        "environment",
        "code_version",
        "created_at",
    ],
    "properties": {
        "id": {"type": "integer"},
        "trace": {"type": "integer"},
        "job": {"type": ["integer", "null"]},
        "target": {"type": "string"},
        "intervention": OBJECT,
        "method": {"type": "string"},
        "estimate": {"type": "number"},
        "ci_low": {"type": "number"},
        "ci_high": {"type": "number"},
        "n_rollouts": {"type": "integer"},
        "backend": {"type": "string"},
        "seed": {"type": "integer"},
        "environment": OBJECT,
        "code_version": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
    },
}
_JOB_COMMON = {
    "id": {"type": "integer"},
    "trace": {"type": "integer"},
    "kind": {"type": "string", "enum": ["counterfactual", "attribution"]},
    "status": {"type": "string", "enum": JOB_STATUSES},
    "method": {"type": "string"},
    "players": {"type": "integer", "description": "how many players an attribution job credits"},
    "intervention": OBJECT,
    "backend": {"type": "string"},
    "n_samples": {"type": "integer"},
    "done": {"type": "integer"},
    "total": {"type": "integer"},
    "seed": {"type": "integer"},
    "error": {"type": "string"},
    "created_at": {"type": "string", "format": "date-time"},
    "finished_at": NULLABLE_TIME,
    "estimate": {
        "oneOf": [OBJECT, {"type": "null"}],
        "description": "the cost estimate the job was confirmed with (costs.job_estimate; null where none was needed)",
    },
}
JOB = {
    "type": "object",
    "additionalProperties": True,
    "required": [
        "id",
        "trace",
        "kind",
        "status",
        "method",
        "players",
        "player_kind",
        "intervention",
        "backend",
        "n_samples",
        "epsilon",
        "seed",
        "done",
        "total",
        "error",
        "created_at",
        "finished_at",
        "result",
        "samples",
        "branch_trace",
        "compare_url",
    ],
    "properties": {
        **_JOB_COMMON,
        "player_kind": {"type": "string"},
        "epsilon": {"type": ["number", "null"]},
        "result": {"oneOf": [ATTRIBUTION, {"type": "null"}]},
        "samples": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["index", "seed", "control", "intervention"],
                "properties": {
                    "index": {"type": "integer"},
                    "seed": {"type": "integer"},
                    "control": {"type": ["number", "null"]},
                    "intervention": {"type": ["number", "null"]},
                },
            },
        },
        "branch_trace": {"type": ["integer", "null"]},
        "compare_url": {"type": ["string", "null"]},
        "results": {
            "type": "array",
            "items": ATTRIBUTION,
            "description": "attribution jobs: one per player, highest credit first, once done",
        },
    },
}
JOB_SUMMARY = {
    "type": "object",
    "additionalProperties": True,
    "required": [
        "id",
        "trace",
        "kind",
        "status",
        "method",
        "player_kind",
        "players",
        "intervention",
        "backend",
        "n_samples",
        "done",
        "total",
        "seed",
        "error",
        "created_at",
        "finished_at",
        "url",
    ],
    "properties": {**_JOB_COMMON, "player_kind": {"type": ["string", "null"]}, "url": {"type": "string"}},
}
INTERVENTION = {
    "type": "object",
    "required": ["kind"],
    "additionalProperties": False,
    "properties": {
        "kind": {"type": "string"},
        "events": {"type": "array", "items": {"type": "string"}},
        "agents": {"type": "array", "items": {"type": "string"}},
        "text": {"type": ["string", "null"]},
    },
}
COUNTERFACTUAL_REQUEST = {
    "type": "object",
    "required": ["intervention"],
    "additionalProperties": False,
    "properties": {
        "intervention": INTERVENTION,
        "n": {
            "type": "integer",
            "minimum": 2,
            "maximum": 4096,
            "description": "paired samples, default 32 (the cap with epsilon)",
        },
        "backend": {"type": "string", "description": "a key of SWARMSCOPE_ROLLOUT_BACKENDS, default sim"},
        "seed": {"type": "integer", "minimum": 0, "maximum": 2**62, "description": "default 0"},
        "epsilon": {
            "type": ["number", "null"],
            "exclusiveMinimum": 0,
            "description": "stop once the 95 % interval is narrower (reward units)",
        },
        "confirmed": {"type": "boolean", "description": "required true on an LLM backend"},
    },
}
ATTRIBUTION_REQUEST = {
    "type": "object",
    "required": ["method", "budget"],
    "additionalProperties": False,
    "properties": {
        "method": {"type": "string", "enum": METHODS},
        "budget": {"type": "integer", "minimum": 1, "maximum": 10**7, "description": "rollouts at most"},
        "backend": {"type": "string", "description": "a key of SWARMSCOPE_ROLLOUT_BACKENDS, default sim"},
        "seed": {"type": "integer", "minimum": 0, "maximum": 2**62, "description": "default 0"},
        "players": {"type": "string", "enum": ["messages", "agents"], "description": "default messages"},
        "confirmed": {"type": "boolean", "description": "required true on an LLM backend"},
    },
}
COST = {
    "type": "object",
    "additionalProperties": True,
    "required": [
        "backend",
        "llm",
        "confirmation_required",
        "n",
        "requests",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "chars_per_token",
    ],
    "properties": {
        "backend": {"type": "string"},
        "llm": {"type": "boolean"},
        "confirmation_required": {"type": "boolean"},
        "n": {"type": "integer"},
        "requests": {"type": "integer"},
        "prompt_tokens": {"type": "integer"},
        "completion_tokens": {"type": "integer"},
        "total_tokens": {"type": "integer"},
        "recorded_length": {
            "type": "object",
            "description": "the tokens with every re-generated turn as long as the recorded one",
        },
        "at_cap": {"type": "object", "description": "the tokens with every re-generated turn at its max_tokens"},
        "turn_max_tokens": {"type": ["integer", "null"], "description": "max_tokens of a re-generated turn"},
        "chars_per_token": {"type": "number", "description": "of the server's tokenizer on the trace, else 4"},
        "tokenizer": {"type": ["string", "null"], "enum": ["server", "rule of thumb", None]},
        "cap_share": {"type": ["number", "null"], "description": "a re-generated turn's expected share of its cap"},
        "prompt_cap_share": {
            "type": ["number", "null"],
            "description": "the same share for the re-generated turns later prompts hold",
        },
        "cap_share_source": {
            "type": ["string", "null"],
            "description": "the setting, the model's finished jobs (how many) or the default",
        },
        "model": {"type": ["string", "null"], "description": "the model the backend's client asks"},
        "temperature": {"type": ["number", "null"], "description": "its sampling temperature"},
        "pilot": {
            "type": ["object", "null"],
            "description": "a what-if job's cost pilot (its first chunk, run before the estimate where no finished "
            "job on the trace gives the cap share): {status: queued | running | done | failed, samples, elapsed_s; "
            "done: seconds, turns, requests, prompt_tokens, completion_tokens; failed: reason}; ask again while "
            "queued or running",
        },
    },
}

# --- training runs (webapp.training.api): training runs reported by trainers ----------------------------------
RUN_STATUSES = ["queued", "running", "cancelling", "cancelled", "failed", "finished"]
RUN = {
    "type": "object",
    "additionalProperties": True,
    "required": [
        "id",
        "project",
        "name",
        "config",
        "seed_group",
        "status",
        "env_steps",
        "budget_steps",
        "iterations",
        "progress",
        "best_reward",
        "eta_s",
        "wall_s",
        "error",
        "external",
        "summary",
        "seq",
        "has_checkpoint",
        "created_at",
        "started_at",
        "finished_at",
    ],
    "properties": {
        "id": {"type": "integer"},
        "project": {"type": "integer"},
        "name": {"type": "string"},
        "config": OBJECT,
        "seed_group": {"type": "string"},
        "status": {"type": "string", "enum": RUN_STATUSES},
        "env_steps": {"type": "integer"},
        "budget_steps": {"type": "integer"},
        "iterations": {"type": "integer"},
        "progress": {"type": "number", "minimum": 0, "maximum": 1},
        "best_reward": {"type": ["number", "null"]},
        "eta_s": {"type": ["number", "null"]},
        "wall_s": {"type": "number"},
        "error": {"type": "string"},
        "external": {"type": "boolean"},
        "summary": OBJECT,
        "seq": {"type": "integer"},
        "has_checkpoint": {"type": "boolean"},
        "created_at": NULLABLE_TIME,
        "started_at": NULLABLE_TIME,
        "finished_at": NULLABLE_TIME,
    },
}
ITERATION = {
    "type": "object",
    "additionalProperties": True,
    "required": ["iteration", "env_steps", "wall_s", "metrics", "stop", "credit", "episodes", "seq"],
    "properties": {
        "iteration": {"type": "integer"},
        "env_steps": {"type": "integer"},
        "wall_s": {"type": "number"},
        "metrics": OBJECT,
        "stop": OBJECT,
        "credit": OBJECT,
        "episodes": {"type": "array", "items": {"type": "integer"}},
        "seq": {"type": "integer"},
    },
}
RUN_SNAPSHOT = {
    "type": "object",
    "required": ["type", "seq", "run", "iterations"],
    "properties": {
        "type": {"const": "snapshot"},
        "seq": {"type": "integer"},
        "run": RUN,
        "iterations": {"type": "array", "items": ITERATION},
    },
}
_NUMBER = {"type": "number"}
ITERATION_REQUEST = {
    "type": "object",
    "required": ["iteration", "env_steps", "metrics"],
    "additionalProperties": True,
    "description": "one iteration of the training contract (trainer/recipes/train_orchestrator.py `on_iteration`); "
    "a re-sent iteration number replaces the stored one",
    "properties": {
        "iteration": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
        "env_steps": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
        "wall_s": {"type": "number", "minimum": 0},
        "budget_steps": {"type": ["integer", "null"], "minimum": 1, "maximum": 2**63 - 1},
        "metrics": {
            "type": "object",
            "required": ["reward"],
            "additionalProperties": True,
            "properties": {
                "reward": _NUMBER,
                "success_rate": _NUMBER,
                "critical_steps": _NUMBER,
                "parallelism_efficiency": _NUMBER,
            },
        },
        "stop": OBJECT,
        "credit": OBJECT,
        "episodes": {
            "type": "array",
            "maxItems": 8,
            "items": OBJECT,
            "description": "sample episodes, native trace objects, imported as traces",
        },
    },
}

PATHS: dict[str, Any] = {
    "/api/traces/": {
        "get": {
            "summary": "List the traces the caller may read",
            "operationId": "listTraces",
            "parameters": [
                _query("page", {"type": "integer", "minimum": 1}, "page number"),
                _query("page_size", {"type": "integer", "minimum": 1, "maximum": 200}, "1..200"),
                _query("q", {"type": "string"}, "search in name, system, labels, source format, session id"),
                _query("session", {"type": "string"}, "only the traces of this session (exact session id)"),
                _query(
                    "project",
                    {"type": "array", "items": ID},
                    "only the traces of these projects (repeatable: `?project=1&project=2`); a project the "
                    "caller does not read lists nothing, as an unknown session does; not a positive integer: 400",
                ),
            ],
            "responses": {"200": _json(_results(TRACE), "a page of trace summaries"), **_errors(400, 401)},
        },
        "post": {
            "summary": "Create a trace, optionally with a first batch",
            "description": "With an `Idempotency-Key`, a retry of the request (after a timeout or a 5xx) answers "
            "the trace the first created, as it is now, with `events_added` 0, and creates none.",
            "operationId": "createTrace",
            "parameters": [IDEMPOTENCY_KEY],
            "requestBody": _body(
                {
                    "type": "object",
                    "additionalProperties": True,
                    "properties": {
                        "name": {"type": "string"},
                        "system": {"type": "string"},
                        "source_id": {"type": "string"},
                        "attributes": OBJECT,
                        "events": {"type": "array", "items": EVENT},
                        "edges": {"type": "array", "items": EDGE},
                        "agents": {"type": "array", "items": AGENT},
                        "labels": {"type": "array", "items": LABEL},
                    },
                }
            ),
            "responses": {
                "201": _json(OBJECT, "created"),
                "200": _json(OBJECT, "already stored, unchanged"),
                **_errors(400, 401, 403, 409, 413, 422, 429),
            },
        },
    },
    "/api/traces/{trace_id}/": {
        "get": {
            "summary": "One trace's summary with its computed metrics",
            "operationId": "getTrace",
            "parameters": [_path_id("trace_id")],
            "responses": {"200": _json(TRACE_DETAIL, "the trace"), **_errors(401, 404)},
        },
    },
    "/api/traces/{trace_id}/events/": {
        "post": {
            "summary": "Append a batch of events (all or nothing)",
            "description": "An event re-sent with the same id and content is a no-op, so a batch whose answer was "
            "lost can be sent again (the Python client's TraceStream keeps a batch whose send failed and sends it "
            "with the next flush); one contradicting a stored event is a 409.",
            "operationId": "appendEvents",
            "parameters": [_path_id("trace_id")],
            "requestBody": _body(BATCH),
            "responses": {
                "200": _json(OBJECT, "stored: events added and updated, new seq"),
                **_errors(400, 401, 404, 409, 413, 429),
            },
        },
    },
    "/api/traces/{trace_id}/close/": {
        "post": {
            "summary": "End the stream into a trace: its live state clears now, not after the idle time",
            "description": "The sender's stream has ended (the Python client's TraceStream.close(), or leaving "
            "`with client.stream(...)`): the trace's Live badge clears on its page and in the trace list at once "
            "instead of after SWARMSCOPE_LIVE_IDLE_S without events, which stays the fallback. Viewers get one "
            "delta without rows whose `trace.live` is false. No body needed. Idempotent: `closed` is false when "
            "there was nothing to end. A later batch makes the trace live again. While a large batch is being "
            "stored in chunks the answer is 503 with Retry-After (send again).",
            "operationId": "closeTrace",
            "parameters": [_path_id("trace_id")],
            "responses": {
                "200": _json(
                    {
                        "type": "object",
                        "required": ["trace", "seq", "closed"],
                        "properties": {"trace": OBJECT, "seq": {"type": "integer"}, "closed": {"type": "boolean"}},
                    },
                    "closed (or nothing to close): the trace, its seq, whether this call ended a stream",
                ),
                **_errors(401, 403, 404),
            },
        },
    },
    "/api/traces/{trace_id}/snapshot/": {
        "get": {
            "summary": "The trace's live-protocol snapshot",
            "operationId": "getSnapshot",
            "parameters": [_path_id("trace_id")],
            "responses": {"200": _json(OBJECT, "snapshot with seq"), **_errors(401, 404)},
        },
    },
    "/api/traces/{trace_id}/snapshot/lod/": {
        "get": {
            "summary": "The snapshot at a level of detail: the overview snapshot of a huge trace, else the full one",
            "operationId": "getLodSnapshot",
            "parameters": [
                _path_id("trace_id"),
                _query("bins", {"type": "integer", "minimum": 1, "maximum": 2000}, "time bins (default 200)"),
            ],
            "responses": {"200": _json(OBJECT, "snapshot with seq"), **_errors(400, 401, 404)},
        },
    },
    "/api/traces/{trace_id}/overview/": {
        "get": {
            "summary": "The trace binned in time per lane (counts, not events)",
            "operationId": "getTraceOverview",
            "parameters": [
                _path_id("trace_id"),
                _query("bins", {"type": "integer", "minimum": 1, "maximum": 2000}, "time bins (default 200)"),
            ],
            "responses": {"200": _json(OBJECT, "the overview"), **_errors(400, 401, 404)},
        },
    },
    "/api/traces/{trace_id}/window/": {
        "get": {
            "summary": "The events of a time window (t0 <= t1, seconds), of some lanes or all",
            "operationId": "getTraceWindow",
            "parameters": [
                _path_id("trace_id"),
                {**_query("t0", {"type": "number"}, "window start (s)"), "required": True},
                {**_query("t1", {"type": "number"}, "window end (s), at least t0"), "required": True},
                _query("lanes", {"type": "string"}, "comma-separated overview lane names (default all)"),
                _query("limit", {"type": "integer", "minimum": 1, "maximum": 10000}, "most events answered"),
            ],
            "responses": {"200": _json(OBJECT, "the window's events"), **_errors(400, 401, 404)},
        },
    },
    "/api/traces/{trace_id}/search/": {
        "get": {
            "summary": "Search a trace's events by text",
            "operationId": "searchTrace",
            "parameters": [
                _path_id("trace_id"),
                {
                    **_query("q", {"type": "string", "minLength": 1, "maxLength": 200}, "the text (1 to 200)"),
                    "required": True,
                },
                _query("limit", {"type": "integer", "minimum": 1, "maximum": 1000}, "most hits answered"),
            ],
            "responses": {"200": _json(OBJECT, "the hits"), **_errors(400, 401, 404)},
        },
    },
    "/api/traces/{trace_id}/export/": {
        "get": {
            "summary": "Export a trace as native or survey-schema JSON",
            "operationId": "exportTrace",
            "parameters": [
                _path_id("trace_id"),
                _query("format", {"type": "string", "enum": ["native", "survey"]}, "default native"),
            ],
            "responses": {"200": _json(OBJECT, "the document (a download)"), **_errors(400, 401, 404)},
        },
    },
    "/api/traces/{trace_id}/export/otlp/": {
        "get": {
            "summary": "Export a trace as OTLP/JSON (GenAI conventions), attributions and branch parent included",
            "operationId": "exportTraceOtlp",
            "parameters": [_path_id("trace_id")],
            "responses": {"200": _json(OBJECT, "an ExportTraceServiceRequest (a download)"), **_errors(401, 404)},
        },
    },
    "/api/traces/export.jsonl": {
        "get": {
            "summary": "Many traces as native JSONL",
            "operationId": "exportTracesJsonl",
            "parameters": [
                _query(
                    "ids",
                    {"type": "string", "pattern": "^[0-9]+(,[0-9]+)*$"},
                    "comma-separated trace ids (404 naming those unknown or unreadable); default all readable",
                )
            ],
            "responses": {
                "200": {
                    "description": "one trace per line",
                    "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                },
                **_errors(400, 401, 404),
            },
        },
    },
    "/api/traces/upload/": {
        "post": {
            "summary": "Import a trace file in any supported format (multipart `file` fields also accepted)",
            "description": "A gzip-compressed file (found by its magic bytes, not its name) is read decompressed, "
            "up to SWARMSCOPE_MAX_UPLOAD_BYTES; over that it fails in the report. An OTLP/JSON logs file joins the "
            "OTLP spans of its trace ids among the files of the same upload; without them it is skipped, naming them.",
            "operationId": "uploadTraceFile",
            "parameters": [
                _query("filename", {"type": "string"}, "the file's name, for the report"),
                _query(
                    "reward_score",
                    {"type": "string", "maxLength": 200},
                    "the evaluation score (Langfuse score, OpenTelemetry `gen_ai.evaluation.name`) that is each "
                    "trace's reward; default: the project's reward score setting, else a score named `reward`; "
                    "other scores stay labels",
                ),
            ],
            "requestBody": {
                "required": True,
                "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
            },
            "responses": {
                "200": _json(FILES, "per-file report: traces imported or skipped"),
                "400": _json(
                    {"anyOf": [FILES, ERROR]},
                    "per-file report: at least one file failed, naming line and column or "
                    "record and field, and added nothing; or a bad parameter",
                ),
                **_errors(401, 403, 413, 429),
            },
        },
    },
    "/v1/traces": {
        "post": {
            "summary": "OTLP/HTTP trace export (JSON here; protobuf also accepted)",
            "operationId": "otlpTraces",
            "requestBody": _body(
                {"type": "object", "additionalProperties": True, "properties": {"resourceSpans": {"type": "array"}}}
            ),
            "responses": {"200": _json(OBJECT, "accepted"), **_otlp_errors(400, 401, 403, 413, 415, 429)},
        },
    },
    "/v1/logs": {
        "post": {
            "summary": "OTLP/HTTP logs export (JSON here; protobuf also accepted): log records join their spans",
            "operationId": "otlpLogs",
            "requestBody": _body(
                {"type": "object", "additionalProperties": True, "properties": {"resourceLogs": {"type": "array"}}}
            ),
            "responses": {"200": _json(OBJECT, "accepted"), **_otlp_errors(400, 401, 403, 413, 415, 429)},
        },
    },
    "/api/review/notifications/": {
        "get": {
            "summary": "The caller's notifications (@mentions), newest first",
            "operationId": "listNotifications",
            "parameters": [
                _query("unread", {"type": "string", "enum": ["1", "true", "0", "false"]}, "1: only unread ones"),
                _query("before", ID, "page back: notifications older than this id"),
                _query("limit", {"type": "integer", "minimum": 1, "maximum": 200}, "default 50"),
            ],
            "responses": {
                "200": _json(
                    {
                        "type": "object",
                        "required": ["unread", "results"],
                        "properties": {"unread": {"type": "integer"}, "results": {"type": "array", "items": OBJECT}},
                    },
                    "unread count and the page",
                ),
                **_errors(400, 401),
            },
        },
    },
    "/api/review/notifications/read/": {
        "post": {
            "summary": "Mark notifications read: those of `ids`, or all without it",
            "operationId": "markNotificationsRead",
            "requestBody": _body(
                {"type": "object", "properties": {"ids": {"type": "array", "items": ID}}}, required=False
            ),
            "responses": {
                "200": _json(
                    {
                        "type": "object",
                        "required": ["marked", "unread"],
                        "properties": {"marked": {"type": "integer"}, "unread": {"type": "integer"}},
                    },
                    "how many were marked, how many are left unread",
                ),
                **_errors(400, 401, 403),
            },
        },
    },
    "/api/review/traces/{trace_id}/attribution-votes/": {
        "get": {
            "summary": "Every attribution of a trace with its votes, grouped by job and estimator",
            "operationId": "listTraceAttributionVotes",
            "parameters": [_path_id("trace_id")],
            "responses": {"200": _json(OBJECT, "{trace, user, can_review, groups}"), **_errors(401, 404)},
        },
    },
    "/api/review/comments/": {
        "get": {
            "summary": "Comments on a trace (and everything in it) or on one target",
            "operationId": "listComments",
            "parameters": [
                _query("trace", ID, "trace id (all comments of the trace, or the event's trace)"),
                _query("kind", {"type": "string", "enum": TARGET_KINDS}, "target kind"),
                _query("id", {"type": "string"}, "target id (an event's id for kind=event)"),
            ],
            "responses": {
                "200": _json(
                    {
                        **RESULTS,
                        "properties": {
                            "results": {"type": "array", "items": COMMENT},
                            "user": {"type": "string"},
                            "can_review": {"type": "boolean"},
                        },
                    },
                    "oldest first; can_review: the caller may comment",
                ),
                **_errors(400, 401, 404),
            },
        },
        "post": {
            "summary": "Comment (Markdown, sanitised) on a trace, event, attribution or run; reviewers",
            "operationId": "createComment",
            "requestBody": _body(
                {
                    "type": "object",
                    "required": ["kind", "id", "body"],
                    "properties": {
                        "kind": {"type": "string", "enum": TARGET_KINDS},
                        "id": {"type": ["string", "integer"]},
                        "trace": ID,
                        "body": {"type": "string"},
                        "parent": ID,
                    },
                }
            ),
            "responses": {"201": _json(COMMENT, "the comment"), **_errors(400, 401, 403, 404)},
        },
    },
    "/api/review/comments/{comment_id}/": {
        "get": {
            "summary": "One comment",
            "operationId": "getComment",
            "parameters": [_path_id("comment_id")],
            "responses": {"200": _json(COMMENT, "the comment"), **_errors(401, 404)},
        },
        "patch": {
            "summary": "Edit one's own comment",
            "operationId": "editComment",
            "parameters": [_path_id("comment_id")],
            "requestBody": _body({"type": "object", "required": ["body"], "properties": {"body": {"type": "string"}}}),
            "responses": {"200": _json(COMMENT, "edited"), **_errors(400, 401, 403, 404)},
        },
        "delete": {
            "summary": "Delete one's own comment (admins: any)",
            "operationId": "deleteComment",
            "parameters": [_path_id("comment_id")],
            "responses": {"200": _json(COMMENT, "deleted (kept blank in its thread)"), **_errors(401, 403, 404)},
        },
    },
    "/api/review/attributions/{attribution_id}/votes/": {
        "get": {
            "summary": "Votes on an attribution",
            "operationId": "getVotes",
            "parameters": [_path_id("attribution_id")],
            "responses": {"200": _json(VOTES, "tally and votes"), **_errors(401, 404)},
        },
        "put": {
            "summary": "Agree or disagree, with a reason (one vote per reviewer, changeable)",
            "operationId": "putVote",
            "parameters": [_path_id("attribution_id")],
            "requestBody": _body(
                {
                    "type": "object",
                    "required": ["value"],
                    "properties": {
                        "value": {"type": "string", "enum": ["agree", "disagree"]},
                        "reason": {"type": "string"},
                    },
                }
            ),
            "responses": {"200": _json(VOTES, "tally after the vote"), **_errors(400, 401, 403, 404)},
        },
        "delete": {
            "summary": "Withdraw one's vote (withdrawing no vote changes nothing)",
            "operationId": "deleteVote",
            "parameters": [_path_id("attribution_id")],
            "responses": {"200": _json(VOTES, "tally after the withdrawal"), **_errors(401, 403, 404)},
        },
    },
    "/api/review/traces/{trace_id}/status/": {
        "get": {
            "summary": "Review status of a trace",
            "operationId": "getReviewStatus",
            "parameters": [_path_id("trace_id")],
            "responses": {"200": _json(STATUS, "status"), **_errors(401, 404)},
        },
        "put": {
            "summary": "Set the review status",
            "operationId": "putReviewStatus",
            "parameters": [_path_id("trace_id")],
            "requestBody": _body(
                {
                    "type": "object",
                    "required": ["status"],
                    "properties": {"status": {"type": "string", "enum": ["open", "in_review", "settled"]}},
                }
            ),
            "responses": {"200": _json(STATUS, "status"), **_errors(400, 401, 403, 404)},
        },
    },
    "/api/review/traces/{trace_id}/mistake-labels/": {
        "get": {
            "summary": "Every reviewer's mistake agent and step for a trace",
            "operationId": "getMistakeLabels",
            "parameters": [_path_id("trace_id")],
            "responses": {"200": _json(RESULTS, "labels by reviewer"), **_errors(401, 404)},
        },
        "put": {
            "summary": "Set the caller's mistake agent and step (Who&When)",
            "operationId": "putMistakeLabel",
            "parameters": [_path_id("trace_id")],
            "requestBody": _body(
                {
                    "type": "object",
                    "required": ["agent", "event_id"],
                    "properties": {
                        "agent": {"type": "string"},
                        "event_id": {"type": "string"},
                        "reason": {"type": "string"},
                    },
                }
            ),
            "responses": {"200": _json(RESULTS, "labels by reviewer"), **_errors(400, 401, 403, 404)},
        },
    },
    "/api/review/projects/{project_id}/activity/": {
        "get": {
            "summary": "The project's activity feed",
            "operationId": "getActivity",
            "parameters": [
                _path_id("project_id"),
                _query("before", ID, "older than this activity id"),
                _query("after", ID, "newer than this id, oldest first"),
                _query("limit", {"type": "integer", "minimum": 1, "maximum": 200}, "default 50"),
            ],
            "responses": {"200": _json(RESULTS, "activities"), **_errors(400, 401, 404)},
        },
    },
    "/api/review/projects/{project_id}/agreement/": {
        "get": {
            "summary": "Cohen's kappa between reviewer pairs on mistake labels",
            "operationId": "getAgreement",
            "parameters": [_path_id("project_id")],
            "responses": {
                "200": _json(
                    {
                        "type": "object",
                        "required": ["pairs", "reviewers"],
                        "properties": {"pairs": {"type": "array"}, "reviewers": {"type": "array"}},
                    },
                    "pairs",
                ),
                **_errors(401, 404),
            },
        },
    },
    "/api/review/projects/{project_id}/members/": {
        "get": {
            "summary": "The project's members a comment can @mention (user name, full name), by user name",
            "operationId": "listMentionMembers",
            "parameters": [_path_id("project_id")],
            "responses": {
                "200": _json(
                    {
                        "type": "object",
                        "required": ["project", "members"],
                        "properties": {
                            "project": {"type": "integer"},
                            "members": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "required": ["username", "name"],
                                    "properties": {"username": {"type": "string"}, "name": {"type": "string"}},
                                },
                            },
                        },
                    },
                    "the members, by user name",
                ),
                **_errors(401, 404),
            },
        },
    },
    "/api/traces/{trace_id}/counterfactuals/": {
        "post": {
            "summary": "Request a counterfactual job: n paired re-rollouts under an intervention; reviewers",
            "description": "With an `Idempotency-Key`, a retry of the request answers the job the first created "
            "(202, as it is now) and starts none.",
            "operationId": "requestCounterfactual",
            "parameters": [_path_id("trace_id"), IDEMPOTENCY_KEY],
            "requestBody": _body(COUNTERFACTUAL_REQUEST),
            "responses": {"202": _json(JOB, "the job, queued"), **_errors(400, 401, 403, 404, 413, 422)},
        },
    },
    "/api/traces/{trace_id}/counterfactuals/estimate/": {
        "post": {
            "summary": "The estimated LLM cost of a counterfactual job (`seed`, `confirmed` ignored)",
            "operationId": "estimateCounterfactual",
            "parameters": [_path_id("trace_id")],
            "requestBody": _body(COUNTERFACTUAL_REQUEST),
            "responses": {
                "200": _json(COST, "requests and tokens, per arm and for the branch trace"),
                **_errors(400, 401, 403, 404, 413),
            },
        },
    },
    "/api/traces/{trace_id}/counterfactuals/capabilities/": {
        "get": {
            "summary": "Which rollout backends can run What-if and attribution jobs on the trace, and why not",
            "operationId": "traceCapabilities",
            "parameters": [_path_id("trace_id")],
            "responses": {
                "200": _json(
                    {
                        "type": "object",
                        "required": ["backends", "what_if", "attribution", "docs"],
                        "properties": {
                            "backends": {"type": "object", "additionalProperties": {"type": "object"}},
                            "what_if": {"type": "object"},
                            "attribution": {"type": "object"},
                            "docs": {"type": "string"},
                        },
                    },
                    "per backend: available, reason, setting, docs, message types and counts, notes",
                ),
                **_errors(401, 404),
            },
        },
    },
    "/api/traces/{trace_id}/jobs/": {
        "get": {
            "summary": "The trace's counterfactual and attribution jobs, newest first",
            "operationId": "listJobs",
            "parameters": [
                _path_id("trace_id"),
                _query("limit", {"type": "integer", "minimum": 1, "maximum": 500}, "default 50"),
            ],
            "responses": {"200": _json(_results(JOB_SUMMARY), "job summaries"), **_errors(400, 401, 404)},
        },
    },
    "/api/traces/{trace_id}/attributions/": {
        "get": {
            "summary": "The trace's attributions, newest first, as JSON or CSV",
            "operationId": "listAttributions",
            "parameters": [
                _path_id("trace_id"),
                _query("format", {"type": "string", "enum": ["json", "csv"]}, "default json"),
            ],
            "responses": {
                "200": {
                    "description": "the attributions (CSV: a download, one row each)",
                    "content": {
                        "application/json": {"schema": _results(ATTRIBUTION)},
                        "text/csv": {"schema": {"type": "string"}},
                    },
                },
                **_errors(400, 401, 404),
            },
        },
    },
    "/api/traces/{trace_id}/attributions/run/": {
        "post": {
            "summary": "Attribute this trace: credit every message or agent by removal; reviewers",
            "operationId": "requestAttribution",
            "parameters": [_path_id("trace_id")],
            "requestBody": _body(ATTRIBUTION_REQUEST),
            "responses": {
                "202": _json(JOB, "the job, queued (`results` once done)"),
                **_errors(400, 401, 403, 404, 413),
            },
        },
    },
    "/api/traces/{trace_id}/attributions/estimate/": {
        "post": {
            "summary": "The estimated LLM cost of an attribution job (`confirmed` ignored)",
            "operationId": "estimateAttribution",
            "parameters": [_path_id("trace_id")],
            "requestBody": _body(ATTRIBUTION_REQUEST),
            "responses": {
                "200": _json(
                    {
                        **COST,
                        "properties": {
                            **COST["properties"],
                            "kind": {"const": "attribution"},
                            "method": {"type": "string", "enum": METHODS},
                            "players": {"type": "integer"},
                            "rollouts": {"type": "integer"},
                        },
                    },
                    "requests, tokens, samples and rollouts",
                ),
                **_errors(400, 401, 403, 404, 413),
            },
        },
    },
    "/api/jobs/{job_id}/": {
        "get": {
            "summary": "One job: progress and, once done, its result",
            "operationId": "getJob",
            "parameters": [_path_id("job_id")],
            "responses": {"200": _json(JOB, "the job"), **_errors(401, 404)},
        },
    },
    "/api/jobs/{job_id}/cancel/": {
        "post": {
            "summary": "Cancel a queued or running job (others stay as they are); reviewers",
            "operationId": "cancelJob",
            "parameters": [_path_id("job_id")],
            "responses": {"200": _json(JOB, "the job after the cancel"), **_errors(401, 403, 404)},
        },
    },
    "/api/jobs/{job_id}/retry/": {
        "post": {
            "summary": "Re-queue a failed or cancelled job, keeping its samples (others stay); reviewers",
            "operationId": "retryJob",
            "parameters": [_path_id("job_id")],
            "responses": {"200": _json(JOB, "the job after the retry"), **_errors(401, 403, 404)},
        },
    },
    "/api/runs/": {
        "get": {
            "summary": "The caller's training runs, newest first (at most 200)",
            "operationId": "listRuns",
            "responses": {"200": _json(_results(RUN), "runs"), **_errors(401)},
        },
        "post": {
            "summary": "Report an external training run (swarmscope/client.py); reviewers",
            "operationId": "createRun",
            "requestBody": _body(
                {
                    "type": "object",
                    "required": ["config"],
                    "additionalProperties": True,
                    "properties": {
                        "name": {"type": ["string", "null"]},
                        "config": {
                            **OBJECT,
                            "description": "the recipe's RunConfig; a bad field is named `config.<name>`",
                        },
                    },
                }
            ),
            "responses": {"201": _json(RUN, "the run, running"), **_errors(400, 401, 403, 413)},
        },
    },
    "/api/runs/{run_id}/": {
        "get": {
            "summary": "One run",
            "operationId": "getRun",
            "parameters": [_path_id("run_id")],
            "responses": {"200": _json(RUN, "the run"), **_errors(401, 404)},
        },
    },
    "/api/runs/{run_id}/snapshot/": {
        "get": {
            "summary": "The run's live-protocol snapshot (/ws/runs/<id>/)",
            "operationId": "getRunSnapshot",
            "parameters": [_path_id("run_id")],
            "responses": {"200": _json(RUN_SNAPSHOT, "the run and every iteration, with seq"), **_errors(401, 404)},
        },
    },
    "/api/runs/{run_id}/iterations/": {
        "post": {
            "summary": "Record one iteration of an active run, with its sample episodes (all or nothing)",
            "operationId": "recordRunIteration",
            "parameters": [_path_id("run_id")],
            "requestBody": _body(ITERATION_REQUEST),
            "responses": {
                "201": _json(
                    {
                        "type": "object",
                        "required": ["iteration", "seq", "episodes"],
                        "properties": {
                            "iteration": {"type": "integer"},
                            "seq": {"type": "integer"},
                            "episodes": {"type": "array", "items": {"type": "integer"}},
                        },
                    },
                    "stored: the iteration, the run's new seq, the episodes' trace ids",
                ),
                "409": _json(ERROR, "the app trains this run (`field`: run), or it is not active (`field`: status)"),
                **_errors(400, 401, 403, 404, 413),
            },
        },
    },
    "/api/runs/{run_id}/finish/": {
        "post": {
            "summary": "Close a run: finished (default), cancelled or failed, with its summary",
            "operationId": "finishRun",
            "parameters": [_path_id("run_id")],
            "requestBody": _body(
                {
                    "type": "object",
                    "additionalProperties": True,
                    "properties": {
                        "status": {"type": ["string", "null"], "enum": ["finished", "cancelled", "failed", None]},
                        "error": {"type": ["string", "null"]},
                        "summary": {"type": ["object", "null"]},
                    },
                },
                required=False,
            ),
            "responses": {
                "200": _json(RUN, "the run, closed"),
                "409": _json(
                    ERROR, "the app trains this run (`field`: run), or it is already closed (`field`: status)"
                ),
                **_errors(400, 401, 403, 404, 413),
            },
        },
    },
    "/api/runs/{run_id}/cancel/": {
        "post": {
            "summary": "Cancel a queued or running run",
            "operationId": "cancelRun",
            "parameters": [_path_id("run_id")],
            "responses": {
                "200": _json(RUN, "the run after the cancel"),
                "409": _json(ERROR, "not active: finished, failed or cancelled (`field`: status)"),
                **_errors(401, 403, 404),
            },
        },
    },
    "/api/runs/{run_id}/resume/": {
        "post": {
            "summary": "Re-queue a cancelled or failed run of the app from its last checkpoint",
            "operationId": "resumeRun",
            "parameters": [_path_id("run_id")],
            "responses": {
                "200": _json(RUN, "the run, queued"),
                "409": _json(ERROR, "not resumable: active, finished, or external (`field`: status)"),
                **_errors(401, 403, 404),
            },
        },
    },
}


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (a plain dict)."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Swarmscope REST API",
            "version": "1",
            "description": "Orchestration traces, OTLP ingestion, team review, counterfactual jobs and "
            "attributions, and training runs. Authenticate with "
            "`Authorization: Bearer <API token>` (page *API tokens*) or a browser session.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": PATHS,
    }


@require_GET
def openapi_document(request: HttpRequest) -> JsonResponse:
    return JsonResponse(document())
