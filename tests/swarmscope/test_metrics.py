"""Metrics and the graphs behind them (swarmscope/metrics.py, swarmscope/graph.py), on tiny
traces whose every figure is computed by hand in the comments."""

import dataclasses
import json
import math

import networkx as nx
import pytest

from swarmscope.graph import (
    TraceGraph,
    causal_dag,
    final_answer,
    orchestrators,
    spawn_tree,
    time_order,
)
from swarmscope.metrics import (
    NEEDS_ATTRIBUTION,
    agents_alive,
    compute_metrics,
    critical_path,
    critical_steps,
    error_amplification,
    fan_out,
    free_riders,
    message_redundancy,
    parallel_time,
    parallelism_efficiency,
    protocol_overhead,
    pseudo_parallel_agents,
    serial_collapse,
    serial_time,
    serialised_pairs,
    spawn_depth,
    useful_agent_utilisation,
)
from swarmscope.model import Agent, Edge, Event, Label, Trace, trace_from_dict


def event(id, t, type, agent, t_end=None, **fields):
    return Event(id=id, t=t, t_end=t_end, type=type, agent=agent, **fields)


@pytest.fixture
def swarm():
    """Orchestrator O with sub-agents A and B (C spawned, never acts); 3 orchestrator events.

    time  O                      A                        B
    0-1   o1 delegate->A (10)
    1-3                          a1 tool_call (5)         b1 msg->A "Hello  A" (4), 1-2
    2-3                                                   b2 msg->A "hello a" (4)
    3-4                          a2 tool_result FAILED (20)
    4-5   o2 decision (8)
    5-7                          a3 return->O (6)         b3 tool_call (3), 5-6
    6-7                                                   b4 msg->O "done" (4)
    8-9   o3 aggregate (12)

    Explicit edges: o1->a1 message, a1->a2 tool_dependency, b1->a2 message, a3->o3 return,
    a3->o2 causal (backward in time: dropped). Lanes: o1-o2-o3, a1-a2-a3, b1-b2-b3-b4.
    """
    events = [
        event("o1", 0, "delegate", "O", 1, from_="O", to="A", content="do x", tokens=10),
        event("a1", 1, "tool_call", "A", 3, tool="search", tokens=5),
        event("b1", 1, "message", "B", 2, from_="B", to="A", content="Hello  A", tokens=4),
        event("b2", 2, "message", "B", 3, from_="B", to="A", content="hello a\n", tokens=4),
        event("a2", 3, "tool_result", "A", 4, tool="search", tokens=20, attributes={"status": "Error"}),
        event("o2", 4, "orchestrator_decision", "O", 5, tokens=8),
        event("a3", 5, "return", "A", 7, from_="A", to="O", tokens=6),
        event("b3", 5, "tool_call", "B", 6, tool="search", tokens=3),
        event("b4", 6, "message", "B", 7, from_="B", to="O", content="done", tokens=4),
        event("o3", 8, "aggregate", "O", 9, tokens=12),
    ]
    edges = [
        Edge("o1", "a1", "message"),
        Edge("a1", "a2", "tool_dependency"),
        Edge("b1", "a2", "message"),
        Edge("a3", "o3", "return"),
        Edge("a3", "o2", "causal"),
    ]
    agents = [
        Agent("O"),
        Agent("A", parent="O"),
        Agent("B", parent="O"),
        Agent("C", parent="O", spawned_at=2.0, despawned_at=3.0),
    ]
    labels = [
        Label("mistake_step", 6, event_id="a3"),
        Label("corrupted", True, event_id="b3"),
        Label("corrupted", False, event_id="o3"),
        Label("comment", "looks fine", event_id="o2"),
        Label("mistake_agent", "B", agent="B"),
    ]
    return Trace(source_format="native", source_id="swarm", agents=agents, events=events, edges=edges, labels=labels)


def without_durations(trace):
    return dataclasses.replace(trace, events=[dataclasses.replace(e, t_end=None) for e in trace.events])


# --- graphs -----------------------------------------------------------------------------------


def test_causal_dag_keeps_forward_edges_and_lanes_and_drops_backward_ones(swarm):
    dag, dropped = causal_dag(swarm)
    assert dropped == 1 and not dag.has_edge("a3", "o2")
    assert nx.is_directed_acyclic_graph(dag)
    assert dag.edges["o1", "o2"]["type"] == "lane" and dag.edges["b1", "a2"]["type"] == "message"
    assert dag.edges["a1", "a2"]["type"] == "tool_dependency"  # an explicit edge names a lane arc
    assert dag.number_of_edges() == 7 + 3  # lanes + forward explicit edges not on a lane
    assert [e.id for e in time_order(swarm)] == ["o1", "a1", "b1", "b2", "a2", "o2", "a3", "b3", "b4", "o3"]


def test_equal_times_keep_list_order_so_the_dag_stays_acyclic():
    trace = Trace(
        "native",
        "tie",
        events=[event("x", 1, "message", "X"), event("y", 1, "message", "Y")],
        edges=[Edge("x", "y", "message"), Edge("y", "x", "message")],
    )
    dag, dropped = causal_dag(trace)
    assert list(dag.edges) == [("x", "y")] and dropped == 1


def test_orchestrator_rule():
    trace = Trace(
        "native",
        "roles",
        agents=[Agent("lead"), Agent("worker", parent="lead"), Agent("grandchild")],
        events=[
            event("1", 0, "message", "lead", to="worker"),  # lead spawns by Agent.parent
            event("2", 1, "spawn", "worker", to="grandchild"),  # a spawning sub-agent is no root
            event("3", 2, "tool_result", "browser.search"),  # a tool modelled as an agent
            event("4", 3, "orchestrator_decision", "planner"),  # a deciding root
        ],
    )
    tree = spawn_tree(trace)
    assert set(tree.edges) == {("lead", "worker"), ("worker", "grandchild")}
    assert orchestrators(trace) == {"lead", "planner"}


def test_final_answer_rule():
    order = [
        event("1", 0, "aggregate", "O"),
        event("2", 1, "return", "A", to="O"),
        event("3", 2, "aggregate", "A"),
        event("4", 3, "message", "A", to="O"),
    ]
    assert final_answer(order, ["O"]) == (order[1], False)  # last return to a root
    assert final_answer(order[2:], ["O"]) == (order[3], True)  # sub-agent aggregate: fallback
    assert final_answer([], ["O"]) == (None, True)


# --- metrics on the swarm ---------------------------------------------------------------------


def test_critical_steps_by_hand(swarm):
    # Timed: steps precede by causal arc or by end <= start. Ten steps (no dispatch turn of two).
    # o1 [0,1] -> b1 [1,2] -> b2 [2,3] -> a2 [3,4] (b2 ended as a2 began; b1 -> a2 is a message)
    # -> o2 [4,5] -> b3 [5,6] -> b4 [6,7] -> o3 [8,9]: 8. a1 [1,3] overlaps b1 and b2 (parallel),
    # a3 [5,7] overlaps b3 and b4. PARL's per-lane maximum said 7: it took B's b1 b2 and A's a2 as
    # parallel lanes although a2 ran after both.
    assert critical_steps(swarm) == 8
    assert compute_metrics(swarm)["total_steps"] == 10


def test_critical_steps_counts_sub_agent_events_before_the_first_orchestrator_event():
    trace = Trace(
        "native",
        "early",
        events=[
            event("x1", 0, "message", "X"),
            event("x2", 1, "message", "X"),
            event("y1", 1, "message", "Y"),
            event("o1", 2, "stop", "O"),
            event("x3", 3, "message", "X"),
        ],
    )
    assert critical_steps(trace) == 2 + (1 + 1)  # stage 0: max(2, 1); stage o1: 1 + 1


def test_parallelism_efficiency_from_durations(swarm):
    # T_serial = 1+2+1+1+1+1+2+1+1+1 = 12 s. Causal DAG alone: o1(1) a1(2) a2(1) a3(2) o3(1) = 7 s.
    # As run (arcs or end <= start): o1 1, b1 1, b2 1, a2 1, o2 1 (a2 ended at 4 as o2 began),
    # a3 2, o3 1 = 8 s: o2 waited for a2, which the DAG does not say.
    assert critical_path(swarm) == (7.0, ["o1", "a1", "a2", "a3", "o3"])
    assert parallel_time(swarm) == pytest.approx(8.0)
    assert parallelism_efficiency(swarm) == pytest.approx(12 / 8)


def test_parallelism_efficiency_falls_back_to_counts_over_critical_steps(swarm):
    # Untimed, PARL's stages: o1 1 | a1 2 (o1 -> a1), b1 2, b2 3, a2 3 (a1, b1 -> a2) | o2 4 |
    # a3 5, b3 5, b4 6 | o3 = 1 + max(o2 4, stage 6, a3 5) = 7 of 10 steps.
    trace = without_durations(swarm)
    assert critical_steps(trace) == 7
    assert parallelism_efficiency(trace) == pytest.approx(10 / 7)
    flags = compute_metrics(trace)["flags"]
    assert flags["durations_missing"] and not flags["durations_partial"]


def test_partial_durations_weigh_missing_ones_zero(swarm):
    swarm.events[1].t_end = None  # a1 weighs 0: serial 10 s; as run o1 b1 b2 a2 o2 a3 o3 = 8 s
    assert parallelism_efficiency(swarm) == pytest.approx(10 / 8)
    assert compute_metrics(swarm)["flags"]["durations_partial"]


def test_useful_agent_utilisation(swarm):
    # upstream of o3: o2 o1 (lane), a3 (return), a2 a1 (lane), b1 (message to a2); sub-agent
    # actions: one step per event here (a2 answers b1, b3 comes after others' events ended):
    # a1 a2 a3 b1 b2 b3 b4 -> 4 / 7
    assert TraceGraph.of(swarm).useful_events == {"o1", "o2", "o3", "a1", "a2", "a3", "b1"}
    assert useful_agent_utilisation(swarm) == pytest.approx(4 / 7)


def test_useful_agent_utilisation_counts_actions_not_events():
    """O delegates to W and V. W: an LLM turn w with three tool calls and their results (one action),
    then its return r (a second), which O aggregates; V's one message v reaches nothing. By events
    W's 8 useful of 9 sub-agent events gave 8 / 9; by actions: W's 2 useful of 3 = 2 / 3."""
    events = [
        event("d1", 0, "delegate", "O", to="W", content="find"),
        event("d2", 0, "delegate", "O", to="V", content="also find"),
        event("w", 1, "message", "W", 2, content="call three tools"),
        *[event(f"c{i}", 2, "tool_call", "W", 3, tool="search") for i in (1, 2, 3)],
        *[event(f"x{i}", 3, "tool_result", "W", tool="search", content="hit") for i in (1, 2, 3)],
        event("r", 4, "return", "W", 5, to="O", content="found it"),
        event("v", 1, "message", "V", 2, content="nothing"),
        event("a", 6, "aggregate", "O", 7, content="answer"),
    ]
    edges = [Edge("d1", "w", "message"), Edge("d2", "v", "message"), Edge("r", "a", "return")]
    edges += [Edge(f"c{i}", f"x{i}", "tool_dependency") for i in (1, 2, 3)]
    trace = Trace("native", "utilisation", events=events, edges=edges)
    assert useful_agent_utilisation(trace) == pytest.approx(2 / 3)


def test_protocol_overhead(swarm):
    # coordination: delegate o1 10 + decision o2 8 + messages to agents b1 4, b2 4, b4 4 = 30 of 76;
    # a3's return (6) and o3's aggregate (12) are the work that came back, not coordination
    assert protocol_overhead(swarm) == pytest.approx(30 / 76)


def test_protocol_overhead_estimates_missing_tokens():
    trace = Trace(
        "native",
        "est",
        agents=[Agent("A"), Agent("B")],
        events=[event("m", 0, "message", "A", to="B", content="abcdefghi"), event("c", 1, "tool_call", "A", tokens=7)],
    )
    assert protocol_overhead(trace) == pytest.approx(3 / 10)  # ceil(9 chars / 4) = 3
    assert compute_metrics(trace)["flags"]["tokens_estimated"]


def test_protocol_overhead_leaves_out_returned_work_and_undirected_turns():
    trace = Trace(
        "native",
        "work",
        events=[
            event("d", 0, "delegate", "O", to="A", content="x" * 40),  # 10 tokens of coordination
            event("w", 1, "message", "A", content="y" * 400),  # A's own turn: 100, work
            event("r", 2, "return", "A", to="O", content="z" * 200),  # 50, work returned
            event("g", 3, "aggregate", "O", tokens=40),  # work
        ],
    )
    assert protocol_overhead(trace) == pytest.approx(10 / 200)


def test_protocol_overhead_is_unknown_when_coordination_events_are_empty():
    # A Monocle-like fan-out: the dispatches carry neither tokens nor content; the returns do.
    trace = Trace(
        "native",
        "empty-dispatch",
        events=[
            event("s", 0, "spawn", "O", to="A"),
            event("d", 0, "delegate", "O", to="A"),
            event("r", 1, "return", "A", to="O", tokens=300),
        ],
    )
    metrics = compute_metrics(trace)
    assert metrics["protocol_overhead"] is None
    assert "2 coordination events" in metrics["unavailable"]["protocol_overhead"]
    assert protocol_overhead(Trace("native", "solo", events=[event("w", 0, "message", "A", tokens=5)])) == 0.0
    assert compute_metrics(trace)["flags"]["tokens_estimated"]


def test_message_redundancy(swarm):
    # b2 "hello a" repeats b1 "Hello  A" to A after casefold + whitespace collapse; b4 is new
    assert message_redundancy(swarm) == pytest.approx(1 / 3)


def test_message_redundancy_is_per_receiver_and_uses_content_ref():
    trace = Trace(
        "native",
        "refs",
        events=[
            event("1", 0, "message", "A", to="B", content="same"),
            event("2", 1, "message", "A", to="C", content="same"),  # other receiver: new
            event("3", 2, "message", "A", to="B", content_ref="h1"),
            event("4", 3, "message", "A", to="B", content_ref="h1"),  # repeat by reference
            event("5", 4, "message", "A", to="B"),  # no content: never repeats
            event("6", 5, "message", "A", to="B"),
        ],
    )
    assert message_redundancy(trace) == pytest.approx(1 / 6)


def test_error_amplification(swarm):
    # corrupted: a2 (failed tool result), a3 (mistake_step), b3 (corrupted=True); o3's label is False.
    # initial: a2 (descendants a3, o3 -> 1 corrupted), b3 (descendant b4 -> 0). Mean 0.5.
    assert error_amplification(swarm) == pytest.approx(0.5)


def test_error_amplification_counts_a_shared_descendant_for_each_origin():
    trace = Trace(
        "native",
        "merge",
        events=[
            event("f1", 0, "tool_result", "A", attributes={"error": "timeout"}),
            event("f2", 0, "tool_result", "B", attributes={"status": "error"}),
            event("g", 1, "aggregate", "O"),
            event("h", 2, "stop", "O"),
        ],
        edges=[Edge("f1", "g", "return"), Edge("f2", "g", "return")],
        labels=[Label("mistake", True, event_id="g"), Label("mistake", True, event_id="h")],
    )
    assert error_amplification(trace) == pytest.approx(2.0)  # f1: g, h; f2: g, h


def test_error_amplification_is_none_without_errors():
    trace = Trace("native", "clean", events=[event("1", 0, "tool_result", "A", attributes={"status": "ok"})])
    assert error_amplification(trace) is None


def test_spawn_tree_shape(swarm):
    assert fan_out(swarm) == (3, 3.0) and spawn_depth(swarm) == 1
    deep = Trace(
        "native", "deep", agents=[Agent("O"), Agent("A", parent="O"), Agent("B", parent="O"), Agent("A1", parent="A")]
    )
    assert fan_out(deep) == (2, 1.5) and spawn_depth(deep) == 2


def test_spawn_depth_survives_a_parent_cycle():
    trace = Trace("native", "cycle", agents=[Agent("O"), Agent("X", parent="Y"), Agent("Y", parent="X")])
    assert spawn_depth(trace) == 0 and fan_out(trace) == (1, 1.0)


def test_agents_alive(swarm):
    # O [0, 9) from its events; A [1, 7); B [1, 7); C [2, 3) from spawned_at / despawned_at
    assert agents_alive(swarm) == [(0.0, 1), (1.0, 3), (2.0, 4), (3.0, 3), (7.0, 1), (9.0, 0)]


def test_failure_modes(swarm):
    assert pseudo_parallel_agents(swarm) == ["C"]  # B's b1 reaches the answer; C never acts
    assert not serial_collapse(swarm)  # 7 < 0.9 x 10


def test_dispatch_turn_is_one_step_and_overlapping_sub_agents_are_parallel():
    # dispatcher turn (4 instantaneous spawn+delegate pairs, 0-0.03 s) -> A..D overlap 0.01-4.1 s
    # -> aggregator at 5 s: CS = 3 of 6 steps; no serial collapse (efficiency (4*4+1)/(4+1) = 3.4)
    events = []
    for i, name in enumerate("ABCD"):
        t = i / 100
        events += [event(f"s{name}", t, "spawn", "O", to=name), event(f"d{name}", t, "delegate", "O", to=name)]
        events.append(event(f"r{name}", t + 0.01, "return", name, t + 4.01, to="W"))
    events.append(event("agg", 5, "aggregate", "W", 6))
    edges = [Edge(f"d{name}", f"r{name}", "message") for name in "ABCD"]
    edges += [Edge(f"r{name}", "agg", "return") for name in "ABCD"]
    trace = Trace("native", "fan-out", events=events, edges=edges)
    metrics = compute_metrics(trace)
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (3, 6, 13)
    assert metrics["parallelism_efficiency"] == pytest.approx(17 / 5)
    assert metrics["failure_modes"]["serial_collapse"] is False


def test_timed_sub_agents_that_run_one_after_another_add_up():
    # One dispatch turn to A and B, no causal arc between them, but B starts after A ended:
    # turn -> a [1,2] -> b [3,4] -> stop: CS 4 = all 4 steps; the efficiency (1+1)/(2) = 1 agrees.
    trace = Trace(
        "native",
        "one-after-another",
        events=[
            event("sa", 0, "spawn", "O", to="A"),
            event("sb", 0.5, "spawn", "O", to="B"),
            event("a", 1, "tool_call", "A", 2),
            event("b", 3, "tool_call", "B", 4),
            event("x", 5, "stop", "O"),
        ],
        edges=[Edge("sa", "a", "spawn"), Edge("sb", "b", "spawn")],
    )
    assert critical_steps(trace) == 4 and compute_metrics(trace)["total_steps"] == 4
    assert parallelism_efficiency(trace) == pytest.approx(1.0) and serial_collapse(trace)


def test_dispatch_turn_breaks_where_the_dispatcher_waits_or_takes_time():
    timed = [
        event("s1", 0, "spawn", "O", to="A"),
        event("a", 0.1, "tool_call", "A", 0.2),  # ends between the two spawns: O could have waited
        event("s2", 0.3, "spawn", "O", to="B"),
        event("s3", 0.3, "delegate", "O", to="B", t_end=0.5),  # same t as s2: one turn with it
        event("s4", 1, "spawn", "O", 2, to="C"),  # a decision that takes time: its own step
        event("s5", 2, "spawn", "O", 3, to="D"),
    ]
    graph = TraceGraph.of(Trace("native", "turns", events=timed))
    assert [step.events for step in graph.steps] == [("s1",), ("a",), ("s2", "s3"), ("s4",), ("s5",)]
    received = Trace(
        "native",
        "received",
        events=[event("s1", 0, "spawn", "O", to="A"), event("r", 0, "return", "A", 1, to="O")]
        + [event("s2", 0, "spawn", "O", to="B")],
        edges=[Edge("r", "s2", "return")],  # s2 answers A's return: a new turn even at the same t
    )
    assert len(TraceGraph.of(received).steps) == 3
    untimed = [event("d1", 7, "delegate", "O", to="A"), event("d2", 8, "delegate", "O", to="A")]
    assert len(TraceGraph.of(Trace("native", "log", events=untimed)).steps) == 2  # two log lines


def test_serial_collapse_when_sub_agents_run_one_after_another():
    # three LLM turns each (tool calls with no turn between would be one turn's calls: one step)
    events = [event("o1", 0, "delegate", "O", to="A")]
    events += [event(f"a{i}", 1 + i, "message", "A") for i in range(3)]
    events += [event("o2", 4, "delegate", "O", to="B")]
    events += [event(f"b{i}", 5 + i, "message", "B") for i in range(3)]
    events += [event("o3", 8, "stop", "O")]
    trace = Trace("native", "serial", events=events)
    # untimed stages: o1 | a0 a1 a2 | o2 | b0 b1 b2 | o3 (o2 is a new turn: A's events came between)
    assert critical_steps(trace) == 4 + 4 + 1 and serial_collapse(trace)  # 9 >= 0.9 x 9


def concurrent_tools():
    """One worker: an LLM turn w [0, 3] s issuing three 10-s tool calls c1..c3 [3, 13] s at once,
    their results r1..r3 at 13 s (wall clock 13 s)."""
    events = [event("w", 0, "message", "worker", 3, content="call three tools", tokens=30)]
    events += [event(f"c{i}", 3, "tool_call", "worker", 13, tool="search") for i in (1, 2, 3)]
    events += [event(f"r{i}", 13, "tool_result", "worker", tool="search") for i in (1, 2, 3)]
    edges = [Edge(f"c{i}", f"r{i}", "tool_dependency") for i in (1, 2, 3)]
    return Trace("native", "concurrent-tools", events=events, edges=edges)


def test_concurrent_tool_calls_of_one_agent_run_in_parallel():
    """T_serial = 3 + 3 x 10 = 33 s; T_parallel = w 3 + one call 10 = 13 s, the wall clock (the
    calls overlap: no lane arc between them); efficiency 33 / 13 = 2.538... (chaining the lane
    gave 3 + 10 + 10 + 10 = 33 s and 1.00)."""
    trace = concurrent_tools()
    dag, _ = causal_dag(trace)
    lanes = {(a, b) for a, b, kind in dag.edges(data="type") if kind == "lane"}
    assert {("w", "c1"), ("w", "c2"), ("w", "c3")} <= lanes
    assert not lanes & {("c1", "c2"), ("c2", "c3"), ("c1", "c3")}
    assert {("c2", "r1"), ("c3", "r1"), ("r1", "r2"), ("r2", "r3")} <= lanes  # c1 -> r1: its tool_dependency
    assert serial_time(trace) == pytest.approx(33.0) and parallel_time(trace) == pytest.approx(13.0)
    assert parallelism_efficiency(trace) == pytest.approx(33 / 13) and round(33 / 13, 2) == 2.54
    # one agent action: the turn with the three calls it issued and their results (before: 7 steps)
    metrics = compute_metrics(trace)
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (1, 1, 7)


def test_lane_arcs_are_a_transitive_reduction_of_end_before_start():
    # a [0,1]; c [2,5] and d [3,4] overlap; e [6,7]: a -> c, a -> d, c -> e, d -> e, and no a -> e
    trace = Trace(
        "native",
        "frontier",
        events=[
            event("a", 0, "tool_call", "X", 1),
            event("c", 2, "tool_call", "X", 5),
            event("d", 3, "tool_call", "X", 4),
            event("e", 6, "tool_call", "X", 7),
        ],
    )
    dag, _ = causal_dag(trace)
    assert set(dag.edges) == {("a", "c"), ("a", "d"), ("c", "e"), ("d", "e")}
    # instants (no t_end) keep the chain in time order; an instant inside a running call is beside it
    instants = Trace("native", "instants", events=[event(str(i), i, "message", "X") for i in range(3)])
    assert set(causal_dag(instants)[0].edges) == {("0", "1"), ("1", "2")}
    beside = Trace("native", "beside", events=[event("x", 0, "tool_call", "X", 10), event("y", 5, "message", "X")])
    assert set(causal_dag(beside)[0].edges) == set()


def test_parallel_time_never_exceeds_the_wall_clock():
    """A delegation d [0, 10] spans its sub-agent's call a [1, 9] (message arc d -> a), then O answers
    m [10, 11]. The causal chain d, a weighs 10 + 8 = 18 s on an 11-s trace. As run: d's
    work is the time A did not act in it, 10 - (9 - 1) = 2 s; T_serial = 2 + 8 + 1 = 11 s;
    T_parallel: d and a overlap, so d 2 + m 1 or a 8 + m 1 = 9 s <= 11 s; efficiency 11 / 9."""
    trace = Trace(
        "native",
        "nested",
        events=[
            event("d", 0, "delegate", "O", 10, to="A"),
            event("a", 1, "tool_call", "A", 9),
            event("m", 10, "message", "O", 11),
        ],
        edges=[Edge("d", "a", "message")],
    )
    assert critical_path(trace)[0] == pytest.approx(18.0)
    assert serial_time(trace) == pytest.approx(11.0) and parallel_time(trace) == pytest.approx(9.0)
    assert parallelism_efficiency(trace) == pytest.approx(11 / 9)


def one_agent():
    """Codex's shape: the user asks (role "human"), the agent answers in one LLM call m, and the
    harness records the end of its turn as a `stop` carrying the answer again (task_complete)."""
    return Trace(
        "native",
        "one-agent",
        agents=[Agent("codex"), Agent("user", role="human")],
        events=[
            event("u", 0, "message", "user", role="human", to="codex", content="what is 2 + 2?", tokens=5),
            event("m", 1, "message", "codex", 3, content="4", tokens=40),
            event("s", 3, "stop", "codex", content="4", attributes={"harness": True}),
        ],
        edges=[Edge("u", "m", "message")],
    )


def test_a_single_agent_has_no_orchestrator_and_no_protocol():
    """One agent is not its own orchestrator (its `stop` made it one: before, protocol overhead
    6 / 46 = 0.13, the stop's content "4" (1 token estimated) and the user's question (5) counted
    as coordination of 5 + 40 + 1 tokens, and critical steps 3 for one LLM call). No inter-agent
    protocol: overhead 0.0; no sub-agents: utilisation n/a, no serial collapse."""
    metrics = compute_metrics(one_agent())
    # one step: the LLM call m; the user's question is no agent's action, the harness's stop none
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (1, 1, 3)
    assert metrics["orchestrators"] == [] and metrics["flags"]["no_orchestrator"]
    assert metrics["protocol_overhead"] == 0.0
    assert metrics["sub_agents"] == 0 and metrics["useful_agent_utilisation"] is None
    assert metrics["unavailable"]["useful_agent_utilisation"].startswith("a single agent")
    assert metrics["failure_modes"]["serial_collapse"] is False


def test_a_step_is_an_llm_turn_with_what_it_issues():
    """The blocks of one model response are one step (`response_id`: Claude Code's message.id), the
    tool calls it issues and their results join it, and a response of tool calls alone is a step
    of its own: r1 = a text and two tool_use blocks (0, 0.1, 0.2 s; calls end at 2 and 3), their
    results, then r2 = one tool_use at 4 s (no text), its result, then r3 = the answer at 6 s:
    3 steps of 9 events. Without response ids the tool-only r2 joins r1 (2 steps): a source that
    records tool calls apart from their response must say which response they belong to."""
    events = [
        event("t1", 0, "message", "A", content="let me look", attributes={"response_id": "m1"}),
        event("c1", 0.1, "tool_call", "A", 2, tool="Read", attributes={"response_id": "m1"}),
        event("c2", 0.2, "tool_call", "A", 3, tool="Grep", attributes={"response_id": "m1"}),
        event("x1", 2, "tool_result", "A", tool="Read", content="..."),
        event("x2", 3, "tool_result", "A", tool="Grep", content="..."),
        event("c3", 4, "tool_call", "A", 5, tool="Read", attributes={"response_id": "m2"}),
        event("x3", 5, "tool_result", "A", tool="Read", content="..."),
        event("a", 6, "message", "A", content="the answer", attributes={"response_id": "m3"}),
    ]
    edges = [Edge(f"c{i}", f"x{i}", "tool_dependency") for i in (1, 2, 3)]
    trace = Trace("native", "responses", events=[*events, event("u", 0, "message", "u", role="user")], edges=edges)
    graph = TraceGraph.of(trace)
    assert [step.events for step in graph.steps if step.counts] == [
        ("t1", "c1", "c2", "x1", "x2"),
        ("c3", "x3"),
        ("a",),
    ]
    metrics = compute_metrics(trace)
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (3, 3, 9)
    bare = [dataclasses.replace(e, attributes={}) for e in events]
    assert compute_metrics(Trace("native", "bare", events=bare, edges=edges))["total_steps"] == 2


def test_dispatches_join_the_turn_that_made_them_and_framework_spans_take_no_step():
    """agntcy's shape: the supervisor's LLM call s [0, 7] outputs a delegation, made at once (spawn +
    delegate at 7.2, instantaneous, nothing of another agent ended between): one step. Monocle's
    shape: a dispatcher (framework code) emits spawn + delegate with nothing in them, in a trace
    whose LLM calls record content: no action, so CS counts the expert's call and the answer."""
    agntcy = Trace(
        "native",
        "agntcy",
        events=[
            event("s", 0, "message", "sup", 7, content="query_detector(...)", tokens=90),
            event("sp", 7.2, "spawn", "sup", to="det"),
            event("dl", 7.2, "delegate", "sup", to="det", content="inventory please"),
            event("d", 7.3, "return", "det", 9, to="sup", content="inventory", tokens=300),
            event("f", 9.1, "message", "sup", 12, content="here it is", tokens=120),
        ],
        edges=[Edge("dl", "d", "message"), Edge("d", "f", "return")],
    )
    assert [step.events for step in TraceGraph.of(agntcy).steps] == [("s", "sp", "dl"), ("d",), ("f",)]
    assert critical_steps(agntcy) == 3
    framework = Trace(
        "native",
        "dispatcher",
        events=[
            event("sp", 0, "spawn", "dispatcher", to="X"),
            event("dl", 0, "delegate", "dispatcher", to="X"),
            event("x", 0.1, "return", "X", 4, to="W", content="flights", tokens=300),
            event("w", 4.1, "aggregate", "W", 9, content="plan", tokens=900),
        ],
        edges=[Edge("dl", "x", "message"), Edge("x", "w", "return")],
    )
    assert [step.counts for step in TraceGraph.of(framework).steps] == [False, True, True]
    metrics = compute_metrics(framework)
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (2, 2, 4)


def test_a_human_asking_is_no_sub_agent():
    """Magentic-One's shape: the human asks (role "human"), the orchestrator delegates to its one
    worker, which returns; the orchestrator answers. Sub-agents: W only (before: human and W, 2),
    so no serial collapse whatever the order; utilisation over W's 2 events, both upstream of the
    answer: 1.0; the human's question is no protocol: coordination = d's 10 tokens of 10 + 4 + 6
    + 8 + 12 = 40 (the question 4 is not; before, a message to another agent: 14 / 40)."""
    trace = Trace(
        "native",
        "asked",
        agents=[Agent("human", role="human"), Agent("O"), Agent("W", parent="O")],
        events=[
            event("q", 0, "message", "human", to="O", content="task", tokens=4),
            event("d", 1, "delegate", "O", to="W", tokens=10),
            event("w", 2, "tool_call", "W", tokens=6),
            event("r", 3, "return", "W", to="O", tokens=8),
            event("a", 4, "aggregate", "O", tokens=12),
        ],
        edges=[Edge("q", "d", "message"), Edge("d", "w", "message"), Edge("r", "a", "return")],
    )
    graph = TraceGraph.of(trace)
    assert graph.non_agents == {"human"} and graph.orchestrators == {"O"} and graph.sub_agents == {"W"}
    metrics = compute_metrics(trace, {"human": (0.0, -0.1, 0.1), "W": (0.3, 0.2, 0.4)})
    assert metrics["sub_agents"] == 1 and metrics["failure_modes"]["serial_collapse"] is False
    assert metrics["useful_agent_utilisation"] == 1.0
    assert metrics["protocol_overhead"] == pytest.approx(10 / 40)
    assert metrics["failure_modes"]["free_riders"] == [] and metrics["failure_modes"]["free_riding_unjudged"] == ["O"]


def test_a_compaction_routine_is_no_sub_agent():
    """Claude Code's shape: main (the lead) spawns one Explore subagent and a compaction routine
    (role "compaction"). Sub-agents: Explore only (before: Explore, compaction and the user, 3);
    the compaction is neither pseudo-parallel nor a free-rider candidate; and a lead whose only
    spawn is the compaction would orchestrate nobody."""
    events = [
        event("u", 0, "message", "user", 0, role="human", to="main", content="go"),
        event("t", 1, "delegate", "main", 2, to="Explore", content="look"),
        event("x", 1.5, "tool_call", "Explore", 1.9, tool="Grep"),
        event("y", 2, "return", "Explore", to="main", content="found"),
        event("m", 3, "message", "main", 4, content="summary so far"),
        event("c", 5, "return", "compaction", 6, to="main", content="compacted"),
        event("f", 7, "message", "main", 8, content="done"),
    ]
    agents = [
        Agent("main"),
        Agent("user", role="human"),
        Agent("Explore", parent="main"),
        Agent("compaction", role="compaction", parent="main", attributes={"compaction": True}),
    ]
    edges = [Edge("u", "t", "message"), Edge("t", "x", "message"), Edge("y", "m", "return"), Edge("c", "f", "return")]
    prompt = event("sc", 4.5, "spawn", "main", to="compaction", content="x" * 40)  # the compaction's prompt
    trace = Trace("native", "compaction", agents=agents, events=[*events, prompt], edges=edges)
    graph = TraceGraph.of(trace)
    assert graph.non_agents == {"user", "compaction"} and graph.sub_agents == {"Explore"}
    metrics = compute_metrics(trace, {"compaction": (0.0, -0.1, 0.1)})
    assert metrics["sub_agents"] == 1 and metrics["failure_modes"]["serial_collapse"] is False
    assert (
        metrics["failure_modes"]["free_riders"] == []
        and "compaction" not in metrics["failure_modes"]["free_riding_unjudged"]
    )
    assert pseudo_parallel_agents(trace) == []
    # tokens (characters / 4, rounded up): u 1, t 1, x 0, y 2, m 4, sc 10, c 3, f 1 = 22; only the
    # delegation t is protocol (before: the user's prompt and the compaction's spawn too, 12 / 22)
    assert metrics["protocol_overhead"] == pytest.approx(1 / 22)
    alone = Trace("native", "alone", agents=[agents[0], agents[3]], events=[events[4], events[5], events[6]])
    assert TraceGraph.of(alone).orchestrators == frozenset()


def test_serial_collapse_needs_independent_subtasks():
    """O delegates to A and to B, each at once, no arc between A and B, but B runs after A ended:
    independent subtasks one after another, a serial collapse. With A's result fed to B's
    delegation (A's return -> O's second delegate), B depends on A: a pipeline, no collapse."""
    events = [
        event("d1", 0, "delegate", "O", 0.5, to="A"),
        event("a", 1, "tool_call", "A", 2),
        event("ra", 2, "return", "A", 2.5, to="O"),
        event("d2", 3, "delegate", "O", 3.5, to="B"),
        event("b", 4, "tool_call", "B", 5),
        event("rb", 5, "return", "B", 5.5, to="O"),
        event("s", 6, "stop", "O", 6.5),
    ]
    edges = [Edge("d1", "a", "message"), Edge("d2", "b", "message"), Edge("rb", "s", "return")]
    independent = Trace("native", "independent", events=events, edges=edges)
    assert serialised_pairs(independent) == [("A", "B")] and serial_collapse(independent) is True
    fed = Trace("native", "fed", events=events, edges=[*edges, Edge("ra", "d2", "return")])
    assert serialised_pairs(fed) == [] and serial_collapse(fed) is False


# --- edge cases -------------------------------------------------------------------------------


def test_group_chat_without_orchestrator():
    trace = Trace(
        "native",
        "chat",
        events=[
            event("x1", 0, "message", "X", to="Y", content="hi"),
            event("y1", 1, "message", "Y", to="X", content="hello"),
            event("x2", 2, "message", "X", to="Y", content="HI"),
        ],
    )
    metrics = compute_metrics(trace)
    assert metrics["critical_steps"] is None and metrics["parallelism_efficiency"] is None
    assert metrics["orchestrators"] == [] and metrics["flags"]["no_orchestrator"]
    assert metrics["final_answer"] == "x2" and metrics["flags"]["final_answer_fallback"]
    assert metrics["useful_agent_utilisation"] == pytest.approx(2 / 3)  # x1 x2 of all three
    assert metrics["message_redundancy"] == pytest.approx(1 / 3)
    assert metrics["failure_modes"] == {
        "pseudo_parallelism": False,
        "pseudo_parallel_agents": [],
        "serial_collapse": None,
        "free_riding": None,
        "free_riders": [],
    }
    unavailable = metrics["unavailable"]
    assert set(unavailable) == {
        "critical_steps",
        "serial_collapse",
        "parallelism_efficiency",
        "error_amplification",
        "free_riding",
        "tokens",
    }
    # No event reports tokens: no measured total; the estimate, apart, is "hi" 1 + "hello" 2 + "HI" 1.
    assert (metrics["tokens"], metrics["estimated_tokens"]) == (None, 4)
    assert unavailable["tokens"].startswith("no measured token usage") and "~4 estimated" in unavailable["tokens"]
    assert unavailable["critical_steps"].startswith("no main agent")
    assert unavailable["free_riding"] == NEEDS_ATTRIBUTION and NEEDS_ATTRIBUTION.startswith("needs attribution")


def test_empty_trace():
    metrics = compute_metrics(Trace("native", "empty"))
    assert metrics["total_steps"] == 0 and metrics["final_answer"] is None
    assert metrics["unavailable"]["critical_steps"] == "the trace has no events"
    for name in (
        "critical_steps",
        "parallelism_efficiency",
        "useful_agent_utilisation",
        "protocol_overhead",
        "message_redundancy",
        "error_amplification",
    ):
        assert metrics[name] is None and metrics["unavailable"][name], name
    assert (metrics["fan_out_max"], metrics["fan_out_mean"], metrics["spawn_depth"]) == (0, 0.0, 0)
    assert metrics["agents_alive"] == []


def test_lone_orchestrator_event():
    metrics = compute_metrics(Trace("native", "one", events=[event("s", 0, "stop", "O")]))
    assert metrics["critical_steps"] == 1 and metrics["parallelism_efficiency"] == 1.0
    assert metrics["useful_agent_utilisation"] is None and metrics["sub_agents"] == 0


# --- compute_metrics --------------------------------------------------------------------------


def _plain(value):
    """Whether `value` holds only JSON types, numbers as plain int/float (bool only where meant)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or type(value) in (bool, int, str)


def test_compute_metrics_is_plain_json(swarm):
    metrics = compute_metrics(swarm)
    assert _plain(metrics) and json.loads(json.dumps(metrics)) == metrics
    assert metrics["critical_steps"] == 8 and metrics["total_steps"] == 10
    assert metrics["orchestrators"] == ["O"] and metrics["final_answer"] == "o3"
    assert metrics["flags"] == {
        "tokens_estimated": False,
        "durations_missing": False,
        "durations_partial": False,
        "no_orchestrator": False,
        "final_answer_fallback": False,
        "backward_edges": 1,
    }
    assert metrics["agents_alive"][0] == [0.0, 1]


def test_survey_example_trace(shared_data):
    """The survey's own example (arXiv 2605.02801 trace schema): CS and utilisation by hand."""
    doc = json.loads((shared_data / "survey-trace-schema" / "example_trace.json").read_text())
    metrics = compute_metrics(trace_from_dict(doc))
    # untimed (t = 0..7, no t_end): e1 decision | e2 spawn planner_1 | e3 spawn executor_1 | e4
    # planner -> e5 executor (message) -> e6 browser (tool) -> e7 executor (causal) | e8 aggregate:
    # one causal chain. e1 and e4-e8 record content (a content_ref), the spawns nothing (e1's ref,
    # "decide_spawn_planner_executor", is the decision they carry out):
    # in a trace that records content they are the decision's bookkeeping, no steps of their own.
    # CS = 6 of 6 steps (e1 e4 e5 e6 e7 e8; before: 8, every event a step).
    assert metrics["critical_steps"] == 6 and metrics["total_steps"] == 6
    assert metrics["parallelism_efficiency"] == pytest.approx(1.0)
    assert metrics["orchestrators"] == ["orchestrator"] and metrics["final_answer"] == "e8"
    assert metrics["useful_agent_utilisation"] == 1.0 and metrics["spawn_depth"] == 1
    assert metrics["protocol_overhead"] is None  # only content_ref: no tokens to count


# --- final answer, free-riding ----------------------------------------------------------------


def test_final_answer_is_the_answering_agents_last_message():
    # group chat: the orchestrator collects a return, then routes to the reviewer, who speaks last
    chat = Trace(
        "native",
        "chat",
        agents=[Agent("M"), Agent("P", parent="M"), Agent("R", parent="M")],
        events=[
            event("d1", 0, "delegate", "M", to="P"),
            event("p", 1, "return", "P", to="M"),
            event("d2", 2, "delegate", "M", to="R"),
            event("r", 3, "message", "R", content="approved"),
        ],
        edges=[Edge("d1", "p", "message"), Edge("p", "d2", "return"), Edge("d2", "r", "message")],
    )
    graph = TraceGraph.of(chat)
    assert graph.final_answer.id == "r" and not graph.final_answer_fallback
    assert pseudo_parallel_agents(chat) == []  # the reviewer is not pseudo-parallel
    # a human who asks (a root that neither orchestrates nor receives anything) does not answer,
    # even when it speaks last; the return to the orchestrator does
    asked = Trace(
        "native",
        "asked",
        events=[
            event("q", 0, "message", "human", content="task"),
            event("d", 1, "delegate", "O", to="A"),
            event("a", 2, "return", "A", to="O"),
            event("q2", 3, "message", "human", content="anyone?"),
        ],
        edges=[Edge("q", "d", "message"), Edge("d", "a", "message")],
    )
    graph = TraceGraph.of(asked)
    assert graph.final_answer.id == "a" and not graph.final_answer_fallback


def test_free_riders_by_removal_effect_within_its_interval(swarm):
    # 10 events: A 3, B 4, O 3 (each >= 5 %). Δ(remove A) = 0.14, CI [0.10, 0.18]: needed.
    # Δ(remove B) = 0.01, CI [-0.02, 0.04]: within its interval of 0, a free rider. O unattributed.
    attributions = {"A": (0.14, 0.10, 0.18), "B": (0.01, -0.02, 0.04), "C": (0.0, -0.1, 0.1)}
    assert free_riders(swarm, attributions) == ["B"]  # C has no events: not judged
    modes = compute_metrics(swarm, attributions)["failure_modes"]
    assert modes["free_riding"] is True and modes["free_riders"] == ["B"]
    assert modes["free_riding_unjudged"] == ["O"]
    assert "free_riding" not in compute_metrics(swarm, attributions)["unavailable"]
    assert compute_metrics(swarm, {"A": (0.14, 0.10, 0.18)})["failure_modes"]["free_riding"] is False
    metrics = compute_metrics(swarm)
    assert metrics["failure_modes"]["free_riding"] is None
    assert metrics["unavailable"]["free_riding"] == NEEDS_ATTRIBUTION


def test_free_riding_ignores_agents_below_five_percent_of_events():
    events = [event(f"o{i}", i, "orchestrator_decision", "O") for i in range(20)] + [event("x", 20, "message", "X")]
    trace = Trace("native", "rare", events=events)  # X: 1 of 21 events < 5 %
    assert free_riders(trace, {"X": (0.0, -0.1, 0.1)}) == []


def test_message_redundancy_leaves_out_content_from_input():
    # 2 and 4 show the prompt their agent received (`content_from: "input"`), not what it said: left
    # out. Messages 1, 3, 5: 5 repeats 1 to B -> 1 / 3 (counting 2 and 4 as speech: 2 / 5).
    said = {"content_from": "input"}
    trace = Trace(
        "native",
        "input",
        events=[
            event("1", 0, "message", "A", to="B", content="go on"),
            event("2", 1, "message", "B", content="go on", attributes=said),
            event("3", 2, "message", "B", content="done"),
            event("4", 3, "message", "B", content="go on", attributes=said),
            event("5", 4, "message", "A", to="B", content="Go  on"),
        ],
    )
    assert message_redundancy(trace) == pytest.approx(1 / 3)
    only_input = Trace("native", "only-input", events=[event("1", 0, "message", "A", content="x", attributes=said)])
    metrics = compute_metrics(only_input)
    assert metrics["message_redundancy"] is None
    assert "prompt" in metrics["unavailable"]["message_redundancy"]
