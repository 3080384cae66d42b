"""Runs services: config validation through the recipe, iterations stored all-or-nothing with their
episodes imported as traces, progress and best reward, seed groups, the snapshot + deltas
invariant, cancel and resume; the training task body, called directly, on the real recipe."""

from __future__ import annotations

import pytest

from swarmscope import protocol
from tests.training.conftest import TINY
from webapp.traces.models import Trace
from webapp.training import services, tasks
from webapp.training.models import Run, RunIteration

pytestmark = pytest.mark.django_db(transaction=True)


def strip_time(snapshot: dict) -> dict:
    """A snapshot without the fields that depend on the clock (ETA)."""
    return {**snapshot, "run": {k: v for k, v in snapshot["run"].items() if k != "eta_s"}}


def test_config_errors_name_the_field(project):
    for config, field in [
        ({"algorithm": "sarsa"}, "config.algorithm"),
        ({"budget_steps": 0}, "config.budget_steps"),
        ({"reward_weights": {"success": -1}}, "config.reward_weights.success"),
        ({"colour": "red"}, "config.colour"),
        ("long", "config"),
    ]:
        with pytest.raises(services.RunInputError) as caught:
            services.do_create_run(project, config)
        assert caught.value.field == field, caught.value
    assert not Run.objects.exists()


def test_seed_groups_join_runs_that_differ_only_by_seed(project):
    a, b = (services.do_create_run(project, {**TINY, "seed": s}) for s in (0, 1))
    c = services.do_create_run(project, {**TINY, "credit": "counterfactual"})
    assert a.seed_group == b.seed_group != c.seed_group
    assert a.config["lr"] > 0 and a.budget_steps == TINY["budget_steps"]  # the recipe's defaults filled in


def test_iterations_are_stored_with_their_episodes_and_progress(project, iterations):
    run = services.do_create_run(project, TINY, external=True)
    for doc in iterations:
        services.do_record_iteration(run, doc)
    run.refresh_from_db()
    assert run.iterations_done == len(iterations) and run.env_steps == iterations[-1]["env_steps"]
    assert run.best_reward == max(d["metrics"]["reward"] for d in iterations)
    row = RunIteration.objects.get(run=run, iteration=0)
    assert row.stop["p_stop_by_step"] == iterations[0]["stop"]["p_stop_by_step"]
    episode = row.episodes.get()
    assert episode.project == project and episode.event_count == len(iterations[0]["episodes"][0]["events"])
    # A re-sent iteration (a resume that repeats one) replaces it, nothing doubles.
    services.do_record_iteration(run, iterations[0])
    assert RunIteration.objects.filter(run=run).count() == len(iterations)


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda d: d["metrics"].update(reward="high"), "metrics.reward"),
        (lambda d: d["metrics"].update(entropy=float("nan")), "metrics.entropy"),
        (lambda d: d.update(iteration=-1), "iteration"),
        (lambda d: d["stop"]["p_stop_by_step"].__setitem__(0, [0]), "stop.p_stop_by_step[0]"),
        (lambda d: d["credit"]["by_role"].update(orchestrator="most"), "credit.by_role.orchestrator"),
        (lambda d: d["credit"].update(free_rider_episodes=1.5), "credit.free_rider_episodes"),
        (lambda d: d["episodes"][0]["events"][0].pop("type"), "episodes[0]"),
    ],
)
def test_bad_iterations_are_refused_naming_the_field_and_write_nothing(project, iterations, change, field):
    run = services.do_create_run(project, TINY, external=True)
    seq, traces = run.seq, Trace.objects.count()
    doc = iterations[0]
    change(doc)
    with pytest.raises(services.RunInputError) as caught:
        services.do_record_iteration(run, doc)
    assert caught.value.field == field, caught.value
    run.refresh_from_db()
    assert (run.seq, run.iterations_done, Trace.objects.count()) == (seq, 0, traces)
    assert not RunIteration.objects.filter(run=run).exists()


def test_snapshot_plus_deltas_equals_a_fresh_snapshot(project, iterations):
    run = services.do_create_run(project, TINY, external=True)
    old = services.get_snapshot(run)
    deltas = []
    for doc in iterations:
        before = services.get_snapshot(run)["seq"]
        services.do_record_iteration(run, doc)
        deltas.append(services.get_delta_since(run, before))
    services.do_finish(run, summary={"status": "finished"})
    deltas.append(services.get_delta_since(run, deltas[-1]["seq"]))
    state = old
    for delta in deltas:
        state = protocol.apply_run_delta(state, delta)
    folded = protocol.apply_run_delta(old, services.get_delta_since(run, old["seq"]))
    fresh = services.get_snapshot(run)
    assert strip_time(state) == strip_time(fresh) == strip_time(folded)
    assert [d["seq"] for d in deltas] == list(range(old["seq"] + 1, fresh["seq"] + 1))
    assert fresh["run"]["status"] == "finished" and len(fresh["iterations"]) == len(iterations)
    with pytest.raises(ValueError):
        protocol.apply_run_delta(fresh, deltas[0])


def test_cancel_and_resume_rules(project):
    queued = services.do_create_run(project, TINY)
    assert services.do_request_cancel(queued).status == Run.CANCELLED
    running = services.do_create_run(project, TINY)
    services.do_mark_running(running)
    assert services.do_request_cancel(running).status == Run.CANCELLING
    assert services.is_cancel_requested(running.pk)
    with pytest.raises(services.RunInputError):
        services.request_resume(running)  # still cancelling
    external = services.do_create_run(project, TINY, external=True)
    services.do_request_cancel(external)
    with pytest.raises(services.RunInputError):
        services.request_resume(external)  # nothing here can train it


def test_task_trains_cancels_and_resumes_from_the_checkpoint(project, settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(services, "request_training", lambda run: None)  # the task body is called directly
    run = services.do_create_run(project, {**TINY, "budget_steps": 1500})
    record = services.do_record_iteration

    def record_then_cancel(run_, doc):  # the user presses Cancel while iteration 1 is being stored
        row = record(run_, doc)
        if doc["iteration"] == 1:
            services.do_request_cancel(run_)
        return row

    monkeypatch.setattr(services, "do_record_iteration", record_then_cancel)
    assert tasks.train_run(run.pk) == Run.CANCELLED
    run.refresh_from_db()
    assert run.status == Run.CANCELLED and run.iterations_done == 2 and run.env_steps < run.budget_steps
    assert (tmp_path / "runs" / str(run.pk) / "last.pt").exists() and run.checkpoint_path.endswith("last.pt")
    monkeypatch.setattr(services, "do_record_iteration", record)
    services.request_resume(run)
    assert tasks.train_run(run.pk) == Run.FINISHED
    run.refresh_from_db()
    numbers = list(run.iterations.order_by("iteration").values_list("iteration", "env_steps"))
    assert [n for n, _ in numbers] == list(range(len(numbers))) and len(numbers) > 2
    assert [s for _, s in numbers] == sorted(s for _, s in numbers) and run.env_steps >= run.budget_steps
    assert run.summary["status"] == "finished" and run.finished_at is not None


def test_a_new_run_never_resumes_a_checkpoint_it_did_not_write(project, settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(services, "request_training", lambda run: None)
    run = services.do_create_run(project, TINY)
    stale = tmp_path / "runs" / str(run.pk) / "last.pt"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"left by a database that was reset")
    assert tasks.train_run(run.pk) == Run.FINISHED
    run.refresh_from_db()
    assert run.iterations.first().iteration == 0 and run.env_steps >= run.budget_steps
    assert (stale.parent / "stale-last.pt").read_bytes() == b"left by a database that was reset"


def test_a_failing_run_is_marked_failed_with_the_reason(project, settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(services, "request_training", lambda run: None)
    run = services.do_create_run(project, TINY)
    Run.objects.filter(pk=run.pk).update(config={**run.config, "level": "no-such-level"})  # e.g. an older recipe's
    assert tasks.train_run(run.pk) == Run.FAILED
    run.refresh_from_db()
    assert run.status == Run.FAILED and "level" in run.error and "no-such-level" in run.error


def test_an_iteration_the_app_cannot_store_fails_the_run_naming_the_field(project, settings, tmp_path, monkeypatch):
    from trainer.recipes import train_orchestrator as recipe

    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(services, "request_training", lambda run: None)
    run = services.do_create_run(project, TINY)
    play = recipe.run_iteration

    def overflowing(*args, **kwargs):  # a reward that overflowed (a recipe with no bound on its weights)
        report, steps = play(*args, **kwargs)
        report["metrics"]["reward"] = float("inf")
        return report, steps

    monkeypatch.setattr(recipe, "run_iteration", overflowing)
    assert tasks.train_run(run.pk) == Run.FAILED
    run.refresh_from_db()
    assert "metrics.reward: must be finite" in run.error and run.iterations_done == 0


def test_runs_whose_worker_stopped_reporting_are_marked_failed(project, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.SWARMSCOPE_RUN_STALE_S = 60
    silent, fresh, external = (services.do_create_run(project, TINY) for _ in range(3))
    for run in (silent, fresh):
        services.do_mark_running(run)
    Run.objects.filter(pk=external.pk).update(external=True, status=Run.RUNNING)
    Run.objects.filter(pk__in=[silent.pk, external.pk]).update(heartbeat_at=timezone.now() - timedelta(seconds=120))
    assert services.reap_stale_runs() == [silent.pk]
    silent.refresh_from_db()
    assert silent.status == Run.FAILED and "no heartbeat for 60 s" in silent.error
    assert Run.objects.get(pk=fresh.pk).status == Run.RUNNING
    assert Run.objects.get(pk=external.pk).status == Run.RUNNING  # an external trainer reports on its own


def test_the_training_task_rechecks_the_project_of_its_run(project, settings, tmp_path, monkeypatch):
    from webapp.accounts.services import do_get_or_create_project

    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(services, "request_training", lambda run: None)
    run = services.do_create_run(project, TINY)
    assert tasks.train_run(run.pk, do_get_or_create_project("elsewhere").pk) == "missing"
    run.refresh_from_db()
    assert run.status == Run.QUEUED and run.iterations_done == 0
    assert tasks.train_run(run.pk, project.pk) == Run.FINISHED


def test_two_runs_with_the_same_seed_and_another_credit_both_finish_and_resume(
    project, settings, tmp_path, monkeypatch
):
    """The ablation a new user tries first: the same level and seed, another credit scheme. Their
    sample episodes share tasks and seeds but not content, so they must be stored apart, per run;
    a resumed run re-sends its iterations without conflict and without doubling traces."""
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(services, "request_training", lambda run: None)
    shared = services.do_create_run(project, TINY)
    assert tasks.train_run(shared.pk) == Run.FINISHED
    # counterfactual credit pays ~1,200 re-rollout steps per iteration: 2,000 buys 2 iterations
    counterfactual = services.do_create_run(project, {**TINY, "credit": "counterfactual", "budget_steps": 2000})
    assert tasks.train_run(counterfactual.pk) == Run.FINISHED, Run.objects.get(pk=counterfactual.pk).error
    a, b = Run.objects.get(pk=shared.pk), Run.objects.get(pk=counterfactual.pk)
    assert a.iterations_done >= 2 and b.iterations_done >= 2 and not a.error and not b.error
    keys = {
        run.pk: set(Trace.objects.filter(run_iterations__run=run).values_list("source_id", flat=True)) for run in (a, b)
    }
    assert keys[a.pk] and keys[b.pk] and not keys[a.pk] & keys[b.pk]
    assert all(key.startswith(f"run-{run}/") for run, ks in keys.items() for key in ks)
    # Another algorithm, cancelled at iteration 1 and resumed: it re-runs from its checkpoint and
    # finishes, nothing doubles.
    third = services.do_create_run(project, {**TINY, "algorithm": "grpo", "budget_steps": 1000})
    record = services.do_record_iteration

    def record_then_cancel(run_, doc):
        row = record(run_, doc)
        if doc["iteration"] == 1:
            services.do_request_cancel(run_)
        return row

    monkeypatch.setattr(services, "do_record_iteration", record_then_cancel)
    assert tasks.train_run(third.pk) == Run.CANCELLED
    monkeypatch.setattr(services, "do_record_iteration", record)
    services.request_resume(Run.objects.get(pk=third.pk))
    assert tasks.train_run(third.pk) == Run.FINISHED, Run.objects.get(pk=third.pk).error
    episodes = Trace.objects.filter(run_iterations__run_id=third.pk)
    assert episodes.count() == episodes.values("source_id").distinct().count()
