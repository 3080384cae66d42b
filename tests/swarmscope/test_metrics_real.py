"""Metrics on real traces (../shared/data, README there) and on the hand-written fixtures, every
figure derived by hand from the raw file in the comments (docs/metrics.md says what each metric is).

Units: a *step* is an agent action (Kimi K2.5 PARL; swarmscope.graph "Execution steps"): an LLM
turn with the tool calls and results it issues and the dispatches it makes at once (a dispatch
turn of its own where no turn precedes it); the blocks of one model response (`response_id`) are
one step; events of humans, users and harness routines, harness bookkeeping and content-free
framework spans (in a trace that records content) are no actions. `total_steps` counts the
actions, `total_events` the events. The shared-data tests skip without ../shared.
"""

import json

import pytest

from swarmscope import read_traces
from swarmscope.graph import TraceGraph
from swarmscope.importers import SourceFile, read_files
from swarmscope.metrics import compute_metrics, parallel_time, serial_time

MONOCLE = "otel-monocle-agent-framework"
HANDOFF = "monocle_trace_okahu_demos_ms_openai_handoff_travel_a262a1005533d3dc6fd375c37d31ee95_2026-06-11_{}.json"
CLAUDE_SESSION = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"


def one(*paths):
    (trace,) = read_traces(*paths)
    return trace


def monocle(shared_data, kind):
    return one(*sorted((shared_data / MONOCLE).glob(f"*_{kind}_travel_*.json")))


def step_agents(trace):
    """(agent, events, counts as an action) of each step."""
    return [(step.agent, len(step.events), step.counts) for step in TraceGraph.of(trace).steps]


def api_calls(path):
    """Distinct assistant `message.id`s of a Claude Code transcript file, read from the raw JSON."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return len({r["message"]["id"] for r in records if r.get("type") == "assistant" and r["message"].get("id")})


# --- Who&When ---------------------------------------------------------------------------------


def test_who_and_when_hand_crafted_4(shared_data):
    # Magentic-One, 17 history entries h0..h16, no durations (t = index), a temporal edge from
    # each entry to the next: one causal chain. Steps: h0 human | h1 h2 Orchestrator (plan,
    # ledger) | h3 delegate -> WebSurfer | h4 return | h5 ledger | h6 delegate | h7 "Next speaker
    # WebSurfer" | h8 return | h9 h10 h11 | h12 return | h13 h14 h15 | h16 return. Every entry is
    # an LLM turn of its agent (untimed: a delegation is a log line of its own, never at one t with
    # the decision before it), except h0: the human's question is no agent action. 16 steps of 17
    # events, one chain: CS = 16 (before: 17, the human's message a step). The human (role
    # "human") is no sub-agent: WebSurfer is the only one, so no serial collapse (before:
    # "sub-agents 2", collapse).
    metrics = compute_metrics(one(shared_data / "who-and-when" / "Hand-Crafted" / "4.json"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (16, 16, 17)
    assert metrics["parallelism_efficiency"] == 1.0  # no durations: 16 steps / 16
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
    # The workflow agent aggregates 4.821-15.916 s. The dispatcher is framework code: its 8 events
    # carry no content, tokens or reference in a trace whose LLM spans do (the experts' 293-336
    # tokens), so its turn is no action. Steps: the 4 experts' LLM calls and the aggregate = 5 of
    # 13 events; CS = one expert + the aggregate = 2 (before: 3 of 6, the dispatch a step).
    trace = monocle(shared_data, "concurrent")
    metrics = compute_metrics(trace)
    assert step_agents(trace) == [
        ("dispatcher", 8, False),
        ("FlightExpert", 1, True),
        ("HotelExpert", 1, True),
        ("ActivitiesExpert", 1, True),
        ("BudgetExpert", 1, True),
        ("okahu_demos_ms_openai_concurrent_travel", 1, True),
    ]
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (2, 5, 13)
    # T_serial = 4.082 + 4.748 + 4.231 + 3.776 + 11.095 = 27.93 s; T_parallel = HotelExpert 4.748
    # + aggregate 11.095 = 15.84 s -> 1.763: parallel, and serial collapse agrees (2 < 0.9 x 5)
    assert metrics["parallelism_efficiency"] == pytest.approx(1.763, abs=1e-3)
    assert metrics["failure_modes"]["serial_collapse"] is False
    assert metrics["final_answer"] == "35b29ac4a6ba3c4b"  # the aggregate
    assert metrics["failure_modes"]["pseudo_parallel_agents"] == []
    # the 8 dispatch events carry neither tokens nor content: coordination tokens are unknown
    # (before: 1.0, counting the experts' returned work as protocol)
    assert metrics["protocol_overhead"] is None
    assert "8 coordination events" in metrics["unavailable"]["protocol_overhead"]


def test_monocle_sequential(shared_data):
    # A hand-off chain, nothing in parallel: input-conversation's dispatch (spawn + delegate,
    # 0.002 s, no content: framework code, no action) -> DestinationResearcher's LLM call
    # 0.008-3.672 s and its hand-off (3.770, joined: instantaneous, nothing of another agent
    # ended between) -> FlightPlanner's LLM call 3.773-8.581 with the two tool calls it issued
    # (8.589225-8.590022 and 8.589642-8.590089: concurrent) and their results, then its second
    # call 8.591-10.520 with its hand-off (10.575) -> HotelPlanner the same (LLM call 10.580-13.035
    # with 2 concurrent calls, LLM call 13.041-16.355 and hand-off) -> ItineraryWriter's call
    # 16.413-24.401. Steps = the 6 LLM calls (1 + 2 + 2 + 1) of 22 events, one chain: CS = 6
    # (before: 18 of 18, every tool call, result and dispatch pair a step). Each agent is fed by
    # the one before: serial by design, no serial collapse.
    metrics = compute_metrics(monocle(shared_data, "sequential"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (6, 6, 22)
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
    # -> turn 3 (15.590-15.595: 3 delegates) -> Reviewer message 15.599-16.918. The manager's 13
    # dispatch events carry nothing (framework routing, no LLM call recorded): no actions. Steps:
    # the 3 speakers' LLM calls of 16 events, one at a time: CS = 3 (before: 6 of 6). Serial by
    # design, no collapse: BudgetHawk's first event depends on Planner's return (return -> turn 2
    # -> delegate -> BudgetHawk), the Reviewer's on BudgetHawk's the same way (before: collapse).
    metrics = compute_metrics(monocle(shared_data, "groupchat"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (3, 3, 16)
    assert metrics["parallelism_efficiency"] == pytest.approx(1.0)
    assert metrics["failure_modes"]["serial_collapse"] is False
    # the Reviewer speaks last: its message is the answer (before: BudgetHawk's earlier return,
    # which made the Reviewer "pseudo-parallel" and utilisation 2/3)
    assert metrics["final_answer"] == "9627fae28120f773"
    assert metrics["failure_modes"]["pseudo_parallel_agents"] == []
    assert metrics["useful_agent_utilisation"] == 1.0
    assert metrics["protocol_overhead"] is None  # 13 empty dispatch events (before: 1.0)


def test_monocle_handoff_and_its_truncated_chunk(shared_data):
    # Two valid chunks of one trace id (14.59.02, 15.00.02) merge into 29 events: triage_agent's
    # LLM call 0-2.722 s with its hand-off (spawn + 2 delegates, 2.769-2.771, no content: joined)
    # -> visa_agent: an LLM call with the tool call it issued and its result, then 22 LLM calls
    # (messages "User did not respond. Continue assisting autonomously." as input) up to 118.6 s,
    # one after another. Steps = the 24 LLM calls (1 + 1 + 22), CS = 24 (before: 27 of 27). Only
    # one sub-agent: no serial collapse by definition.
    folder = shared_data / MONOCLE
    good = [folder / HANDOFF.format("14.59.02"), folder / HANDOFF.format("15.00.02")]
    metrics = compute_metrics(one(*good))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (24, 24, 29)
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
    assert compute_metrics(trace)["critical_steps"] == 24


# --- agntcy (Jaeger) ----------------------------------------------------------------------------


def test_agntcy_a2a_supervisor(shared_data):
    # supervisor's LLM call 0.012-7.213 s, whose output is the call query_detector(...), and the
    # A2A dispatch that call made (spawn + delegate at 7.382: instantaneous, nothing of another
    # agent ended between): one step -> detector's LLM call 7.402-9.235 (pyats_list_devices({}))
    # with the tool call it issued 9.237-10.285 and the result: one step -> detector's LLM call
    # 10.288-16.771, its answer (the return) -> supervisor's answer 16.831-23.663. Steps = the 4
    # LLM calls (ChatLiteLLM.chat spans) of 8 events, one chain: CS = 4 (before: 7 of 7).
    metrics = compute_metrics(one(shared_data / "otel-agntcy-a2a" / "get-inventory.json"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (4, 4, 8)
    assert metrics["parallelism_efficiency"] == pytest.approx(1.0)
    # the supervisor's final message is the answer (before: the detector's return)
    assert metrics["final_answer"] == "8c7cedce9613157e"
    # coordination: the delegation prompt (77 tokens; the spawn is empty) of 890 + 77 + 3451 +
    # 127 + 464 + 4088 + 1495 = 10592 (before: 0.944, counting the return and the LLM turns)
    assert metrics["protocol_overhead"] == pytest.approx(77 / 10592)


# --- Claude Code ----------------------------------------------------------------------------------


def test_claude_code_session_with_two_subagents(shared_data):
    # 630 events: main 513, Explore:a93ccab 62, Explore:aa84377 52, user 2, compaction 1. A step
    # is one API call (one assistant message.id: its thinking, text and tool_use blocks, the
    # spawns and delegations of its Task calls, and the tool results): main 157, the Explore
    # agents 11 and 9 (counted from the raw files below), the compaction's 1 a harness routine's
    # (no step), the user's 2 prompts no agent's: 177 steps (before: 628, every block and result
    # a step; 612 after the concurrent tool calls overlapped). Each Explore agent runs inside its
    # Task call (31.5-87.5 s, 997.8-1059.6 s) while main emits nothing, and main's next call
    # waits for its tool results: nothing ran beside another agent, CS = 157 + 11 + 9 = 177, as
    # PARL sums the main agent's steps and the longest sub-agent's per stage.
    folder = shared_data / "claude-code"
    trace = one(folder / f"{CLAUDE_SESSION}.jsonl", folder / CLAUDE_SESSION)
    metrics = compute_metrics(trace)
    subagents = sorted((folder / CLAUDE_SESSION / "subagents").glob("agent-a*.jsonl"))
    calls = {path.stem: api_calls(path) for path in subagents}
    assert calls == {"agent-a93ccab": 11, "agent-aa84377": 9, "agent-acompact-70d8e7": 1}
    assert api_calls(folder / f"{CLAUDE_SESSION}.jsonl") == 157
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (177, 177, 630)
    # T_serial: only tool calls and the two Task calls have durations; the Task calls count 1.701
    # s and 1.329 s (their spans less their Explore agent's 31.498-87.511 and 997.840-1059.558 s),
    # the tool calls 986.407 s: 989.437 s. T_parallel: the heaviest chain of time-disjoint events,
    # 943.250 s (a weighted-interval-scheduling sweep over the 630 intervals gives the same): the
    # parallel tool calls of one response overlap. 989.437 / 943.250 = 1.049 (before: 1.00).
    assert metrics["parallelism_efficiency"] == pytest.approx(989.437 / 943.250, abs=1e-4)
    # sub-agents: the two Explore agents (the user and the compaction routine are none: before, 4).
    # No serial collapse: Explore:aa84377's first event (997.8 s) depends on Explore:a93ccab's
    # return (87.5 s) through main's lane up to the second Task call (996.5 s).
    assert metrics["sub_agents"] == 2 and metrics["failure_modes"]["serial_collapse"] is False
    # Coordination: the two delegations, each carrying its API call's usage (the Task tool_use is
    # the response's last block: msg_012X7ceh… 1 + 379 + 28719 + 153 = 29252, msg_0167MCUa… 1 + 368
    # + 79161 + 112 = 79642) of 16,574,416 measured + 141,694 estimated tokens. The compaction's
    # spawn (its 2145-token prompt) and the user's prompts (37) are no protocol (before: 0.00664).
    assert metrics["protocol_overhead"] == pytest.approx((29252 + 79642) / (16_574_416 + 141_694))


def test_claude_code_session_with_one_subagent_and_a_compaction(shared_data):
    # 4d5611e5: main, the user, one Explore subagent (a2898e3) and a compaction routine. API calls
    # (raw files): main 139, Explore 12, compaction 1 (a harness routine: no step) -> 151 steps,
    # one after another (the Explore agent runs inside its Task call): CS = 151. Sub-agents: the
    # Explore agent alone (before: 3, the user and the compaction counted), so no serial collapse.
    folder = shared_data / "claude-code"
    session = "4d5611e5-241a-462a-8d15-5122611a9569"
    subagents = sorted((folder / session / "subagents").glob("agent-a*.jsonl"))
    assert [api_calls(path) for path in subagents] == [12, 1]  # a2898e3, acompact-e1f845
    assert api_calls(folder / f"{session}.jsonl") == 139
    metrics = compute_metrics(one(folder / f"{session}.jsonl", folder / session))
    assert (metrics["critical_steps"], metrics["total_steps"]) == (151, 151)
    assert metrics["sub_agents"] == 1 and metrics["orchestrators"] == ["main"]
    assert metrics["failure_modes"]["serial_collapse"] is False
    # coordination: the one delegation's API call (29511 tokens) of 12,976,160 + 154,205 (before:
    # 0.00242 with the compaction's spawn prompt and the user's prompts)
    assert metrics["protocol_overhead"] == pytest.approx(29511 / (12_976_160 + 154_205))


# --- single agents ------------------------------------------------------------------------------


def test_claude_code_single_agent(shared_data):
    # short.jsonl: the user's prompt, one API call (one message.id: a thinking block, 2 text blocks,
    # one of them blank (an event marked `empty`), 2 tool_use blocks), the 2 tool results and the
    # user's interruption: 9 events, 1 step. No orchestrator for one agent
    # (before: none either, and critical steps n/a); CS = 1; no sub-agents (before: 2, the user
    # and main), no protocol (the user's prompt is none): overhead 0.0 (before: 0.0004).
    # Efficiency: the Bash call 4.271-5.634 s and the Glob call 4.823-5.634 s of that response
    # overlap: T_serial 1.363 + 0.811 = 2.174 s, T_parallel 1.363 s: 1.595 (before: 1.00).
    path = shared_data / "claude-code" / "short.jsonl"
    assert api_calls(path) == 1
    metrics = compute_metrics(one(path))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (1, 1, 9)
    assert metrics["orchestrators"] == [] and metrics["sub_agents"] == 0
    assert metrics["protocol_overhead"] == 0.0 and metrics["useful_agent_utilisation"] is None
    assert metrics["failure_modes"]["serial_collapse"] is False
    assert metrics["parallelism_efficiency"] == pytest.approx(2.174 / 1.363, abs=1e-3)


def test_codex_single_agent(shared_data):
    # One thread: 2 harness context messages (developer instructions, environment context), the
    # user's prompt, one assistant message (the one model response: the only token_count) and
    # task_complete (the harness's end of turn, a `stop`). Before, the stop made "codex" an
    # orchestrator: CS 5 for one LLM call and a protocol overhead from the stop's text. Now: no
    # orchestrator, 1 step, CS 1, overhead 0.0 (no inter-agent protocol), no sub-agents.
    metrics = compute_metrics(one(shared_data / "codex-cli" / "rollout-2026-06-05-single-agent.jsonl"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (1, 1, 5)
    assert metrics["orchestrators"] == [] and metrics["sub_agents"] == 0
    assert metrics["protocol_overhead"] == 0.0
    assert metrics["failure_modes"]["serial_collapse"] is False


# --- every shared trace -------------------------------------------------------------------------


def test_parallel_time_stays_within_the_wall_clock_on_every_shared_trace(shared_data):
    # T_parallel is a chain of time-disjoint events: at most the span from the first start to the
    # last end, and at most T_serial (the same work durations, all of them), so efficiency >= 1.
    # Before: 11.136 s on the 7.36-s Langfuse claude-agent trace (its overlapping assistant-turn
    # spans chained by the lane) and 14.842 s on the 7.424-s pydantic-ai-tools one (a wrapper's
    # turn spanning the agents it runs, chained to them by causal arcs).
    files = [
        *sorted((shared_data / "langfuse-exports").glob("*.json")),
        shared_data / "otel-agntcy-a2a" / "get-inventory.json",
        *sorted((shared_data / "claude-code").glob("*.jsonl")),
        *sorted((shared_data / "codex-cli").glob("*.jsonl")),
    ]
    groups = [[path] for path in files if not (path.with_suffix("")).is_dir()]
    groups += [[path, path.with_suffix("")] for path in files if path.with_suffix("").is_dir()]
    groups += [sorted((shared_data / MONOCLE).glob(f"*_{kind}_travel_*.json")) for kind in ("concurrent", "sequential")]
    groups += [sorted((shared_data / MONOCLE).glob(f"*_{kind}_travel_*.json")) for kind in ("groupchat",)]
    for group in groups:
        trace = one(*group)
        wall = max(e.t_end if e.t_end is not None else e.t for e in trace.events) - min(e.t for e in trace.events)
        assert parallel_time(trace) <= wall + 1e-9, group[0].name
        assert parallel_time(trace) <= serial_time(trace) + 1e-9, group[0].name


# --- the hand-written fixtures (no ../shared needed) -------------------------------------------


def test_fixture_monocle_small(fixtures):
    # input-conversation turn (spawn + delegate, 0.1 s, no content: no action) -> Researcher's
    # LLM call 0.2-1.0 with its tool call, result and hand-off (1.7) -> Writer's LLM call 1.8-3.0:
    # 2 steps of 8 events, CS 2 (before: 6 of 6). A hand-off: no serial collapse.
    metrics = compute_metrics(one(fixtures / "monocle_small.json"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (2, 2, 8)
    assert metrics["failure_modes"]["serial_collapse"] is False
    assert metrics["protocol_overhead"] is None and metrics["unavailable"]["protocol_overhead"]


def test_fixture_jaeger_small(fixtures):
    # planner's LLM call 0.1-1.0 s and its dispatch (spawn + delegate, 1.1) -> worker's LLM call
    # 1.2-2.0 with its tool call 2.0-3.0 and result -> worker's answer (return, 3.0-5.8) ->
    # planner's answer (6.1-9.5): 4 steps, CS 4 (before: 7); the answer is the planner's message,
    # not the worker's return
    metrics = compute_metrics(one(fixtures / "jaeger_small.json"))
    assert (metrics["critical_steps"], metrics["total_steps"], metrics["total_events"]) == (4, 4, 8)
    trace = one(fixtures / "jaeger_small.json")
    assert TraceGraph.of(trace).final_answer.type == "message"
    assert TraceGraph.of(trace).final_answer.agent == "planner-svc"


def test_fixture_who_and_when_hand_crafted(fixtures):
    # 11 entries h0..h10, untimed chain; h7 and h8 are two delegate messages in a row (two log
    # lines at t = 7 and 8: two turns). The human's question h0 is no step: CS = 10 of 10 (before
    # 11). Coordination: decisions h1 11 + h4 9, delegates h2 7 + h5 10 + h7 5 + h8 10, stop h10 5
    # = 57 of 110 tokens.
    metrics = compute_metrics(one(fixtures / "whowhen_hand_crafted.json"))
    assert (metrics["critical_steps"], metrics["total_steps"]) == (10, 10)
    assert metrics["protocol_overhead"] == pytest.approx(57 / 110)
    assert metrics["final_answer"] == "h10"  # the orchestrator's stop
