"""Group-relative policy optimisation on action tokens (GRPO: Shao et al. 2024, "DeepSeekMath",
§4.1), with PPO's clipped ratio (Schulman et al. 2017) per token and an optional KL penalty to the
reference model by the k3 estimator (Schulman 2020, "Approximating KL divergence").

Shapes: a batch holds D decisions; decision d has L_d action tokens (its chosen candidate's, from
trainer.llm_policy.constrained.action_logprobs) and one advantage A_d (the episode's
group-relative advantage under shared credit, `group_advantages`; or, where per-decision credit
replaces the outcome, the group-relative outcome-free reward plus the decision's own credit,
`baselined_advantages`).
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


def baselined_advantages(rewards: Sequence[Sequence[float]], credits: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per episode, the (D_i,) advantages of its decisions where per-decision credit takes the place
    of the outcome's share (issue 31 item 3; the `BASELINED` arms of trainer.rl.credit):

        A_{i,d} = (f_i - mean_{j in g(i)} f_j + c_{i,d}) / (σ + ε),

    `rewards` (groups × G) the episodes' outcome-free rewards f (costs and auxiliary terms, the
    outcome term left out), `credits` one (D_i,) array per episode in the same order (group by
    group), c_{i,d} = w_success Δ_k, the outcome's paired leave-one-out credit of the block k holding
    decision d (trainer.rl.credit.outcome_credit), σ the population standard deviation of the
    numerators over all the decisions. The GRPO form of the MLP recipe's `credit_advantages_of`
    (GAE on the outcome-free reward + w_success Δ, normalised over the batch by `update_batch`):
    the group mean is GRPO's baseline for f (Shao et al. 2024, §4.1), Δ is COMA's counterfactual
    advantage of the outcome (Foerster et al. 2018, eq. 4), so the 0/1 outcome's share of shared
    credit, w_success (R_i - mean_g R), is replaced by Δ. σ is the batch's, not the group's: f
    barely varies within a group, and its own spread would scale its noise above the credit. No
    mean is subtracted, so a decision's sign is its numerator's. Raises ValueError where `credits`
    does not hold one array per episode."""
    free = [np.asarray(group, dtype=np.float64) for group in rewards]
    if sum(len(group) for group in free) != len(credits):
        raise ValueError("credits: one array per episode of `rewards`, group by group")
    centred = [r - group.mean() for group in free for r in group]
    numerators = [c + np.asarray(credit, dtype=np.float64) for c, credit in zip(centred, credits)]
    flat = np.concatenate(numerators) if numerators else np.zeros(0)
    scale = (flat.std() if flat.size else 0.0) + STD_EPS
    return [n / scale for n in numerators]


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
