"""Decision blocks, the agent each decision concerns, and the attribution panel on tiny episodes."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer.policy import OrchestratorPolicy, Script, moves_of, play  # noqa: E402
from trainer.recipes.config import RunConfig  # noqa: E402
from trainer.rl.credit import agents_of_decisions, attribution, block_of, decision_credit  # noqa: E402
from trainer.sim.actions import ORCHESTRATOR, aggregate, delegate, message, spawn, stop  # noqa: E402
from trainer.sim.env import simulate  # noqa: E402
from trainer.sim.tasks import Subtask, Task  # noqa: E402

EASY = Task("easy-2", (Subtask(0, 0.0), Subtask(1, 0.0)))


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
    # an equal share is 1/3: solver_2 (0) is below half of it, solver_1 is not
    assert panel["free_rider_index"] == pytest.approx(0.5)
    assert 0 <= panel["pseudo_parallelism_index"] <= 1


def test_attribution_of_no_credit_is_empty():
    episode = simulate(EASY, [spawn("solver"), aggregate(), stop()])
    panel = attribution([episode], [np.zeros(3)])
    assert panel["by_role"] == {} and panel["by_agent"] == {} and panel["free_rider_index"] == 1.0


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
