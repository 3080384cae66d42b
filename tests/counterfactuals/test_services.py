"""Counterfactual jobs through the services and the task bodies, called directly (no broker)."""

import pytest
from django.test import override_settings

from swarmscope.credit import paired_effect
from swarmscope.interventions import Intervention
from swarmscope.protocol_schema import validate_message
from trainer.rollout.sim import SimRollout
from webapp.counterfactuals import services, tasks
from webapp.counterfactuals.models import Attribution, CounterfactualJob, RolloutSample
from webapp.counterfactuals.wire import job_wire
from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def run_all(job):
    """Every chunk of the job, as a worker would run them."""
    for start, stop in services._missing_chunks(job):
        tasks.run_counterfactual_chunk(job.pk, start, stop)
    job.refresh_from_db()
    return job


def test_a_job_stores_its_samples_and_the_paired_delta(sim_trace, pivotal, case):
    job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 32, seed=5)
    assert job.status == "queued" and job.heartbeat_at is not None
    job = run_all(job)
    assert job.status == "done" and job.done_count == 32
    samples = list(job.samples.order_by("index"))
    assert [s.seed for s in samples] == list(range(5, 37))
    expected = paired_effect(SimRollout(case.episode), Intervention("remove", (pivotal,)), 32, first_seed=5)
    attribution = Attribution.objects.get(job=job)
    assert (attribution.estimate, attribution.ci_low, attribution.ci_high) == pytest.approx(
        (expected.estimate, expected.ci_low, expected.ci_high)
    )
    assert attribution.n_rollouts == 64 and attribution.method == "paired_loo"
    assert attribution.target == f"event:{pivotal}" and attribution.seed == 5
    assert attribution.backend == "trainer.rollout.sim.SimRollout"
    assert set(attribution.environment) == {"task", "action_list", "sim_config", "seed"}
    assert len(attribution.code_version) >= 7


def test_the_branch_trace_of_sample_0_is_stored_in_the_project(sim_trace, pivotal):
    job = run_all(services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 8))
    wire = job_wire(job)
    branch = Trace.objects.get(pk=wire["branch_trace"])
    assert branch.project_id == sim_trace.project_id and branch.attributes["fork_event"] == pivotal
    assert not branch.events.filter(event_id=pivotal).exists()
    assert wire["compare_url"] == f"/traces/compare/?left={sim_trace.pk}&right={branch.pk}"
    assert len(wire["samples"]) == 8 and wire["result"]["estimate"] == job.attribution.estimate


def test_recording_a_sample_twice_counts_it_once(sim_trace, pivotal):
    job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 4)
    sample = services.SampleResult(0, 0, 1.0, 0.0)
    assert services.do_record_samples(job, [sample]) == 1
    assert services.do_record_samples(job, [sample, services.SampleResult(1, 1, 1.0, 1.0)]) == 1
    job.refresh_from_db()
    assert job.done_count == 2 and RolloutSample.objects.filter(job=job).count() == 2


def test_a_redelivered_chunk_changes_nothing(sim_trace, pivotal):
    job = run_all(services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 16))
    before = list(job.samples.order_by("index").values_list("index", "control_reward", "intervention_reward"))
    assert tasks.run_counterfactual_chunk(job.pk, 0, 8) == 0
    assert list(job.samples.order_by("index").values_list("index", "control_reward", "intervention_reward")) == before
    assert Attribution.objects.filter(job=job).count() == 1


def test_epsilon_stops_once_the_interval_is_narrow_enough(sim_trace, case):
    null = next(f"message:{case.episode.actions[c].item}" for c, k in zip(case.candidates, case.kinds) if k == "null")
    job = run_all(services.request_counterfactual(sim_trace, {"kind": "remove", "events": [null]}, 64, epsilon=0.5))
    # every pair equal: Tango's interval is ±3.84 / (n + 3.84), narrower than 0.5 from n = 12, and
    # the stop waits for EPSILON_MIN_SAMPLES = 16 (two chunks of 8)
    assert job.status == "done" and job.done_count == 16
    assert job.attribution.n_rollouts == 32 and job.attribution.estimate == 0
    assert job.attribution.ci_low < 0 < job.attribution.ci_high


def test_epsilon_never_reports_a_zero_width_interval_for_a_real_effect(sim_trace, case, pivotal):
    """The pivotal message (Δ = 0.30) at a seed whose first chunk of 8 pairs all agree: the stop
    used to end the job there with "Δ = 0, 95 % CI [0, 0]"."""
    rollout, removal = SimRollout(case.episode), Intervention("remove", (pivotal,))
    seed = next(s for s in range(0, 4000, 8) if not paired_effect(rollout, removal, 8, s).samples.any())
    job = services.request_counterfactual(
        sim_trace, {"kind": "remove", "events": [pivotal]}, 256, seed=seed, epsilon=0.5
    )
    job = run_all(job)
    result = job.attribution
    assert job.status == "done" and job.done_count >= 16 and result.ci_high - result.ci_low > 0
    expected = paired_effect(rollout, removal, job.done_count, seed)
    assert (result.estimate, result.ci_low, result.ci_high) == pytest.approx(
        (expected.estimate, expected.ci_low, expected.ci_high)
    )


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"intervention": {"kind": "remove"}}, "intervention.events"),
        ({"intervention": {"kind": "explode", "events": ["x"]}}, "intervention.kind"),
        ({"intervention": {"kind": "remove", "events": ["nope"]}}, "intervention.events"),
        ({"intervention": {"kind": "remove", "events": ["delegate:0"]}}, "intervention.events"),
        ({"n": 1}, "n"),
        ({"n": "8"}, "n"),
        ({"seed": -1}, "seed"),
        ({"epsilon": 0}, "epsilon"),
        ({"backend": "gpt"}, "backend"),
    ],
)
def test_requests_that_cannot_run_name_their_field(sim_trace, pivotal, kwargs, field):
    arguments = {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 8, **kwargs}
    with pytest.raises(services.JobRequestError) as raised:
        services.request_counterfactual(sim_trace, **arguments)
    assert raised.value.field == field
    assert not CounterfactualJob.objects.exists()


def test_a_trace_that_is_not_swarmsim_cannot_be_rerun(project, fixtures):
    import json

    from swarmscope import model as core
    from webapp.traces.ingest import do_ingest

    trace = do_ingest(project, core.trace_from_dict(json.loads((fixtures / "native_small.json").read_text()))).trace
    message = trace.events.filter(type="message").first()
    with pytest.raises(services.JobRequestError, match="cannot re-run") as raised:
        services.request_counterfactual(trace, {"kind": "remove", "events": [message.event_id]}, 8)
    assert raised.value.field == "backend"


def test_cancel_stops_the_chunks_and_retry_completes_with_the_stored_samples(sim_trace, pivotal):
    job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 16)
    tasks.run_counterfactual_chunk(job.pk, 0, 8)
    assert services.do_cancel_job(job).status == "cancelled"
    assert tasks.run_counterfactual_chunk(job.pk, 8, 16) == 0
    assert services.do_retry_job(job).status == "queued"
    assert services._missing_chunks(job) == [(8, 16)]
    job = run_all(job)
    assert job.status == "done" and job.done_count == 16


def test_a_backend_error_fails_the_job_with_its_reason_and_stores_nothing(sim_trace, pivotal, monkeypatch):
    job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 8)

    def broken(self, intervention, seeds, traces=False):
        raise RuntimeError("the simulator exploded")

    monkeypatch.setattr(SimRollout, "paired", broken)
    assert tasks.run_counterfactual_chunk(job.pk, 0, 8) == 0
    job.refresh_from_db()
    # an exception nobody mapped: its class in words, the traceback (with its text) in the worker log only
    assert job.status == "failed" and job.error == "The backend failed: RuntimeError; see the worker log."
    assert not job.samples.exists()


@override_settings(SWARMSCOPE_ROLLOUT_CHUNK=4)
def test_the_reaper_requeues_only_the_missing_chunks_of_stale_jobs(
    sim_trace, pivotal, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr(tasks.run_counterfactual_chunk, "apply_async", lambda args, queue: sent.append((args, queue)))
    with django_capture_on_commit_callbacks(execute=True):
        job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 12)
    p = sim_trace.project_id  # chunk tasks carry the project they were requested in, to re-check it
    assert sent == [
        ((job.pk, 0, 4, p), "rollouts-cpu"),
        ((job.pk, 4, 8, p), "rollouts-cpu"),
        ((job.pk, 8, 12, p), "rollouts-cpu"),
    ]
    tasks.run_counterfactual_chunk(job.pk, 4, 8)
    sent.clear()
    assert services.reap_stale_jobs(max_age_s=3600) == []
    with django_capture_on_commit_callbacks(execute=True):
        assert services.reap_stale_jobs(max_age_s=0) == [job.pk]
    assert sent == [((job.pk, 0, 4, p), "rollouts-cpu"), ((job.pk, 8, 12, p), "rollouts-cpu")]


def test_a_chunk_rechecks_the_project_of_its_job(sim_trace, pivotal):
    from webapp.accounts.services import do_get_or_create_project

    job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 8, seed=1)
    requested_in = sim_trace.project_id
    Trace.objects.filter(pk=sim_trace.pk).update(project=do_get_or_create_project("elsewhere"))
    assert tasks.run_counterfactual_chunk(job.pk, 0, 8, requested_in) == 0  # moved: nothing runs
    assert not job.samples.exists()
    Trace.objects.filter(pk=sim_trace.pk).update(project_id=requested_in)
    assert tasks.run_counterfactual_chunk(job.pk, 0, 8, requested_in) == 8


def test_a_sim_job_reports_no_server_usage_but_its_wall_time(sim_trace, pivotal):
    job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 4)
    assert job.usage == {} and job_wire(job)["usage"] == dict.fromkeys(
        ("requests", "prompt_tokens", "cached_tokens", "completion_tokens", "cache_hit_rate", "truncated"), None
    ) | {"retries": None, "wall_s": None}
    job = run_all(job)
    usage = job_wire(job)["usage"]
    assert usage["requests"] is None and usage["cache_hit_rate"] is None and job.usage == {}
    assert usage["wall_s"] == pytest.approx((job.finished_at - job.started_at).total_seconds(), abs=1e-3)
    validate_message("trace", {"type": "job", "job": job_wire(job)})


def test_chunk_usage_is_added_under_the_row_lock_not_over_a_stale_copy(sim_trace, pivotal):
    job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 4)
    stale = CounterfactualJob.objects.get(pk=job.pk)  # read before either chunk records
    usage = {"requests": 3, "prompt_tokens": 100, "cached_tokens": 90, "completion_tokens": 7}
    services.do_record_samples(job, [services.SampleResult(0, 0, 1.0, 0.0)], usage)
    services.do_record_samples(stale, [services.SampleResult(1, 1, 1.0, 0.0)], {**usage, "retries": 1})
    services.do_fail_job(stale, "boom", {"requests": 1, "length_cut": 2})
    job.refresh_from_db()
    assert job.usage == {
        "requests": 7,
        "prompt_tokens": 200,
        "cached_tokens": 180,
        "completion_tokens": 14,
        "retries": 1,
        "length_cut": 2,
    }
    shown = job_wire(job)["usage"]
    assert (shown["cache_hit_rate"], shown["truncated"], shown["retries"]) == (0.9, 2, 1)


def test_add_usage_sums_integer_counts_only():
    assert services.add_usage({"requests": 1}, {"requests": 2, "cached_tokens": 5, "note": "x", "ok": True}) == {
        "requests": 3,
        "cached_tokens": 5,
    }
    assert services.add_usage({"requests": 1}, None) == {"requests": 1}
