"""A re-derivation writes the events whose build changed in place (span_ingest._write_events: an
UPDATE per row, the row and its position kept), and the full-text index follows them."""

import re

from tests.traces.test_otlp_streaming import _file_traces, import_once, stored_form, stream
from webapp.traces import services, span_ingest
from webapp.traces.models import Trace
from webapp.traces.tasks import derive_spans

_WORD = re.compile(r"[A-Za-z]{6,}")


def test_changed_events_are_updated_in_place_and_stay_indexed(
    api_client, fixtures, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.SWARMSCOPE_OTLP_SYNC_SPANS = 2  # the first request builds, the others go to the task
    monkeypatch.setattr(derive_spans, "apply_async", lambda args, **options: derive_spans.apply(args=args))
    updates: list[tuple[int, tuple[str, ...]]] = []
    update = span_ingest._update_events

    def spy(row, events, seq, columns):
        updates.append((len(events), columns))
        update(row, events, seq, columns)

    monkeypatch.setattr(span_ingest, "_update_events", spy)
    (spans,) = _file_traces([fixtures / "otlp_genai_small.json"])
    spans.sort(key=lambda span: span.end_ns)  # as exporters send them: the root, which starts first, last
    batches = [spans[i : i + 2] for i in range(0, len(spans), 2)]
    with django_capture_on_commit_callbacks(execute=True):
        stream(api_client, batches[:-1], ["protobuf"] * (len(batches) - 1))
    trace = Trace.objects.get(identity_key=f"otlp:{spans[0].trace_id}")
    pks = dict(trace.events.values_list("event_id", "pk"))
    with django_capture_on_commit_callbacks(execute=True):
        stream(api_client, batches[-1:], ["json"])
    # the root moved the time origin: events were rewritten without their text columns
    assert any(n and "content" not in columns and "t" in columns for n, columns in updates)
    trace.refresh_from_db()
    assert stored_form(trace) == import_once(spans)
    after = dict(trace.events.values_list("event_id", "pk"))
    assert all(after[i] == pk for i, pk in pks.items() if i in after)  # the same rows
    words = {m.group() for c in trace.events.values_list("content", flat=True) if c for m in _WORD.finditer(c)}
    assert words
    for word in sorted(words)[:20]:  # every event's text is found through the index
        listed = services.list_traces([trace.project_id], filters=services.ListFilters(query=word))
        assert [t.pk for t in listed] == [trace.pk], word
