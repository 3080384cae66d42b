"""The synthetic trace generator (tests/synthetic.py)."""

from collections import Counter

import pytest

from swarmscope.graph import TraceGraph
from swarmscope.metrics import compute_metrics, is_failed_tool_result
from swarmscope.model import trace_from_dict, validate_trace
from tests.synthetic import MAX_DEPTH, synthetic_trace


@pytest.fixture(scope="module")
def large():
    return synthetic_trace(1000, 20000, seed=0)


@pytest.mark.parametrize("n_agents, n_events", [(1, 3), (1, 10), (2, 8), (7, 40), (50, 600), (300, 1000)])
def test_exact_sizes_and_a_valid_lossless_trace(n_agents, n_events):
    trace = synthetic_trace(n_agents, n_events, seed=3)
    assert (len(trace.agents), len(trace.events)) == (n_agents, n_events)
    validate_trace(trace)
    assert len(trace.agents) == n_agents  # validation found no undeclared agent
    assert trace_from_dict(trace.to_dict()) == trace


def test_deterministic_per_seed():
    assert synthetic_trace(40, 500, seed=7).to_dict() == synthetic_trace(40, 500, seed=7).to_dict()
    assert synthetic_trace(40, 500, seed=7).to_dict() != synthetic_trace(40, 500, seed=8).to_dict()


def test_too_few_events_or_agents_raise():
    with pytest.raises(ValueError, match="need at least"):
        synthetic_trace(10, 20, seed=0)
    with pytest.raises(ValueError, match="n_agents"):
        synthetic_trace(0, 10, seed=0)


def test_ids_follow_time_and_every_edge_points_forward(large):
    assert [e.id for e in large.events] == [f"e{i:06d}" for i in range(len(large.events))]
    times = [e.t for e in large.events]
    assert times == sorted(times) and all(e.t_end is not None and e.t_end >= e.t for e in large.events)
    t = {e.id: e.t for e in large.events}
    assert all(t[edge.src] < t[edge.dst] for edge in large.edges)
    assert TraceGraph.of(large).backward_edges == 0


def test_a_realistic_hierarchical_swarm(large):
    types = Counter(e.type for e in large.events)
    assert types["stop"] == 1 and types["spawn"] == types["delegate"] == types["return"] == 999
    assert types["tool_call"] > 1000 and types["message"] > 1000 and types["aggregate"] > 1
    assert {e.type for e in large.edges} >= {"spawn", "message", "tool_dependency", "return"}
    assert all(e.content for e in large.events)
    assert 0 < sum(e.tokens is None for e in large.events) < len(large.events) / 5
    assert 0.01 < sum(map(is_failed_tool_result, large.events)) / types["tool_result"] < 0.06
    assert [lb.key for lb in large.labels] == ["mistake_step"]
    assert [a.name for a in large.agents if a.parent is None] == ["orchestrator"]
    spawned_at = {a.name: a.spawned_at for a in large.agents}
    assert all(spawned_at[e.to] <= e.t for e in large.events if e.type == "message")


def test_metrics_of_the_large_trace(large):
    metrics = compute_metrics(large)
    assert metrics["orchestrators"] == ["orchestrator"] and metrics["sub_agents"] == 999
    assert metrics["final_answer"] == large.events[-1].id and large.events[-1].type == "stop"
    assert 1 < metrics["spawn_depth"] <= MAX_DEPTH and metrics["fan_out_max"] >= 30
    assert metrics["parallelism_efficiency"] > 10 and not metrics["failure_modes"]["serial_collapse"]
    assert metrics["failure_modes"]["pseudo_parallelism"]  # abandoned workers
    assert 0.9 < metrics["useful_agent_utilisation"] < 1.0
    assert 0.02 < metrics["message_redundancy"] < 0.1
    assert metrics["flags"]["tokens_estimated"] and not metrics["flags"]["durations_missing"]
