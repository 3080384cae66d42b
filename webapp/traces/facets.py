"""The trace list's facet counts and total from one small read, at any number of traces.

Each facet (project, kind, format, system, has-label, outcome) counts the traces passing every
*other* filter. Rather than one GROUP BY per facet over the trace rows (each reads every matching
index entry: linear in the traces, ~1 s at 100k on a loaded machine, bench/RESULTS.md), the counts
come from the cells of a cube, one per combination of those six columns with its trace count:

* without a search, session, derived-from, model, errors or range filter, from TraceFacetCount, a table the database
  keeps current with triggers on the trace table (TRIGGER_SQL; SQLite and PostgreSQL), so reading
  it costs the number of cells, not of traces;
* otherwise (or where the triggers are missing, e.g. another database) from one GROUP BY of the
  matching trace rows over the six columns.

One pass over the cells then gives every facet: a cell passing all filters counts for the total
and for each facet; a cell failing exactly one facet's filter counts for that facet only.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection, connections, transaction
from django.db.models import Count, Q, Sum

from .models import Trace, TraceFacetCount

logger = logging.getLogger(__name__)

#: The cube's dimensions: facet name (as in ListFilters) -> its column in a cell.
DIMENSIONS = ("projects", "kinds", "formats", "systems", "label", "outcome")

TABLE = "traces_tracefacetcount"
COLUMNS = "project_id, kind, source_format, system, labelled, outcome"
_CELL = "{r}.project_id, {r}.kind, {r}.source_format, {r}.system, {r}.label_summary <> '', {r}.outcome"
_MATCH = (
    "project_id = {r}.project_id AND kind = {r}.kind AND source_format = {r}.source_format "
    "AND system = {r}.system AND labelled = ({r}.label_summary <> '') AND outcome = {r}.outcome"
)
_CHANGED = (
    " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in ("project_id", "kind", "source_format", "system", "outcome"))
    + " OR (OLD.label_summary <> '') IS NOT (NEW.label_summary <> '')"
)
_ADD = (
    f"INSERT INTO {TABLE} ({COLUMNS}, n) VALUES ({_CELL.format(r='NEW')}, 1) "
    f"ON CONFLICT ({COLUMNS}) DO UPDATE SET n = {TABLE}.n + 1;"
)
_REMOVE = f"UPDATE {TABLE} SET n = n - 1 WHERE {_MATCH.format(r='OLD')};"
#: vendor -> (trigger names, SQL creating them, SQL dropping them).
TRIGGER_SQL: dict[str, tuple[tuple[str, ...], list[str], list[str]]] = {
    "sqlite": (
        ("trace_facet_count_insert", "trace_facet_count_delete", "trace_facet_count_update"),
        [
            f"CREATE TRIGGER trace_facet_count_insert AFTER INSERT ON traces_trace BEGIN {_ADD} END;",
            f"CREATE TRIGGER trace_facet_count_delete AFTER DELETE ON traces_trace BEGIN {_REMOVE} END;",
            f"CREATE TRIGGER trace_facet_count_update AFTER UPDATE ON traces_trace WHEN {_CHANGED} "
            f"BEGIN {_REMOVE} {_ADD} END;",
        ],
        [
            "DROP TRIGGER IF EXISTS trace_facet_count_insert;",
            "DROP TRIGGER IF EXISTS trace_facet_count_delete;",
            "DROP TRIGGER IF EXISTS trace_facet_count_update;",
        ],
    ),
    "postgresql": (
        ("trace_facet_count_insert_delete", "trace_facet_count_update"),
        [
            "CREATE OR REPLACE FUNCTION trace_facet_count() RETURNS trigger AS $$\nBEGIN\n"
            f"  IF TG_OP IN ('DELETE', 'UPDATE') THEN {_REMOVE} END IF;\n"
            f"  IF TG_OP IN ('INSERT', 'UPDATE') THEN {_ADD} END IF;\n"
            "  RETURN NULL;\nEND $$ LANGUAGE plpgsql;",
            "CREATE TRIGGER trace_facet_count_insert_delete AFTER INSERT OR DELETE ON traces_trace "
            "FOR EACH ROW EXECUTE FUNCTION trace_facet_count();",
            "CREATE TRIGGER trace_facet_count_update AFTER UPDATE ON traces_trace FOR EACH ROW "
            f"WHEN ({_CHANGED.replace('IS NOT', 'IS DISTINCT FROM')}) EXECUTE FUNCTION trace_facet_count();",
        ],
        [
            "DROP TRIGGER IF EXISTS trace_facet_count_insert_delete ON traces_trace;",
            "DROP TRIGGER IF EXISTS trace_facet_count_update ON traces_trace;",
            "DROP FUNCTION IF EXISTS trace_facet_count();",
        ],
    ),
}
_REFILL = (
    f"INSERT INTO {TABLE} ({COLUMNS}, n) SELECT {_CELL.format(r='t')}, COUNT(*) FROM traces_trace t "
    "GROUP BY t.project_id, t.kind, t.source_format, t.system, t.label_summary <> '', t.outcome"
)


# --- the counts table's triggers --------------------------------------------------------------------


def triggers_installed(conn=connection) -> bool:
    """Whether the database keeps TraceFacetCount current (its vendor's triggers all exist)."""
    if conn.vendor not in TRIGGER_SQL:
        return False
    names = TRIGGER_SQL[conn.vendor][0]
    marks = ", ".join(["%s"] * len(names))
    sql = (
        f"SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ({marks})"
        if conn.vendor == "sqlite"
        else f"SELECT COUNT(*) FROM pg_trigger WHERE NOT tgisinternal AND tgname IN ({marks})"
    )
    with conn.cursor() as cursor:
        cursor.execute(sql, list(names))
        return cursor.fetchone()[0] == len(names)


def install_triggers(execute, vendor: str) -> bool:
    """Recount every trace into TraceFacetCount and (re)create the triggers through `execute`
    (a schema editor's or a cursor's), in the caller's transaction (migrations run in one: no trace
    is written between the two). False for a vendor without triggers here (the facets then group
    the trace rows)."""
    if vendor not in TRIGGER_SQL:
        return False
    for sql in TRIGGER_SQL[vendor][2]:
        execute(sql)
    execute(f"DELETE FROM {TABLE}")
    execute(_REFILL)
    for sql in TRIGGER_SQL[vendor][1]:
        execute(sql)
    return True


def drop_triggers(execute, vendor: str) -> None:
    for sql in TRIGGER_SQL.get(vendor, ((), [], []))[2]:
        execute(sql)


def ensure_triggers(using: str = "default", **kwargs) -> None:
    """post_migrate: put the triggers back where a migration dropped them (SQLite drops a table's
    triggers when it rebuilds the table for an ALTER), recounting the traces."""
    conn = connections[using]
    if conn.vendor not in TRIGGER_SQL or TABLE not in conn.introspection.table_names():
        return
    if triggers_installed(conn):
        return
    logger.warning("trace facet count triggers missing: recounting the traces and adding them")
    with transaction.atomic(using=using), conn.cursor() as cursor:
        install_triggers(cursor.execute, conn.vendor)


# --- counts ------------------------------------------------------------------------------------------


@dataclass
class FacetCounts:
    """The list's total and each facet's counts under the other filters.

    `total`: traces passing every filter; `by_facet`: facet name (DIMENSIONS) -> value -> count
    (label values "yes"/"no", outcome "" for none); `source`: "table" (TraceFacetCount) or
    "query" (one GROUP BY of the trace rows); `cells`: how many cube cells were read."""

    total: int = 0
    by_facet: dict[str, Counter] = field(default_factory=lambda: {d: Counter() for d in DIMENSIONS})
    source: str = "query"
    cells: int = 0


def _outside_cube(filters):
    """`filters` less the cube's dimensions: the search, session, derived-from, model, errors and
    range filters (ListFilters)."""
    return replace(filters, projects=(), kinds=(), formats=(), systems=(), label="", outcome="")


def _only_cube_filters(filters) -> bool:
    return not _outside_cube(filters).active


def _cells(project_ids: list[int], filters) -> tuple[str, Iterable[tuple[Any, ...]]]:
    """(source, cells): each cell (project_id, kind, source_format, system, labelled, outcome, n)."""
    if _only_cube_filters(filters) and triggers_installed():
        rows = (
            TraceFacetCount.objects.filter(project_id__in=project_ids, n__gt=0)
            .values_list("project_id", "kind", "source_format", "system", "labelled", "outcome", "n")
            .order_by()
        )
        return "table", rows
    from .services import _filtered  # noqa: PLC0415 - services imports this module

    # the filters outside the cube only (every kind): the facets apply the rest
    base = _outside_cube(filters)
    qs = _filtered(project_ids, base, without="kinds").filter(project_id__in=project_ids)
    if filters.derived_from or filters.session:
        # Both have a covering index ((project, derived_from, kind), (project, session_id)): as a
        # subquery of ids SQLite uses it (without statistics it scans by project otherwise).
        qs = Trace.objects.filter(pk__in=qs.values("pk"))
    rows = (
        qs.order_by()
        .annotate(labelled=~Q(label_summary=""))
        .values_list("project_id", "kind", "source_format", "system", "labelled", "outcome")
        .annotate(n=Count("id"))
    )
    return "query", rows


def facet_counts(project_ids: Iterable[int], filters) -> FacetCounts:
    """Total and facet counts of the trace list of `project_ids` under `filters` (ListFilters),
    as `services.list_traces(project_ids, filters=filters).count()` and one GROUP BY per facet
    would give them (tests/traces/test_trace_list_scale.py checks both ways agree)."""
    project_ids = list(project_ids)
    chosen_projects = [p for p in filters.projects if p in project_ids] if filters.projects else None
    kinds = filters.shown_kinds
    tests = {
        "projects": (lambda v: v in chosen_projects) if chosen_projects is not None else None,
        "kinds": (lambda v: v in kinds) if kinds else None,
        "formats": (lambda v: v in filters.formats) if filters.formats else None,
        "systems": (lambda v: v in filters.systems) if filters.systems else None,
        "label": (lambda v: v == (filters.label == "yes")) if filters.label else None,
        "outcome": (lambda v: v == ("" if filters.outcome == "none" else filters.outcome)) if filters.outcome else None,
    }
    active = [(i, name, test) for i, (name, test) in enumerate(tests.items()) if test is not None]
    out = FacetCounts()
    source, cells = _cells(project_ids, filters)
    out.source = source
    by = out.by_facet
    for cell in cells:
        out.cells += 1
        n = cell[6]
        failed = None
        for i, name, test in active:
            if not test(cell[i]):
                if failed is not None:
                    break
                failed = name
        else:
            if failed is None:
                out.total += n
                for i, name in enumerate(DIMENSIONS):
                    by[name][_value(name, cell[i])] += n
            else:
                by[failed][_value(failed, cell[DIMENSIONS.index(failed)])] += n
    return out


def _value(name: str, raw: Any) -> Any:
    if name == "label":
        return "yes" if raw else "no"
    return raw


def table_total(project_ids: Iterable[int]) -> int:
    """Every trace of the projects by the counts table (for checks: equals Trace.objects' count)."""
    return TraceFacetCount.objects.filter(project_id__in=list(project_ids)).aggregate(s=Sum("n"))["s"] or 0
