"""Advantages and the update: GAE with gamma = 1, and epochs of clipped PPO with the value and stop
heads' regression losses and an annealed entropy bonus."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from trainer.policy import STOP, OrchestratorPolicy, move_probabilities

if TYPE_CHECKING:
    from trainer.recipes.config import RunConfig


def gae(values: np.ndarray, reward: float | np.ndarray, lam: float) -> np.ndarray:
    """GAE (Schulman et al. 2016, eq. 16) with gamma = 1: values (T,) -> advantages (T,), with a
    terminal `reward` (a float: δ_t = V_{t+1} - V_t for t < T - 1, δ_{T-1} = reward - V_{T-1}) or
    per-decision rewards r (T,): δ_t = r_t + V_{t+1} - V_t, V_T = 0."""
    rewards = np.asarray(reward, dtype=float)
    if rewards.ndim == 0:
        rewards = np.append(np.zeros(len(values) - 1), rewards)
    deltas = rewards + np.append(values[1:], 0.0) - values
    out = np.zeros_like(deltas)
    running = 0.0
    for t in range(len(deltas) - 1, -1, -1):
        running = deltas[t] + lam * running
        out[t] = running
    return out


def ppo_update(
    policy: OrchestratorPolicy,
    optimizer: torch.optim.Optimizer,
    batch: dict[str, torch.Tensor],
    config: RunConfig,
    generator: torch.Generator,
    anneal: float = 1.0,
) -> dict[str, float]:
    """`config.epochs` passes of clipped PPO over `batch` in shuffled minibatches of
    `config.minibatch_size`.

    `batch` holds N decisions: features (N, F), masks (N, M) bool, moves (N,) long, logp,
    advantages, returns (N,), and the stop heads' targets stop_value, gain (N,) where stop_measured
    (N,) is 1 (`trainer.rl.stop.stop_targets`). Loss = -min(ρA, clip(ρ)A) over the non-stop
    decisions (Schulman et al. 2017, eq. 7; ρ of the action head given no stop; stop is not a
    policy-gradient action) + value_coef (V - R)^2 + continuation_coef ((S - S*)^2 + (G - G*)^2 over
    the measured decisions) - entropy_coef * anneal * H (of the non-stop moves; `anneal` in [0, 1]:
    exploration early, none at the end, where a bonus of a fixed size kept needless moves about as
    likely as useful ones whose edge is a few critical steps). Gradients are clipped to norm 0.5.
    Returns the last epoch's means: policy_loss, value_loss, stop_value_loss, entropy, clip_fraction.
    """
    n = len(batch["moves"])
    stats: dict[str, list[float]] = {}
    for _ in range(config.epochs):
        stats = {key: [] for key in ("policy_loss", "value_loss", "stop_value_loss", "entropy", "clip_fraction")}
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, config.minibatch_size):
            rows = order[start : start + config.minibatch_size]
            masks, moves = batch["masks"][rows], batch["moves"][rows]
            heads = policy(batch["features"][rows], masks)
            _, logp_all = move_probabilities(heads.logits, heads.gain.detach(), masks, config.stop)
            acting = (moves != STOP).float()  # stop rows: trained by the stop heads, not the surrogate
            logp = logp_all.gather(1, torch.where(moves == STOP, 0, moves)[:, None]).squeeze(1)
            ratio = torch.exp((logp - batch["logp"][rows]) * acting)
            adv = batch["advantages"][rows]
            surrogate = torch.min(ratio * adv, ratio.clamp(1 - config.clip, 1 + config.clip) * adv)
            policy_loss = -(surrogate * acting).sum() / acting.sum().clamp(min=1)
            value_loss = ((heads.value - batch["returns"][rows]) ** 2).mean()
            measured = batch["stop_measured"][rows]
            squared = (heads.stop_value - batch["stop_value"][rows]) ** 2 + (heads.gain - batch["gain"][rows]) ** 2
            stop_value_loss = (squared * measured).sum() / measured.sum().clamp(min=1)
            others = masks.clone()
            others[:, STOP] = False
            probs = logp_all.exp() * others
            entropy = -(probs * logp_all.clamp(min=-30)).sum(-1).mean()
            loss = (
                policy_loss
                + config.value_coef * value_loss
                + config.continuation_coef * stop_value_loss
                - config.entropy_coef * anneal * entropy
            )
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()
            for key, value in (
                ("policy_loss", policy_loss),
                ("value_loss", value_loss),
                ("stop_value_loss", stop_value_loss),
                ("entropy", entropy),
                (
                    "clip_fraction",
                    (((ratio - 1).abs() > config.clip).float() * acting).sum() / acting.sum().clamp(min=1),
                ),
            ):
                stats[key].append(value.item())
    return {key: float(np.mean(values)) for key, values in stats.items()}
