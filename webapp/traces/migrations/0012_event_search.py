"""Full-text search over event content and tool names (webapp.traces.search): on SQLite an FTS5
table over traces_event kept by triggers, on PostgreSQL a GIN index on the events' tsvector; both
filled from the events already stored."""

from django.db import migrations


def add_index(apps, schema_editor):
    from webapp.traces.search import install  # noqa: PLC0415 - loaded when the migration runs

    install(schema_editor.execute, schema_editor.connection.vendor)


def drop_index(apps, schema_editor):
    from webapp.traces.search import uninstall  # noqa: PLC0415

    uninstall(schema_editor.execute, schema_editor.connection.vendor)


class Migration(migrations.Migration):
    dependencies = [("traces", "0011_score_labels_in_summary")]

    operations = [migrations.RunPython(add_index, drop_index, elidable=False)]
