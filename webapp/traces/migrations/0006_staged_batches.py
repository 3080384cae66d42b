"""Trace.staged_at: a batch too big for one short transaction is staged in chunks (webapp.traces.ingest)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("traces", "0005_trace_kind")]

    operations = [
        migrations.AddField(
            model_name="trace",
            name="staged_at",
            field=models.DateTimeField(
                blank=True,
                help_text="last chunk of a batch being staged (rows with seq > seq, unpublished); null when none",
                null=True,
            ),
        ),
    ]
