"""Cancel on a run that is not active (finished, failed, cancelled) is refused once, in
services.do_request_cancel (RunInputError, field `status`): the page says so and redirects back,
the API answers 409; the run stays as it was."""

from __future__ import annotations

import pytest

from tests.training.conftest import TINY
from webapp.training import services
from webapp.training.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_run(project):
    return services.do_finish(services.do_create_run(project, TINY, external=True), summary={"best": 1.0})


def test_the_service_refuses_to_cancel_a_run_that_is_not_active(project, finished_run):
    failed = services.do_finish(services.do_create_run(project, TINY), status=Run.FAILED, error="worker lost")
    for run in (finished_run, failed):
        seq = Run.objects.get(pk=run.pk).seq
        with pytest.raises(services.RunInputError) as caught:
            services.do_request_cancel(run)
        assert caught.value.field == "status" and run.status in caught.value.message
        assert Run.objects.get(pk=run.pk).seq == seq  # nothing written, nothing broadcast
    cancelling = services.do_create_run(project, TINY)
    services.do_mark_running(cancelling)
    assert services.do_request_cancel(cancelling).status == Run.CANCELLING
    assert services.do_request_cancel(cancelling).status == Run.CANCELLING  # pressed twice: still on its way


def test_the_page_says_a_finished_run_cannot_be_cancelled(client, member, finished_run):
    client.force_login(member)
    response = client.post(f"/runs/{finished_run.pk}/cancel/")
    assert response.status_code == 302 and response["Location"] == f"/runs/{finished_run.pk}/"
    page = client.get(response["Location"]).content.decode()
    assert "the run is finished; only a queued or running run can be cancelled" in page
    assert Run.objects.get(pk=finished_run.pk).status == Run.FINISHED


def test_the_api_answers_409_for_a_finished_run(api_client, finished_run):
    answer = api_client.post(f"/api/runs/{finished_run.pk}/cancel/")
    assert answer.status_code == 409 and answer.json()["field"] == "status"
    assert Run.objects.get(pk=finished_run.pk).status == Run.FINISHED
