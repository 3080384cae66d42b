"""A small credit-diffusion sweep written by hand (bench/credit_diffusion.py's JSON layout): arms
shared and oracle, n = 4 and 16, seeds 0-2, three iterations each. Env steps are 100, 200, 300
times (seed + 1). At n = 4 every run starts at E[R] 0.5; shared's curve is 0.5, 0.6, 0.7
(trailing mean over 3: 0.5, 0.55, 0.6) and oracle's 0.5, 0.8, 0.9 (0.5, 0.65, 0.7333), so the
target is 0.5 + 0.5 (0.7333 - 0.5) = 0.6167: oracle reaches it at its second iteration, shared
never (censored at its env steps in all). At n = 16 the best gain is 0.0067 < 0.01: no target."""

from __future__ import annotations

from bench.credit_diffusion import run_config

CURVES = {(4, "shared"): [0.5, 0.6, 0.7], (4, "oracle"): [0.5, 0.8, 0.9], (16, "shared"): [0.3, 0.3, 0.3]}
CURVES[(16, "oracle")] = [0.3, 0.3, 0.32]
HELD_OUT = {
    (4, "shared"): [0.60, 0.62, 0.64],
    (4, "oracle"): [0.70, 0.75, 0.71],
    (16, "shared"): [0.30, 0.31, 0.29],
    (16, "oracle"): [0.33, 0.35, 0.31],
}
SEEDS = (0, 1, 2)


def small_sweep() -> dict:
    runs = []
    for (n, arm), curve in CURVES.items():
        for seed in SEEDS:
            iterations = [
                {
                    "iteration": i,
                    "env_steps": 100 * (i + 1) * (seed + 1),
                    "wall_s": 0.1,
                    "metrics": {"reward": value, "expected_success": value, "credit_env_steps": 0.0},
                }
                for i, value in enumerate(curve)
            ]
            runs.append(
                {
                    "arm": arm,
                    "n": n,
                    "seed": seed,
                    "config": run_config(arm, n, seed),
                    "iterations": iterations,
                    "env_steps": iterations[-1]["env_steps"],
                    "held_out": {"expected_success": HELD_OUT[(n, arm)][seed]},
                }
            )
    return {"runs": runs}
