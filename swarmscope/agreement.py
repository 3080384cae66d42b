"""Agreement between reviewers who label the same traces (Cohen's kappa).

Reviewers label a trace's mistake agent and mistake step, as the Who&When annotators did
(Zhang et al., "Which Agent Causes Task Failures and When?", ICML 2025). Agreement between two
reviewers is Cohen's kappa over the traces both labelled:

    κ = (p_o − p_e) / (1 − p_e)

with p_o the observed share of items on which both chose the same category and
p_e = Σ_k p_a(k) · p_b(k) the agreement expected by chance from each reviewer's own category
frequencies (J. Cohen, "A coefficient of agreement for nominal scales", Educational and
Psychological Measurement 20(1), 1960, eq. 1).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters' categories for the same n items (a[i] and b[i] rate item i).

    Returns a float in [−1, 1]; NaN when p_e = 1 (both raters used one and the same category for
    every item: kappa is undefined there). Raises ValueError when the lengths differ or n = 0.
    """
    if len(a) != len(b):
        raise ValueError(f"raters labelled different numbers of items: {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        raise ValueError("kappa needs at least one item labelled by both raters")
    p_o = sum(x == y for x, y in zip(a, b)) / n
    count_a, count_b = Counter(a), Counter(b)
    p_e = sum(count_a[k] * count_b[k] for k in count_a) / (n * n)
    if p_e == 1.0:
        return math.nan
    return (p_o - p_e) / (1.0 - p_e)


@dataclass(frozen=True)
class PairAgreement:
    """Agreement of one pair of raters: items both labelled, observed agreement p_o and kappa
    (None where undefined: no shared items, or p_e = 1)."""

    rater_a: Hashable
    rater_b: Hashable
    n_items: int
    observed: float | None
    kappa: float | None


def pairwise_kappa(labels: Mapping[Hashable, Mapping[Hashable, Hashable]]) -> list[PairAgreement]:
    """Kappa for every pair of raters. `labels`: rater -> {item -> category}.

    Each pair is scored on the items both labelled; pairs are ordered as `sorted(labels, key=str)`.
    """
    out = []
    for ra, rb in combinations(sorted(labels, key=str), 2):
        shared = sorted(set(labels[ra]) & set(labels[rb]), key=str)
        if not shared:
            out.append(PairAgreement(ra, rb, 0, None, None))
            continue
        xs = [labels[ra][i] for i in shared]
        ys = [labels[rb][i] for i in shared]
        kappa = cohen_kappa(xs, ys)
        observed = sum(x == y for x, y in zip(xs, ys)) / len(shared)
        out.append(PairAgreement(ra, rb, len(shared), observed, None if math.isnan(kappa) else kappa))
    return out


def kappa_against(
    labels: Mapping[Hashable, Mapping[Hashable, Hashable]], reference: Mapping[Hashable, Hashable], name: Hashable
) -> list[PairAgreement]:
    """Kappa of every rater against a reference rating (a dataset's own label), as if `name` were
    one more rater: one PairAgreement(rater, name, ...) per rater in `sorted(labels, key=str)`,
    scored on the items both the rater and the reference labelled (Cohen 1960, eq. 1, as above).

    `labels`: rater -> {item -> category}; `reference`: {item -> category}. Raises ValueError when
    `name` is also one of the raters (the reference must stay distinguishable).
    """
    if name in labels:
        raise ValueError(f"the reference's name {name!r} is also a rater's")
    out = []
    for rater in sorted(labels, key=str):
        (pair,) = pairwise_kappa({rater: labels[rater], name: reference})
        # pairwise_kappa orders the pair by str(); keep the rater first.
        out.append(PairAgreement(rater, name, pair.n_items, pair.observed, pair.kappa))
    return out
