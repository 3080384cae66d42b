"""Cohen's kappa on hand-computed inputs (swarmscope.agreement)."""

import math

import pytest

from swarmscope.agreement import cohen_kappa, pairwise_kappa


def test_kappa_of_the_two_by_two_table_computed_by_hand():
    # 50 items: both "yes" 20, a yes / b no 5, a no / b yes 10, both "no" 15.
    # p_o = 35/50 = 0.7; p_a(yes) = 0.5, p_b(yes) = 0.6; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; κ = 0.2/0.5 = 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_kappa_of_three_items_with_agent_names():
    # p_o = 2/3; p_e = (2/3)(1/3) + (1/3)(2/3) = 4/9; κ = (2/9)/(5/9) = 0.4
    assert cohen_kappa(["Coder", "Coder", "Planner"], ["Coder", "Planner", "Planner"]) == pytest.approx(0.4)


def test_perfect_and_chance_and_undefined_agreement():
    assert cohen_kappa(["a", "b", "c"], ["a", "b", "c"]) == pytest.approx(1.0)
    # Systematic disagreement on two categories: p_o = 0, p_e = 0.5, κ = −1.
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    assert math.isnan(cohen_kappa(["a", "a"], ["a", "a"]))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="different numbers"):
        cohen_kappa(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="at least one"):
        cohen_kappa([], [])


def test_pairwise_kappa_uses_items_both_raters_labelled():
    labels = {
        "bob": {1: "Coder", 2: "Coder", 3: "Planner", 9: "Coder"},
        "alice": {1: "Coder", 2: "Planner", 3: "Planner"},
        "carol": {7: "Coder"},
    }
    pairs = {(p.rater_a, p.rater_b): p for p in pairwise_kappa(labels)}
    assert set(pairs) == {("alice", "bob"), ("alice", "carol"), ("bob", "carol")}
    ab = pairs[("alice", "bob")]
    assert ab.n_items == 3 and ab.observed == pytest.approx(2 / 3) and ab.kappa == pytest.approx(0.4)
    assert pairs[("alice", "carol")].n_items == 0 and pairs[("alice", "carol")].kappa is None
