"""The one check of what arrives as text: whether a string can be stored (`text_refusal`: no NUL
character, no lone surrogate) and an integer written in ASCII digits (`parse_int`: `"²"`, `"٣"`
and `"+1"` are refused, though `str.isdigit` or `int` take them). Pure functions, used by the
trace validators (swarmscope.model, swarmscope.ingest) and by every layer of the app that reads
request text (webapp.web.validation builds on them; webapp.accounts uses them directly)."""

from __future__ import annotations

import re
from typing import Any

#: The largest value of a 64-bit signed column (ids, counts): the default bound of `parse_int`.
MAX_DB_INT = 2**63 - 1

#: ASCII decimal digits only: `\\d` and `str.isdigit` also match other scripts' digits and `²`.
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_SIGNED_DIGITS = re.compile(r"-?[0-9]+", re.ASCII)


class InputError(ValueError):
    """A request value that cannot be used (HTTP 400); `field` names the parameter or field."""

    def __init__(self, message: str, field: str):
        self.message, self.field = message, field
        super().__init__(f"{field}: {message}")


def parse_int(text: Any, *, field: str, low: int = 0, high: int = MAX_DB_INT, clamp: bool = False) -> int:
    """`text` (a string of ASCII digits) as an integer in [low, high]; InputError naming `field`
    otherwise. With `clamp`, a value out of bounds (a minus sign allowed) is brought to the nearest
    bound instead (a page size)."""
    if isinstance(text, str) and clamp and len(text) <= 1000 and _SIGNED_DIGITS.fullmatch(text):
        return min(max(int(text), low), high)
    if (
        not isinstance(text, str)
        or len(text) > len(str(high)) + 1
        or not _DIGITS.fullmatch(text)
        or not low <= int(text) <= high
    ):
        raise InputError(f"must be an integer from {low} to {high} (ASCII digits)", field)
    return int(text)


def id_or_none(text: Any) -> int | None:
    """`text` as a row id (ASCII digits, 1 to MAX_DB_INT), else None: for a filter or a stored
    reference that drops what is not an id rather than refusing the request."""
    try:
        return parse_int(text, field="id", low=1)
    except InputError:
        return None


#: A UTF-16 surrogate code point: in a Python string it is always a lone one (JSON's escaped pairs
#: decode to one character), which UTF-8, and so every database, cannot encode.
_SURROGATE = re.compile("[\ud800-\udfff]")


def text_refusal(value: str) -> str | None:
    """Why the text `value` cannot be stored, else None: a NUL character (PostgreSQL's text and
    jsonb cannot hold one; refused on every database alike) or a lone surrogate (not Unicode text:
    no database can encode it). The one check of stored text, used by every validator."""
    if "\x00" in value:
        return "must not contain a NUL character (U+0000)"
    if _SURROGATE.search(value):
        return "must not contain a lone surrogate (U+D800 to U+DFFF): it is not Unicode text"
    return None


def json_may_refuse(json_text: str) -> bool:
    """Whether `refused_text_in` may refuse the value whose JSON is `json_text` (`json.dumps(value,
    ensure_ascii=False)`): JSON writes a NUL as the escape `\\u0000` and leaves a lone surrogate as
    it is. False means no string inside the value (keys included) is refused; True: walk it."""
    return "\\u0000" in json_text or _SURROGATE.search(json_text) is not None


def refused_text_in(value: Any) -> str | None:
    """`text_refusal` of the first string inside `value` (a string, or dicts and lists of them,
    keys included) that cannot be stored, else None. Iterative: any depth."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            refusal = text_refusal(item)
            if refusal is not None:
                return refusal
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None
