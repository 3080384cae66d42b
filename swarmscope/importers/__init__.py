"""Trace importers, chosen by content (never by file name).

Each format module exposes:

- `FORMAT`: its name (stored as the trace's `source_format`);
- `sniff(doc) -> bool`: whether a decoded JSON document (dict or list; a JSONL file is a list of
  its line documents) is in this format;
- either `parse(doc, source) -> list[Trace]` for formats whose records are whole traces, or
  `split(doc) -> dict[trace_id, list[record]]` plus `build(trace_id, records, sources) -> Trace`
  (and `to_spans(trace_id, records)`, the records as `otel.Span`) for span formats, whose traces
  can arrive in chunks spread over several files: all chunks of one trace id given to one
  `read_files` call are merged into one trace. A split format may also expose
  `group(chunks: dict[key, list[record]]) -> dict[key, group_key]`, called once with all of its
  chunks after every file is split: chunks mapped to one group key merge into one trace built as
  `build(group_key, records, sources)` (Codex child rollouts join their root thread this way,
  which no single file knows). A split format may also expose `incomplete(trace_id, records) ->
  str | None`: why those records make no trace yet (then no `build`; the files that gave them are
  reported skipped with the reason and the trace ids).
- a module whose records belong to another format's traces (`otlp_logs`: log records join the
  OTLP spans of their trace id) names that format's module as `JOINS`: its `split` chunks merge
  into that module's chunks of the same trace id.

`read_files(reward_score=NAME)` makes the trace's score of that name, else its score named
`reward`, the trace's reward (`scores.select_reward`); other evaluation scores stay labels.

`read_files` is the single entry point; it never raises on bad input, it reports it per file.
It reads a gzip-compressed file (found by its magic bytes, not its name) decompressed.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from swarmscope.model import Trace, TraceValidationError, validate_trace

from . import (
    claude_code,
    codex,
    jaeger,
    langfuse,
    langsmith,
    mast,
    native,
    otel_sdk,
    otlp,
    otlp_logs,
    survey,
    whowhen,
)
from .scores import select_reward

#: Order matters: the first module whose `sniff` accepts a document reads it. (LangSmith runs carry
#: `trace_id` and an `events` list, which the survey sniff would take: runs are tried first.)
FORMATS = (native, langfuse, langsmith, survey, whowhen, mast, otlp, otlp_logs, jaeger, otel_sdk, claude_code, codex)


class TraceFormatError(ValueError):
    """A file could not be read as a trace: names the file and, for JSON, the line and column."""

    def __init__(self, source: str, message: str, line: int | None = None, column: int | None = None):
        self.source, self.message, self.line, self.column = source, message, line, column
        where = f" at line {line}, column {column}" if line is not None else ""
        self.detail = f"{message}{where}"
        super().__init__(f"{source}: {self.detail}")


@dataclass
class SourceFile:
    """A named blob of bytes to import (a file on disk, an upload, a request body)."""

    name: str
    data: bytes


@dataclass
class FileReport:
    """What became of one file: the identity keys of its traces, or why it was skipped/failed.
    `skipped` beside trace keys: what of the file made no trace (log records of trace ids whose
    spans were not in the import)."""

    name: str
    format: str | None = None
    trace_keys: list[str] = field(default_factory=list)
    skipped: str | None = None
    error: str | None = None


@dataclass
class ImportResult:
    """`traces` are complete, validated traces; `files` says per input file what happened."""

    traces: list[Trace]
    files: list[FileReport]

    @property
    def failed(self) -> list[FileReport]:
        return [f for f in self.files if f.error]


NOT_A_TRACE = "not a trace"

#: The first two bytes of a gzip member (RFC 1952, section 2.3.1).
GZIP_MAGIC = b"\x1f\x8b"
#: The most bytes a gzip-compressed file may decompress to, by default (`read_files`; the web app
#: passes its upload limit): a small file can expand a thousandfold.
MAX_DECOMPRESSED_BYTES = 200 * 1024 * 1024


#: Compressed bytes fed to the decompressor at a time: the finest grain of the ratio check.
GZIP_INPUT_CHUNK = 16 * 1024
#: Decompressed bytes any gzip file may reach before its expansion ratio is checked.
GZIP_RATIO_FLOOR = 1024 * 1024


@dataclass
class DecompressionBudget:
    """What the files of one import (one request) may expand to: `total` bytes over every file
    together (gzip files decompressed, plain files as they are), and `ratio`, the most a gzip
    file's decompressed bytes may be of the compressed bytes read so far (past GZIP_RATIO_FLOOR).
    `used`: bytes taken so far. `total_name` and `ratio_name` (a setting, say) are named in refusals."""

    total: int
    ratio: int
    total_name: str = ""
    ratio_name: str = ""
    used: int = 0


def decompressed(
    source: SourceFile, limit: int = MAX_DECOMPRESSED_BYTES, budget: DecompressionBudget | None = None
) -> SourceFile:
    """`source` itself, or where it is gzip-compressed (GZIP_MAGIC first) its decompressed bytes
    (every member, as `gzip -d` reads them) under the same name. Decompressed as a stream,
    GZIP_INPUT_CHUNK bytes at a time, never past the smallest bound: `limit` bytes for the file,
    what is left of `budget.total` (which it then takes), `budget.ratio` times the compressed
    bytes read. Raises TraceFormatError, naming the limit, for data that does not decompress, is
    cut short, or would pass a bound (nothing past it is held)."""
    if not source.data.startswith(GZIP_MAGIC):
        if budget is not None:
            _take(source, budget, len(source.data))
        return source
    data = memoryview(source.data)
    parts: list[bytes] = []
    size = read = 0
    pending: bytes | memoryview = b""
    member = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        while True:
            if not pending:
                if read >= len(data):
                    raise TraceFormatError(source.name, "gzip-compressed, and cut short")
                pending = data[read : read + GZIP_INPUT_CHUNK]
                read += len(pending)
            bound, why = _bound(limit, budget, read)
            part = member.decompress(pending, bound + 1 - size)
            size += len(part)
            if size > bound:
                raise TraceFormatError(source.name, why)
            parts.append(part)
            if member.eof:
                pending = member.unused_data
                if not pending and read >= len(data):
                    break
                member = zlib.decompressobj(16 + zlib.MAX_WBITS)
            else:
                pending = member.unconsumed_tail
    except zlib.error as exc:
        raise TraceFormatError(source.name, f"gzip-compressed, and does not decompress: {exc}") from None
    if budget is not None:
        budget.used += size
    return SourceFile(name=source.name, data=b"".join(parts))


def _named(text: str, name: str) -> str:
    return f"{text}, {name}" if name else text


def _bound(limit: int, budget: DecompressionBudget | None, read: int) -> tuple[int, str]:
    """The fewest bytes a gzip file `read` compressed bytes into may decompress to, and why."""
    bounds = [(limit, f"gzip-compressed, and over {limit} bytes decompressed (the most a file may hold)")]
    if budget is not None:
        bounds.append(
            (
                budget.total - budget.used,
                "gzip-compressed, and with the files before it over "
                + _named(f"{budget.total} bytes (the most the files of one import may hold together", budget.total_name)
                + ")",
            )
        )
        bounds.append(
            (
                max(budget.ratio * read, GZIP_RATIO_FLOOR),
                f"gzip-compressed, and expands more than {budget.ratio}-fold "
                + _named("(the most a compressed file may", budget.ratio_name)
                + "): a decompression bomb?",
            )
        )
    return min(bounds, key=lambda b: b[0])


def _take(source: SourceFile, budget: DecompressionBudget, size: int) -> None:
    """Count a plain file's `size` bytes against `budget`, or refuse it past the total."""
    if budget.used + size > budget.total:
        raise TraceFormatError(
            source.name,
            "with the files before it over "
            + _named(f"{budget.total} bytes (the most the files of one import may hold together", budget.total_name)
            + ")",
        )
    budget.used += size


def _loader(source: SourceFile, strict: bool):
    """`json.loads` where NaN, Infinity and overflowing numbers (which no database JSON column
    stores) become None, or, when `strict`, raise ValueError."""

    def non_finite(text: str):
        if strict:
            raise ValueError(f"number {text} is not finite")
        return None

    def number(text: str):
        value = float(text)
        return value if math.isfinite(value) else non_finite(text)

    return lambda text: json.loads(text, parse_constant=non_finite, parse_float=number)


def decode(source: SourceFile, *, strict: bool = False) -> Any | None:
    """Decode JSON or JSONL (NDJSON). Returns None for content that is not JSON at all (a README).
    A document that does not parse is read as JSON Lines when its first non-blank line is a JSON
    value by itself.

    Non-finite numbers become None, or are refused when `strict` (API bodies). Raises
    TraceFormatError naming the line and column where parsing stopped, or why it stopped (gzip-
    compressed data: `decompressed` reads it).
    """
    if source.data.startswith(GZIP_MAGIC):
        raise TraceFormatError(source.name, "a gzip-compressed file: decompress it first")
    try:
        text = source.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(source.name, f"not UTF-8 text (byte {exc.start})") from None
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "[{":
        return None
    loads = _loader(source, strict)
    try:
        try:
            return loads(text)
        except json.JSONDecodeError as whole_error:
            failed = whole_error
        # JSON Lines only when the first non-blank line is a whole JSON value by itself; otherwise
        # (a pretty-printed document cut short) the document's own error is the one to report.
        # Lines end at "\n" only: JSON strings may hold U+2028 or U+0085, which `splitlines` splits at.
        docs = []
        for number, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                try:
                    docs.append(loads(line))
                except json.JSONDecodeError as exc:
                    if not docs:
                        raise TraceFormatError(
                            source.name, f"invalid JSON: {_reason(failed)}", failed.lineno, failed.colno
                        ) from None
                    raise TraceFormatError(
                        source.name, f"invalid JSON Lines record: {_reason(exc)}", number, exc.colno
                    ) from None
        return docs
    except RecursionError:
        raise TraceFormatError(source.name, "JSON nested too deeply") from None
    except ValueError as exc:
        if isinstance(exc, TraceFormatError):
            raise
        raise TraceFormatError(source.name, str(exc)) from None


def _reason(error: json.JSONDecodeError) -> str:
    """The decoder's message without a trailing "at" ("Unterminated string starting at"): the
    line and column follow it in TraceFormatError."""
    return error.msg.removesuffix(" at")


_JSON_KINDS = {dict: "objects", list: "lists", str: "strings", int: "numbers", float: "numbers", bool: "booleans"}


def _why_not_a_trace(source: SourceFile, doc: Any | None) -> str:
    """Why `source` (decoded as `doc`, None for text that is not JSON) is skipped: what it holds
    and the formats that were tried, in one line ("not a trace: a JSON object with keys a, b; ...")."""
    text = source.data.decode("utf-8-sig").strip()
    if doc is None:
        shape = f"text, not JSON (it starts {_quoted(text[:200].splitlines()[0], 40)})" if text else "an empty file"
    elif isinstance(doc, dict):
        shape = f"a JSON object {_keys(doc)}" if doc else "an empty JSON object"
    elif not doc:
        shape = "an empty JSON list"
    else:
        whole = "a JSON Lines file of {} records" if text.startswith("{") else "a JSON list of {} items"
        kinds = dict.fromkeys(_JSON_KINDS.get(type(item), "nulls") for item in doc)
        items = f"objects, the first {_keys(doc[0])}" if set(kinds) == {"objects"} else ", ".join(kinds)
        shape = f"{whole.format(len(doc))}: {items}"
    return f"{NOT_A_TRACE}: {shape}; no importer reads it (formats: {', '.join(m.FORMAT for m in FORMATS)})"


def _keys(record: dict[str, Any], most: int = 6) -> str:
    """The keys part of a skip reason ("with keys a, b and 3 more"), each key cut to 40 characters."""
    if not record:
        return "with no keys"
    names = ", ".join(_quoted(key, 40)[1:-1] for key in list(record)[:most])
    return f"with keys {names}" + (f" and {len(record) - most} more" if len(record) > most else "")


def _quoted(text: str, most: int) -> str:
    """`text` cut to `most` characters, in double quotes with control characters escaped."""
    return json.dumps(text[:most] + ("…" if len(text) > most else ""), ensure_ascii=False)


def detect(doc: Any):
    """The format module that reads `doc`, or None."""
    return next((module for module in FORMATS if module.sniff(doc)), None)


Chunks = dict[tuple[Any, Any], tuple[list[Any], list[str], list[FileReport]]]


def _grouped(chunks: Chunks) -> Chunks:
    """`chunks` with the keys of each module that has a `group` hook mapped to its group keys:
    records, file names and reports of one group merged (in key order; names and reports once)."""
    mapping: dict[Any, dict[Any, Any]] = {}
    for module in dict.fromkeys(module for module, _ in chunks):
        if hasattr(module, "group"):
            mapping[module] = module.group({key: c[0] for (m, key), c in chunks.items() if m is module})
    if not mapping:
        return chunks
    merged: Chunks = {}
    for (module, key), (records, names, owners) in chunks.items():
        into = merged.setdefault((module, mapping.get(module, {}).get(key, key)), ([], [], []))
        into[0].extend(records)
        into[1].extend(name for name in names if name not in into[1])
        into[2].extend(owner for owner in owners if all(owner is not known for known in into[2]))
    return merged


def read_files(
    sources: Iterable[SourceFile],
    *,
    max_decompressed: int = MAX_DECOMPRESSED_BYTES,
    budget: DecompressionBudget | None = None,
    check: Callable[[SourceFile], None] | None = None,
    reward_score: str | None = None,
) -> ImportResult:
    """Read many files, one at a time (`sources` may be a generator: a file's bytes need not be
    held before its turn); chunks of one span-format trace id across files merge into one trace (an
    OTLP logs file's records join the OTLP spans of their trace id). A gzip-compressed file is read
    decompressed, up to `max_decompressed` bytes and within `budget`, shared by all the files
    (`decompressed`); `check` may refuse a file's bytes (raising TraceFormatError) before they
    are parsed. Each trace's evaluation score
    named `reward_score`, else its score named `reward`, is its reward (`scores.select_reward`).

    A file that fails contributes nothing; the other chunks of its trace still form that trace.
    """
    reports: list[FileReport] = []
    traces: list[Trace] = []
    chunks: Chunks = {}
    for source in sources:
        report = FileReport(name=source.name)
        reports.append(report)
        try:
            source = decompressed(source, max_decompressed, budget)
            if check is not None:
                check(source)
            doc = decode(source)
            module = detect(doc) if doc is not None else None
            if module is None:
                report.skipped = _why_not_a_trace(source, doc)
                continue
            report.format = module.FORMAT
            if hasattr(module, "split"):
                into = getattr(module, "JOINS", module)
                for trace_id, records in module.split(doc).items():
                    records_of, names, owners = chunks.setdefault((into, trace_id), ([], [], []))
                    records_of.extend(records)
                    names.append(source.name)
                    owners.append(report)
                continue
            for trace in module.parse(doc, source.name):
                select_reward(trace, reward_score)
                validate_trace(trace)
                traces.append(trace)
                report.trace_keys.append(trace.identity_key)
        except (TraceFormatError, TraceValidationError) as exc:
            report.error = exc.detail if isinstance(exc, TraceFormatError) else str(exc)
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
            # A ValueError's text names the record and field; other classes need their name to read.
            said = str(exc) if type(exc) is ValueError else repr(exc)
            report.error = f"malformed {report.format or 'input'}: {said}"
    traces.extend(_build_chunks(chunks, reports, reward_score))
    failed = {r.name for r in reports if r.error}
    keep = {key for r in reports if not r.error for key in r.trace_keys}
    return ImportResult(traces=[t for t in traces if t.identity_key in keep] if failed else traces, files=reports)


def _build_chunks(chunks: Chunks, reports: list[FileReport], reward_score: str | None) -> list[Trace]:
    """The traces of the split formats' `chunks` (grouped, `_grouped`), each file's report told
    the identity keys it gave, why its chunks failed, or why they made no trace (`incomplete`)."""
    traces = []
    waiting: dict[int, dict[str, list[Any]]] = {}  # id(report) -> reason -> trace ids of no trace
    for (module, trace_id), (records, names, owners) in _grouped(chunks).items():
        reason = module.incomplete(trace_id, records) if hasattr(module, "incomplete") else None
        if reason is not None:
            for owner in owners:
                waiting.setdefault(id(owner), {}).setdefault(reason, []).append(trace_id)
            continue
        try:
            trace = select_reward(module.build(trace_id, records, names), reward_score)
            validate_trace(trace)
        except (TraceValidationError, KeyError, TypeError, ValueError, AttributeError) as exc:
            for owner in owners:
                owner.error = f"trace {trace_id}: {exc!r}" if isinstance(exc, KeyError) else f"trace {trace_id}: {exc}"
            continue
        traces.append(trace)
        for owner in owners:
            owner.trace_keys.append(trace.identity_key)
    for report in reports:
        if id(report) in waiting and not report.error:
            report.skipped = _incomplete_reason(waiting[id(report)], bool(report.trace_keys))
    return traces


def _incomplete_reason(reasons: dict[str, list[Any]], gave_traces: bool) -> str | None:
    """A file's skip reason from the `incomplete` reasons of its chunks (reason -> trace ids; None
    for records without a trace id), each followed by the trace ids (five, then a count). When the
    file also gave traces, records without a trace id are not worth a word."""
    parts = []
    for reason, trace_ids in reasons.items():
        named = [str(t) for t in trace_ids if t is not None]
        if gave_traces and not named:
            continue
        shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
        parts.append(f"{reason}: trace{'s' if len(named) > 1 else ''} {shown}" if named else reason)
    return "; ".join(parts) or None
