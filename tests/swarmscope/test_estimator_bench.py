"""The estimator benchmark (bench/bench_estimators.py): its counting, and its CI profile end to end."""

import importlib.util
import json
import math
import sys

import numpy as np
import pytest

from swarmscope.credit import Attribution
from tests.servers import REPO


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_estimators", REPO / "bench" / "bench_estimators.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = load_bench()


def attribution(estimate, low, high, samples=(0.0, 1.0)):
    return Attribution("p", "paired_loo", estimate, low, high, 4, np.array(samples, float))


def test_coverage_counts_on_a_constructed_case():
    exact = np.array([0.5, 0.0, 0.7])
    results = [attribution(0.45, 0.4, 0.5), attribution(0.1, 0.05, 0.2), attribution(0.3, 0.2, 0.4)]
    # the real effect 0.5 sits on the interval's upper end (covered); the null 0 lies below [0.05, 0.2]
    assert bench.coverage_hits(results, exact, {"real": 0, "null": 1}) == {"real": True, "null": False}
    assert bench.scored_players(exact, np.random.default_rng(0))["null"] == 1
    assert bench.scored_players(exact, np.random.default_rng(0))["real"] in (0, 2)
    assert bench.top1(results, exact) is False  # player 0 ranked first; player 2 has the largest value
    assert bench.top1([attribution(0.1, 0, 1), attribution(0.2, 0, 1)], np.array([0.3, 0.3])) is True  # a tie
    zero = [attribution(0.5, 0.5, 0.5, (0.5, 0.5)), attribution(0.5, 0.5, 0.5, (0.0, 1.0))]
    assert bench.unequal_zero_width(zero) == 1

    def cell(real, null, real8):
        return {
            "mean": [0.2, 0.1],
            "max": [0.3, 0.2],
            "rollouts": [100, 400],
            "zero": 0,
            "top1": real,
            "pass": null,
            "ref_mean": 0.1,
            "coverage": {"real": real, "null": null},
            "by_n": {8: {"real": real8}},
        }

    scores = [
        {"family": "pairwise", "cells": {"loo paired|1.0": cell(True, True, False)}},
        {"family": "pairwise", "cells": {"loo paired|1.0": cell(True, False, True)}},
        {"family": "pairwise", "cells": {"loo paired|1.0": cell(False, True, False)}},
    ]
    row = bench.summarise(scores, bench.PROFILES["ci"])["loo paired|pairwise|1.0"]
    assert row["coverage"] == {"real": (2, 3), "null": (2, 3)}
    assert row["by_n"] == {(8, "real"): (1, 3)}
    assert (row["games"], row["top1"], row["pass"]) == (3, 2, 2)
    assert row["ladder"] == [(100.0, pytest.approx(0.2)), (400.0, pytest.approx(0.1))]
    # mean error 0.2 then 0.1: 0.05 is not reached on the ladder
    assert row["needed"] == math.inf


def test_rollouts_to_the_target_error_interpolate_log_log():
    # 0.1 at 100 rollouts, 0.025 at 400: error ∝ 1 / rollouts, so 0.05 at 200
    assert bench.needed([0.1, 0.025], [100, 400]) == pytest.approx(200)
    assert bench.needed([0.04, 0.01], [100, 400]) == 100
    assert bench.needed([0.2, 0.1], [100, 400]) == math.inf


def test_wilson_interval_of_a_share():
    assert bench.wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)
    assert bench.wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=5e-5)
    assert all(math.isnan(x) for x in bench.wilson(0, 0))


def test_the_ci_profile_tells_the_estimators_apart():
    profile = bench.PROFILES["ci"]
    scores, table = bench.run(profile, workers=1)
    assert len(scores) == profile.games * len(profile.families)
    for family in profile.families:
        for rho in profile.couplings:
            for estimator in bench.ESTIMATORS:
                if estimator == "loo unpaired" and rho != 1.0:
                    assert f"{estimator}|{family}|{rho}" not in table
                    continue
                row = table[f"{estimator}|{family}|{rho}"]
                assert row["games"] == profile.games
                assert sum(count for _, count in row["coverage"].values()) <= 2 * profile.games
    # no interval is a point while its samples differ
    assert sum(row["zero"] for row in table.values()) == 0
    top = -1  # the top rung of the ladder

    def error(estimator, family, rho=1.0):
        return table[f"{estimator}|{family}|{rho}"]["ladder"][top][1]

    # the 2-additive estimator is biased on a 4-way synergy (Banzhaf, not Shapley) and not on pairwise games
    for rho in profile.couplings:
        assert error("2-additive", "synergy4", rho) > 1.5 * error("2-additive", "pairwise", rho)
    assert error("2-additive", "synergy4") > error("shapley permutation", "synergy4")
    # common random numbers: the paired leave-one-out needs fewer rollouts than the unpaired one
    paired, unpaired = table["loo paired|pairwise|1.0"]["needed"], table["loo unpaired|pairwise|1.0"]["needed"]
    assert paired < unpaired
    numbers = bench.guide(table, profile, "test")
    assert sorted(numbers["methods"]) == ["kernelshap", "loo", "shapley", "shapley2"]
    assert (numbers["nominal"], numbers["null_nominal"]) == (0.95, pytest.approx(0.05))
    for method in numbers["methods"].values():
        assert sorted(method["coverage"], key=int) == [str(n) for n in profile.ns]
        for c in method["coverage"].values():
            assert 0 <= c["real"] <= 1 and 0 <= c["null_flag"] <= 1
            assert sorted(c["couplings"]) == ["0.0", "0.5", "1.0"]  # one entry per coupling, not pooled
            for rho in c["couplings"].values():
                assert rho["real_worst"] <= rho["real"] and rho["null_flag_worst"] >= rho["null_flag"]
                assert rho["real_width"] > 0
            assert c["real_worst"] == min(rho["real_worst"] for rho in c["couplings"].values())
            assert isinstance(c["under"], list) and isinstance(c["over_null"], list)
    # the game estimators' score intervals, and the t intervals of the same samples beside them
    for estimator in ("shapley permutation", "kernel shap", "2-additive"):
        row = table[f"{estimator}|noisy|1.0"]
        assert row["by_n"][(2, "real")][1] == row["by_n"][(2, "real t")][1] > 0
    assert (2, "real t") not in table["loo paired|noisy|1.0"]["by_n"]


def test_the_guide_file_is_compact_json():
    data = {"a": {"b": {"x": 1, "y": [0.1, 0.2]}, "c": []}, "d": "ρ"}
    text = bench.compact_json(data)
    assert json.loads(text) == data
    assert '"b": {"x": 1, "y": [0.1, 0.2]}' in text and '"d": "ρ"' in text  # leaf objects on one line


def test_off_nominal_and_the_monte_carlo_error():
    assert bench.off_nominal(280, 320) and not bench.off_nominal(300, 320)  # 0.875 [0.84, 0.91]; 0.94 [0.91, 0.96]
    assert not bench.off_nominal(0, 0)
    assert bench.mc(304, 320) == "0.950 ± 0.024" and bench.mc(0, 0) == "—"
