"""The bundled sample data: `manage.py load_samples` and the trace list's "Load sample data"."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from webapp.accounts.models import Membership, Project
from webapp.accounts.services import do_add_member, do_get_or_create_project
from webapp.traces import samples
from webapp.traces.models import Trace

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def live_stream_at_once(settings):
    """Live episodes written at once, in the caller (no thread on the test database)."""
    settings.SWARMSCOPE_SAMPLE_STREAM_S = 0


def _state():
    return sorted(
        Trace.objects.filter(project__name=samples.SAMPLES_PROJECT).values_list("pk", "identity_key", "event_count")
    )


def test_the_bundled_set_has_every_promised_format_and_a_readme_naming_each_file():
    formats = {"native", "otlp", "claude_code", "whowhen"}
    sources = samples.sample_sources()
    readme = (samples.SAMPLES_DIR / "README.md").read_text()
    assert sources and not any(s.name.endswith(".md") for s in sources)
    for source in sources:
        assert source.name.removeprefix("samples/") in readme, f"{source.name} has no row in samples/README.md"
    assert "Licence" in readme and "Source" in readme
    report = samples.do_load_samples(stream=False)
    assert {t.source_format for t in report.imported} == formats


def test_load_samples_imports_every_bundled_file_without_error_and_streams_the_live_suite(django_user_model):
    admin = django_user_model.objects.create_superuser("admin", password="admin-password-1")
    out = io.StringIO()
    call_command("load_samples", stdout=out, stderr=io.StringIO())
    text = out.getvalue()
    assert "failed" not in text
    project = Project.objects.get(name=samples.SAMPLES_PROJECT)
    assert Membership.objects.get(project=project, user=admin).role == Membership.Role.ADMIN
    traces = Trace.objects.filter(project=project)
    imported = traces.exclude(source_format="api")
    assert imported.count() == 4 and all(t.event_count > 0 for t in imported)
    live = traces.filter(source_format="api")
    assert live.count() == len(samples.LIVE_EPISODES)
    assert all(t.event_count >= 20 and t.system == "swarmsim" and t.kind == Trace.STREAMED for t in live)
    # each stream was closed at its end: no Live badge waits for the idle time
    assert all(t.last_event_at is None and t.seq > 1 for t in live)
    assert "pivot-12" in text and "sample traces are in the project Samples" in text


def test_load_samples_is_idempotent_but_for_restarting_the_live_traces(django_user_model):
    django_user_model.objects.create_superuser("admin", password="admin-password-1")
    call_command("load_samples", stdout=io.StringIO())
    first = _state()
    imported_first = [row for row in first if not row[1].startswith("api:")]
    out = io.StringIO()
    call_command("load_samples", stdout=out)
    second = _state()
    assert [row for row in second if not row[1].startswith("api:")] == imported_first  # same rows, nothing new
    assert "already stored, nothing new" in out.getvalue()
    # the live traces were emptied in place and streamed again: same ids (open links stay valid)
    assert second == first
    live = Trace.objects.filter(project__name=samples.SAMPLES_PROJECT, source_format="api")
    assert all(t.reset_seq > 0 and t.last_event_at is None for t in live)  # rebuilt (viewers reload), closed
    ids = ", ".join(str(t.pk) for t in live.order_by("pk"))
    assert f"Wrote the SwarmSim pivot-12 traces {ids}." in out.getvalue()
    assert Project.objects.filter(name=samples.SAMPLES_PROJECT).count() == 1


def test_a_rerun_keeps_a_live_sample_trace_with_user_work_and_its_jobs(django_user_model):
    """A counterfactual job and a mistake label on a live sample trace survive `load_samples` run
    again: that trace is kept (same row, same events); the untouched live traces are restreamed."""
    from webapp.counterfactuals.models import CounterfactualJob
    from webapp.review.models import MistakeLabel

    admin = django_user_model.objects.create_superuser("admin", password="admin-password-1")
    call_command("load_samples", stdout=io.StringIO())
    worked, *untouched = Trace.objects.filter(project__name=samples.SAMPLES_PROJECT, source_format="api").order_by("pk")
    job = CounterfactualJob.objects.create(
        trace=worked, intervention={}, backend="sim", backend_path="x", n_samples=1, heartbeat_at="2026-01-01T00:00:00Z"
    )
    MistakeLabel.objects.create(trace=worked, reviewer=admin, agent="a", event_id="e1")
    out = io.StringIO()
    call_command("load_samples", stdout=out)
    again = Trace.objects.get(pk=worked.pk)
    assert again.event_count == worked.event_count and again.last_event_at is None  # kept whole, and closed
    assert CounterfactualJob.objects.filter(pk=job.pk, trace=again).exists()
    assert MistakeLabel.objects.filter(trace=again).count() == 1
    live = Trace.objects.filter(project__name=samples.SAMPLES_PROJECT, source_format="api")
    assert sorted(live.values_list("pk", flat=True)) == sorted(t.pk for t in [worked, *untouched])
    assert again.reset_seq == 0 and all(t.reset_seq > 0 for t in live.exclude(pk=worked.pk))  # only those restreamed
    text = out.getvalue()
    assert f"Wrote the SwarmSim pivot-12 traces {', '.join(str(t.pk) for t in untouched)}." in text
    assert f"trace {worked.pk} has work done on it and stays as it was" in text


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
async def test_a_restart_sends_an_open_viewer_of_a_live_sample_trace_a_fresh_snapshot(member):
    """The viewer of a live sample trace stays on it across a restart: the row is emptied in place,
    so its socket gets a new snapshot, then the deltas of the stream that refills it."""
    from channels.db import database_sync_to_async

    from tests.live_socket import CheckedCommunicator
    from webapp.accounts.services import do_create_token

    report = await database_sync_to_async(samples.do_load_samples)(member)
    trace = report.live.traces[0]
    token = (await database_sync_to_async(do_create_token)(member, report.project, "tests"))[1]
    viewer = CheckedCommunicator("trace", f"/ws/traces/{trace.pk}/?token={token}")
    assert (await viewer.connect())[0]
    before = await viewer.receive_json_from(timeout=10)
    assert before["type"] == "snapshot" and before["trace"]["event_count"] > 0

    await database_sync_to_async(samples.do_restart_live_stream)(report.project, seconds=0)
    final = await database_sync_to_async(Trace.objects.get)(pk=trace.pk)
    first = await viewer.receive_json_from(timeout=10)
    assert first["type"] == "snapshot" and first["seq"] > before["seq"]
    seq = first["seq"]
    while seq < final.seq:
        seq = (await viewer.receive_json_from(timeout=10))["seq"]
    assert seq == final.seq and final.event_count == before["trace"]["event_count"]
    await viewer.disconnect()


def test_load_samples_no_stream_and_an_unknown_user():
    call_command("load_samples", "--no-stream", stdout=io.StringIO())
    assert not Trace.objects.filter(source_format="api").exists()
    with pytest.raises(Exception, match="no user named 'nobody'"):
        call_command("load_samples", "--user", "nobody", stdout=io.StringIO())


def test_the_live_stream_runs_in_a_bounded_background_thread(monkeypatch, project):
    """With seconds > 0 the stream is a daemon thread that ends by itself; stop() ends it early."""
    sent, closed = [], []
    monkeypatch.setattr(samples.LiveStream, "_send", lambda self, live, positions: sent.append(len(positions)))
    monkeypatch.setattr(samples.LiveStream, "_close", lambda self, live: closed.append(live.trace.pk))
    monkeypatch.setattr(samples.ingest, "request_metrics", lambda trace: None)
    live = samples.LiveStream(project, seconds=0.5).start()
    assert live.thread.daemon
    assert live.wait(timeout=20)
    total = sum(len(e.payload) for e in live.episodes)
    assert sum(sent) == total and len(sent) > 1  # in several batches over time, not one
    assert sorted(closed) == sorted(t.pk for t in live.traces)  # then each stream is closed
    sent.clear()
    slow = samples.LiveStream(project, seconds=60).start()
    slow.stop()
    assert not slow.thread.is_alive() and sum(sent) < total


def test_the_empty_trace_list_offers_load_sample_data_to_writers(client, member):
    client.force_login(member)
    page = client.get(reverse("trace-list")).content.decode()
    assert 'data-testid="load-samples"' in page and "Load sample data</button>" in page
    assert "disabled" not in page.split('data-testid="load-samples"')[1].split("</form>")[0]


def test_load_sample_data_posts_import_and_redirect_with_a_message(client, member):
    client.force_login(member)
    response = client.post(reverse("load-samples"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("trace-list")
    page = response.content.decode()
    assert "sample traces are in the project Samples" in page
    assert "Sample: release notes" in page
    project = Project.objects.get(name=samples.SAMPLES_PROJECT)
    assert Membership.objects.get(project=project, user=member).role == Membership.Role.ADMIN
    assert Trace.objects.filter(project=project).count() == 4 + len(samples.LIVE_EPISODES)
    # again: nothing new, the live traces restarted
    client.post(reverse("load-samples"))
    assert Trace.objects.filter(project=project).count() == 4 + len(samples.LIVE_EPISODES)


def test_load_sample_data_needs_the_write_role(client, django_user_model):
    viewer = django_user_model.objects.create_user("vic", password="vic-password-1")
    do_add_member(do_get_or_create_project("Viewed"), viewer, Membership.Role.VIEWER)
    client.force_login(viewer)
    page = client.get(reverse("trace-list")).content.decode()
    form = page.split('data-testid="load-samples"')[1].split("</form>")[0]
    assert "disabled" in form and samples.LOAD_REFUSED in form  # disabled, with the reason
    response = client.post(reverse("load-samples"))
    assert response.status_code == 403
    assert "reviewer or admin" in response.content.decode()
    assert not Project.objects.filter(name=samples.SAMPLES_PROJECT).exists()
    assert client.get(reverse("load-samples")).status_code == 405
    client.logout()
    assert client.post(reverse("load-samples")).status_code == 302  # to the login page
    assert not Trace.objects.exists()


def test_a_second_writer_joins_the_samples_project_as_reviewer(client, member, django_user_model):
    samples.do_load_samples(member, stream=False)
    bob = django_user_model.objects.create_user("bob", password="bob-password-1")
    do_add_member(do_get_or_create_project("Bob's"), bob, Membership.Role.REVIEWER)
    client.force_login(bob)
    client.post(reverse("load-samples"))
    project = Project.objects.get(name=samples.SAMPLES_PROJECT)
    assert Membership.objects.get(project=project, user=bob).role == Membership.Role.REVIEWER
    assert Membership.objects.get(project=project, user=member).role == Membership.Role.ADMIN


def test_the_token_page_has_copy_paste_snippets_for_the_client_and_opentelemetry(client, member, project):
    client.force_login(member)
    page = client.get(reverse("tokens")).content.decode()
    for text in (
        "export SWARMSCOPE_URL=http://testserver",
        "export SWARMSCOPE_API_KEY=ssk_...",
        "from swarmscope.client import Client",
        "from swarmscope_client import register",
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://testserver/",
        "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
        "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20ssk_...",
        'data-copy="snippet-otel-env"',
        "js/pages/copy_buttons.js",
    ):
        assert text in page, text
    response = client.post(reverse("tokens"), {"name": "ci", "project": project.pk}, follow=True)
    raw = response.context["raw_token"]
    assert f"SWARMSCOPE_API_KEY={raw}" in response.content.decode()
    assert f"Authorization=Bearer%20{raw}" in response.content.decode()
