"""Actions of a language model constrained to a list of legal ones, as vLLM's structured outputs
decode them (a logits mask at every step; docs.vllm.ai "Structured Outputs"), computed exactly.

The candidates are token sequences, none a prefix of another (each ends with the end-of-turn
token). Decoding constrained to them is decoding on their trie: at step j, after the prefix
c[:j], only the tokens that continue some candidate with that prefix are allowed, and the model's
next-token distribution is renormalised over them. The probability of candidate c is then

    p(c) = prod_j softmax(logits_j restricted to allowed_j)[c_j],

and the p(c) of all candidates sum to 1. `action_logprobs` gives each candidate's per-token
log-probabilities (with gradients, for the update; trainer.llm_policy.grpo), `sample_action` draws
one with a given uniform u (SwarmSim's counter-based draws: common random numbers across re-rollouts).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def _allowed(candidates: Sequence[Sequence[int]]) -> list[list[list[int]]]:
    """allowed[c][j]: the distinct tokens at position j of the candidates that share c's first j tokens."""
    out = []
    for c in candidates:
        rows = []
        for j in range(len(c)):
            prefix = tuple(c[:j])
            rows.append(sorted({d[j] for d in candidates if len(d) > j and tuple(d[:j]) == prefix}))
        out.append(rows)
    return out


def check_candidates(candidates: Sequence[Sequence[int]]) -> None:
    """Raise ValueError unless the candidates are non-empty, distinct and prefix-free."""
    if not candidates or any(len(c) == 0 for c in candidates):
        raise ValueError("candidates: need at least one, each at least one token")
    seqs = [tuple(c) for c in candidates]
    for a in seqs:
        for b in seqs:
            if a is not b and b[: len(a)] == a:
                raise ValueError(f"candidates: {list(a)} is a prefix of {list(b)} (end each with an end token)")


def action_logprobs(
    model: torch.nn.Module, prompt: Sequence[int], candidates: Sequence[Sequence[int]]
) -> list[torch.Tensor]:
    """Per-token log-probabilities of every candidate under trie-constrained decoding after
    `prompt` (token ids): a list of (len(candidate),) tensors, differentiable through `model` (a
    causal LM taking `past_key_values` and returning `.logits` (B, T, V)); exp of each tensor's sum
    is p(c), and they sum to 1 over the candidates. The prompt is read once (its key-value cache
    repeated for the C candidates), then the candidates as one right-padded batch: P + C·L tokens,
    not C·(P + L). Raises ValueError for candidates that are not prefix-free (`check_candidates`)."""
    check_candidates(candidates)
    p, longest = len(prompt), max(len(c) for c in candidates)
    head = model(input_ids=torch.tensor([list(prompt)]), use_cache=True)
    cache = head.past_key_values
    cache.batch_repeat_interleave(len(candidates))
    ids = torch.zeros((len(candidates), longest), dtype=torch.long)
    mask = torch.zeros((len(candidates), p + longest), dtype=torch.long)
    mask[:, :p] = 1
    for i, c in enumerate(candidates):
        ids[i, : len(c)] = torch.tensor(list(c))
        mask[i, p : p + len(c)] = 1
    tail = model(input_ids=ids, attention_mask=mask, past_key_values=cache).logits  # (C, L, V)
    first = head.logits[0, -1]  # the prediction of every candidate's first token
    allowed = _allowed(candidates)
    out = []
    for i, c in enumerate(candidates):
        steps = []
        for j, token in enumerate(c):
            row = first if j == 0 else tail[i, j - 1]
            options = allowed[i][j]
            restricted = torch.log_softmax(row[torch.tensor(options)], dim=-1)
            steps.append(restricted[options.index(token)])
        out.append(torch.stack(steps))
    return out


def sample_action(logprobs: Sequence[torch.Tensor], u: float) -> int:
    """The candidate index the uniform draw `u` in [0, 1) picks by the inverse CDF over p(c) (in
    candidate order)."""
    probs = torch.stack([lp.detach().sum() for lp in logprobs]).exp()
    cumulative = torch.cumsum(probs / probs.sum(), dim=0)
    return int(min(int(torch.searchsorted(cumulative, torch.tensor(u), right=True)), len(logprobs) - 1))
