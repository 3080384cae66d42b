"""Which column each text field of a trace fragment is stored in, and the check that it fits there
(`webapp.web.validation.text_problem` with the column's `max_length`, read from the model): an
over-long id or name is a 400 naming it on every database, not a PostgreSQL DataError (SQLite
would store it whole)."""

from __future__ import annotations

from swarmscope import model as core
from webapp.web.validation import max_length

from .models import Agent, Edge, Event, Label, Trace

#: core record kind -> (its model, {core attribute: model field}).
COLUMNS = {
    "event": (
        Event,
        {
            "id": "event_id",
            "type": "type",
            "agent": "agent",
            "role": "role",
            "from_": "from_agent",
            "to": "to",
            "tool": "tool",
            "content_ref": "content_ref",
        },
    ),
    "agent": (Agent, {"name": "name", "role": "role", "parent": "parent"}),
    "edge": (Edge, {"src": "src", "dst": "dst", "type": "type"}),
    "label": (Label, {"key": "key", "event_id": "event_id", "agent": "agent", "source": "source"}),
}
TRACE_COLUMNS = ("source_format", "source_id", "name", "system", "topology", "task_id")


def check_columns(fragment: core.Trace) -> None:
    """Raise TraceValidationError naming the record (kind, index, event id) and field whose text is
    longer than its column's max_length."""
    for name in TRACE_COLUMNS:
        limit = max_length(Trace, name)
        value = getattr(fragment, name)
        if isinstance(value, str) and limit is not None and len(value) > limit:
            raise core.TraceValidationError(
                f"must be at most {limit} characters, got {len(value)}", field=name, kind="trace"
            )
    parts = {"event": fragment.events, "agent": fragment.agents, "edge": fragment.edges, "label": fragment.labels}
    for kind, items in parts.items():
        model, fields = COLUMNS[kind]
        limits = {attr: max_length(model, column) for attr, column in fields.items()}
        for index, item in enumerate(items):
            for attr, limit in limits.items():
                value = getattr(item, attr)
                if isinstance(value, str) and limit is not None and len(value) > limit:
                    raise core.TraceValidationError(
                        f"must be at most {limit} characters, got {len(value)}",
                        index=index,
                        kind=kind,
                        field=attr.rstrip("_") if attr != "from_" else "from",
                        event_id=item.id if kind == "event" and attr != "id" else None,
                    )
