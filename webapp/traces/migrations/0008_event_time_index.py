"""An index on traces_event (trace_id, t, agent, type, seq): the server-side level of detail of
huge traces (webapp.traces.lod) reads a trace's time span and time windows through it, and its
overview bins from it alone (a covering index: about 3x faster than through the rows on SQLite).

Plain SQL (SQLite and PostgreSQL) with no change to the model state, so models.py stays as it is."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("traces", "0007_trace_list_indexes")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS event_trace_t ON traces_event (trace_id, t, agent, type, seq)",
            reverse_sql="DROP INDEX IF EXISTS event_trace_t",
        ),
    ]
