"""The trace list's label summary (`Trace.label_summary`: its Labels column, search and Labels
facet) shows evaluation scores too (`webapp.traces.ingest.label_summary`): the stored traces that
carry score labels (Langfuse scores, OpenTelemetry evaluation results) get theirs rebuilt from their
published labels. The facet counts follow through the counts table's triggers."""

from django.db import migrations
from django.db.models import Q

#: As of this migration: webapp.traces.ingest.SUMMARY_LABELS and swarmscope.importers.scores.
SUMMARY_LABELS = ("mistake_agent", "mistake_step", "failure_mode")
SCORE_LABELS = Q(source__startswith="langfuse:") | (
    Q(source="gen_ai.evaluation.result") & ~Q(key__endswith=".explanation")
)


def _value(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def summarise(apps, schema_editor):
    Trace = apps.get_model("traces", "Trace")
    Label = apps.get_model("traces", "Label")
    scored = Label.objects.filter(SCORE_LABELS).values_list("trace_id", flat=True).distinct()
    for trace in Trace.objects.filter(pk__in=scored).only("pk", "seq", "label_summary").iterator():
        parts: list[str] = []
        labels = Label.objects.filter(trace_id=trace.pk, seq__lte=trace.seq).filter(
            Q(key__in=SUMMARY_LABELS) | SCORE_LABELS
        )
        for key, value in labels.order_by("seq", "pk").values_list("key", "value"):
            text = f"{key}={_value(value)}"
            if text not in parts:
                parts.append(text)
        summary = "; ".join(parts)[:500]
        if summary != trace.label_summary:
            Trace.objects.filter(pk=trace.pk).update(label_summary=summary)


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0010_measured_and_estimated_tokens"),
    ]

    operations = [migrations.RunPython(summarise, migrations.RunPython.noop)]
