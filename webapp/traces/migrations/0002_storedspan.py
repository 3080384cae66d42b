"""Span batches become one row per span (deduplicated by span id), decoded once."""

import django.db.models.deletion
from django.db import migrations, models


def batches_to_spans(apps, schema_editor):
    from swarmscope.importers import otlp

    SpanBatch = apps.get_model("traces", "SpanBatch")
    StoredSpan = apps.get_model("traces", "StoredSpan")
    for batch in SpanBatch.objects.order_by("id").iterator():
        seen = set(StoredSpan.objects.filter(trace_id=batch.trace_id).values_list("span_id", flat=True))
        rows = []
        for record in batch.records:
            span = otlp.span_from_json(record["span"], record.get("resource") or {})
            if span.span_id and span.span_id not in seen:
                seen.add(span.span_id)
                rows.append(StoredSpan(trace_id=batch.trace_id, span_id=span.span_id, data=span.to_dict()))
        StoredSpan.objects.bulk_create(rows, batch_size=1000)


class Migration(migrations.Migration):

    dependencies = [("traces", "0001_initial")]

    operations = [
        migrations.CreateModel(
            name="StoredSpan",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("span_id", models.CharField(max_length=16)),
                ("data", models.JSONField()),
                ("trace", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="spans",
                                            to="traces.trace")),
            ],
            options={"constraints": [models.UniqueConstraint(fields=("trace", "span_id"), name="span_identity")]},
        ),
        migrations.AddField(model_name="trace", name="spans_pending",
                            field=models.BooleanField(default=False, help_text="stored spans not yet derived (OTLP)")),
        migrations.RunPython(batches_to_spans, migrations.RunPython.noop),
        migrations.DeleteModel(name="SpanBatch"),
    ]
