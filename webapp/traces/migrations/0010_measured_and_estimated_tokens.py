"""Trace.total_tokens counts measured usage only (null where the source measured none) and
Trace.estimated_tokens holds the characters / 4 estimate of the events without measured tokens,
apart (swarmscope.tokens, docs/metrics.md "Tokens"). Stored traces are recounted from their
published events: until now the total added importers' estimates to the measured usage."""

import math

from django.db import migrations, models
from django.db.models import Count, ExpressionWrapper, Q, Sum
from django.db.models.functions import Length


def _reported(costs) -> int | None:
    """swarmscope.tokens.reported_total, as of this migration."""
    value = costs.get("tokens") if isinstance(costs, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return round(value)


def recount(apps, schema_editor):
    Trace = apps.get_model("traces", "Trace")
    Event = apps.get_model("traces", "Event")
    flagged = Q(attributes__tokens_estimated=True)
    for trace in Trace.objects.only("pk", "seq", "costs").iterator():
        events = Event.objects.filter(trace_id=trace.pk, seq__lte=trace.seq)
        counted = events.filter(tokens__isnull=False).aggregate(
            n=Count("pk"),
            all=Sum("tokens"),
            n_flagged=Count("pk", filter=flagged),
            flagged=Sum("tokens", filter=flagged),
        )
        content = events.filter(tokens__isnull=True, content__isnull=False).aggregate(
            estimate=Sum(ExpressionWrapper((Length("content") + 3) / 4, output_field=models.BigIntegerField()))
        )
        measured = (counted["all"] or 0) - (counted["flagged"] or 0) if counted["n"] > counted["n_flagged"] else None
        reported = _reported(trace.costs)
        Trace.objects.filter(pk=trace.pk).update(
            total_tokens=reported if reported is not None else measured,
            estimated_tokens=(counted["flagged"] or 0) + (content["estimate"] or 0),
        )


def reinstall_triggers(apps, schema_editor):
    """SQLite drops a table's triggers when it rebuilds the table for these fields: put the trace
    list's facet count triggers back (webapp.traces.facets; 0007)."""
    from webapp.traces.facets import install_triggers  # noqa: PLC0415 - loaded when the migration runs

    if schema_editor.connection.vendor == "sqlite":
        install_triggers(schema_editor.execute, "sqlite")


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0009_idempotencykey"),
    ]

    operations = [
        migrations.AddField(
            model_name="trace",
            name="estimated_tokens",
            field=models.BigIntegerField(
                default=0, help_text="characters / 4 of the events without measured tokens; never part of total_tokens"
            ),
        ),
        migrations.AlterField(
            model_name="trace",
            name="total_tokens",
            field=models.BigIntegerField(
                blank=True,
                help_text="measured token usage (swarmscope.tokens.trace_usage); null when the source measured none",
                null=True,
            ),
        ),
        migrations.RunPython(reinstall_triggers, migrations.RunPython.noop),
        migrations.RunPython(recount, migrations.RunPython.noop),
    ]
