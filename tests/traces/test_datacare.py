"""Deleting traces and projects (confirm page listing dependants), retention, redaction at ingestion."""

import dataclasses
import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from swarmscope.redaction import REDACTED, compile_patterns, redact_text
from tests.review.conftest import ingest
from webapp.accounts.models import Project
from webapp.counterfactuals.models import Attribution
from webapp.review import services as review
from webapp.review.models import Comment
from webapp.traces import tasks
from webapp.traces.models import Event, StoredSpan, Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def test_delete_trace_lists_dependants_then_deletes_them(team, client):
    review.do_comment(team.users["rev"], review.get_target([team.a.pk], "trace", team.trace_a.pk), "note")
    client.force_login(team.users["rev"])
    assert client.get(f"/traces/{team.trace_a.pk}/delete/").status_code == 403  # reviewers do not delete
    client.force_login(team.users["ann"])
    page = client.get(f"/traces/{team.trace_a.pk}/delete/").content.decode()
    assert "11 events" in page and "1 attributions" in page and "1 comments" in page
    assert client.post(f"/traces/{team.trace_a.pk}/delete/").status_code == 302
    assert not Trace.objects.filter(pk=team.trace_a.pk).exists()
    assert not Event.objects.filter(trace_id=team.trace_a.pk).exists()
    assert not Attribution.objects.filter(pk=team.attribution_a.pk).exists() and not Comment.objects.exists()
    assert Trace.objects.filter(pk=team.trace_b.pk).exists()


def test_delete_project_needs_its_name(team, client):
    client.force_login(team.users["ann"])
    page = client.get(f"/projects/{team.a.pk}/delete/").content.decode()
    assert "1 traces" in page and "4 memberships" in page
    client.post(f"/projects/{team.a.pk}/delete/", {"confirm_name": "wrong"})
    assert Project.objects.filter(pk=team.a.pk).exists()
    client.post(f"/projects/{team.a.pk}/delete/", {"confirm_name": "Project A"})
    assert not Project.objects.filter(pk=team.a.pk).exists() and not Trace.objects.filter(pk=team.trace_a.pk).exists()
    assert Project.objects.filter(pk=team.b.pk).exists()


def test_retention_deletes_only_older_traces_of_that_project(team, client, fixtures):
    old = ingest(team.a, fixtures / "native_small.json", source_id="old")
    Trace.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    Trace.objects.filter(pk=team.trace_b.pk).update(created_at=timezone.now() - timedelta(days=400))
    client.force_login(team.users["vic"])
    assert client.post(f"/projects/{team.a.pk}/settings/", {"retention_days": "30"}).status_code == 403
    client.force_login(team.users["ann"])
    for refused in ("0", "99999999999", "-3", "ten"):
        client.post(f"/projects/{team.a.pk}/settings/", {"retention_days": refused})
        assert Project.objects.get(pk=team.a.pk).retention_days is None, refused
    client.post(f"/projects/{team.a.pk}/settings/", {"retention_days": "30"})
    assert Project.objects.get(pk=team.a.pk).retention_days == 30
    assert tasks.delete_expired_traces.apply().get() == {team.a.pk: 1}
    assert set(Trace.objects.values_list("pk", flat=True)) == {team.trace_a.pk, team.trace_b.pk}
    schedule = settings.CELERY_BEAT_SCHEDULE["delete-expired-traces"]
    assert schedule["task"] == tasks.delete_expired_traces.name


def test_redaction_at_ingestion_keeps_the_structure(team, settings):
    key = "sk-proj-" + "a1B2" * 10
    events = [
        {
            "id": "r1",
            "t": 0.0,
            "type": "message",
            "agent": "orchestrator",
            "to": "worker",
            "content": f"use {key} and mail ops@example.org",
            "attributes": {"headers": {"auth": f"Bearer {'x' * 24}"}, "n": 3},
        },
        {"id": "r2", "t": 1.0, "type": "return", "agent": "worker", "content": "done"},
    ]
    client = team.client("rev")
    created = client.post(
        "/api/traces/",
        data=json.dumps({"name": "redact", "events": events, "edges": [{"src": "r1", "dst": "r2", "type": "return"}]}),
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    trace_id = created.json()["trace"]["id"]
    stored = {e.event_id: e for e in Event.objects.filter(trace_id=trace_id)}
    assert stored["r1"].content == f"use {REDACTED} and mail {REDACTED}"
    assert stored["r1"].attributes == {"headers": {"auth": REDACTED}, "n": 3}
    assert stored["r2"].content == "done" and stored["r1"].to == "worker"
    # Re-sending the same (unredacted) event is a no-op, not a conflict.
    again = client.post(f"/api/traces/{trace_id}/events/", data=json.dumps(events[:1]), content_type="application/json")
    assert again.status_code == 200 and again.json()["events_added"] == 0


def test_otlp_spans_are_redacted_also_where_they_are_kept_raw(team, fixtures):
    doc = json.loads((fixtures / "otlp_genai_small.json").read_text())
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span.setdefault("attributes", []).append(
        {"key": "gen_ai.prompt", "value": {"stringValue": "ping eve@corp.example.com"}}
    )
    assert (
        team.client("ann").post("/v1/traces", data=json.dumps(doc), content_type="application/json").status_code == 200
    )
    raw = json.dumps(list(StoredSpan.objects.values_list("data", flat=True)))
    assert "eve@corp.example.com" not in raw and REDACTED in raw
    assert not Event.objects.filter(content__contains="eve@corp").exists()


def test_bad_redaction_pattern_is_named():
    from swarmscope.redaction import compile_patterns

    with pytest.raises(ValueError, match=r"pattern 1 \('\(unclosed'\)"):
        compile_patterns([r"ok", "(unclosed"])


def test_real_who_and_when_traces_lose_their_e_mail_addresses_and_nothing_else(team, shared_data):
    import re

    from swarmscope.importers import SourceFile, read_files

    email = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
    files = [
        shared_data / "who-and-when" / "Algorithm-Generated" / "20.json",
        shared_data / "who-and-when" / "Hand-Crafted" / "8.json",
    ]
    for path in files:
        source = path.read_bytes()
        (original,) = read_files([SourceFile(path.name, source)]).traces
        assert any(email.search(e.content or "") for e in original.events), path  # the file has some
        response = team.client("ann").post(
            f"/api/traces/upload/?filename={path.name}", data=source, content_type="application/octet-stream"
        )
        assert response.status_code == 200, response.content
        trace = Trace.objects.get(pk=response.json()["files"][0]["traces"][0]["id"])
        stored = {e.event_id: e for e in Event.objects.filter(trace=trace)}
        assert set(stored) == {e.id for e in original.events}
        for event in original.events:
            row = stored[event.id]
            assert (row.agent, row.type, row.t) == (event.agent, event.type, event.t)
            assert not email.search(row.content or "")
            assert row.content == email.sub(REDACTED, event.content or "") or (
                row.content is None and not event.content
            )


@pytest.mark.parametrize(
    "text, expected",
    [
        ("mail ops@example.org now", f"mail {REDACTED} now"),
        ("a.b+c@ex-ample.co.uk, x@y.io.", f"{REDACTED}, {REDACTED}."),
        ("not an address: @z. or me@host", "not an address: @z. or me@host"),
        ("x" * 5000 + " ops@example.org", "x" * 5000 + f" {REDACTED}"),
        ("x" * 5000 + "@example.org", REDACTED),  # a long local part is still one address
        ("deadbeef" * 1000, "deadbeef" * 1000),
    ],
)
def test_the_default_e_mail_pattern(settings, text, expected):
    # Starts only at the beginning of a run of local-part characters (linear time on long runs
    # without "@": bench/bench_redaction.py), yet matches what the plain pattern matched.
    assert redact_text(text, compile_patterns(settings.SWARMSCOPE_REDACT_PATTERNS)) == expected


def test_redacting_an_event_copies_it_only_where_something_matched(settings, fixtures):
    from swarmscope.importers import SourceFile, read_files
    from swarmscope.redaction import redact_event

    patterns = compile_patterns(settings.SWARMSCOPE_REDACT_PATTERNS)
    (trace,) = read_files([SourceFile("n.json", (fixtures / "native_small.json").read_bytes())]).traces
    clean = trace.events[0]
    assert redact_event(clean, patterns) is clean
    leaky = dataclasses.replace(clean, attributes={"deep": {"list": ["ok", "mail ops@example.org"]}, "n": 1})
    redacted = redact_event(leaky, patterns)
    assert redacted.attributes == {"deep": {"list": ["ok", f"mail {REDACTED}"]}, "n": 1}
    assert leaky.attributes["deep"]["list"][1] == "mail ops@example.org"  # the original is not changed
