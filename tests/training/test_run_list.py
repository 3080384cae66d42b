"""`/ws/projects/<id>/runs/` (webapp.training.consumers.RunListConsumer): the runs list hears of
each run created in the project after commit, catches up from `?seq=N` (the newest run id the
page was rendered with) with the runs it missed, and refuses non-members; the page hands it that
seq."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import transaction

from tests.live_socket import HEADERS
from tests.training.conftest import TINY
from webapp.accounts.services import do_get_or_create_project
from webapp.config.asgi import application
from webapp.training import services

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.timeout(60)]


def connect(project_id, token, query=""):
    return WebsocketCommunicator(application, f"/ws/projects/{project_id}/runs/?token={token}{query}", HEADERS)


create = database_sync_to_async(services.do_create_run)


async def test_a_created_run_reaches_the_list_after_commit_and_a_reconnect_gets_what_it_missed(project, api_token):
    first = await create(project, TINY, name="before the page")
    ws = connect(project.pk, api_token, f"&seq={first.pk}")
    assert (await ws.connect())[0]
    assert await ws.receive_nothing(timeout=0.3), "nothing new since the page's seq"

    run = await create(project, {**TINY, "seed": 1}, name="new one")
    delta = await ws.receive_json_from(timeout=10)
    assert delta["type"] == "delta" and delta["seq"] == run.pk and delta["project"] == project.pk
    (row,) = delta["runs"]
    assert (row["id"], row["name"], row["status"], row["seed_group"]) == (run.pk, "new one", "queued", run.seed_group)

    # a run whose transaction rolls back is never announced
    @database_sync_to_async
    def rolled_back():
        with pytest.raises(RuntimeError), transaction.atomic():
            services.do_create_run(project, {**TINY, "seed": 2})
            raise RuntimeError("rolled back")

    await rolled_back()
    assert await ws.receive_nothing(timeout=0.5)
    await ws.disconnect()

    missed = [await create(project, {**TINY, "seed": s}, external=True) for s in (3, 4)]
    again = connect(project.pk, api_token, f"&seq={run.pk}")
    assert (await again.connect())[0]
    caught_up = await again.receive_json_from(timeout=10)
    assert caught_up["type"] == "delta" and caught_up["seq"] == missed[-1].pk
    assert [(r["id"], r["status"]) for r in caught_up["runs"]] == [(m.pk, "running") for m in missed]
    await again.disconnect()


async def test_without_a_seq_the_snapshot_holds_the_newest_runs_and_other_projects_are_refused(project, api_token):
    runs = [await create(project, {**TINY, "seed": s}) for s in range(3)]
    ws = connect(project.pk, api_token)
    assert (await ws.connect())[0]
    snapshot = await ws.receive_json_from(timeout=10)
    assert snapshot["type"] == "snapshot" and snapshot["seq"] == runs[-1].pk
    assert [r["id"] for r in snapshot["runs"]] == [r.pk for r in runs]
    await ws.disconnect()

    other = await database_sync_to_async(do_get_or_create_project)("Not theirs")
    refused = connect(other.pk, api_token)
    await refused.connect()
    assert (await refused.receive_output(timeout=5))["type"] == "websocket.close"


def test_the_runs_page_hands_each_project_socket_its_newest_run_id(project, member, client):
    run = services.do_create_run(project, TINY)
    client.force_login(member)
    page = client.get("/runs/")
    config = json.loads(page.content.decode().split('id="runs-list-live" type="application/json">')[1].split("<")[0])
    assert config["sockets"] == [{"project": project.pk, "url": f"/ws/projects/{project.pk}/runs/", "seq": run.pk}]
    assert config["group"] == "" and config["max_rows"] == 200
