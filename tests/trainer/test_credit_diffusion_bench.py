"""bench/credit_diffusion.py's quick profile end to end: every arm trained at equal updates on the
same seeds, re-rollouts counted in env steps, the summary's intervals, the JSON and the PNG."""

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
    a, b = bench.run_config("shared", 16, 0), bench.run_config("oracle", 16, 3)
    assert {k for k in a if a[k] != b[k]} == {"credit", "seed"}


def test_t_interval_by_hand():
    mean, half = bench.t_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.302652729911275 * 1.0 / np.sqrt(3))


def test_quick_profile_end_to_end(tmp_path):
    result = bench.main(["--quick", "--workers", "1", "--out", str(tmp_path), "--scratch", str(tmp_path / "runs")])
    runs = result["runs"]
    assert {(r["arm"], r["seed"]) for r in runs} == {(a, s) for a in bench.ARMS for s in (0, 1)}
    assert {len(r["iterations"]) for r in runs} == {3}  # equal updates
    by = {(r["arm"], r["seed"]): r for r in runs}
    for seed in (0, 1):
        assert by[("shared", seed)]["iterations"][-1]["metrics"]["credit_env_steps"] == 0
        for arm in ("counterfactual", "shapley", "oracle"):  # re-rollouts are counted
            assert by[(arm, seed)]["env_steps"] > by[("shared", seed)]["env_steps"]
        # the same seed starts from the same policy on the same episodes: the first iteration's
        # play is identical in every arm
        firsts = {by[(a, seed)]["iterations"][0]["metrics"]["expected_success"] for a in bench.ARMS}
        assert len(firsts) == 1
    arms = result["summary"]["4"]["arms"]
    for arm in bench.ARMS:
        values = arms[arm]["values"]["held_out"]
        assert arms[arm]["final_held_out"][0] == pytest.approx(np.mean(values))
    base = result["baselines"]["4"]
    assert len(base["fixed fan-out (8 experts + verifier)"]["expected_success"]) == 4
    assert (tmp_path / "credit_diffusion.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "credit_diffusion.json").read_text())["profile"] == "quick"
    assert "| 4 | oracle | 2 | 3 |" in (tmp_path / "credit_diffusion.md").read_text()
