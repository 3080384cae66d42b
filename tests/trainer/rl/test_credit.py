"""Decision blocks, the agent each decision concerns, and the attribution panel on tiny episodes: its
free-rider index by exact removal effects (a verifier whose removal lowers E[R] is none, a planted
free rider is one)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer.policy import OrchestratorPolicy, Script, moves_of, play  # noqa: E402
from trainer.recipes.config import RunConfig  # noqa: E402
from trainer.rl.credit import (  # noqa: E402
    agents_of_decisions,
    attribution,
    block_of,
    decision_credit,
    episode_free_riders,
    removal_effects,
)
from trainer.sim.actions import ORCHESTRATOR, aggregate, delegate, message, spawn, stop  # noqa: E402
from trainer.sim.effects import free_riders  # noqa: E402
from trainer.sim.env import SimConfig, simulate  # noqa: E402
from trainer.sim.tasks import Subtask, Task  # noqa: E402

EASY = Task("easy-2", (Subtask(0, 0.0), Subtask(1, 0.0)))
HARD = Task("hard-2", (Subtask(0, 0.5), Subtask(1, 0.5)))
#: A solver, a verifier that checks its results, a planted free rider (3 null messages): 20 events
#: with the answer, the verifier 2 and the free rider 3 of them (>= 5 % each).
TEAM = [spawn("solver"), spawn("verifier"), *free_riders(1, 3), delegate(0, "solver_1"), delegate(1, "solver_1")]


def test_blocks_are_contiguous_and_near_equal():
    assert block_of(7, 3).tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert block_of(2, 4).tolist() == [0, 1]  # at most one block per decision


def test_no_decisions_no_blocks():
    assert block_of(0, 3).tolist() == [] and block_of(3, 1).tolist() == [0, 0, 0]


def test_each_decision_names_the_agent_it_concerns():
    episode = simulate(
        EASY,
        [
            spawn("solver"),
            spawn("solver"),
            delegate(0, "solver_1"),
            message(ORCHESTRATOR, "solver_2", "x"),
            aggregate(),
            stop(),
        ],
    )
    assert agents_of_decisions(episode) == [
        "solver_1",
        "solver_2",
        "solver_1",
        "solver_2",
        "orchestrator",
        "orchestrator",
    ]


def test_attribution_shares_the_absolute_credit_by_agent_and_role():
    # solver_1: spawn + delegate (0.5 + 0.25), solver_2: spawn (0.0), orchestrator: aggregate + stop (0.25)
    episode = simulate(EASY, [spawn("solver"), spawn("solver"), delegate(0, "solver_1"), aggregate(), stop()])
    panel = attribution([episode], [np.array([0.5, 0.0, -0.25, 0.125, -0.125])])
    assert panel["by_agent"] == pytest.approx({"solver_1": 0.75, "solver_2": 0.0, "orchestrator": 0.25})
    assert panel["by_role"] == pytest.approx({"solver": 0.75, "orchestrator": 0.25})
    # subtask 1 is never delegated, so E[R] = 0 and removing solver_1 (which acts) changes nothing:
    # a free rider; solver_2 never acts (its spawn is the orchestrator's event): not judged
    assert panel["free_rider_index"] == 0.5 and panel["free_rider_episodes"] == 1
    assert 0 <= panel["pseudo_parallelism_index"] <= 1


def test_attribution_of_no_credit_is_empty():
    episode = simulate(EASY, [spawn("solver"), aggregate(), stop()])
    panel = attribution([episode], [np.zeros(3)])
    assert panel["by_role"] == {} and panel["by_agent"] == {} and panel["free_rider_index"] == 0.0


def test_a_verifier_whose_removal_lowers_the_expected_reward_is_no_free_rider_a_planted_one_is():
    episode = simulate(HARD, [*TEAM, aggregate(), stop()], seed=3)
    effects = removal_effects(episode, ["solver_1", "verifier_1", "free_rider_1"])
    # the verifier catches a wrong result with probability `catch`: removing it costs E[R]
    assert effects["verifier_1"] > 0.1 and effects["solver_1"] == pytest.approx(episode.p_success)
    assert effects["free_rider_1"] == pytest.approx(0.0, abs=1e-12)
    assert episode_free_riders(episode) == (["free_rider_1"], ["solver_1", "verifier_1", "free_rider_1"])
    # credit that names the verifier in none of its decisions (the superseded credit-share index
    # called it a free rider) does not make it one: the index counts the free rider alone
    credit = np.array([0.5 if a == "solver_1" else 0.0 for a in agents_of_decisions(episode)])
    assert attribution([episode], [credit])["free_rider_index"] == pytest.approx(1 / 3)


def test_in_an_episode_with_no_expected_reward_every_acting_sub_agent_is_a_free_rider():
    # no aggregate: E[R] = 0 and no removal can lower it (the definition, not a special case)
    episode = simulate(HARD, [*TEAM, stop()], seed=3)
    assert episode.p_success == 0.0
    assert episode_free_riders(episode)[0] == ["free_rider_1", "solver_1", "verifier_1"]


def test_removal_effects_of_an_episode_the_step_limit_stopped_grade_the_replay_as_stopped_too():
    # partial credit: the step limit stops the episode before its answer (a partial answer graded at
    # the stop); the replay without the free rider is shorter, so it is stopped explicitly, alike
    config = SimConfig(max_steps=len(TEAM), answer_credit="partial")
    episode = simulate(HARD, TEAM, config, seed=3)
    assert episode.p_success > 0
    effects = removal_effects(episode, ["free_rider_1", "solver_1"])
    assert effects["free_rider_1"] == pytest.approx(0.0, abs=1e-12) and effects["solver_1"] > 0


def test_the_free_rider_index_samples_episodes_evenly_and_none_with_sample_zero():
    episode = simulate(HARD, [*TEAM, aggregate(), stop()], seed=3)
    credits = [np.zeros(len(episode.actions))] * 8
    assert attribution([episode] * 8, credits, sample=3)["free_rider_episodes"] == 3
    panel = attribution([episode] * 8, credits, sample=0)
    assert panel["free_rider_episodes"] == 0 and panel["free_rider_index"] == 0.0


@pytest.mark.parametrize("credit", ["counterfactual", "shapley"])
def test_decision_credit_is_constant_within_a_block_and_counts_its_re_rollouts(credit):
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    config = RunConfig.from_dict(
        {"level": "small", "credit": credit, "credit_blocks": 2, "stop": "rule", "max_steps": 30}
    )
    game = play(policy, [Script(EASY, 3)], config.sim_config(), config.stop)[0]
    found, steps = decision_credit(policy, game, 1.0, config, lambda episode: episode.reward)
    blocks = block_of(len(moves_of(game)), 2)
    assert found.shape == (len(moves_of(game)),) and steps > 0
    for b in (0, 1):
        assert len(set(found[blocks == b].tolist())) == 1
