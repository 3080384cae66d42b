"""A branch trace's identity holds what it was sampled with (issue 29): a counterfactual job
repeated with the same trace, intervention and seed but other sampling settings stores its own
branch trace, and the same job twice stores one. Against FakeOpenAIServer, whose answers depend
on the temperature and max_tokens as a real model's do."""

import pytest
from django.test import override_settings

from swarmscope.interventions import Intervention, branch_source_id
from tests.counterfactuals.test_openai_backend import BACKENDS, run_all
from tests.fake_openai import FakeOpenAIServer
from tests.trainer.rollout.test_openai import answer, make_trace
from webapp.counterfactuals import services
from webapp.traces.ingest import do_ingest
from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]
REMOVE = {"kind": "remove", "events": ["h2"]}


def sampled(body):
    """`answer`, with what a real model's text depends on besides the prompt and seed; a verdict
    where the verifier asks."""
    if body["messages"][0]["content"].startswith("You are a strict verifier"):
        return '{"correct": true}'
    return f"{answer(body)} (t={body['temperature']}, cap={body['max_tokens']})"


@pytest.fixture
def fake(monkeypatch):
    with FakeOpenAIServer(sampled) as server:
        monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", "fake-model")
        monkeypatch.setenv("SWARMSCOPE_OPENAI_RETRY_BASE_S", "0.01")
        yield server


def branch_of(job):
    assert job.status == "done", job.error
    return job.samples.get(index=0).branch_trace


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=2)
@pytest.mark.parametrize(
    "setting, first, second",
    [
        ("SWARMSCOPE_OPENAI_TEMPERATURE", "1.0", "0.7"),
        ("SWARMSCOPE_OPENAI_MAX_TOKENS", "512", "64"),
        ("SWARMSCOPE_OPENAI_MODEL", "fake-model", "other-model"),
    ],
)
def test_a_job_repeated_with_other_sampling_settings_stores_its_own_branch(
    project, fake, monkeypatch, setting, first, second
):
    trace = do_ingest(project, make_trace()).trace
    monkeypatch.setenv(setting, first)
    one = branch_of(run_all(services.request_counterfactual(trace, REMOVE, 2, backend="openai", seed=3)))
    monkeypatch.setenv(setting, second)
    other = branch_of(run_all(services.request_counterfactual(trace, REMOVE, 2, backend="openai", seed=3)))
    assert one.pk != other.pk and one.source_id != other.source_id
    key = setting.removeprefix("SWARMSCOPE_OPENAI_").lower()
    shown = {one.attributes["sampling"][key], other.attributes["sampling"][key]}
    assert {str(v) for v in shown} == {first, second}
    assert one.source_id.startswith("t1/remove(event:h2)/seed-3/s-")


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=2)
def test_the_same_job_twice_and_a_redelivered_chunk_keep_one_branch(project, fake):
    trace = do_ingest(project, make_trace()).trace
    job = run_all(services.request_counterfactual(trace, REMOVE, 4, backend="openai", seed=3))
    branch = branch_of(job)
    job.samples.filter(index__lt=2).delete()  # the first chunk delivered again: its samples re-run
    job.status = "running"
    job.save(update_fields=["status"])
    assert services.do_run_chunk(job.pk, 0, 2) == 2
    job.refresh_from_db()
    again = branch_of(run_all(services.request_counterfactual(trace, REMOVE, 4, backend="openai", seed=3)))
    assert branch_of(job).pk == again.pk == branch.pk
    assert Trace.objects.filter(kind="branch").count() == 1


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=2)
def test_verifier_scoring_and_another_replacement_text_are_other_branches(project, fake):
    core = make_trace()
    trace = do_ingest(project, core).trace
    by = {
        backend: branch_of(run_all(services.request_counterfactual(trace, REMOVE, 2, backend=backend)))
        for backend in ("openai", "openai-verifier")
    }
    assert by["openai"].pk != by["openai-verifier"].pk
    assert by["openai-verifier"].attributes["sampling"]["scoring"] == "verifier"
    texts = [
        branch_of(
            run_all(services.request_counterfactual(trace, {**REMOVE, "kind": "replace", "text": t}, 2, "openai"))
        )
        for t in ("41", "42")
    ]
    assert texts[0].pk != texts[1].pk


def test_the_branch_id_is_the_readable_form_then_a_digest_of_what_else_was_sampled():
    remove = Intervention("remove", ("h2",))
    assert branch_source_id("t1", remove, 3) == "t1/remove(event:h2)/seed-3"  # SwarmSim: nothing else
    ids = {branch_source_id("t1", remove, 3, {"temperature": t}) for t in (0.7, 1.0)}
    assert len(ids) == 2 and all(i.startswith("t1/remove(event:h2)/seed-3/s-") for i in ids)
    assert branch_source_id("t1", remove, 3, {"a": 1, "b": 2}) == branch_source_id("t1", remove, 3, {"b": 2, "a": 1})
    many = Intervention("remove", tuple(f"event-{i:04d}" for i in range(60)))
    long_id = branch_source_id("t1", many, 3)
    assert len(long_id) <= 300 and "/s-" in long_id
    assert long_id != branch_source_id("t1", Intervention("remove", tuple(f"event-{i:04d}" for i in range(61))), 3)


@override_settings(SWARMSCOPE_ROLLOUT_BACKENDS=BACKENDS, SWARMSCOPE_ROLLOUT_CHUNK=2)
def test_the_branch_page_says_what_it_was_sampled_with(client, member, project, fake, monkeypatch):
    monkeypatch.setenv("SWARMSCOPE_OPENAI_TEMPERATURE", "0.7")
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MAX_TOKENS", "64")
    trace = do_ingest(project, make_trace()).trace
    branch = branch_of(run_all(services.request_counterfactual(trace, REMOVE, 2, backend="openai")))
    client.force_login(member)
    page = client.get(f"/traces/{branch.pk}/").content.decode()
    assert 'data-testid="origin-sampling"' in page
    assert "sampled with model fake-model, temperature 0.7, max_tokens 64, max_turns all" in page
