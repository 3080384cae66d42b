"""Planted message effects (trainer/sim/effects.py)."""

import numpy as np
import pytest

from trainer.sim import effects as fx


def test_gain_by_kind():
    assert fx.pivotal("a", 0.3).gain({"a": True}) == pytest.approx(0.3)
    assert fx.pivotal("a", 0.3).gain({}) == 0.0
    pair = fx.redundant(("a", "b"), 0.2)
    assert [pair.gain(k) for k in ({}, {"a": True}, {"b": True}, {"a": True, "b": True})] == [0, 0.2, 0.2, 0.2]
    both = fx.synergistic(("a", "b"), 0.25)
    assert [both.gain(k) for k in ({}, {"a": True}, {"a": True, "b": True})] == [0, 0, 0.25]
    assert fx.harmful("h", 0.2).gain({"h": True}) == pytest.approx(-0.2)
    assert fx.null("n").gain({"n": True}) == 0.0


def test_gain_over_coalition_arrays():
    arrived = {"a": np.array([False, True, False, True]), "b": np.array([False, False, True, True])}
    effects = [fx.redundant(("a", "b"), 0.2), fx.synergistic(("a", "b"), 0.25)]
    assert fx.gain(effects, arrived).tolist() == pytest.approx([0.0, 0.2, 0.2, 0.45])


@pytest.mark.parametrize(
    "make",
    [
        lambda: fx.Effect("pivotal", 0.1, ("a", "b")),
        lambda: fx.Effect("redundant", 0.1, ("a",)),
        lambda: fx.Effect("loud", 0.1, ("a",)),
        lambda: fx.Effect("harmful", -0.1, ("a",)),
    ],
)
def test_invalid_effects(make):
    with pytest.raises(ValueError):
        make()


def test_pseudo_parallel_needs_a_pair():
    with pytest.raises(ValueError):
        fx.pseudo_parallel(1)
