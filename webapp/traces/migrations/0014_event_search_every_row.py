"""The SQLite search index keeps a row for every event, also those with neither content nor tool
(webapp.traces.search): its triggers are replaced and the index rebuilt from the stored events, so
FTS5's integrity-check holds. PostgreSQL's index is unchanged."""

from django.db import migrations


def reinstall(apps, schema_editor):
    from webapp.traces.search import install  # noqa: PLC0415 - loaded when the migration runs

    install(schema_editor.execute, schema_editor.connection.vendor)


class Migration(migrations.Migration):
    dependencies = [("traces", "0013_trace_list_facts")]

    operations = [migrations.RunPython(reinstall, migrations.RunPython.noop, elidable=False)]
