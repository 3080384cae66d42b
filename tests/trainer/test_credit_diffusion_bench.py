"""bench/credit_diffusion.py's quick profile end to end: every arm trained at equal updates on the
same seeds, re-rollouts counted in env steps, the summary's paired intervals, the pilot's power
table, the JSON and the PNG; the power calculation by hand."""

import importlib.util
import json
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("matplotlib")

from tests.servers import REPO  # noqa: E402


def load_bench():
    spec = importlib.util.spec_from_file_location("credit_diffusion", REPO / "bench" / "credit_diffusion.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = load_bench()


def test_run_configs_of_one_n_differ_only_in_credit_and_seed():
    a, b = bench.run_config("shared", 16, 0), bench.run_config("counterfactual_baseline", 16, 3)
    assert {k for k in a if a[k] != b[k]} == {"credit", "seed"}


def test_t_interval_by_hand():
    mean, half = bench.t_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.302652729911275 * 1.0 / np.sqrt(3))


def test_power_calculation_by_hand():
    # a paired t test with 10 pairs detects d = 1 SD at 80 % power (G*Power: 0.803), not d = 0.9
    assert bench.paired_power(1.0, 1.0, 10) == pytest.approx(0.8031, abs=1e-3)
    assert bench.seeds_needed(1.0, 1.0) == 10
    assert bench.seeds_needed(0.5, 1.0) == 34  # G*Power: 34 pairs for d = 0.5
    assert bench.detectable(1.0, 10) == pytest.approx(0.996, abs=1e-3)
    assert bench.seeds_needed(0.0, 1.0) is None


def test_quick_profile_end_to_end(tmp_path):
    common = ["--quick", "--workers", "1", "--out", str(tmp_path), "--scratch", str(tmp_path / "runs")]
    pilot = bench.main([*common, "--pilot"])
    assert {(r["arm"], r["seed"]) for r in pilot["runs"]} == {
        (a, bench.PILOT_SEED + s) for a in bench.PILOT_ARMS for s in (0, 1)
    }
    diff = [
        next(r for r in pilot["runs"] if r["arm"] == "expected" and r["seed"] == s)["held_out"]["expected_success"]
        - next(r for r in pilot["runs"] if r["arm"] == "shared" and r["seed"] == s)["held_out"]["expected_success"]
        for s in (bench.PILOT_SEED, bench.PILOT_SEED + 1)
    ]
    assert pilot["pilot"]["4"]["sd"] == pytest.approx(np.std(diff, ddof=1))
    result = bench.main(common)
    runs = result["runs"]
    assert {(r["arm"], r["seed"]) for r in runs} == {(a, s) for a in bench.ARMS for s in (0, 1)}
    assert {len(r["iterations"]) for r in runs} == {3}  # equal updates
    by = {(r["arm"], r["seed"]): r for r in runs}
    for seed in (0, 1):
        assert by[("shared", seed)]["iterations"][-1]["metrics"]["credit_env_steps"] == 0
        first = [by[(a, seed)]["iterations"][0]["env_steps"] for a in ("shared", "expected")]
        assert first[0] == first[1]  # the same play before the first update
        for arm in ("counterfactual_baseline", "counterfactual_baseline_exact"):  # re-rollouts are counted
            assert by[(arm, seed)]["env_steps"] > by[("shared", seed)]["env_steps"]
        # the same seed starts from the same policy on the same episodes: the first iteration's
        # play is identical in every arm
        firsts = {by[(a, seed)]["iterations"][0]["metrics"]["expected_success"] for a in bench.ARMS}
        assert len(firsts) == 1
    arms = result["summary"]["4"]["arms"]
    for arm in bench.ARMS:
        values = arms[arm]["values"]["held_out"]
        assert arms[arm]["final_held_out"][0] == pytest.approx(np.mean(values))
    shared = arms["shared"]["values"]["held_out"]
    gaps = np.subtract(arms["expected"]["values"]["held_out"], shared)
    assert arms["expected"]["minus_shared"][0] == pytest.approx(gaps.mean())
    assert result["pilot"]["4"]["detectable_at_sweep_seeds"] > 0
    base = result["baselines"]["4"]
    assert len(base["fixed fan-out (8 experts + verifier)"]["expected_success"]) == 4
    assert (tmp_path / "credit_diffusion.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "credit_diffusion.json").read_text())["profile"] == "quick"
    assert "| 4 | counterfactual_baseline | 2 |" in (tmp_path / "credit_diffusion.md").read_text()
