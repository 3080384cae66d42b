"""Metrics on real traces (../shared/data, README there) and on the hand-written fixtures, every
figure derived by hand from the raw file in the comments (docs/metrics.md says what each metric is).

Units: a *step* is one event, except that a dispatch turn (consecutive spawn / delegate events of
one agent at one instant, or instantaneous ones with nothing of another agent ending between) is
one step (swarmscope.graph "Execution steps"). The shared-data tests skip without ../shared.
"""

import pytest

from swarmscope import read_traces
from swarmscope.graph import TraceGraph
from swarmscope.importers import SourceFile, read_files
from swarmscope.metrics import compute_metrics

MONOCLE = "otel-monocle-agent-framework"
HANDOFF = "monocle_trace_okahu_demos_ms_openai_handoff_travel_a262a1005533d3dc6fd375c37d31ee95_2026-06-11_{}.json"
CLAUDE_SESSION = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"


def one(*paths):
    (trace,) = read_traces(*paths)
    return trace


def monocle(shared_data, kind):
    return one(*sorted((shared_data / MONOCLE).glob(f"*_{kind}_travel_*.json")))


def step_agents(trace):
    return [(step.agent, len(step.events)) for step in TraceGraph.of(trace).steps]


# --- Who&When ---------------------------------------------------------------------------------


def test_who_and_when_hand_crafted_4(shared_data):
    # Magentic-One, 17 history entries h0..h16, no durations (t = index), a temporal edge from
    # each entry to the next: one causal chain. Steps: h0 human | h1 h2 Orchestrator (plan,
    # ledger) | h3 delegate -> WebSurfer | h4 return | h5 ledger | h6 delegate | h7 "Next speaker
    # WebSurfer" | h8 return | h9 h10 h11 | h12 return | h13 h14 h15 | h16 return: 17 steps, never
    # two dispatch events at one t. CS = 17 = all steps (serial). The human (role "human") is no
    # sub-agent: WebSurfer is the only one, so no serial collapse (before: "sub-agents 2", collapse).
    metrics = compute_metrics(one(shared_data / "who-and-when" / "Hand-Crafted" / "4.json"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (17, 17, 17)
    assert metrics["parallelism_efficiency"] == 1.0  # no durations: 17 steps / 17
    assert metrics["sub_agents"] == 1 and metrics["failure_modes"]["serial_collapse"] is False
    assert metrics["final_answer"] == "h16" and not metrics["flags"]["final_answer_fallback"]
    # Coordination: the 8 orchestrator decisions (962 + 358 + 354 + 6 + 392 + 6 + 349 + 6 = 2433
    # tokens) and the 4 delegations (120 + 71 + 102 + 83 = 376) = 2809 of 5553; the WebSurfer's
    # 4 returns (959 + 567 + 571 + 584 = 2681, its work) and the human's question (63) are not.
    assert metrics["protocol_overhead"] == pytest.approx(2809 / 5553)  # 0.506; was 0.562
    assert metrics["failure_modes"]["free_riding"] is None
    assert metrics["unavailable"]["free_riding"].startswith("needs attribution")


# --- Monocle (Microsoft Agent Framework) --------------------------------------------------------


def test_monocle_concurrent(shared_data):
    # dispatcher: spawn + delegate to FlightExpert (0.000 s), HotelExpert (0.012), ActivitiesExpert
    # (0.019), BudgetExpert (0.023), all instantaneous, no expert finished in between -> ONE turn.
    # The experts' returns overlap: 0.005-4.087, 0.015-4.763, 0.022-4.253, 0.032-3.808 s.
    # The workflow agent aggregates 4.821-15.916 s. Stages: dispatcher turn -> 4 experts in
    # parallel -> aggregator: CS = 1 + 1 + 1 = 3 of 6 steps (13 events).
    trace = monocle(shared_data, "concurrent")
    metrics = compute_metrics(trace)
    assert step_agents(trace) == [
        ("dispatcher", 8),
        ("FlightExpert", 1),
        ("HotelExpert", 1),
        ("ActivitiesExpert", 1),
        ("BudgetExpert", 1),
        ("okahu_demos_ms_openai_concurrent_travel", 1),
    ]
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (3, 6, 13)
    # T_serial = 4.082 + 4.748 + 4.231 + 3.776 + 11.095 = 27.93 s; T_parallel = HotelExpert 4.748
    # + aggregate 11.095 = 15.84 s -> 1.763: parallel, and serial collapse agrees (3 < 0.9 x 6)
    assert metrics["parallelism_efficiency"] == pytest.approx(1.763, abs=1e-3)
    assert metrics["failure_modes"]["serial_collapse"] is False
    assert metrics["final_answer"] == "35b29ac4a6ba3c4b"  # the aggregate
    assert metrics["failure_modes"]["pseudo_parallel_agents"] == []
    # the 8 dispatch events carry neither tokens nor content: coordination tokens are unknown
    # (before: 1.0, counting the experts' returned work as protocol)
    assert metrics["protocol_overhead"] is None
    assert "8 coordination events" in metrics["unavailable"]["protocol_overhead"]


def test_monocle_sequential(shared_data):
    # A hand-off chain, nothing in parallel: input-conversation turn (spawn + delegate, 0 s) ->
    # DestinationResearcher message 0.006-3.670 s, its hand-off turn (3.767) -> FlightPlanner
    # message 3.771-8.579, 2 tool calls + 2 results (8.587-8.588), message 8.588-10.518, hand-off
    # (10.572) -> HotelPlanner the same (7 steps, 10.577-16.408) -> ItineraryWriter message
    # 16.411-24.399. Serial count: 1 + 2 + 7 + 7 + 1 = 18 steps (22 events: 4 spawn + delegate
    # pairs). Each planner's two tool calls overlap (8.589225-8.590022 and 8.589642-8.590089;
    # 13.037951-13.039520 and 13.038785-13.039707): the second call and the first result run
    # beside each other, so each planner's chain is message, call 1, result 1, result 2, message
    # (5 of its 7 steps): CS = 18 - 2 = 16. A hand-off chain, each agent fed by the one before:
    # serial by design, no serial collapse.
    metrics = compute_metrics(monocle(shared_data, "sequential"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (16, 18, 22)
    # the overlapping tool calls last under a millisecond: the efficiency stays 1.0 to 1e-4
    assert metrics["parallelism_efficiency"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["failure_modes"]["serial_collapse"] is False
    # no aggregate or return: the answer is the last agent's message (before: the last-event fallback)
    assert metrics["final_answer"] == "bda51836f8b09d06" and not metrics["flags"]["final_answer_fallback"]
    assert metrics["protocol_overhead"] is None  # 8 empty dispatch events (before: 0.955)


def test_monocle_group_chat(shared_data):
    # group_chat_orchestrator turn 1 (0.000-0.014 s: spawn + delegate x2 to Planner, spawn +
    # delegate to BudgetHawk and to Reviewer, 7 events) -> Planner return 0.005-7.283 -> turn 2
    # (7.435-7.448: 3 delegates; it receives Planner's return) -> BudgetHawk return 7.442-15.483
    # -> turn 3 (15.590-15.595: 3 delegates) -> Reviewer message 15.599-16.918. One speaker at a
    # time: CS = 6 of 6 steps (16 events). Serial by design, no collapse: BudgetHawk's first event
    # depends on Planner's return (return -> turn 2 -> delegate -> BudgetHawk), the Reviewer's on
    # BudgetHawk's the same way (before: serial collapse).
    metrics = compute_metrics(monocle(shared_data, "groupchat"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (6, 6, 16)
    assert metrics["parallelism_efficiency"] == pytest.approx(1.0)
    assert metrics["failure_modes"]["serial_collapse"] is False
    # the Reviewer speaks last: its message is the answer (before: BudgetHawk's earlier return,
    # which made the Reviewer "pseudo-parallel" and utilisation 2/3)
    assert metrics["final_answer"] == "9627fae28120f773"
    assert metrics["failure_modes"]["pseudo_parallel_agents"] == []
    assert metrics["useful_agent_utilisation"] == 1.0
    assert metrics["protocol_overhead"] is None  # 13 empty dispatch events (before: 1.0)


def test_monocle_handoff_and_its_truncated_chunk(shared_data):
    # Two valid chunks of one trace id (14.59.02, 15.00.02) merge into 29 events: triage_agent
    # message 0-2.722 s, its hand-off turn (spawn + 2 delegates, 2.769-2.771) -> visa_agent: a
    # message, a tool call and result, then 22 messages "User did not respond. Continue
    # assisting autonomously." up to 118.6 s, one after another. 27 steps, CS = 27. Only one
    # sub-agent: no serial collapse by definition.
    folder = shared_data / MONOCLE
    good = [folder / HANDOFF.format("14.59.02"), folder / HANDOFF.format("15.00.02")]
    metrics = compute_metrics(one(*good))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (27, 27, 29)
    assert metrics["sub_agents"] == 1 and metrics["failure_modes"]["serial_collapse"] is False
    assert metrics["final_answer"] == "e5ae978b47772500"  # visa_agent's last message
    assert metrics["protocol_overhead"] is None  # 3 empty dispatch events (before: 0.9996)
    # Every message shows its turn's input (Monocle recorded no output), not what the agent said:
    # no redundancy to measure (before: 0.833, 20 of 24 "repeating" the prompt "User did not respond.").
    assert metrics["message_redundancy"] is None
    # The third chunk is cut off upstream: it fails alone, the trace of the other two is the same.
    cut = folder / HANDOFF.format("15.01.07")
    result = read_files(SourceFile(str(path), path.read_bytes()) for path in [*good, cut])
    assert [report.error is not None for report in result.files] == [False, False, True]
    (trace,) = result.traces
    assert compute_metrics(trace)["critical_steps"] == 27


# --- agntcy (Jaeger) ----------------------------------------------------------------------------


def test_agntcy_a2a_supervisor(shared_data):
    # supervisor LLM call 0-7.201 s (query_detector) -> its turn (spawn + delegate at 7.370) ->
    # detector message 7.390-9.223 -> tool call 9.225-10.273 -> tool result -> return
    # 10.275-16.759 -> supervisor's answer 16.819-23.651. 7 steps in one chain: CS = 7.
    metrics = compute_metrics(one(shared_data / "otel-agntcy-a2a" / "get-inventory.json"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (7, 7, 8)
    assert metrics["parallelism_efficiency"] == pytest.approx(1.0)
    # the supervisor's final message is the answer (before: the detector's return)
    assert metrics["final_answer"] == "8c7cedce9613157e"
    # coordination: the delegation prompt (77 tokens; the spawn is empty) of 890 + 77 + 3451 +
    # 127 + 464 + 4088 + 1495 = 10592 (before: 0.944, counting the return and the LLM turns)
    assert metrics["protocol_overhead"] == pytest.approx(77 / 10592)


# --- Claude Code ----------------------------------------------------------------------------------


def test_claude_code_session_with_two_subagents(shared_data):
    # 630 events: main 513, Explore:a93ccab 62, Explore:aa84377 52, user 2, compaction 1. Each
    # Task call is a spawn and a delegation starting at one instant (29.797 s, 996.511 s): one
    # step each -> 628 steps. The Explore agents never overlap: 31.5-87.5 s and 997.8-1059.6 s,
    # inside their Task calls, while main emits nothing; the compaction's return (2235.7 s)
    # comes after main's event at 2148.8 s. No two agents ran in parallel, but the parallel
    # tool calls of one response (31 of main's 157 responses, 9 and 6 of the Explore agents')
    # overlap: CS = 612 (an independent longest-chain sweep over the lanes gives the same).
    folder = shared_data / "claude-code"
    trace = one(folder / f"{CLAUDE_SESSION}.jsonl", folder / CLAUDE_SESSION)
    metrics = compute_metrics(trace)
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (612, 628, 630)
    # sub-agents: the two Explore agents (the user and the compaction routine are none: before, 4).
    # No serial collapse: Explore:aa84377's first event (997.8 s) depends on Explore:a93ccab's
    # return (87.5 s) through main's lane up to the second Task call (996.5 s).
    assert metrics["sub_agents"] == 2 and metrics["failure_modes"]["serial_collapse"] is False
    assert [len(step.events) for step in TraceGraph.of(trace).steps if len(step.events) > 1] == [2, 2]


# --- the hand-written fixtures (no ../shared needed) -------------------------------------------


def test_fixture_monocle_small(fixtures):
    # input-conversation turn (spawn + delegate, 0 s) -> Researcher message 0.1-0.9, tool call
    # 0.9-1.4, tool result, hand-off turn (1.6) -> Writer message 1.7-2.9: 6 steps in a chain.
    # A hand-off: the Writer depends on the Researcher, no serial collapse.
    metrics = compute_metrics(one(fixtures / "monocle_small.json"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (6, 6, 8)
    assert metrics["failure_modes"]["serial_collapse"] is False
    assert metrics["protocol_overhead"] is None and metrics["unavailable"]["protocol_overhead"]


def test_fixture_jaeger_small(fixtures):
    # planner message 0-0.9 s -> turn (spawn + delegate, 1.0) -> worker message, tool call, tool
    # result, return 2.9-5.7 -> planner's answer 6.0-9.4: 7 steps, CS 7; the answer is the
    # planner's message, not the worker's return
    metrics = compute_metrics(one(fixtures / "jaeger_small.json"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (7, 7, 8)
    trace = one(fixtures / "jaeger_small.json")
    assert TraceGraph.of(trace).final_answer.type == "message"
    assert TraceGraph.of(trace).final_answer.agent == "planner-svc"


def test_fixture_who_and_when_hand_crafted(fixtures):
    # 11 entries h0..h10, untimed chain; h7 and h8 are two delegate messages in a row (two log
    # lines at t = 7 and 8: two turns). CS = 11. Coordination: decisions h1 11 + h4 9, delegates
    # h2 7 + h5 10 + h7 5 + h8 10, stop h10 5 = 57 of 110 tokens.
    metrics = compute_metrics(one(fixtures / "whowhen_hand_crafted.json"))
    assert (metrics["critical_steps"], metrics["total_steps"]) == (11, 11)
    assert metrics["protocol_overhead"] == pytest.approx(57 / 110)
    assert metrics["final_answer"] == "h10"  # the orchestrator's stop
