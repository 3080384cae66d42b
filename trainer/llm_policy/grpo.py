"""Group-relative policy optimisation on action tokens (GRPO: Shao et al. 2024, "DeepSeekMath",
§4.1), with PPO's clipped ratio (Schulman et al. 2017) per token and an optional KL penalty to the
reference model by the k3 estimator (Schulman 2020, "Approximating KL divergence").

Shapes: a batch holds D decisions; decision d has L_d action tokens (its chosen candidate's, from
trainer.llm_policy.constrained.action_logprobs) and one advantage A_d (the episode's
group-relative advantage under shared credit, or the decision's own credit).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

#: PPO's clipping range ε of the ratio (Schulman et al. 2017 use 0.2).
CLIP = 0.2
#: Added to the group's standard deviation so a group with one reward gets advantages 0, not NaN.
STD_EPS = 1e-6


def group_advantages(rewards: Sequence[float]) -> np.ndarray:
    """(G,) advantages of a group of G episodes of one task: A_i = (r_i - mean(r)) / (std(r) + ε),
    the population standard deviation (GRPO's outcome supervision, Shao et al. 2024 eq. 3
    context). Raises ValueError for an empty group."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.size == 0:
        raise ValueError("rewards: a group needs at least one episode")
    return (r - r.mean()) / (r.std() + STD_EPS)


def grpo_loss(
    new: Sequence[torch.Tensor],
    old: Sequence[torch.Tensor],
    advantages: Sequence[float],
    clip: float = CLIP,
    reference: Sequence[torch.Tensor] | None = None,
    kl_coef: float = 0.0,
) -> torch.Tensor:
    """The loss to minimise: minus the mean over all action tokens of
    min(ρ_t A_d, clip(ρ_t, 1 - ε, 1 + ε) A_d) - β KL_t, with ρ_t = exp(new_t - old_t) and
    KL_t = exp(ref_t - new_t) - (ref_t - new_t) - 1 (k3, ≥ 0). `new`, `old`, `reference`: per
    decision, (L_d,) log-probabilities of its action tokens under the adapter being trained, the
    one that sampled it, and the reference model (adapter off); `advantages`: (D,). Raises
    ValueError when the lengths disagree."""
    if not (len(new) == len(old) == len(advantages)) or (reference is not None and len(reference) != len(new)):
        raise ValueError("new, old, advantages (and reference): one entry per decision")
    terms = []
    for d, (lp, lp_old) in enumerate(zip(new, old, strict=True)):
        ratio = torch.exp(lp - lp_old.detach())
        a = float(advantages[d])
        surrogate = torch.minimum(ratio * a, torch.clamp(ratio, 1 - clip, 1 + clip) * a)
        if reference is not None and kl_coef:
            diff = reference[d].detach() - lp
            surrogate = surrogate - kl_coef * (torch.exp(diff) - diff - 1)
        terms.append(surrogate)
    return -torch.cat(terms).mean()
