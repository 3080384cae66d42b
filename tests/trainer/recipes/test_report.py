"""The iteration report's binning of per-step curves."""

import pytest

pytest.importorskip("torch")

from trainer.recipes.report import binned  # noqa: E402


def test_binned_means_by_bin_start_in_step_order():
    points = [(3, 1.0), (0, 0.0), (1, 0.5), (4, 0.25), (9, 2.0)]
    assert binned(points, 2) == [[0, 0.25], [2, 1.0], [4, 0.25], [8, 2.0]]
    assert binned(points, 1)[0] == [0, 0.0] and binned([], 3) == []
