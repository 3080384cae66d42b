"""OTLP/JSON logs files: the logs signal's `ExportLogsServiceRequest` (or one per line, as a
collector's file exporter writes it), whose GenAI content events (`gen_ai.user.message`,
`gen_ai.choice`, `gen_ai.client.inference.operation.details`, ...) belong to spans.

A logs file is no trace by itself: its records join the OTLP spans of the same trace id given to
the same `read_files` call (a folder of spans and logs files, or several files, in any order), as
/v1/logs joins them to the spans of /v1/traces: `JOINS` names the format whose chunks they merge
into, and `otlp.build` adds each record to its span as a span event (`otlp.attach_logs`). Log
records of a trace id with no spans in the import make no trace: `otlp.incomplete` says why, and
the file is reported skipped with those trace ids. Records without a trace id join nothing.

Decoding and its errors (the record and field of a malformed id or time) are `otlp.split_logs`'s.
"""

from __future__ import annotations

from typing import Any

from . import otlp

FORMAT = "otlp_logs"
#: The format whose traces these records join: chunks of one trace id merge with its spans.
JOINS = otlp


def sniff(doc: Any) -> bool:
    return otlp.sniff_logs(doc)


def split(doc: Any) -> dict[str | None, list[otlp.LogRecord]]:
    """Trace id (hex; None for records without one) -> its log records, in file order. Raises
    ValueError naming the record (`resourceLogs[i].scopeLogs[j].logRecords[k]`) and field."""
    chunks: dict[str | None, list[otlp.LogRecord]] = {}
    for record in otlp.split_logs(doc):
        chunks.setdefault(record.trace_id, []).append(record)
    return chunks
