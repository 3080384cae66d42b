"""Full-text search over event content (messages, tool arguments and results) and tool names, on
SQLite (FTS5) and PostgreSQL (full-text search), behind one interface: the trace list asks
`matching_traces_sql` which traces hold every word of a query and `get_search_hits` where (the
first matching event of each trace, with a highlighted snippet), and never which database answers.

The index is kept in step by the database itself, in the transaction that writes the event, on
every write path (batch and staged ingest, OTLP rebuilds, merges, deletion, retention), so an
import is searchable all at once or not at all:

* SQLite: `traces_event_fts`, an FTS5 table over `traces_event` (external content: it stores the
  index, not a copy of the text) kept by three triggers on that table (FTS_SQL). SQLite drops a
  table's triggers when a migration rebuilds it: `ensure_index` (post_migrate) rebuilds the index
  and puts them back.
* PostgreSQL: a GIN index on the expression `DOCUMENT_SQL` (a tsvector of the tool name and the
  first PG_INDEXED_CHARS characters of the content; a tsvector is at most 1 MB), which queries
  repeat word for word so the planner uses it.

Both split text into words the same way for plain words (letters and digits, case folded, accents
kept: FTS5's `unicode61 remove_diacritics 0`, PostgreSQL's `simple` configuration); they differ on
paths, URLs and e-mail addresses, which PostgreSQL keeps whole as well as in parts, and on
HTML-like tags, which PostgreSQL's snippets (ts_headline) leave out. A query is its
words (`query_words`), all of which must occur in one event; a word ending in `*` is a prefix
(`capit*` finds "capital"). Only published rows count (an event's
seq at most its trace's: rows of a batch being staged are not found before it is).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from django.db import connection, connections, transaction

logger = logging.getLogger(__name__)

FTS_TABLE = "traces_event_fts"
#: At most this many words of a query are searched (the rest are ignored).
MAX_QUERY_WORDS = 12
#: PostgreSQL indexes this many leading characters of an event's content (a tsvector is <= 1 MB).
PG_INDEXED_CHARS = 100_000
#: Marks around a hit in a snippet (private-use characters: never in a snippet's text otherwise).
HIT_START, HIT_END = "\ue000", "\ue001"
#: Words around the hits of a snippet.
SNIPPET_WORDS = 16

# Every event has a row in the index, also one with neither content nor tool (it adds no word):
# FTS5's integrity-check (and PRAGMA integrity_check) expects a row per row of the content table
# and reports the index "malformed" otherwise.
_ADD = f"INSERT INTO {FTS_TABLE} (rowid, tool, content) VALUES (NEW.id, NEW.tool, NEW.content);"
_REMOVE = (
    f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}, rowid, tool, content) VALUES ('delete', OLD.id, OLD.tool, OLD.content);"
)
TRIGGERS = ("traces_event_fts_insert", "traces_event_fts_delete", "traces_event_fts_update")
#: SQLite: the FTS5 table and its triggers (an external-content table must be told the exact values
#: it indexed to remove a row).
FTS_SQL = [
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(tool, content, "
    "content='traces_event', content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
    f"CREATE TRIGGER IF NOT EXISTS traces_event_fts_insert AFTER INSERT ON traces_event BEGIN {_ADD} END",
    f"CREATE TRIGGER IF NOT EXISTS traces_event_fts_delete AFTER DELETE ON traces_event BEGIN {_REMOVE} END",
    "CREATE TRIGGER IF NOT EXISTS traces_event_fts_update AFTER UPDATE OF tool, content ON traces_event "
    f"BEGIN {_REMOVE} {_ADD} END",
]
FTS_DROP_SQL = [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS] + [f"DROP TABLE IF EXISTS {FTS_TABLE}"]
FTS_REBUILD_SQL = f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}) VALUES ('rebuild')"

#: PostgreSQL: the indexed document of an event (of alias `e`), and the index on it.
DOCUMENT_SQL = (
    "to_tsvector('simple'::regconfig, coalesce({e}tool, '') || ' ' || left(coalesce({e}content, ''), "
    f"{PG_INDEXED_CHARS}))"
)
PG_INDEX = "traces_event_search"
PG_SQL = [f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON traces_event USING gin ({DOCUMENT_SQL.format(e='')})"]
PG_DROP_SQL = [f"DROP INDEX IF EXISTS {PG_INDEX}"]


def install(execute, vendor: str) -> bool:
    """Create the search index of `vendor` through `execute` (a schema editor's or a cursor's) and
    fill it from the stored events. False for a database without one here (no content search)."""
    if vendor == "sqlite":
        for sql in FTS_DROP_SQL + FTS_SQL:
            execute(sql)
        execute(FTS_REBUILD_SQL)
        return True
    if vendor == "postgresql":
        for sql in PG_SQL:
            execute(sql)
        return True
    return False


def uninstall(execute, vendor: str) -> None:
    for sql in {"sqlite": FTS_DROP_SQL, "postgresql": PG_DROP_SQL}.get(vendor, []):
        execute(sql)


def index_installed(conn=connection) -> bool:
    """Whether `conn`'s database keeps the search index (SQLite: the table and its three triggers;
    PostgreSQL: the GIN index)."""
    if conn.vendor == "sqlite":
        names = (FTS_TABLE, *TRIGGERS)
        sql = f"SELECT COUNT(*) FROM sqlite_master WHERE name IN ({', '.join(['%s'] * len(names))})"
    elif conn.vendor == "postgresql":
        names = (PG_INDEX,)
        sql = "SELECT COUNT(*) FROM pg_indexes WHERE indexname = %s"
    else:
        return False
    with conn.cursor() as cursor:
        cursor.execute(sql, list(names))
        return cursor.fetchone()[0] == len(names)


def ensure_index(using: str = "default", **kwargs) -> None:
    """post_migrate: rebuild the index and its triggers where a migration dropped them (SQLite
    drops a table's triggers when it rebuilds the table for an ALTER)."""
    conn = connections[using]
    if conn.vendor not in ("sqlite", "postgresql") or "traces_event" not in conn.introspection.table_names():
        return
    if index_installed(conn):
        return
    logger.warning("event search index missing: rebuilding it from the stored events")
    with transaction.atomic(using=using), conn.cursor() as cursor:
        install(cursor.execute, conn.vendor)


# --- queries -----------------------------------------------------------------------------------------


def query_words(query: str) -> list[str]:
    """The words of a search box's text that content search looks for (letters and digits, at most
    MAX_QUERY_WORDS, lower case), a word right before `*` kept with it as a prefix:
    `"Paris, 'capit*'?"` -> `["paris", "capit*"]`."""
    return [w.lower() + star for w, star in re.findall(r"([^\W_]+)(\*?)", query)][:MAX_QUERY_WORDS]


def _match(words: list[str], vendor: str) -> str:
    """The database's query text for `words` (all of them; `w*` a prefix): FTS5 phrases (`"w"*`), or
    to_tsquery's text of quoted lexemes (`'w':*`). Words hold letters and digits only (query_words),
    so no quote or operator reaches either syntax."""
    if vendor == "sqlite":
        return " ".join(f'"{w.rstrip("*")}"' + ("*" if w.endswith("*") else "") for w in words)
    return " & ".join(f"'{w.rstrip('*')}'" + (":*" if w.endswith("*") else "") for w in words)


def _where(vendor: str) -> str:
    if vendor == "sqlite":
        return f"{FTS_TABLE} MATCH %s"
    return f"{DOCUMENT_SQL.format(e='e.')} @@ to_tsquery('simple'::regconfig, %s)"


def _from(vendor: str) -> str:
    if vendor == "sqlite":
        return f"{FTS_TABLE} JOIN traces_event e ON e.id = {FTS_TABLE}.rowid"
    return "traces_event e"


def searchable(conn=connection) -> bool:
    return conn.vendor in ("sqlite", "postgresql")


def matching_traces_sql(query: str, conn=connection) -> tuple[str, list] | None:
    """(SQL, params) selecting the ids of the traces with a published event holding every word of
    `query`, for `Trace.objects.filter(pk__in=RawSQL(*...))`; None when the query has no words or
    the database has no content search."""
    words = query_words(query)
    if not words or not searchable(conn):
        return None
    sql = (
        f"SELECT DISTINCT e.trace_id FROM {_from(conn.vendor)} JOIN traces_trace st ON st.id = e.trace_id "
        f"WHERE {_where(conn.vendor)} AND e.seq <= st.seq"
    )
    return sql, [_match(words, conn.vendor)]


@dataclass(frozen=True)
class SearchHit:
    """Where a trace matches a content search: its first matching event (by arrival) `event_id`,
    that event's `type`, `tool` and `agent`, `matches` (how many of its events match) and the
    `snippet` around the hits, as parts (text, is_hit) for a template to mark without trusting
    the text."""

    event_id: str
    type: str
    agent: str
    tool: str
    matches: int
    snippet: tuple[tuple[str, bool], ...]

    @property
    def snippet_text(self) -> str:
        return "".join(text for text, _ in self.snippet)


def snippet_parts(marked: str) -> tuple[tuple[str, bool], ...]:
    """A snippet with HIT_START/HIT_END marks as parts (text, is_hit), empty parts left out."""
    parts: list[tuple[str, bool]] = []
    for i, piece in enumerate(re.split(f"[{HIT_START}{HIT_END}]", marked)):
        if piece:
            parts.append((piece, i % 2 == 1))
    return tuple(parts)


def get_search_hits(trace_ids: list[int], query: str, conn=connection) -> dict[int, SearchHit]:
    """trace id -> its SearchHit for `query`, for the given traces (a page of the list: the
    snippets are made for these only). Traces without a content match are left out."""
    words = query_words(query)
    if not words or not trace_ids or not searchable(conn):
        return {}
    vendor = conn.vendor
    marks = ", ".join(["%s"] * len(trace_ids))
    match = _match(words, vendor)
    firsts = (
        f"SELECT e.trace_id, MIN(e.position), COUNT(*) FROM {_from(vendor)} "
        f"JOIN traces_trace st ON st.id = e.trace_id "
        f"WHERE {_where(vendor)} AND e.seq <= st.seq AND e.trace_id IN ({marks}) GROUP BY e.trace_id"
    )
    with conn.cursor() as cursor:
        cursor.execute(firsts, [match, *trace_ids])
        first = {trace_id: (position, n) for trace_id, position, n in cursor.fetchall()}
        if not first:
            return {}
        pairs = " OR ".join(["(e.trace_id = %s AND e.position = %s)"] * len(first))
        pair_params = [v for trace_id, (position, _) in first.items() for v in (trace_id, position)]
        if vendor == "sqlite":
            snippet = f"snippet({FTS_TABLE}, -1, %s, %s, '…', {SNIPPET_WORDS})"
            sql = (
                f"SELECT e.trace_id, e.event_id, e.type, e.agent, e.tool, {snippet} FROM {_from(vendor)} "
                f"WHERE {_where(vendor)} AND ({pairs})"
            )
            params = [HIT_START, HIT_END, match, *pair_params]
        else:
            options = f"StartSel={HIT_START}, StopSel={HIT_END}, MaxWords={SNIPPET_WORDS * 2}, MinWords=8"
            document = f"coalesce(e.tool, '') || ' ' || left(coalesce(e.content, ''), {PG_INDEXED_CHARS})"
            snippet = f"ts_headline('simple'::regconfig, {document}, to_tsquery('simple'::regconfig, %s), %s)"
            sql = f"SELECT e.trace_id, e.event_id, e.type, e.agent, e.tool, {snippet} FROM traces_event e WHERE {pairs}"
            params = [match, options, *pair_params]
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    hits = {}
    for trace_id, event_id, type_, agent, tool, marked in rows:
        hits[trace_id] = SearchHit(
            event_id=event_id,
            type=type_,
            agent=agent,
            tool=tool or "",
            matches=first[trace_id][1],
            snippet=snippet_parts(" ".join((marked or "").split())),
        )
    return hits
