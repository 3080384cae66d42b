"""The iteration report's stop figures (trainer/recipes/report.py): `stop_hindsight` under the
answer-guarded stop modes and all-or-nothing grading, `stop_regret` over the offered stops where the
config offers stop before the answer (`anytime`) or grades partially; premature and late counted
apart, in the dict the run page reads (it.stop.stop_regret / premature / late)."""

import pytest

pytest.importorskip("torch")

from tests.training.conftest import TINY  # noqa: E402
from trainer.recipes import train_orchestrator as recipe  # noqa: E402
from trainer.recipes.config import RunConfig  # noqa: E402
from trainer.recipes.report import stop_outcomes, uses_offered_regret  # noqa: E402
from trainer.rl.stop import stop_hindsight, stop_regret  # noqa: E402
from trainer.sim.actions import aggregate, delegate, spawn, stop  # noqa: E402
from trainer.sim.env import simulate  # noqa: E402
from trainer.sim.tasks import Subtask, Task  # noqa: E402

EASY = Task("easy-2", (Subtask(0, 0.0), Subtask(1, 0.0)))
WEIGHTS = {"success": 1.0, "parallelism": 0.0, "finish": 0.0, "critical_steps": 0.01}


def config(**changes) -> RunConfig:
    return RunConfig.from_dict({"reward_weights": WEIGHTS, "max_steps": 12, **changes})


def test_an_answer_before_every_delegation_is_premature_in_hindsight_and_late_among_offered_stops():
    # all-or-nothing: answering with subtask 1 undelegated earns E[R] = 0, so stopping at decision 0
    # (offered under `anytime`) beats it: a late stop; hindsight's best point (delegate the rest,
    # a path the policy was not offered) calls it premature.
    episode = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), aggregate(), stop()], seed=2)
    hindsight, kind = stop_outcomes([episode], config(stop="learned"))
    assert kind == "hindsight" and hindsight[0] == stop_hindsight(episode, config().reward_weights)
    assert hindsight[0].premature and not hindsight[0].late
    offered, kind = stop_outcomes([episode], config(stop="anytime"))
    # three offered stops (decisions 0-2), all valued: the exact stop_regret
    assert kind == "offered" and offered[0] == stop_regret(episode, config().reward_weights, "anytime")
    assert offered[0].late and not offered[0].premature and offered[0].best_point == 0
    assert offered[0].regret > 0


def test_which_configs_use_the_offered_stops():
    assert not uses_offered_regret(config(stop="learned")) and not uses_offered_regret(config(stop="rule"))
    assert uses_offered_regret(config(stop="anytime"))
    assert uses_offered_regret(config(stop="learned", answer_credit="partial"))


@pytest.mark.parametrize(
    ("changes", "kind"), [({}, "hindsight"), ({"stop": "anytime", "answer_credit": "partial"}, "offered")]
)
def test_the_recipe_reports_the_regret_its_config_calls_for(changes, kind):
    reports: list[dict] = []
    recipe.train(RunConfig.from_dict({**TINY, **changes, "budget_steps": 200}), on_iteration=reports.append)
    assert reports
    for report in reports:
        figures = report["stop"]
        assert figures["regret"] == kind and figures["stop_regret"] >= 0.0
        assert 0 <= figures["premature"] + figures["late"] <= TINY["episodes_per_iteration"]
