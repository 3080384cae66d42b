"""When a stream counts as ended: a trace is live until it has had no events for
SWARMSCOPE_LIVE_IDLE_S seconds (services.LIVE_WINDOW_S), in the trace summary the trace page reads
(`live`, `live_idle_s`) and in the trace list's rows (`live`, `live_for_s`)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from swarmscope import model as core
from webapp.traces import ingest, services
from webapp.traces.models import Trace

pytestmark = pytest.mark.django_db


@pytest.fixture
def streamed(project):
    trace = ingest.do_ingest(project, core.Trace(source_format="native", source_id="idle"), live=True).trace
    fragment = core.Trace(source_format="native", source_id="idle")
    fragment.events = [core.event_from_dict({"id": "e1", "t": 0.0, "type": "message", "agent": "a"})]
    ingest.do_ingest(project, fragment, trace=trace, live=True)
    return Trace.objects.get(pk=trace.pk)


def test_the_idle_time_is_the_setting(streamed):
    assert services.LIVE_WINDOW_S == settings.SWARMSCOPE_LIVE_IDLE_S
    summary = services.trace_summary(streamed)
    assert summary["live"] and summary["live_idle_s"] == services.LIVE_WINDOW_S
    row = services.list_row(streamed)
    assert row["live"] and 0 < row["live_for_s"] <= services.LIVE_WINDOW_S


@pytest.mark.parametrize("idle_s, quiet_s, live", [(5, 4, True), (5, 6, False), (60, 45, True), (60, 61, False)])
def test_a_trace_stops_being_live_after_the_idle_time(streamed, monkeypatch, idle_s, quiet_s, live):
    monkeypatch.setattr(services, "LIVE_WINDOW_S", idle_s)
    Trace.objects.filter(pk=streamed.pk).update(last_event_at=timezone.now() - timedelta(seconds=quiet_s))
    trace = Trace.objects.get(pk=streamed.pk)
    assert services.trace_summary(trace)["live"] is live
    row = services.list_row(trace)
    assert row["live"] is live
    assert row["live_for_s"] == pytest.approx(max(0.0, idle_s - quiet_s), abs=0.5)
    listed = {r["id"] for r in services.list_snapshot(trace.project_id)["traces"]}
    assert (trace.pk in listed) is live  # the list socket's snapshot holds the live traces only
