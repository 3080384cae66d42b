"""RunConfig: every field validated by one table of bounds, errors naming the field."""

import json
from dataclasses import fields

import pytest

pytest.importorskip("torch")

from trainer.recipes.config import BOUNDS, CHOICES, MAX_WEIGHT, Bound, RunConfig, check_bound  # noqa: E402


@pytest.mark.parametrize(
    "doc, field",
    [
        ({"algorithm": "a2c"}, "algorithm"),
        ({"credit": "loo"}, "credit"),
        ({"stop": "never"}, "stop"),
        ({"level": "huge"}, "level"),
        ({"budget_steps": 0}, "budget_steps"),
        ({"budget_steps": "100"}, "budget_steps"),
        ({"seed": True}, "seed"),
        ({"lr": 0}, "lr"),
        ({"gae_lambda": 1.5}, "gae_lambda"),
        ({"credit_samples": 1}, "credit_samples"),
        ({"episodes_per_iteration": 6, "group_size": 4}, "group_size"),
        ({"reward_weights": {"speed": 1.0}}, "reward_weights.speed"),
        ({"reward_weights": {"finish": -1}}, "reward_weights.finish"),
        ({"reward_weights": {"success": 1e308}}, "reward_weights.success"),  # R * 1e308 overflowed: no iteration stored
        ({"reward_weights": {"anneal_fraction": 0}}, "reward_weights.anneal_fraction"),
        ({"epochs_": 3}, "epochs_"),
    ],
)
def test_config_errors_name_the_field(doc, field):
    with pytest.raises(ValueError) as error:
        RunConfig.from_dict(doc)
    assert str(error.value).startswith(f"{field}:")


def test_config_round_trips_through_json_with_merged_weights():
    config = RunConfig.from_dict({"credit": "shapley", "reward_weights": {"finish": 0.3}, "seed": 4})
    again = RunConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config
    assert config.reward_weights["finish"] == 0.3 and config.reward_weights["success"] == 1.0


@pytest.mark.parametrize(
    "doc, message",
    [
        ([], "config: must be a JSON object, got list"),
        (
            {"credit": "loo"},
            "credit: must be one of shared, counterfactual, shapley, oracle, expected, counterfactual_baseline, "
            "counterfactual_baseline_exact, got 'loo'",
        ),
        ({"budget_steps": 0}, "budget_steps: must be an integer in [1, 1,000,000,000,000], got 0"),
        ({"seed": True}, "seed: must be an integer in [0, 4,611,686,018,427,387,904], got True"),
        ({"threads": 2.0}, "threads: must be an integer in [1, 64], got 2.0"),
        ({"lr": 0}, "lr: must be a finite number > 0, got 0"),
        ({"clip": float("inf")}, "clip: must be a finite number > 0, got inf"),
        ({"gae_lambda": 1.5}, "gae_lambda: must be a finite number in [0, 1], got 1.5"),
        ({"entropy_coef": -0.1}, "entropy_coef: must be a finite number >= 0, got -0.1"),
        ({"value_coef": "1"}, "value_coef: must be a finite number >= 0, got '1'"),
        ({"reward_weights": [1]}, "reward_weights: must be an object of numbers, got [1]"),
        ({"reward_weights": {"finish": 2e6}}, "reward_weights.finish: must be a number in [0, 1e+06], got 2000000.0"),
        ({"reward_weights": {"anneal_fraction": 0}}, "reward_weights.anneal_fraction: must be in (0, 1]"),
        ({"reward_weights": {"parallel_target": 0.5}}, "reward_weights.parallel_target: must be >= 1"),
        ({"episodes_per_iteration": 6, "group_size": 4}, "group_size: must divide episodes_per_iteration (6), got 4"),
        ({"llm_model": 3}, "llm_model: must be a folder path of at most 1000 characters"),
        (
            {"sample_episodes": 5, "episodes_per_iteration": 4, "group_size": 4},
            "sample_episodes: must be <= episodes_per_iteration",
        ),
    ],
)
def test_config_error_messages(doc, message):
    with pytest.raises(ValueError) as error:
        RunConfig.from_dict(doc)
    assert str(error.value) == message


def test_every_field_is_checked_once():
    checked = list(CHOICES) + [b.field for b in BOUNDS] + ["reward_weights", "llm_model"]
    assert sorted(checked) == sorted(f.name for f in fields(RunConfig)) and len(set(checked)) == len(checked)
    defaults = RunConfig().to_dict()
    for bound in BOUNDS:  # the defaults are within their bounds
        check_bound(bound, defaults[bound.field])
    assert max(RunConfig().reward_weights.values()) <= MAX_WEIGHT


def test_bounds_are_inclusive_unless_open():
    check_bound(Bound("x", int, 1, 3), 3)
    check_bound(Bound("x", float, 0, 1), 0.0)
    check_bound(Bound("x", float, 0, 1), 1)
    with pytest.raises(ValueError, match=r"^x: must be a finite number > 0, got 0\.0$"):
        check_bound(Bound("x", float, 0, float("inf"), open_low=True), 0.0)
    with pytest.raises(ValueError, match=r"^x: must be a finite number in \[0, 1\], got nan$"):
        check_bound(Bound("x", float, 0, 1), float("nan"))
    with pytest.raises(ValueError, match=r"^x: must be an integer in \[1, 3\], got False$"):
        check_bound(Bound("x", int, 1, 3), False)
