"""The OpenAPI 3 document of the REST API (traces, OTLP/HTTP, review), served at /api/openapi.json.

Not yet described here: the experiments API (counterfactual jobs, attributions) and the runs API.

Written by hand next to the views it describes; tests/fuzz/test_schemathesis.py runs schemathesis
against it (every documented operation, checking status codes and that nothing answers 500), so
a view that drifts from this document fails there.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

ID = {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
ERROR = {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}},
         "additionalProperties": True}
OBJECT = {"type": "object", "additionalProperties": True}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {400: "bad input: `field` (and for events `index`) names what", 401: "no or invalid credentials",
            403: "the caller's role does not allow this, or a CSRF failure", 404: "unknown, or another project's",
            405: "method not allowed", 409: "contradicts stored events; nothing of the batch is stored",
            413: "request body over SWARMSCOPE_MAX_UPLOAD_BYTES",
            429: "over the token's ingestion rate; the `Retry-After` header says when to try again"}
    return {str(c): _json(ERROR, text[c]) for c in codes}


def _path_id(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": ID}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _body(schema: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


EVENT = {"type": "object", "required": ["id", "t", "type", "agent"], "additionalProperties": True,
         "properties": {"id": {"type": "string"}, "t": {"type": "number"}, "t_end": {"type": ["number", "null"]},
                        "type": {"type": "string"}, "agent": {"type": "string"},
                        "content": {"type": ["string", "null"]}}}
BATCH = {"oneOf": [{"type": "array", "items": EVENT},
                   {"type": "object", "additionalProperties": True,
                    "properties": {"events": {"type": "array", "items": EVENT}, "edges": {"type": "array"},
                                   "agents": {"type": "array"}, "labels": {"type": "array"}}}]}
TARGET_KINDS = ["trace", "event", "attribution", "run"]
COMMENT = {"type": "object", "required": ["id", "target", "author", "body_html", "deleted"],
           "properties": {"id": {"type": "integer"}, "target": OBJECT, "parent": {"type": ["integer", "null"]},
                          "author": {"type": "string"}, "body": {"type": ["string", "null"]},
                          "body_html": {"type": "string"}, "mentions": {"type": "array", "items": {"type": "string"}},
                          "deleted": {"type": "boolean"}, "link": {"type": "string"}}}
VOTES = {"type": "object", "required": ["attribution", "agree", "disagree", "votes"],
         "properties": {"attribution": {"type": "integer"}, "agree": {"type": "integer"},
                        "disagree": {"type": "integer"}, "votes": {"type": "array"}}}
STATUS = {"type": "object", "required": ["trace", "status"],
          "properties": {"trace": {"type": "integer"},
                         "status": {"type": "string", "enum": ["open", "in_review", "settled"]}}}
FILES = {"type": "object", "required": ["files"],
         "properties": {"files": {"type": "array", "items": {
             "type": "object", "required": ["file", "traces", "error"],
             "properties": {"file": {"type": "string"}, "traces": {"type": "array"},
                            "skipped": {"type": ["string", "null"]}, "error": {"type": ["string", "null"]},
                            "report": {"type": "array", "items": {"type": "string"}}}}}}}
RESULTS = {"type": "object", "required": ["results"], "properties": {"results": {"type": "array"}},
           "additionalProperties": True}

PATHS: dict[str, Any] = {
    "/api/traces/": {
        "get": {"summary": "List the traces the caller may read", "operationId": "listTraces",
                "parameters": [_query("page", {"type": "integer", "minimum": 1}, "page number"),
                               _query("page_size", {"type": "integer", "minimum": 1, "maximum": 200}, "1..200"),
                               _query("q", {"type": "string"}, "search in name, system, source id")],
                "responses": {"200": _json(RESULTS, "a page of trace summaries"), **_errors(400, 401)}},
        "post": {"summary": "Create a trace, optionally with a first batch", "operationId": "createTrace",
                 "requestBody": _body({"type": "object", "additionalProperties": True,
                                       "properties": {"name": {"type": "string"}, "system": {"type": "string"},
                                                      "source_id": {"type": "string"},
                                                      "attributes": OBJECT, "events": {"type": "array", "items": EVENT}}}),
                 "responses": {"201": _json(OBJECT, "created"), "200": _json(OBJECT, "already stored, unchanged"),
                               **_errors(400, 401, 403, 409, 413, 429)}},
    },
    "/api/traces/{trace_id}/": {
        "get": {"summary": "One trace's summary", "operationId": "getTrace", "parameters": [_path_id("trace_id")],
                "responses": {"200": _json(OBJECT, "the trace"), **_errors(401, 404)}},
    },
    "/api/traces/{trace_id}/events/": {
        "post": {"summary": "Append a batch of events (all or nothing)", "operationId": "appendEvents",
                 "parameters": [_path_id("trace_id")], "requestBody": _body(BATCH),
                 "responses": {"200": _json(OBJECT, "stored: events added and updated, new seq"),
                               **_errors(400, 401, 404, 409, 413, 429)}},
    },
    "/api/traces/{trace_id}/snapshot/": {
        "get": {"summary": "The trace's live-protocol snapshot", "operationId": "getSnapshot",
                "parameters": [_path_id("trace_id")],
                "responses": {"200": _json(OBJECT, "snapshot with seq"), **_errors(401, 404)}},
    },
    "/api/traces/{trace_id}/export/": {
        "get": {"summary": "Export a trace as native or survey-schema JSON", "operationId": "exportTrace",
                "parameters": [_path_id("trace_id"),
                               _query("format", {"type": "string", "enum": ["native", "survey"]}, "default native")],
                "responses": {"200": _json(OBJECT, "the document (a download)"), **_errors(400, 401, 404)}},
    },
    "/api/traces/export.jsonl": {
        "get": {"summary": "Many traces as native JSONL", "operationId": "exportTracesJsonl",
                "parameters": [_query("ids", {"type": "string", "pattern": "^[0-9]+(,[0-9]+)*$"},
                                      "comma-separated trace ids; default all readable")],
                "responses": {"200": {"description": "one trace per line",
                                      "content": {"application/x-ndjson": {"schema": {"type": "string"}}}},
                              **_errors(400, 401)}},
    },
    "/api/traces/upload/": {
        "post": {"summary": "Import a trace file in any supported format (multipart `file` fields also accepted)",
                 "operationId": "uploadTraceFile",
                 "parameters": [_query("filename", {"type": "string"}, "the file's name, for the report")],
                 "requestBody": {"required": True, "content": {"application/octet-stream": {
                     "schema": {"type": "string", "format": "binary"}}}},
                 "responses": {"200": _json(FILES, "per-file report: traces imported or skipped"),
                               "400": _json({"anyOf": [FILES, ERROR]},
                                            "per-file report: at least one file failed, naming line and column or "
                                            "record and field, and added nothing; or a bad parameter"),
                               **_errors(401, 403, 413, 429)}},
    },
    "/v1/traces": {
        "post": {"summary": "OTLP/HTTP trace export (JSON here; protobuf also accepted)", "operationId": "otlpTraces",
                 "requestBody": _body({"type": "object", "additionalProperties": True,
                                       "properties": {"resourceSpans": {"type": "array"}}}),
                 "responses": {"200": _json(OBJECT, "accepted"), **_errors(400, 401, 403, 413, 429)}},
    },
    "/api/review/comments/": {
        "get": {"summary": "Comments on a trace (and everything in it) or on one target", "operationId": "listComments",
                "parameters": [_query("trace", ID, "trace id (all comments of the trace, or the event's trace)"),
                               _query("kind", {"type": "string", "enum": TARGET_KINDS}, "target kind"),
                               _query("id", {"type": "string"}, "target id (an event's id for kind=event)")],
                "responses": {"200": _json({**RESULTS, "properties": {"results": {"type": "array", "items": COMMENT},
                                                                      "user": {"type": "string"},
                                                                      "can_review": {"type": "boolean"}}},
                                           "oldest first; can_review: the caller may comment"),
                              **_errors(400, 401, 404)}},
        "post": {"summary": "Comment (Markdown, sanitised) on a trace, event, attribution or run; reviewers",
                 "operationId": "createComment",
                 "requestBody": _body({"type": "object", "required": ["kind", "id", "body"],
                                       "properties": {"kind": {"type": "string", "enum": TARGET_KINDS},
                                                      "id": {"type": ["string", "integer"]}, "trace": ID,
                                                      "body": {"type": "string"}, "parent": ID}}),
                 "responses": {"201": _json(COMMENT, "the comment"), **_errors(400, 401, 403, 404)}},
    },
    "/api/review/comments/{comment_id}/": {
        "get": {"summary": "One comment", "operationId": "getComment", "parameters": [_path_id("comment_id")],
                "responses": {"200": _json(COMMENT, "the comment"), **_errors(401, 404)}},
        "patch": {"summary": "Edit one's own comment", "operationId": "editComment",
                  "parameters": [_path_id("comment_id")],
                  "requestBody": _body({"type": "object", "required": ["body"], "properties": {"body": {"type": "string"}}}),
                  "responses": {"200": _json(COMMENT, "edited"), **_errors(400, 401, 403, 404)}},
        "delete": {"summary": "Delete one's own comment (admins: any)", "operationId": "deleteComment",
                   "parameters": [_path_id("comment_id")],
                   "responses": {"200": _json(COMMENT, "deleted (kept blank in its thread)"), **_errors(401, 403, 404)}},
    },
    "/api/review/attributions/{attribution_id}/votes/": {
        "get": {"summary": "Votes on an attribution", "operationId": "getVotes", "parameters": [_path_id("attribution_id")],
                "responses": {"200": _json(VOTES, "tally and votes"), **_errors(401, 404)}},
        "put": {"summary": "Agree or disagree, with a reason (one vote per reviewer, changeable)",
                "operationId": "putVote", "parameters": [_path_id("attribution_id")],
                "requestBody": _body({"type": "object", "required": ["value"],
                                      "properties": {"value": {"type": "string", "enum": ["agree", "disagree"]},
                                                     "reason": {"type": "string"}}}),
                "responses": {"200": _json(VOTES, "tally after the vote"), **_errors(400, 401, 403, 404)}},
    },
    "/api/review/traces/{trace_id}/status/": {
        "get": {"summary": "Review status of a trace", "operationId": "getReviewStatus",
                "parameters": [_path_id("trace_id")],
                "responses": {"200": _json(STATUS, "status"), **_errors(401, 404)}},
        "put": {"summary": "Set the review status", "operationId": "putReviewStatus", "parameters": [_path_id("trace_id")],
                "requestBody": _body({"type": "object", "required": ["status"],
                                      "properties": {"status": {"type": "string",
                                                                "enum": ["open", "in_review", "settled"]}}}),
                "responses": {"200": _json(STATUS, "status"), **_errors(400, 401, 403, 404)}},
    },
    "/api/review/traces/{trace_id}/mistake-labels/": {
        "get": {"summary": "Every reviewer's mistake agent and step for a trace", "operationId": "getMistakeLabels",
                "parameters": [_path_id("trace_id")],
                "responses": {"200": _json(RESULTS, "labels by reviewer"), **_errors(401, 404)}},
        "put": {"summary": "Set the caller's mistake agent and step (Who&When)", "operationId": "putMistakeLabel",
                "parameters": [_path_id("trace_id")],
                "requestBody": _body({"type": "object", "required": ["agent", "event_id"],
                                      "properties": {"agent": {"type": "string"}, "event_id": {"type": "string"},
                                                     "reason": {"type": "string"}}}),
                "responses": {"200": _json(RESULTS, "labels by reviewer"), **_errors(400, 401, 403, 404)}},
    },
    "/api/review/projects/{project_id}/activity/": {
        "get": {"summary": "The project's activity feed", "operationId": "getActivity",
                "parameters": [_path_id("project_id"), _query("before", ID, "older than this activity id"),
                               _query("after", ID, "newer than this id, oldest first"),
                               _query("limit", {"type": "integer", "minimum": 1, "maximum": 200}, "default 50")],
                "responses": {"200": _json(RESULTS, "activities"), **_errors(400, 401, 404)}},
    },
    "/api/review/projects/{project_id}/agreement/": {
        "get": {"summary": "Cohen's kappa between reviewer pairs on mistake labels", "operationId": "getAgreement",
                "parameters": [_path_id("project_id")],
                "responses": {"200": _json({"type": "object", "required": ["pairs", "reviewers"],
                                            "properties": {"pairs": {"type": "array"},
                                                           "reviewers": {"type": "array"}}}, "pairs"),
                              **_errors(401, 404)}},
    },
}


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (a plain dict)."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "Swarmscope REST API", "version": "1",
                 "description": "Orchestration traces, OTLP ingestion and team review. Authenticate with "
                                "`Authorization: Bearer <API token>` (page *API tokens*) or a browser session."},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": PATHS,
    }


@require_GET
def openapi_document(request: HttpRequest) -> JsonResponse:
    return JsonResponse(document())
