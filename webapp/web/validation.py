"""The one way the web layer checks what a request sends before it reaches the database: integers
in query parameters (and the websocket's `?seq=`), text against the column it goes to, and the
shape of a JSON document (its depth). Every refusal is an `InputError` naming the field, which
the API answers with 400 `{"error", "field"}`.

- `parse_int` / `query_int`: ASCII digits only (`"²"`, `"٣"` and `"+1"` are refused, though
  `str.isdigit` or `int` take them), within bounds that default to a 64-bit signed column.
- `check_text` / `text_problem`: no NUL character, no lone surrogate (`swarmscope.inputs.text_refusal`),
  and no longer than the model field's `max_length` (read from the field, never repeated here).
- `json_problem`: a parsed document nested deeper than MAX_JSON_DEPTH, or holding text that cannot
  be stored, named by its top-level field; iterative, so any depth is safe to check.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from swarmscope.inputs import MAX_DB_INT, InputError, parse_int, text_refusal

__all__ = [
    "MAX_DB_INT",
    "InputError",
    "check_text",
    "json_problem",
    "max_length",
    "parse_int",
    "query_int",
    "text_problem",
]

#: The deepest JSON document a request may send (objects and arrays inside each other). Far above
#: any trace, OTLP export or job request; far below what recursive code (encoders, the database
#: drivers, redaction) survives.
MAX_JSON_DEPTH = 100


def query_int(
    params: Any, name: str, default: int | None = None, *, low: int = 0, high: int = MAX_DB_INT, clamp: bool = False
) -> int | None:
    """The query parameter `name` of `params` (a QueryDict or dict) by `parse_int`, or `default` when
    it is absent or empty."""
    value = params.get(name)
    if value is None or value == "":
        return default
    return parse_int(value, field=name, low=low, high=high, clamp=clamp)


def max_length(model: type[models.Model], name: str) -> int | None:
    """The `max_length` of the model's field `name` (None for a field without one, e.g. TextField)."""
    return model._meta.get_field(name).max_length


def text_problem(value: str, limit: int | None = None) -> str | None:
    """Why `value` cannot be stored in a column of `limit` characters (None: unbounded), else None."""
    refusal = text_refusal(value)
    if refusal is not None:
        return refusal
    if limit is not None and len(value) > limit:
        return f"must be at most {limit} characters, got {len(value)}"
    return None


def check_text(value: Any, field: str, column: tuple[type[models.Model], str] | None = None) -> str:
    """`value` if it is a string that the column (model, field name) can store; else InputError
    naming `field`. Without `column`, only `text_refusal` applies."""
    if not isinstance(value, str):
        raise InputError("must be a string", field)
    problem = text_problem(value, max_length(*column) if column else None)
    if problem is not None:
        raise InputError(problem, field)
    return value


def json_problem(doc: Any, max_depth: int = MAX_JSON_DEPTH, *, text: bool = True) -> tuple[str, str] | None:
    """(field, message) for a parsed JSON document nested deeper than `max_depth` or (with `text`)
    holding a key or string that cannot be stored (`text_refusal`), else None. `field` is the
    top-level key holding it, or "body" for the document itself. Iterative: any depth is safe."""
    stack: list[tuple[Any, int, str]] = [(doc, 1, "body")]
    while stack:
        value, depth, field = stack.pop()
        if isinstance(value, str):
            refusal = text_refusal(value) if text else None
            if refusal is not None:
                return field, refusal
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > max_depth:
            return "body", f"nested deeper than {max_depth} levels"
        if isinstance(value, dict):
            for key, item in value.items():
                refusal = text_refusal(key) if text and isinstance(key, str) else None
                if refusal is not None:
                    return field, f"a key {refusal}"
                stack.append((item, depth + 1, key if depth == 1 and isinstance(key, str) else field))
        else:
            stack.extend((item, depth + 1, field) for item in value)
    return None
