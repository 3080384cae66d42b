"""Counter-based randomness: every stochastic outcome is a pure function of (episode seed, event key).

`uniform(seed, key)` hashes the key once (BLAKE2b, 64 bits, cached) and mixes it with the seed
through the SplitMix64 finaliser (Steele, Lea & Flood 2014). No generator state is carried, so an
intervention that re-simulates an episode draws the same number for every outcome it does not
change: common random numbers (docs/architecture.md "Credit"). Keys name what is drawn, never when:
"solve/3/0" is the first attempt at subtask 3 wherever it falls in the trace.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np

MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


@lru_cache(maxsize=1 << 16)
def key_hash(key: str) -> int:
    """A stable 64-bit hash of an event key (BLAKE2b, digest size 8, little-endian)."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")


def _mix(x):
    """SplitMix64 finaliser on a Python int or a numpy uint64 array (wrapping mod 2**64)."""
    x = ((x ^ (x >> 30)) * _M1) & MASK
    x = ((x ^ (x >> 27)) * _M2) & MASK
    return x ^ (x >> 31)


def uniform(seed: int, key: str) -> float:
    """A uniform number in [0, 1) (53 bits) for outcome `key` of the episode with `seed` (int >= 0)."""
    x = _mix((_mix((seed * _GOLDEN) & MASK) ^ key_hash(key)) & MASK)
    return (x >> 11) * 2.0**-53


def uniforms(seeds: np.ndarray, key_hashes: np.ndarray) -> np.ndarray:
    """Vectorised `uniform`: seeds (B,) ints >= 0 and key hashes (B,) from `key_hash` -> (B,) float64.

    `uniforms(np.array([s]), np.array([key_hash(k)]))[0] == uniform(s, k)`.
    """
    seeds = np.asarray(seeds).astype(np.uint64)
    x = _mix(_mix(seeds * np.uint64(_GOLDEN)) ^ np.asarray(key_hashes, dtype=np.uint64))
    return (x >> np.uint64(11)).astype(np.float64) * 2.0**-53
