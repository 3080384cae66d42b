"""Swarmscope's native format: `Trace.to_dict()` as JSON, or one such trace per line (JSONL).

Lossless: `parse(trace.to_dict())` gives back an equal trace.
"""

from __future__ import annotations

from typing import Any

from swarmscope.model import Trace, trace_from_dict

FORMAT = "native"
MARKER = "swarmscope"


def _is_native(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == MARKER


def sniff(doc: Any) -> bool:
    return _is_native(doc) or (isinstance(doc, list) and bool(doc) and all(_is_native(d) for d in doc))


def parse(doc: Any, source: str) -> list[Trace]:
    docs = doc if isinstance(doc, list) else [doc]
    return [trace_from_dict(d) for d in docs]
