"""The `sim` rollout backend (trainer/rollout/sim.py): interventions, CRN, branch traces."""

import numpy as np
import pytest

from swarmscope.credit import coalition_game, paired_effect
from swarmscope.interventions import Intervention, InterventionError
from trainer.rollout.sim import AggregateRollout, SimRollout
from trainer.sim import actions as act
from trainer.sim.env import SimConfig, simulate
from trainer.sim.suites import pivot12_case
from trainer.sim.tasks import generate_task

SEEDS = np.arange(64)


@pytest.fixture(scope="module")
def case():
    return pivot12_case(3)


@pytest.fixture(scope="module")
def backend(case):
    return SimRollout(case.episode)


def kind_event(case, kind):
    return next(f"message:{case.episode.actions[c].item}" for c, k in zip(case.candidates, case.kinds) if k == kind)


def test_the_control_replays_the_factual_episode(case, backend):
    assert backend(None, [case.episode.seed]).tolist() == [case.episode.reward]


def test_a_null_message_changes_no_paired_sample(case, backend):
    pairs = backend.paired(Intervention("remove", (kind_event(case, "null"),)), SEEDS)
    assert (pairs.control == pairs.treated).all() and pairs.branches == []


def test_removing_the_pivotal_message_only_ever_lowers_the_reward(case, backend):
    pairs = backend.paired(Intervention("remove", (kind_event(case, "pivotal"),)), SEEDS)
    assert (pairs.control >= pairs.treated).all() and pairs.control.sum() > pairs.treated.sum()


def test_paired_effect_through_the_backend_covers_the_exact_delta(case, backend):
    result = paired_effect(backend, Intervention("remove", (kind_event(case, "pivotal"),)), 400)
    assert result.ci_low <= 0.30 <= result.ci_high


def test_branch_traces(case, backend):
    event = kind_event(case, "pivotal")
    intervention = Intervention("remove", (event,))
    pairs = backend.paired(intervention, SEEDS[:4], traces=True)
    assert pairs.treated.tolist() == backend(intervention, SEEDS[:4]).tolist()
    branch = pairs.branches[2]
    assert event not in {e.id for e in branch.events}
    assert branch.attributes["intervention"] == intervention.to_dict()
    assert branch.attributes["fork_event"] == event
    assert branch.attributes["factual"] == case.episode.trace.source_id
    assert branch.source_id.endswith("/seed-2")


def test_mask_and_replace_keep_the_position(case, backend):
    event = kind_event(case, "pivotal")
    masked = backend.branch(Intervention("mask", (event,)), 0).trace
    assert len(masked.events) == len(case.episode.trace.events)
    same_item = case.episode.actions[backend.messages[event]].item
    replaced = backend(Intervention("replace", (event,), text=same_item), SEEDS)
    assert replaced.tolist() == backend(None, SEEDS).tolist()


def test_resample_draws_with_the_rollout_seed(case, backend):
    intervention = Intervention("resample", (kind_event(case, "pivotal"),))
    items = {backend.actions(intervention, int(s))[backend.messages[kind_event(case, "pivotal")]].item for s in SEEDS}
    assert len(items) > 1
    assert backend(intervention, SEEDS).tolist() == backend(intervention, SEEDS).tolist()


def test_several_targets_and_an_agent():
    task = generate_task("medium", 2)
    actions = [act.spawn("solver"), act.spawn("solver"), act.spawn("free_rider")]
    actions += [act.delegate(s.id, f"solver_{s.id % 2 + 1}") for s in task.subtasks]
    actions += [
        act.message("free_rider_1", "orchestrator", "chatter"),
        act.message("solver_1", "orchestrator", "key"),
        act.message("solver_2", "orchestrator", "note"),
        act.aggregate(),
        act.stop(),
    ]
    episode = simulate(task, actions, SimConfig(aggregate_base=0.5), seed=1)
    backend = SimRollout(episode)
    both = backend.actions(Intervention("remove", ("message:key", "message:note")), 0)
    assert [a.item for a in both if a.kind == "message"] == ["chatter"]
    without = backend.actions(Intervention("remove", agents=("free_rider_1",)), 0)
    assert all("free_rider_1" not in (a.agent, a.to) for a in without)
    assert backend.fork_event(Intervention("remove", ("message:note",), ("free_rider_1",))) == "spawn:free_rider_1"


@pytest.mark.parametrize(
    "intervention, field",
    [
        (Intervention("remove", ("delegate:0",)), "events"),
        (Intervention("remove", ("solve:0:0",)), "events"),
        (Intervention("remove", agents=("orchestrator",)), "agents"),
        (Intervention("remove", agents=("nobody",)), "agents"),
    ],
)
def test_targets_swarmsim_cannot_edit(backend, intervention, field):
    with pytest.raises(InterventionError) as error:
        backend(intervention, SEEDS[:1])
    assert error.value.field == field


def test_the_closed_form_matches_re_simulation(case, backend):
    fast = AggregateRollout(case.episode)
    rng = np.random.default_rng(0)
    kept = rng.random((40, 12)) < 0.6
    seeds = rng.integers(0, 10_000, 40)
    slow = coalition_game(backend, [Intervention("remove", (p,)) for p in fast.players])
    assert fast.game()(kept, seeds).tolist() == slow(kept, seeds).tolist()
    removal = Intervention("remove", tuple(fast.players[:5]))
    assert fast(removal, SEEDS).tolist() == backend(removal, SEEDS).tolist()
    assert fast(None, SEEDS).tolist() == backend(None, SEEDS).tolist()


def test_the_closed_form_refuses_what_it_does_not_cover(case):
    fast = AggregateRollout(case.episode)
    with pytest.raises(InterventionError):
        fast(Intervention("mask", (fast.players[0],)), SEEDS)
    with pytest.raises(InterventionError):
        fast(Intervention("remove", ("aggregate",)), SEEDS)
    task = generate_task("medium", 2)
    hard = simulate(
        task,
        [act.spawn("solver")] + [act.delegate(s.id, "solver_1") for s in task.subtasks] + [act.aggregate(), act.stop()],
        seed=0,
    )
    with pytest.raises(ValueError):
        AggregateRollout(hard)


def test_a_stored_swarmsim_trace_rebuilds_its_backend(case):
    import json

    from swarmscope.model import trace_from_dict

    stored = trace_from_dict(json.loads(json.dumps(case.episode.trace.to_dict())))
    stored.events.sort(key=lambda e: (e.t, e.id))  # as stored and streamed: in time order
    assert [e.id for e in stored.events] != [e.id for e in case.episode.trace.events]
    backend = SimRollout.from_trace(stored)
    assert backend(None, SEEDS).tolist() == SimRollout(case.episode)(None, SEEDS).tolist()
    assert backend.environment()["seed"] == case.episode.seed
    stored.attributes.pop("action_list")
    with pytest.raises(ValueError, match="not a re-runnable SwarmSim trace"):
        SimRollout.from_trace(stored)
