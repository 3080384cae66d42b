"""Counter-based randomness (trainer/sim/rng.py)."""

import numpy as np

from trainer.sim.rng import key_hash, uniform, uniforms


def test_a_pure_function_of_seed_and_key():
    assert uniform(3, "solve/1/0") == uniform(3, "solve/1/0")
    assert uniform(3, "solve/1/0") != uniform(4, "solve/1/0")
    assert uniform(3, "solve/1/0") != uniform(3, "solve/1/1")


def test_vectorised_equals_scalar():
    seeds = np.arange(50)
    keys = [f"k/{i % 7}" for i in range(50)]
    vector = uniforms(seeds, np.array([key_hash(k) for k in keys], dtype=np.uint64))
    assert vector.tolist() == [uniform(int(s), k) for s, k in zip(seeds, keys)]


def test_uniform_on_the_unit_interval():
    draws = uniforms(np.arange(20_000), np.full(20_000, key_hash("x"), dtype=np.uint64))
    assert draws.min() >= 0.0 and draws.max() < 1.0
    assert abs(draws.mean() - 0.5) < 0.01
    assert abs((draws < 0.3).mean() - 0.3) < 0.015
