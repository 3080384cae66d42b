"""The trace list for thousands of traces: facets, sorting, filters in the URL, derived traces
(branches, episodes) hidden by default and counted on their parents, the `kind` backfill, and the
live list socket (`/ws/projects/<id>/traces/`)."""

import importlib
import json
import re
from urllib.parse import parse_qsl

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.apps import apps as django_apps
from django.http import QueryDict

from swarmscope import model as core
from swarmscope.importers import SourceFile
from webapp.config.asgi import application
from webapp.traces import ingest, services
from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]

HEADERS = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


@pytest.fixture
def logged_in(client, member):
    client.force_login(member)
    return client


def make(project, name, *, kind="imported", fmt="native", system="sys-a", reward=None, labels="", events=1, **extra):
    return Trace.objects.create(
        project=project,
        identity_key=f"{fmt}:{name}",
        source_format=fmt,
        source_id=name,
        name=name,
        system=system,
        kind=kind,
        reward=reward,
        label_summary=labels,
        event_count=events,
        **extra,
    )


@pytest.fixture
def listed(project):
    parent = make(
        project, "parent run", fmt="whowhen", system="magentic", reward=1.0, labels="mistake_agent=x", events=9
    )
    other = make(project, "streamed one", kind="streamed", fmt="api", events=3, reward=0.0)
    plain = make(project, "plain import", events=5)
    branches = [
        make(project, f"branch {i}", kind="branch", derived_from=f"trace:{parent.pk}", events=2) for i in range(3)
    ]
    episode = make(project, "episode 0", kind="episode", derived_from="run:7", events=4)
    return {"parent": parent, "other": other, "plain": plain, "branches": branches, "episode": episode}


def names(response) -> list[str]:
    body = response.content.decode()
    return re.findall(r'<a href="/traces/\d+/" data-col="name">([^<]+)</a>', body)


def test_derived_traces_are_hidden_by_default_and_shown_with_kind_branch(logged_in, listed):
    default = logged_in.get("/")
    assert sorted(names(default)) == ["parent run", "plain import", "streamed one"]
    body = default.content.decode()
    assert "3 branches" in body and 'data-testid="hidden-derived"' in body  # chip on the parent, and the notice
    assert f"?kind=branch&amp;from=trace%3A{listed['parent'].pk}" in body
    branches = logged_in.get("/?kind=branch")
    assert sorted(names(branches)) == ["branch 0", "branch 1", "branch 2"]
    assert names(logged_in.get("/?kind=episode")) == ["episode 0"]
    assert sorted(names(logged_in.get(f"/?from=trace:{listed['parent'].pk}"))) == ["branch 0", "branch 1", "branch 2"]
    assert len(names(logged_in.get("/?kind=imported&kind=streamed&kind=branch&kind=episode"))) == 7


def test_facets_filter_and_count_under_the_other_filters(project, listed):
    ids = [project.pk]
    facets = services.list_facets(ids, services.ListFilters())
    kinds = {f["value"]: (f["count"], f["shown"]) for f in facets["kinds"]}
    assert kinds == {"imported": (2, True), "streamed": (1, True), "branch": (3, False), "episode": (1, False)}
    assert {f["value"]: f["count"] for f in facets["formats"]} == {"native": 1, "whowhen": 1, "api": 1}
    assert {f["value"]: f["count"] for f in facets["label"]} == {"yes": 1, "no": 2}
    assert {f["value"]: f["count"] for f in facets["outcome"]} == {"success": 1, "failure": 1, "none": 1}

    only_whowhen = services.ListFilters(formats=("whowhen",))
    assert [t.name for t in services.list_traces(ids, filters=only_whowhen)] == ["parent run"]
    counted = services.list_facets(ids, only_whowhen)
    # a facet's own selection does not narrow its counts; the others' do
    assert {f["value"]: f["count"] for f in counted["formats"]} == {"native": 1, "whowhen": 1, "api": 1}
    assert {f["value"]: f["count"] for f in counted["systems"]} == {"magentic": 1}
    assert [t.name for t in services.list_traces(ids, filters=services.ListFilters(label="yes"))] == ["parent run"]
    assert [t.name for t in services.list_traces(ids, filters=services.ListFilters(outcome="failure"))] == [
        "streamed one"
    ]
    assert [t.name for t in services.list_traces(ids, filters=services.ListFilters(systems=("magentic",)))] == [
        "parent run"
    ]
    derived = services.list_facets(ids, services.ListFilters(kinds=("branch",)))["derived_from"]
    assert [(f["value"], f["count"], f["label"]) for f in derived] == [
        (f"trace:{listed['parent'].pk}", 3, f"branches of trace {listed['parent'].pk}")
    ]


def test_sortable_columns(project, listed, logged_in):
    ids = [project.pk]

    def order(sort):
        return [t.name for t in services.list_traces(ids, filters=services.ListFilters(sort=sort))]

    assert order("-events") == ["parent run", "plain import", "streamed one"]
    assert order("events") == ["streamed one", "plain import", "parent run"]
    assert order("name") == ["parent run", "plain import", "streamed one"]
    assert order("-reward") == ["parent run", "streamed one", "plain import"]  # no reward: last either way
    assert order("reward") == ["streamed one", "parent run", "plain import"]
    page = logged_in.get("/?sort=-events").content.decode()
    assert names(logged_in.get("/?sort=-events")) == ["parent run", "plain import", "streamed one"]
    assert 'aria-sort="descending"' in page and 'href="?sort=events"' in page  # a second click flips it
    assert names(logged_in.get("/?sort=bogus")) == names(logged_in.get("/"))


def test_every_facet_and_sort_round_trips_through_the_url():
    query = (
        "q=plan&session=s1&format=native&format=api&system=x&kind=branch&project=3"
        "&label=yes&outcome=none&from=trace%3A4&sort=-tokens"
    )
    filters = services.ListFilters.from_query(QueryDict(query))
    assert filters.formats == ("native", "api") and filters.kinds == ("branch",) and filters.projects == (3,)
    assert sorted(parse_qsl(filters.urlencode())) == sorted(parse_qsl(query))
    assert services.ListFilters.from_query(QueryDict(filters.urlencode())) == filters
    assert services.ListFilters.from_query(QueryDict("kind=nope&label=maybe&outcome=x&sort=evil")) == (
        services.ListFilters()
    )
    toggled = filters.toggled("formats", "api").toggled("label", "yes")
    assert toggled.formats == ("native",) and toggled.label == ""


def test_page_links_keep_the_filters(logged_in, project):
    for i in range(55):
        make(project, f"t{i:02}", fmt="native")
    body = logged_in.get("/?format=native&sort=name").content.decode()
    assert "?format=native&amp;sort=name&amp;page=2" in body
    second = logged_in.get("/?format=native&sort=name&page=2")
    assert names(second) == [f"t{i}" for i in range(50, 55)]


def test_the_projects_page_links_its_trace_counts_to_the_list_filtered_by_project(logged_in, project, listed):
    """The count links to `?project=<id>`; that filter shows as a chosen facet (its link clears it)
    even for a member of one project, and combines with the other filters."""
    from webapp.accounts.services import do_get_or_create_project

    make(do_get_or_create_project("Not theirs"), "foreign run")
    page = logged_in.get("/projects/").content.decode()
    link = re.search(r'<a href="/\?project=(\d+)" data-testid="project-traces">', page)
    assert link and int(link[1]) == project.pk
    body = logged_in.get(f"/?project={project.pk}").content.decode()
    facet = body.split('data-testid="facet-project"')[1].split("</div>")[0]
    assert 'data-facet="project"' in facet and 'aria-current="true"' in facet and 'href="?"' in facet
    assert sorted(names(logged_in.get(f"/?project={project.pk}"))) == ["parent run", "plain import", "streamed one"]
    assert names(logged_in.get(f"/?project={project.pk}&format=api")) == ["streamed one"]


def test_ingest_sets_kind_where_traces_are_created(project, fixtures):
    data = (fixtures / "native_small.json").read_bytes()
    [outcome] = ingest.do_import_sources(project, [SourceFile("n.json", data)])
    assert outcome.traces[0].kind == "imported" and outcome.traces[0].derived_from == ""
    live = ingest.do_ingest(project, core.Trace(source_format="api", source_id="live-1"), live=True).trace
    assert live.kind == "streamed"
    branch = ingest.do_ingest(
        project, core.Trace(source_format="sim", source_id="b-1"), kind="branch", derived_from="trace:1"
    ).trace
    assert (branch.kind, branch.derived_from) == ("branch", "trace:1")
    doc = json.loads(data)
    doc["source_id"] = "run-9/episode"
    [episode] = ingest.do_import_sources(
        project, [SourceFile("e.json", json.dumps(doc).encode())], kind="episode", derived_from="run:9"
    )
    assert (episode.traces[0].kind, episode.traces[0].derived_from) == ("episode", "run:9")


def test_kind_backfill_migration(project, django_user_model):
    from webapp.counterfactuals.models import CounterfactualJob, RolloutSample
    from webapp.training.models import Run, RunIteration

    parent = make(project, "parent")
    branch = make(project, "branch")
    episode = make(project, "episode")
    api = make(project, "api", fmt="api")
    streamed = make(project, "sample stream", fmt="native", last_event_at="2026-01-01T00:00:00Z")
    plain = make(project, "plain")
    correct = make(project, "correct", attributes={"is_correct": True})
    job = CounterfactualJob.objects.create(
        trace=parent, intervention={}, backend="sim", backend_path="x", n_samples=1, heartbeat_at="2026-01-01T00:00:00Z"
    )
    RolloutSample.objects.create(job=job, index=0, seed=0, branch_trace=branch)
    run = Run.objects.create(project=project, name="r", config={}, seed_group="g")
    RunIteration.objects.create(run=run, iteration=0, env_steps=1).episodes.set([episode])
    Trace.objects.update(kind="imported", derived_from="", outcome="")  # as stored before the columns

    migration = importlib.import_module("webapp.traces.migrations.0005_trace_kind")
    migration.backfill_kind(django_apps, None)
    kinds = {t.name: (t.kind, t.derived_from) for t in Trace.objects.all()}
    assert kinds[branch.name] == ("branch", f"trace:{parent.pk}")
    assert kinds[episode.name] == ("episode", f"run:{run.pk}")
    assert kinds[api.name] == kinds[streamed.name] == ("streamed", "")
    assert kinds[plain.name] == kinds[parent.name] == ("imported", "")
    assert Trace.objects.get(pk=correct.pk).outcome == "success" and Trace.objects.get(pk=plain.pk).outcome == ""


def test_facet_counts_are_bounded(project):
    for i in range(services.FACET_LIMIT + 5):
        make(project, f"s{i}", system=f"system-{i:02}")
    systems = services.list_facets([project.pk], services.ListFilters())["systems"]
    assert len(systems) == services.FACET_LIMIT


# --- the live list ------------------------------------------------------------------------------


@database_sync_to_async
def stream(project, source_id, events=()):
    fragment = core.Trace(source_format="api", source_id=source_id, name=source_id)
    fragment.events = [core.event_from_dict(e) for e in events]
    return ingest.do_ingest(project, fragment, live=True).trace


@database_sync_to_async
def append(trace, events):
    fragment = core.Trace(source_format=trace.source_format, source_id=trace.source_id)
    fragment.events = [core.event_from_dict(e) for e in events]
    return ingest.do_ingest(trace.project, fragment, trace=trace, live=True).trace


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
async def test_the_list_socket_sends_new_traces_and_changed_counts_then_resumes(project, api_token):
    seq = await database_sync_to_async(services.list_seq)(project.pk)
    ws = WebsocketCommunicator(application, f"/ws/projects/{project.pk}/traces/?token={api_token}&seq={seq}", HEADERS)
    connected, _ = await ws.connect()
    assert connected
    trace = await stream(project, "live-list-1")
    created = await ws.receive_json_from(timeout=10)
    assert created["type"] == "delta" and created["project"] == project.pk and created["seq"] > seq
    [row] = created["traces"]
    assert (row["id"], row["kind"], row["event_count"], row["live"]) == (trace.pk, "streamed", 0, True)
    assert 0 < row["live_for_s"] <= services.LIVE_WINDOW_S

    await append(trace, [{"id": f"e{i}", "t": i, "type": "message", "agent": "a"} for i in range(4)])
    grown = await ws.receive_json_from(timeout=10)
    assert grown["traces"][0]["event_count"] == 4 and grown["seq"] > created["seq"]
    assert grown["traces"][0]["seq"] > row["seq"]

    await ws.send_json_to({"type": "resume", "seq": seq})
    resumed = await ws.receive_json_from(timeout=10)
    assert resumed["type"] == "delta" and [r["id"] for r in resumed["traces"]] == [trace.pk]
    assert resumed["traces"][0]["event_count"] == 4
    await ws.disconnect()

    fresh = WebsocketCommunicator(application, f"/ws/projects/{project.pk}/traces/?token={api_token}", HEADERS)
    await fresh.connect()
    snapshot = await fresh.receive_json_from(timeout=10)
    assert snapshot["type"] == "snapshot" and [r["id"] for r in snapshot["traces"]] == [trace.pk]
    await fresh.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
async def test_the_list_socket_refuses_other_projects(project, api_token):
    from webapp.accounts.services import do_get_or_create_project

    other = await database_sync_to_async(do_get_or_create_project)("Someone else's")
    ws = WebsocketCommunicator(application, f"/ws/projects/{other.pk}/traces/?token={api_token}", HEADERS)
    await ws.connect()
    assert (await ws.receive_output(timeout=10))["type"] == "websocket.close"
    await ws.disconnect()


def test_a_trace_goes_off_live_after_the_window(project):
    from datetime import timedelta

    from django.utils import timezone

    old = make(project, "old stream", kind="streamed", last_event_at=timezone.now() - timedelta(seconds=60))
    row = services.list_row(old)
    assert row["live"] is False and row["live_for_s"] == 0
