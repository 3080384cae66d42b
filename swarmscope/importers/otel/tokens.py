"""Token counts a span reports, checked before the mapping reads them (docs/otel-mapping.md "Tokens").

Every attribute the mapping reads a count from (usage, cache and reasoning details, Monocle's
`metadata` events, the usage of a response body in `output.value`, a Swarmscope export's event
tokens) must hold a token count: an integer, an integral float or the decimal text of one, from 0
to `model.MAX_TOKENS` (the event's column); and where no total is reported, input + output must fit
too (an event's tokens are then their sum). A decoder calls `token_refusal` (or `check_tokens`) on
each span it decodes, so a bad count is refused naming its span and attribute, and nothing is stored.
"""

from __future__ import annotations

import math
from typing import Any

from swarmscope.model import MAX_TOKENS, TOKENS_RULE, is_token_count

from . import exported, genai, keys
from .semconv import INPUT_TOKEN_KEYS, OUTPUT_TOKEN_KEYS, TOTAL_TOKEN_KEYS, usage
from .span import Span

#: The span attributes read as token counts.
SPAN_TOKEN_KEYS = tuple(
    dict.fromkeys(
        (
            *INPUT_TOKEN_KEYS,
            *OUTPUT_TOKEN_KEYS,
            *TOTAL_TOKEN_KEYS,
            *(key for candidates in genai.TOKEN_DETAIL_KEYS.values() for key in candidates),
            f"{exported.EVENT}.tokens",
            f"{exported.RESULT}.tokens",
        )
    )
)
#: The attributes of a Monocle `metadata` span event read as token counts.
EVENT_TOKEN_KEYS = (*INPUT_TOKEN_KEYS, *OUTPUT_TOKEN_KEYS, *TOTAL_TOKEN_KEYS)
#: The same as sets: one C-level pass over a span's attribute names tells whether it holds any (most
#: spans hold none), instead of a lookup per key.
_SPAN_TOKEN_KEY_SET, _EVENT_TOKEN_KEY_SET = frozenset(SPAN_TOKEN_KEYS), frozenset(EVENT_TOKEN_KEYS)


def token_count(value: Any) -> int | None:
    """`value` as a token count (an int, an integral float or its decimal text, in 0..MAX_TOKENS),
    else None."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    elif isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            return None
    return value if is_token_count(value) else None


def token_refusal(span: Span) -> str | None:
    """Why a token count that `span` reports is none (naming the attribute and its value), else None."""
    attributes = span.attributes
    if not _SPAN_TOKEN_KEY_SET.isdisjoint(attributes):
        for key in SPAN_TOKEN_KEYS:  # in this order, so the refusal names the same key every time
            value = attributes.get(key)
            if value is not None and token_count(value) is None:
                return f"{key} {TOKENS_RULE}, got {value!r:.100}"
    reports = not _EVENT_TOKEN_KEY_SET.isdisjoint(attributes)
    for event in span.events:
        if event.name == "metadata":
            for key in EVENT_TOKEN_KEYS:
                value = event.attributes.get(key)
                reports = reports or value is not None
                if value is not None and token_count(value) is None:
                    return f"{key} of its metadata event {TOKENS_RULE}, got {value!r:.100}"
    output = span.attributes.get(keys.OUTPUT_VALUE)
    if not reports and not (isinstance(output, str) and '"usage"' in output):
        return None  # reports no usage (the common span): nothing more to check
    counts = usage(span)  # the attributes' counts are checked: a bad one here is a response body's usage
    for name, count in zip(("input", "output", "total"), counts, strict=True):
        if count is not None and not is_token_count(count):
            return f"the {name} tokens of the usage in output.value {TOKENS_RULE}, got {count!r:.100}"
    n_in, n_out, n_total = counts
    if n_total is None and (n_in or 0) + (n_out or 0) > MAX_TOKENS:
        return f"input + output tokens ({n_in} + {n_out}) exceed {MAX_TOKENS}, and no total is reported"
    return None


def check_tokens(span: Span) -> Span:
    """`span`, when `token_refusal` finds nothing; raises ValueError naming the span (id, name) and
    the attribute otherwise."""
    refusal = token_refusal(span)
    if refusal is not None:
        raise ValueError(f"span {span.span_id or '(no id)'} ({span.name!r}): {refusal}")
    return span
