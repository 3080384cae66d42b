"""Server-side level of detail (webapp.traces.lod): overview bins, windows, search, the overview
snapshot, access and bad parameters, on a stored synthetic trace whose figures are recomputed here
from the trace itself."""

import math
from collections import Counter

import pytest
from channels.db import database_sync_to_async

from swarmscope import model as core
from tests.live_socket import CheckedCommunicator
from tests.synthetic import synthetic_trace
from webapp.accounts.services import do_add_member, do_create_token, do_get_or_create_project
from webapp.traces import ingest, lod, services

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def stored(project, agents=12, events=900, seed=5):
    trace = synthetic_trace(agents, events, seed=seed)
    trace.source_format, trace.source_id = "native", f"lod-{agents}-{events}-{seed}"
    return trace, ingest.do_ingest(project, trace).trace


def expected_bins(events, bins, lane_of):
    """{lane: {bin: (count, errors, Counter(types))}} by the overview's rule, computed directly."""
    t0, t1 = min(e.t for e in events), max(e.t for e in events)
    width = (t1 - t0) / bins
    cells: dict = {}
    for e in events:
        index = min(math.floor((e.t - t0) / width), bins - 1)
        count, errors, types = cells.setdefault(lane_of(e.agent), {}).get(index, (0, 0, Counter()))
        types[e.type] += 1
        error = e.attributes.get("status") == "error"
        cells[lane_of(e.agent)][index] = (count + 1, errors + error, types)
    return cells


def drawn_bins(overview):
    return {
        lane["name"]: {b: (n, err, Counter(types)) for b, n, err, types in lane["cells"]}
        for lane in overview["lanes"]
        if lane["cells"]
    }


def test_overview_bins_count_each_agents_events_by_time(api_client, project):
    trace, row = stored(project)
    answer = api_client.get(f"/api/traces/{row.pk}/overview/?bins=37")
    assert answer.status_code == 200
    overview = answer.json()
    assert (overview["bins"], overview["grouped_by"], overview["event_count"]) == (37, "agent", len(trace.events))
    assert overview["t0"] == min(e.t for e in trace.events) and overview["t1"] == max(e.t for e in trace.events)
    assert drawn_bins(overview) == expected_bins(trace.events, 37, lambda a: a)
    assert sum(err for lane in overview["lanes"] for _, _, err, _ in lane["cells"]) > 0  # the trace has failures
    assert [lane["name"] for lane in overview["lanes"]] == [a.name for a in trace.agents]


@pytest.mark.parametrize(("max_lanes", "by"), [(10, "role"), (3, "parent")])
def test_many_agents_are_grouped_by_role_else_by_parent(api_client, project, monkeypatch, max_lanes, by):
    trace, row = stored(project, agents=30, events=1200)
    monkeypatch.setattr(lod, "MAX_LANES", max_lanes)
    overview = api_client.get(f"/api/traces/{row.pk}/overview/?bins=20").json()
    agents = {a.name: a for a in trace.agents}
    if by == "role":
        lane_of = lambda name: agents[name].role or lod.NO_ROLE_LANE  # noqa: E731
    else:
        lane_of = lambda name: agents[name].parent or lod.ROOT_LANE  # noqa: E731
    assert overview["grouped_by"] == by
    assert drawn_bins(overview) == expected_bins(trace.events, 20, lane_of)
    members = {lane["name"]: set(lane["agents"]) for lane in overview["lanes"]}
    assert members == {lane: {a for a in agents if lane_of(a) == lane} for lane in map(lane_of, agents)}


def test_window_sends_the_events_of_a_time_range_and_lanes_with_their_edges(api_client, project):
    trace, row = stored(project)
    times = sorted(e.t for e in trace.events)
    t0, t1 = times[200], times[420]
    url = f"/api/traces/{row.pk}/window/?t0={t0}&t1={t1}"
    window = api_client.get(url).json()
    inside = [e for e in trace.events if t0 <= e.t <= t1]
    assert [e["id"] for e in window["events"]] == [e.id for e in sorted(inside, key=lambda e: e.t)]
    assert window["truncated"] is False
    by_id = {e.id: e for e in inside}
    assert window["events"][0] == services.event_wire(
        {**services.event_columns(by_id[window["events"][0]["id"]]), "seq": 1}
    )
    ids = set(by_id)
    assert {(e["src"], e["dst"], e["type"]) for e in window["edges"]} == {
        (e.src, e.dst, e.type) for e in trace.edges if e.src in ids and e.dst in ids
    }
    two = [trace.agents[1].name, trace.agents[2].name]
    lanes = api_client.get(url + "&lanes=" + ",".join(two)).json()
    assert [e["id"] for e in lanes["events"]] == [e["id"] for e in window["events"] if e["agent"] in two]
    limited = api_client.get(url + "&limit=10").json()
    assert limited["truncated"] is True and limited["events"] == window["events"][:10]


def test_search_finds_events_anywhere_bounded(api_client, project):
    trace, row = stored(project)
    word = "conflicting"
    matching = [e for e in trace.events if word in (e.content or "").lower() or word in e.agent.lower()]
    assert matching
    found = api_client.get(f"/api/traces/{row.pk}/search/?q=CONFLICTING&limit=1000").json()
    assert [h["id"] for h in found["hits"]] == [e.id for e in sorted(matching, key=lambda e: e.t)]
    assert found["hits"][0]["t"] == min(e.t for e in matching)
    few = api_client.get(f"/api/traces/{row.pk}/search/?q={word}&limit=2").json()
    assert len(few["hits"]) == 2 and few["truncated"] is (len(matching) > 2)


def test_the_page_snapshot_is_the_overview_only_above_the_threshold(api_client, project, settings):
    trace, row = stored(project)
    full = api_client.get(f"/api/traces/{row.pk}/snapshot/lod/").json()
    assert len(full["events"]) == len(trace.events) and "lod" not in full["trace"]
    settings.SWARMSCOPE_LOD_EVENTS = len(trace.events) - 1
    small = api_client.get(f"/api/traces/{row.pk}/snapshot/lod/?bins=50").json()
    assert small["events"] == [] and small["edges"] == []
    assert [a["name"] for a in small["agents"]] == [a.name for a in trace.agents]
    assert small["trace"]["lod"]["threshold"] == len(trace.events) - 1
    assert small["trace"]["lod"]["overview"] == lod.get_overview(row, 50)


@pytest.mark.django_db(transaction=True)
async def test_the_socket_sends_a_huge_trace_as_its_overview(api_token, project, settings):
    trace, row = await database_sync_to_async(stored)(project, 6, 300)
    settings.SWARMSCOPE_LOD_EVENTS = 100
    ws = CheckedCommunicator("trace", f"/ws/traces/{row.pk}/?token={api_token}")
    connected, _ = await ws.connect()
    assert connected
    snapshot = await ws.receive_json_from(timeout=10)  # checked against the snapshot schema
    assert snapshot["events"] == [] and snapshot["trace"]["lod"]["overview"]["event_count"] == 300
    fragment = core.Trace(source_format=trace.source_format, source_id=trace.source_id)
    fragment.events = [core.Event(id="late", t=1.0, type="message", agent=trace.agents[0].name)]
    await database_sync_to_async(ingest.do_ingest)(project, fragment, trace=row, live=True)
    delta = await ws.receive_json_from(timeout=10)  # deltas are unchanged: the client bins them
    assert delta["type"] == "delta" and [e["id"] for e in delta["events"]] == ["late"]
    await ws.disconnect()


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("window/?t1=3", "t0"),
        ("window/?t0=nan&t1=3", "t0"),
        ("window/?t0=5&t1=3", "t1"),
        ("window/?t0=0&t1=3&limit=0", "limit"),
        ("window/?t0=0&t1=3&limit=many", "limit"),
        ("overview/?bins=0", "bins"),
        ("overview/?bins=99999", "bins"),
        ("search/?q=", "q"),
        ("search/?q=x&limit=-1", "limit"),
    ],
)
def test_bad_parameters_are_refused_naming_them(api_client, project, query, field):
    _, row = stored(project, agents=3, events=60)
    answer = api_client.get(f"/api/traces/{row.pk}/{query}")
    assert answer.status_code == 400 and answer.json()["field"] == field


def test_foreign_and_unknown_traces_look_the_same(client, project, django_user_model):
    _, row = stored(project, agents=3, events=60)
    other = do_get_or_create_project("Elsewhere")
    bob = django_user_model.objects.create_user("bob", password="bob-password-1")
    do_add_member(other, bob, "admin")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {do_create_token(bob, other, 'tests')[1]}"
    for path in ("overview/", "window/?t0=0&t1=9", "search/?q=a", "snapshot/lod/"):
        assert client.get(f"/api/traces/{row.pk}/{path}").status_code == 404
        assert client.get(f"/api/traces/{row.pk + 1000}/{path}").status_code == 404
    client.defaults.pop("HTTP_AUTHORIZATION")
    assert client.get(f"/api/traces/{row.pk}/overview/").status_code == 401
