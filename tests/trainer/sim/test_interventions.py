"""Interventions and re-simulation (trainer/sim/episode_interventions.py): common random numbers."""

import pytest

from trainer.sim import actions as act
from trainer.sim.baselines import FixedFanOut
from trainer.sim.effects import free_riders, pivotal
from trainer.sim.env import SimConfig, simulate
from trainer.sim.episode_interventions import (
    Intervention,
    intervene,
    message_indices,
    paired_effect,
    resimulate,
)
from trainer.sim.tasks import generate_task


@pytest.fixture
def episode():
    task = generate_task("medium", 2)
    actions = [act.spawn("solver"), act.spawn("solver"), act.spawn("verifier"), *free_riders(1)]
    for s in task.subtasks:
        actions.append(act.delegate(s.id, f"solver_{s.id % 2 + 1}"))
        if s.id == 4:
            actions.append(act.message("solver_1", "orchestrator", "key"))
    config = SimConfig(aggregate_base=0.5, effects=(pivotal("key", 0.3),))
    return simulate(task, actions + [act.aggregate(), act.stop()], config, seed=11)


def test_an_intervention_that_changes_nothing_reproduces_the_trace(episode):
    key = next(i for i, a in enumerate(episode.actions) if a.item == "key")
    same = resimulate(episode, Intervention("replace", key, item="key"))
    assert same.trace.to_dict() == episode.trace.to_dict()
    assert (same.reward, same.p_success) == (episode.reward, episode.p_success)


def test_remove_forks_after_an_identical_prefix(episode):
    key = next(i for i, a in enumerate(episode.actions) if a.item == "key")
    removed = resimulate(episode, Intervention("remove", key))
    assert episode.p_success - removed.p_success == pytest.approx(0.3 * episode.p_subtasks)
    fork = next(e.id for e in episode.trace.events if e.id == "message:key")
    before = [e for e in episode.trace.events[: [e.id for e in episode.trace.events].index(fork)]]
    assert removed.trace.events[: len(before)] == before
    # CRN: every subtask outcome is the same draw in both worlds
    results = lambda ep: {e.id: e.attributes["correct"] for e in ep.trace.events if e.type == "tool_result"}
    assert results(removed) == results(episode)


def test_mask_keeps_the_position_and_drops_the_effect(episode):
    key = next(i for i, a in enumerate(episode.actions) if a.item == "key")
    masked = resimulate(episode, Intervention("mask", key))
    assert len(masked.trace.events) == len(episode.trace.events)
    assert masked.actions[key].item == f"masked/{key}"
    assert masked.p_success == pytest.approx(resimulate(episode, Intervention("remove", key)).p_success)


def test_resample_is_deterministic_and_draws_from_the_pool(episode):
    index = message_indices(episode.actions)[0]
    first = resimulate(episode, Intervention("resample", index))
    assert first.trace == resimulate(episode, Intervention("resample", index)).trace
    assert first.actions[index].item in {"key", episode.actions[index].item}


def test_removing_a_free_rider_changes_nothing(episode):
    without = resimulate(episode, Intervention("remove_agent", agent="free_rider_1"))
    assert without.p_success == pytest.approx(episode.p_success)
    assert without.reward == episode.reward
    assert "free_rider_1" not in {e.agent for e in without.trace.events}
    assert "solver_2" in {e.agent for e in without.trace.events}


def test_removing_a_solver_leaves_its_subtasks_undone(episode):
    assert resimulate(episode, Intervention("remove_agent", agent="solver_2")).p_success == 0.0


def test_closed_loop_resimulation_with_a_policy(episode):
    fork, _ = intervene(episode, Intervention("remove_agent", agent="solver_2"))
    replanned = resimulate(episode, Intervention("remove_agent", agent="solver_2"), policy=FixedFanOut(2))
    assert replanned.actions[:fork] == episode.actions[:fork]
    assert replanned.p_success > 0 and replanned.actions[-1].kind == "stop"


@pytest.mark.parametrize(
    "intervention",
    [
        Intervention("remove", 0),
        Intervention("shout", 0),
        Intervention("replace", None),
        Intervention("remove_agent", agent="x"),
    ],
)
def test_invalid_interventions(episode, intervention):
    with pytest.raises(ValueError):
        intervene(episode, intervention)


def test_paired_rollouts_estimate_the_exact_effect(episode):
    key = next(i for i, a in enumerate(episode.actions) if a.item == "key")
    estimate, stderr = paired_effect(episode, Intervention("remove", key), n=1500)
    exact = 0.3 * episode.p_subtasks
    assert 0 < stderr < 0.02 and abs(estimate - exact) < 4 * stderr
