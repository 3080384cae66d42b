"""Claude Code session importer (swarmscope.importers.claude_code): a session file, its
`subagents/agent-*.jsonl` and older inline sidechains as one trace per session."""

import json
import re
from collections import Counter

import pytest

from swarmscope.importers import SourceFile, claude_code, detect, read_files
from swarmscope.importers.files import iter_files, read_traces
from tests.swarmscope.importers import edge_set as _edges

SESSION_A = "11111111-aaaa-4aaa-8aaa-000000000001"
SESSION_B = "22222222-bbbb-4bbb-8bbb-000000000002"
SESSION_C = "33333333-cccc-4ccc-8ccc-000000000003"


def _delegations(trace):
    """(sender, receiver) -> number of delegate events."""
    return Counter((e.agent, e.to) for e in trace.events if e.type == "delegate")


def _by_id(trace):
    return {e.id: e for e in trace.events}


def _read(*paths):
    result = read_files([SourceFile(str(p), p.read_bytes()) for p in iter_files(paths)])
    assert not result.failed, result.failed
    return {t.attributes["session_id"]: t for t in result.traces}


# --- hand-written fixtures: run without ../shared -----------------------------------------------


@pytest.fixture(scope="module")
def project(fixtures):
    return fixtures / "claude_code" / "project"


@pytest.fixture(scope="module")
def traces(project):
    return _read(project)


def test_project_folder_is_one_trace_per_session(traces, project):
    assert sorted(traces) == [SESSION_A, SESSION_B, SESSION_C]
    a = traces[SESSION_A]
    assert a.identity_key == f"claude_code:{SESSION_A}" and a.topology == "harness" and a.system == "Claude Code"
    assert sorted(a.attributes["sources"]) == sorted(str(p) for p in iter_files([project]) if SESSION_A in str(p))
    assert a.attributes["question"] == "Find the bug in parser.py and list what the docs are missing."
    assert a.name == a.attributes["question"]


@pytest.mark.parametrize(
    "prompt, name",
    [
        (  # a plugin's slash command, as subagent.jsonl in ../shared records it
            "<command-message>handgemacht:create-beads</command-message>\n"
            "<command-name>/handgemacht:create-beads</command-name>\n"
            "<command-args>websearch how to set up credo\n\nMaybe igniter?</command-args>",
            "/handgemacht:create-beads websearch how to set up credo",
        ),
        (  # a built-in one without arguments (tool_heavy.jsonl)
            "<command-name>/mcp</command-name>\n            <command-message>mcp</command-message>\n"
            "            <command-args></command-args>",
            "/mcp",
        ),
        ("<local-command-stdout>Reconnected to tidewave.</local-command-stdout>", "Reconnected to tidewave."),
    ],
)
def test_a_session_opened_by_a_command_is_named_without_its_markup(project, prompt, name):
    lines = (project / f"{SESSION_A}.jsonl").read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == "user")
    record = json.loads(lines[first])
    record["message"]["content"] = prompt
    lines[first] = json.dumps(record)
    [trace] = read_files([SourceFile(f"{SESSION_A}.jsonl", "\n".join(lines).encode())]).traces
    assert trace.name == name
    assert trace.attributes["question"] == prompt  # the prompt itself is kept as written


def test_sniff_and_other_formats(project):
    lines = [json.loads(x) for x in (project / f"{SESSION_A}.jsonl").read_text().splitlines()]
    assert claude_code.sniff(lines) and claude_code.sniff(lines[1])
    assert detect(lines) is claude_code
    assert not claude_code.sniff([lines[0]])  # a file-history snapshot alone is no transcript
    assert not claude_code.sniff({"question": "?", "history": []})
    assert not claude_code.sniff([{"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {}}])


def test_parallel_delegations_and_aggregate(traces):
    a = traces[SESSION_A]
    assert [(x.name, x.role, x.parent) for x in a.agents] == [
        ("main", "orchestrator", None),
        ("user", "human", None),
        ("Explore:a111111", "subagent", "main"),
        ("Explore:a222222", "subagent", "main"),
        ("compaction:acompact-c0ffee", "compaction", "main"),
    ]
    assert _delegations(a) == {("main", "Explore:a111111"): 1, ("main", "Explore:a222222"): 1}
    events = _by_id(a)
    delegate = events["toolu_T1:delegate"]
    assert delegate.content == "Read parser.py and find the off-by-one." and delegate.tool == "Task"
    assert delegate.attributes["subagent_type"] == "Explore" and delegate.attributes["description"] == "Find parser bug"
    assert delegate.attributes["parallel"] == 2 and events["toolu_T2:delegate"].attributes["parallel"] == 2
    assert events["toolu_T1:spawn"].type == "spawn" and events["toolu_T1:spawn"].to == "Explore:a111111"
    # the subagent's lane comes from its own file: the agent_progress copy in the session file is not used twice
    assert [e.id for e in a.events if e.agent == "Explore:a111111"] == [
        "toolu_R1",
        "toolu_R1:result",
        "s1-a2",
        "toolu_T1:return",
    ]
    back = events["toolu_T1:return"]
    assert (back.type, back.agent, back.to, back.t) == ("return", "Explore:a111111", "main", 20.0)
    assert back.content == "Bug: line 42 uses <= instead of <."
    assert events["toolu_T2:return"].t == 25.0 and delegate.t_end == 20.0
    assert events["a-a4"].type == "aggregate"
    assert _edges(a, "aggregate") == {("toolu_T1:return", "a-a4"), ("toolu_T2:return", "a-a4")}
    assert ("toolu_T1:delegate", "toolu_R1") in _edges(a, "message")
    assert ("toolu_T2:spawn", "toolu_G1") in _edges(a, "spawn")
    # one model response, one step: both Task calls (spawns and delegations) came in one message;
    # a subagent's return is its last response's (s1-a2); a tool result belongs to no response
    said = {e.id: e.attributes.get("response_id") for e in a.events}
    assert said["toolu_T1:spawn"] == said["toolu_T1:delegate"] == said["toolu_T2:delegate"] is not None
    assert said["toolu_T1:return"] == said["s1-a2"] is not None and said["toolu_R1:result"] is None


def test_aggregate_event_added_when_next_turn_is_a_tool_call(project):
    """When the lead's next turn after parallel returns is a tool call, a separate aggregate event
    precedes it."""
    lines = (project / f"{SESSION_A}.jsonl").read_text().splitlines()
    kept = [line for line in lines if '"uuid":"a-a4"' not in line]  # drop the text reply
    sources = [SourceFile("main.jsonl", "\n".join(kept).encode())]
    sources += [SourceFile(str(p), p.read_bytes()) for p in (project / SESSION_A / "subagents").iterdir()]
    trace = read_files(sources).traces[0]
    order = [e.id for e in trace.events]
    aggregate = _by_id(trace)["toolu_T1:aggregate"]
    assert (aggregate.type, aggregate.agent, aggregate.t) == ("aggregate", "main", 27.0)
    assert order.index("toolu_T2:return") < order.index("toolu_T1:aggregate") == order.index("toolu_B1") - 1
    assert _edges(trace, "aggregate") == {
        ("toolu_T1:return", "toolu_T1:aggregate"),
        ("toolu_T2:return", "toolu_T1:aggregate"),
    }


def test_tools_tokens_and_costs(traces):
    a = traces[SESSION_A]
    events = _by_id(a)
    assert _edges(a, "tool_dependency") == {
        ("toolu_B1", "toolu_B1:result"),
        ("toolu_R1", "toolu_R1:result"),
        ("toolu_G1", "toolu_G1:result"),
    }
    assert events["toolu_B1"].content == '{"command": "pytest -q"}' and events["toolu_B1"].t_end == 29.0
    assert events["toolu_G1:result"].attributes["status"] == "error"
    # msg_A1 streamed as three records: the last record's usage (10 + 40 + 100 + 50) counts once
    assert events["toolu_T2:delegate"].tokens == 200 and events["a-a1"].tokens is None
    assert events["toolu_T2:delegate"].attributes["cache_read_input_tokens"] == 100
    # sum over the 9 API calls of the fixture files (main 4, subagents 2 + 2, compaction 1)
    assert a.costs == {
        "input_tokens": 10 + 5 + 1 + 2 + 3 + 1 + 2 + 1 + 20,
        "output_tokens": 40 + 15 + 8 + 3 + 7 + 12 + 6 + 9 + 30,
        "cache_read_input_tokens": 100 + 200 + 300 + 400 + 0 + 500 + 0 + 400 + 1000,
        "cache_creation_input_tokens": 50 + 0 + 0 + 10 + 500 + 20 + 400 + 5 + 0,
        "tokens": 4060,
        "llm_calls": 9,
        "tool_calls": 3,
        "wall_clock_s": 52.0,
    }
    assert sum(e.tokens or 0 for e in a.events) == a.costs["tokens"]


def test_user_turns_and_compaction(traces):
    a = traces[SESSION_A]
    events = _by_id(a)
    assert (events["a-u1"].type, events["a-u1"].agent, events["a-u1"].to) == ("message", "user", "main")
    assert events["a-u6"].type == "human_intervention"
    assert "a-u5" not in events  # the compact summary is the compaction agent's return, not a user turn
    spawn = events["acompact-c0ffee:spawn"]
    assert (spawn.type, spawn.agent, spawn.to, spawn.t) == ("spawn", "main", "compaction:acompact-c0ffee", 30.0)
    assert spawn.attributes["compaction"] is True and spawn.content.startswith("Your task is to create")
    summary = events["c-a1"]
    assert (summary.type, summary.to, summary.attributes["compact_metadata"]) == (
        "return",
        "main",
        {"trigger": "manual", "preTokens": 1234},
    )
    assert not any(e.type == "delegate" and e.to.startswith("compaction") for e in a.events)
    assert ("c-a1", "a-a6") in _edges(a, "return")
    assert a.agent("compaction:acompact-c0ffee").attributes["compaction"] is True


def test_inline_sidechain(traces):
    b = traces[SESSION_B]
    assert b.name == "Counting TODOs with a sidechain"  # the summary record whose leaf is in the session
    sub = "general-purpose:toolu_T3"
    assert _delegations(b) == {("main", sub): 1}
    assert b.agent(sub).attributes["inline_sidechain"] is True
    assert [e.id for e in b.events if e.agent == sub] == ["toolu_B2", "toolu_B2:result", "b-s4", "toolu_T3:return"]
    assert _edges(b, "return") == {("toolu_T3:return", "b-a3")}
    assert _by_id(b)["b-a1"].content == "I will delegate the count."  # text and tool_use in one record
    assert b.costs["tokens"] == (4 + 10 + 100) + (2 + 5 + 50) + (1 + 4 + 50) + (1 + 2 + 10)


def test_team_send_message(traces):
    c = traces[SESSION_C]
    researcher = "researcher:a333333"  # matched to its file by prompt: the result names researcher@demo
    assert _delegations(c) == {("main", researcher): 1}
    events = _by_id(c)
    ask, answer = events["toolu_M1"], events["toolu_M2"]
    assert (ask.type, ask.agent, ask.to, ask.content) == ("message", "main", researcher, "Find the release date of v2.")
    assert (answer.type, answer.agent, answer.to, answer.content) == (
        "message",
        researcher,
        "main",
        "v2 ships on 2026-04-01.",
    )
    assert {("toolu_M1", "toolu_W1"), ("toolu_M2", "c-a3")} <= _edges(c, "message")
    # a teammate's spawn acknowledgement is a tool result, not its answer; teammate messages are not user turns
    assert events["toolu_T4:result"].type == "tool_result" and not any(e.type == "return" for e in c.events)
    assert [e.type for e in c.events if e.agent == "user"] == ["message"]


def test_files_in_any_order_give_the_same_trace(project, traces):
    files = list(iter_files([project]))
    again = read_files([SourceFile(str(p), p.read_bytes()) for p in reversed(files)])
    for trace in again.traces:
        before = traces[trace.attributes["session_id"]]
        assert [e.to_dict() for e in trace.events] == [e.to_dict() for e in before.events]
        assert set(trace.edges) == set(before.edges) and trace.costs == before.costs


# --- bad input: all of a file or none, the error names file, line and field ---------------------


def test_truncated_line_names_file_and_line(project, tmp_path):
    lines = (project / f"{SESSION_B}.jsonl").read_text().splitlines()
    lines[0] = lines[0].replace("Counting TODOs", "Counting\u2028TODOs")  # in a JSON string; no line end
    lines[4] = lines[4][:80]
    bad = tmp_path / "broken.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = read_files([SourceFile(str(bad), bad.read_bytes())])
    assert result.traces == [] and result.files[0].name == str(bad)
    assert re.fullmatch(r"invalid JSON Lines record: .* at line 5, column \d+", result.files[0].error)
    with pytest.raises(ValueError, match="broken.jsonl.*line 5"):
        read_traces(bad)


@pytest.mark.parametrize(
    ("line", "change", "field"),
    [
        (3, lambda r: r.update(timestamp="yesterday"), "timestamp"),
        (3, lambda r: r["message"].update(content=7), "message.content"),
        (3, lambda r: r["message"]["content"][1].pop("id"), "message.content[1].id"),
        (3, lambda r: r["message"]["usage"].update(output_tokens=-1), "message.usage.output_tokens"),
        (6, lambda r: r["message"]["content"][0].update(tool_use_id=None), "message.content[0].tool_use_id"),
    ],
)
def test_bad_field_names_line_and_field(project, line, change, field):
    records = [json.loads(x) for x in (project / f"{SESSION_B}.jsonl").read_text().splitlines()]
    change(records[line - 1])
    data = "\n".join(json.dumps(r) for r in records).encode()
    result = read_files([SourceFile("bad.jsonl", data)])
    assert result.traces == []
    assert result.files[0].error.startswith(f"line {line}, field {field!r}")


def test_a_bad_subagent_file_fails_alone(project):
    """The broken file imports nothing; the session still forms its trace from the other files."""
    sub = project / SESSION_A / "subagents" / "agent-a222222.jsonl"
    lines = sub.read_text().splitlines()
    lines[1] = lines[1].replace('"timestamp":"2026-03-02T10:00:08.000Z"', '"timestamp":"soon"')
    sources = [SourceFile(str(p), p.read_bytes()) for p in iter_files([project]) if SESSION_A in str(p) and p != sub]
    result = read_files([*sources, SourceFile(str(sub), "\n".join(lines).encode())])
    assert [f.error for f in result.files if f.error] == ["line 2, field 'timestamp': not an ISO 8601 time: 'soon'"]
    (trace,) = result.traces  # the registry's rule: the other chunks of the session still form it
    assert str(sub) not in trace.attributes["sources"]
    assert [e.id for e in trace.events if e.agent == "Explore:a222222"] == ["toolu_T2:return"]


# --- the real sessions in ../shared/data/claude-code ---------------------------------------------
#
# Facts below were read from the raw files with jq (commands in each docstring); "calls" are API
# calls: distinct `message.id` of assistant records per file; a call's usage is its last record's.
#
#   tool calls:   cat FILES | jq -r 'select(.type=="assistant") | .message.content[] | select(.type=="tool_use"
#                   and (.name|IN("Task","Agent","SendMessage")|not)) | .id' | sort -u | wc -l
#   tokens (KEY): per FILE: jq -s '[.[] | select(.type=="assistant" and .message.usage)]
#                   | group_by(.message.id) | map(last.message.usage[KEY] // 0) | add' FILE, summed
#   Task calls:   jq -c 'select(.type=="assistant") | .message.content[]
#                   | select(.type=="tool_use" and (.name|IN("Task","Agent"))) | [.input.subagent_type, .id]' SESSION
#   agent ids:    jq -r 'select(.toolUseResult.agentId?) | .toolUseResult.agentId' SESSION
#   compaction:   jq -c 'select(.subtype=="compact_boundary") | .compactMetadata' SESSION

REAL = {
    # session: (files, agents, delegations, tool calls, llm calls, tokens by usage key)
    "4d5611e5-241a-462a-8d15-5122611a9569": (
        ["4d5611e5-241a-462a-8d15-5122611a9569.jsonl", "4d5611e5-241a-462a-8d15-5122611a9569"],
        ["main", "user", "Explore:a2898e3", "compaction:acompact-e1f845"],
        {("main", "Explore:a2898e3"): 1},
        182,
        152,
        {
            "input_tokens": 233,
            "output_tokens": 28899,
            "cache_read_input_tokens": 12387553,
            "cache_creation_input_tokens": 559475,
        },
    ),
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46": (
        ["fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", "fa812bfe-b295-4cca-9c2f-fdf01028cb46"],
        ["main", "user", "Explore:a93ccab", "Explore:aa84377", "compaction:acompact-70d8e7"],
        {("main", "Explore:a93ccab"): 1, ("main", "Explore:aa84377"): 1},
        241,
        178,
        {
            "input_tokens": 1627,
            "output_tokens": 36307,
            "cache_read_input_tokens": 16175673,
            "cache_creation_input_tokens": 360809,
        },
    ),
    # no subagent file: the Plan subagent afb92ff's records come from the agent_progress records
    # (15 tool calls + 9 relayed, 12 calls + 5 relayed; tokens = file + relayed, same jq on
    # `.data.message` of `select(.type=="progress" and .data.type=="agent_progress")`)
    "491e126e-1e71-469c-ade2-fcc8af567c74": (
        ["subagent.jsonl"],
        ["main", "user", "Plan:afb92ff"],
        {("main", "Plan:afb92ff"): 1},
        24,
        17,
        {
            "input_tokens": 1576 + 24,
            "output_tokens": 1586 + 7,
            "cache_read_input_tokens": 427286 + 95343,
            "cache_creation_input_tokens": 25842 + 14285,
        },
    ),
    "55604662-cf2a-4331-851a-ec234028f8ca": (
        ["short.jsonl"],
        ["main", "user"],
        {},
        2,
        1,
        {
            "input_tokens": 3,
            "output_tokens": 13,
            "cache_read_input_tokens": 11515,
            "cache_creation_input_tokens": 13835,
        },
    ),
    "d6e0bada-1959-4eec-a9d2-0bfade768d8f": (
        ["tool_heavy.jsonl"],
        ["main", "user"],
        {},
        6,
        4,
        {
            "input_tokens": 54,
            "output_tokens": 212,
            "cache_read_input_tokens": 88231,
            "cache_creation_input_tokens": 17696,
        },
    ),
}


@pytest.fixture(scope="module")
def real(shared_data):
    return _read(shared_data / "claude-code")


@pytest.mark.parametrize("session", sorted(REAL))
def test_real_session(real, shared_data, session):
    files, agents, delegations, tool_calls, llm_calls, usage = REAL[session]
    trace = real[session]
    assert [a.name for a in trace.agents] == agents
    assert _delegations(trace) == delegations
    assert trace.attributes["subagents"] == len(delegations)
    assert sum(a.role == "subagent" for a in trace.agents) == len(delegations)
    assert trace.costs["tool_calls"] == tool_calls == sum(e.type == "tool_call" for e in trace.events)
    assert trace.costs["llm_calls"] == llm_calls
    assert {key: trace.costs[key] for key in usage} == usage
    assert trace.costs["tokens"] == sum(usage.values()) == sum(e.tokens or 0 for e in trace.events)
    expected = sorted(str(p) for p in iter_files([shared_data / "claude-code" / f for f in files]))
    assert sorted(trace.attributes["sources"]) == expected
    # every delegation returns: one return per Task call, at its tool_result, back to main
    returns = Counter((e.agent, e.to) for e in trace.events if e.type == "return" and "compaction" not in e.attributes)
    assert returns == Counter({(to, sender): n for (sender, to), n in delegations.items()})


def test_real_subagent_lanes(real):
    """Per subagent file, its tool calls (the tool-calls jq on that file alone) equal the
    `toolUseResult.totalToolUseCount` of its Task result where the file ran to the end:
    agent-a93ccab 25, agent-aa84377 21, agent-a2898e3 33."""
    for session, agent, n in [
        ("fa812bfe-b295-4cca-9c2f-fdf01028cb46", "Explore:a93ccab", 25),
        ("fa812bfe-b295-4cca-9c2f-fdf01028cb46", "Explore:aa84377", 21),
        ("4d5611e5-241a-462a-8d15-5122611a9569", "Explore:a2898e3", 33),
    ]:
        trace = real[session]
        assert sum(e.type == "tool_call" and e.agent == agent for e in trace.events) == n
        delegate = next(e for e in trace.events if e.type == "delegate" and e.to == agent)
        assert delegate.attributes["subagent_type"] == "Explore"
        assert ("message", agent) == (
            next(ed.type for ed in trace.edges if ed.src == delegate.id),
            _by_id(trace)[next(ed.dst for ed in trace.edges if ed.src == delegate.id)].agent,
        )


def test_real_compaction(real):
    """compactMetadata: 4d5611e5 {auto, 170251}, fa812bfe {auto, 167117}; no Task spawns them."""
    for session, agent, pre in [
        ("4d5611e5-241a-462a-8d15-5122611a9569", "compaction:acompact-e1f845", 170251),
        ("fa812bfe-b295-4cca-9c2f-fdf01028cb46", "compaction:acompact-70d8e7", 167117),
    ]:
        trace = real[session]
        assert trace.agent(agent).role == "compaction"
        summary = next(e for e in trace.events if e.agent == agent and e.type == "return")
        assert summary.attributes["compact_metadata"] == {"trigger": "auto", "preTokens": pre}
        assert not any(e.type == "delegate" and e.to == agent for e in trace.events)


def test_real_session_file_alone_uses_agent_progress(shared_data):
    """Without its subagents/ folder, 4d5611e5's subagent comes from the agent_progress records:
    tool calls 149 (session file) + 33 (relayed); calls 139 + 11; tokens 12127036 + 604344
    (the jq above on the session file, and on its relayed `.data.message` records)."""
    trace = read_traces(shared_data / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")[0]
    assert _delegations(trace) == {("main", "Explore:a2898e3"): 1}
    assert trace.costs["tool_calls"] == 149 + 33 and trace.costs["llm_calls"] == 139 + 11
    assert trace.costs["tokens"] == 12127036 + 604344
