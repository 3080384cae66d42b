"""The iteration report's stop figures (trainer/recipes/report.py): `stop_regret` over the stops the
run's stop mode offered on each episode's path, whatever the config (issue 30: the superseded
`stop_hindsight`, with its "never start" option the policy was not offered, is no longer
reported); premature and late counted apart, in the dict the run page reads (it.stop.stop_regret /
premature / late / regret)."""

import pytest

pytest.importorskip("torch")

from tests.training.conftest import TINY  # noqa: E402
from trainer.recipes import train_orchestrator as recipe  # noqa: E402
from trainer.recipes.config import RunConfig  # noqa: E402
from trainer.recipes.report import stop_outcomes  # noqa: E402
from trainer.rl.stop import stop_hindsight, stop_regret  # noqa: E402
from trainer.sim.actions import ORCHESTRATOR, aggregate, delegate, message, spawn, stop  # noqa: E402
from trainer.sim.env import simulate  # noqa: E402
from trainer.sim.tasks import Subtask, Task  # noqa: E402

EASY = Task("easy-2", (Subtask(0, 0.0), Subtask(1, 0.0)))
WEIGHTS = {"success": 1.0, "parallelism": 0.0, "finish": 0.0, "critical_steps": 0.01}


def config(**changes) -> RunConfig:
    return RunConfig.from_dict({"reward_weights": WEIGHTS, "max_steps": 12, **changes})


def test_the_default_stop_reports_no_regret_for_a_stop_it_was_not_offered():
    # all-or-nothing: answering with subtask 1 undelegated earns E[R] = 0. Under the default
    # `learned` stop the only stop offered was the one taken (right after the answer): regret 0.
    # Hindsight's "never start" / "delegate the rest" points, which the policy was not offered,
    # would call it premature; `anytime` offered decision 0, so there it is a late stop.
    episode = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), aggregate(), stop()], seed=2)
    assert stop_hindsight(episode, config().reward_weights).premature
    [learned] = stop_outcomes([episode], config())
    assert learned.regret == 0.0 and not learned.premature and not learned.late
    [offered] = stop_outcomes([episode], config(stop="anytime"))
    # three offered stops (decisions 0-2), all valued: the exact stop_regret
    assert offered == stop_regret(episode, config().reward_weights, "anytime")
    assert offered.late and not offered.premature and offered.best_point == 0 and offered.regret > 0


def test_the_default_stop_counts_going_on_after_the_answer_as_late():
    # after the answer E[R] is fixed: two null messages cost 2 critical steps' worth of reward
    actions = [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate()]
    filler = [message(ORCHESTRATOR, "solver_1", f"x{k}") for k in range(2)]
    episode = simulate(EASY, [*actions, *filler, stop()], seed=2)
    [outcome] = stop_outcomes([episode], config())
    assert outcome.late and not outcome.premature and outcome.best_point == len(actions)
    exact = stop_regret(episode, config().reward_weights, "learned")
    assert outcome.regret == pytest.approx(exact.regret) and outcome.regret > 0
    # the rule stop's stop is no choice: nothing to regret
    assert stop_outcomes([episode], config(stop="rule"))[0].regret == 0.0


@pytest.mark.parametrize("changes", [{}, {"stop": "anytime", "answer_credit": "partial"}])
def test_the_recipe_reports_the_regret_over_offered_stops(changes):
    reports: list[dict] = []
    recipe.train(RunConfig.from_dict({**TINY, **changes, "budget_steps": 200}), on_iteration=reports.append)
    assert reports
    for report in reports:
        figures = report["stop"]
        assert figures["regret"] == "offered" and figures["stop_regret"] >= 0.0
        assert 0 <= figures["premature"] + figures["late"] <= TINY["episodes_per_iteration"]
