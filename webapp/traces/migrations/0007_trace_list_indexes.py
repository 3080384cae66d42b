"""The trace list at scale: TraceFacetCount (one row per project and combination of the faceted
columns, with its trace count), filled from the stored traces and kept by triggers on traces_trace
(SQLite and PostgreSQL; on another database the table stays empty and unused: the facets group the
trace rows, webapp.traces.facets), and an index for the derived-from facet."""

import django.db.models.deletion
from django.db import migrations, models


def fill_and_add_triggers(apps, schema_editor):
    """Count the stored traces into the table, then add the triggers (webapp.traces.facets; in this
    migration's transaction: no trace is written between the two)."""
    from webapp.traces.facets import install_triggers  # noqa: PLC0415 - loaded when the migration runs

    install_triggers(schema_editor.execute, schema_editor.connection.vendor)


def drop_triggers(apps, schema_editor):
    from webapp.traces.facets import drop_triggers as drop  # noqa: PLC0415

    drop(schema_editor.execute, schema_editor.connection.vendor)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_project_retention_days_invitation"),
        ("traces", "0006_staged_batches"),
    ]

    operations = [
        migrations.CreateModel(
            name="TraceFacetCount",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(max_length=16)),
                ("source_format", models.CharField(max_length=40)),
                ("system", models.CharField(max_length=200)),
                ("labelled", models.BooleanField()),
                ("outcome", models.CharField(max_length=8)),
                ("n", models.BigIntegerField(default=0)),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="accounts.project"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "kind", "source_format", "system", "labelled", "outcome"),
                        name="trace_facet_cell",
                    )
                ],
            },
        ),
        # the derived-from facet groups derived traces only: (project, derived_from > '') in index order
        migrations.AddIndex(
            model_name="trace",
            index=models.Index(fields=["project", "derived_from", "kind"], name="trace_derived_kind"),
        ),
        migrations.RunPython(fill_and_add_triggers, drop_triggers),
    ]
