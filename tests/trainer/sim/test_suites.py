"""Benchmark suites (trainer/sim/suites.py): pivot-12's planted structure, long traces, envelope."""

from collections import Counter

import numpy as np
import pytest

from trainer.sim.env import simulate
from trainer.sim.exact import MAX_EXACT_MESSAGES
from trainer.sim.suites import (
    ENVELOPE_AGENTS,
    ENVELOPE_STEPS,
    PIVOT12_BASE,
    PIVOT12_KINDS,
    PIVOT12_SIZE,
    envelope_actions,
    long_trace,
    pivot12,
    pivot12_case,
)

SHAPLEY = {"pivotal": 0.30, "redundant": 0.10, "synergistic": 0.125, "harmful": -0.20, "null": 0.0}
LOO = {"pivotal": 0.30, "redundant": 0.0, "synergistic": 0.25, "harmful": -0.20, "null": 0.0}


@pytest.fixture(scope="module")
def suite():
    return pivot12()


def test_pivot12_has_the_planted_structure(suite):
    assert len(suite) == PIVOT12_SIZE
    assert len({case.episode.trace.source_id for case in suite}) == PIVOT12_SIZE
    for case in suite:
        assert len(case.candidates) == MAX_EXACT_MESSAGES
        assert Counter(case.kinds) == Counter(PIVOT12_KINDS)
        assert case.episode.p_subtasks == 1.0
        assert case.values[0] == pytest.approx(PIVOT12_BASE) and case.values.mean() == pytest.approx(0.5)
        assert case.values.min() >= 0.0 and case.values.max() <= 1.0
        assert case.episode.p_success == pytest.approx(case.values[-1])
        assert case.loo == pytest.approx([LOO[kind] for kind in case.kinds])
        assert case.shapley == pytest.approx([SHAPLEY[kind] for kind in case.kinds])
        redundant = [k for k, kind in enumerate(case.kinds) if kind == "redundant"]
        both = (len(case.values) - 1) & ~sum(1 << k for k in redundant)
        assert case.values[-1] - case.values[both] == pytest.approx(0.20)


def test_pivot12_positions_vary(suite):
    assert len({case.kinds for case in suite}) > 100


def test_pivot12_closed_form_matches_resimulation():
    case = pivot12_case(7)
    episode = case.episode
    rng = np.random.default_rng(0)
    for mask in rng.integers(0, 1 << 12, size=24):
        removed = {c for k, c in enumerate(case.candidates) if not mask >> k & 1}
        kept = [a for i, a in enumerate(episode.actions) if i not in removed]
        assert simulate(episode.task, kept, episode.config, episode.seed).p_success == pytest.approx(case.values[mask])


def test_long_trace_level_has_at_least_200_decisions():
    episode = long_trace(0)
    decisions = [e for e in episode.trace.events if e.agent == "orchestrator"]
    assert len(decisions) >= 200 and len(episode.actions) >= 200


def test_envelope_size():
    task, actions = envelope_actions(0)
    assert len(actions) == ENVELOPE_STEPS
    assert sum(a.kind == "spawn" for a in actions) == ENVELOPE_AGENTS
    episode = simulate(task, actions)
    assert len(episode.trace.agents) == ENVELOPE_AGENTS + 1
