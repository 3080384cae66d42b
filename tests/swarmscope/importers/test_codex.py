"""Codex CLI rollout importer (swarmscope.importers.codex): the real single-agent rollout of
../shared/data/codex-cli, and the hand-written multi-agent rollout set of tests/fixtures/codex
(a root that spawns an explorer and a worker, sends input, waits on both and closes them; the
explorer spawns a grandchild; the files lie in two date folders)."""

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from swarmscope.graph import RESPONSE_ID, TraceGraph
from swarmscope.importers import SourceFile, codex, decode, detect, read_files
from swarmscope.importers.files import iter_files, read_traces
from tests.swarmscope.importers import edge_set

REAL = "codex-cli/rollout-2026-06-05-single-agent.jsonl"
ROOT = "019ea3f1-7a00-7c3e-9a51-5e0d0c0de001"
EUCLID = "019ea3f1-8b14-7a2d-8f03-2b9e6f1d0002"
WORKER = "019ea3f1-a6e2-7b90-b7c4-41d3aa5e0003"
GRAND = "019ea3f1-b1c7-74f8-a0de-9c6b12f40004"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _last_usage(path: Path) -> dict:
    """`total_token_usage` of the file's last token_count record, read straight from the JSON."""
    counts = [r for r in _lines(path) if r["type"] == "event_msg" and r["payload"]["type"] == "token_count"]
    return counts[-1]["payload"]["info"]["total_token_usage"]


def _sources(paths) -> list[SourceFile]:
    return [SourceFile(str(p), Path(p).read_bytes()) for p in paths]


def _by_thread(paths) -> dict[str, Path]:
    return {_lines(p)[0]["payload"]["id"]: p for p in paths}


@pytest.fixture
def rollout_paths(fixtures) -> list[Path]:
    return list(iter_files([fixtures / "codex"]))


@pytest.fixture
def paths(rollout_paths) -> dict[str, Path]:
    return _by_thread(rollout_paths)


@pytest.fixture
def team(rollout_paths):
    (trace,) = read_traces(*rollout_paths)
    return trace


def _delegations(trace) -> Counter:
    return Counter((e.agent, e.to) for e in trace.events if e.type == "delegate")


def _event(trace, thread: str, line: int, suffix: str = ""):
    return next(e for e in trace.events if e.id == f"{thread}:{line}{suffix}")


# --- the real rollout (../shared/data) -----------------------------------------------------------


def test_real_single_agent_rollout(shared_data):
    """Facts read from the raw file: one thread 019e9625-..., one turn (task_started, turn_context and
    task_complete share turn 019e9625-806b-...), model gpt-5.5 (turn_context, line 5), four
    response_item messages (developer, environment context, the prompt, the answer), no tool call,
    and the last token_count (line 10): 22539 input (20864 cached), 10 output, 0 reasoning, 22549 total."""
    path = shared_data / REAL
    raw = path.read_bytes()
    (trace,) = read_traces(path)
    assert path.read_bytes() == raw
    assert trace.identity_key == "codex:019e9625-802f-7e91-840a-cfe88d14117a"
    assert trace.attributes["session_id"] == "019e9625-802f-7e91-840a-cfe88d14117a"
    assert trace.attributes["model"] == "gpt-5.5" and trace.attributes["cli_version"] == "0.135.0"
    assert trace.attributes["turns"] == 1 and trace.agent("codex").attributes["turns"] == 1
    assert [a.name for a in trace.agents] == ["codex", "user"]
    assert trace.agent("codex").system_prompt == "[REDACTED_BASE_INSTRUCTIONS]"
    assert [(e.type, e.agent, e.role) for e in trace.events] == [
        ("message", "codex", "developer"),
        ("message", "codex", "user"),
        ("message", "user", "user"),
        ("message", "codex", "assistant"),
        ("stop", "codex", None),
    ]
    texts = [
        part["text"]
        for r in _lines(path)
        if r["type"] == "response_item" and r["payload"]["type"] == "message"
        for part in r["payload"]["content"]
    ]
    assert [e.content for e in trace.events if e.type == "message"] == texts
    assert trace.events[-1].content == "[REDACTED_ASSISTANT_TEXT]"
    assert sum(e.type == "tool_call" for e in trace.events) == trace.costs["tool_calls"] == 0
    usage = _last_usage(path)
    assert usage == {
        "input_tokens": 22539,
        "cached_input_tokens": 20864,
        "output_tokens": 10,
        "reasoning_output_tokens": 0,
        "total_tokens": 22549,
    }
    assert {k: trace.costs[k] for k in usage if k != "total_tokens"} == {
        k: v for k, v in usage.items() if k != "total_tokens"
    }
    assert trace.costs["tokens"] == usage["total_tokens"] == sum(e.tokens or 0 for e in trace.events)
    answer = trace.events[3]
    assert answer.tokens == 22549 and answer.attributes["cached_input_tokens"] == 20864
    assert edge_set(trace, "message") == {(trace.events[2].id, answer.id)}


def test_no_other_shared_file_is_a_rollout(shared_data):
    """Claude Code sessions, Langfuse exports, OTel dumps...: none is taken for a Codex rollout."""
    for path in iter_files([shared_data]):
        if path.suffix not in (".json", ".jsonl") or path.parts[-2] == "codex-cli":
            continue
        try:
            doc = decode(SourceFile(str(path), path.read_bytes()))
        except ValueError:
            continue  # the cut-off Monocle file
        assert doc is None or not codex.sniff(doc), path


# --- the hand-written multi-agent set ------------------------------------------------------------


def test_sniff(paths):
    records = _lines(paths[ROOT])
    assert codex.sniff(records) and codex.sniff(records[0])
    assert detect(records) is codex
    assert not codex.sniff([]) and not codex.sniff(records[1:])
    claude_code = [{"type": "user", "sessionId": "s", "uuid": "u", "message": {"role": "user", "content": "hi"}}]
    assert not codex.sniff(claude_code) and not codex.sniff({"question": "?", "history": []})


def test_one_trace_per_root_across_date_folders(team, rollout_paths):
    assert len({p.parent for p in rollout_paths}) == 2
    assert team.identity_key == f"codex:{ROOT}" and team.attributes["session_id"] == ROOT
    assert team.attributes["threads"] == 4 and sorted(team.attributes["sources"]) == sorted(map(str, rollout_paths))
    assert [(a.name, a.parent, a.role) for a in team.agents] == [
        ("codex", None, "root"),
        ("Euclid", "codex", "explorer"),  # nickname
        ("worker", "codex", "worker"),  # role, no nickname
        (GRAND, "Euclid", "subagent"),  # neither: the thread id
        ("user", None, "human"),
    ]
    assert "notes" not in team.attributes


def test_spawn_delegate_wait_close(team):
    assert Counter((e.agent, e.to) for e in team.events if e.type == "spawn") == {
        ("codex", "Euclid"): 1,
        ("codex", "worker"): 1,
        ("Euclid", GRAND): 1,
    }
    assert _delegations(team) == {("codex", "Euclid"): 1, ("codex", "worker"): 2, ("Euclid", GRAND): 1}
    spawn = _event(team, ROOT, 8, ":spawn")
    delegate = _event(team, ROOT, 8, ":delegate")
    assert delegate.content == "Map the build graph and find the slowest target."
    assert (spawn.id, _event(team, EUCLID, 4).id) in edge_set(team, "spawn")
    # the first delegation reaches Euclid at its first act after its input (line 5): its spawn call
    assert (delegate.id, _event(team, EUCLID, 6, ":spawn").id) in edge_set(team, "message")
    # send_input to the worker (root line 14) reaches it after the input delivered at its line 9
    send = _event(team, ROOT, 14)
    assert send.type == "delegate" and send.content == "Also check whether the remote cache is cold."
    assert (send.id, _event(team, WORKER, 10).id) in edge_set(team, "message")

    wait = _event(team, ROOT, 17)
    assert wait.type == "aggregate" and wait.attributes["waited_on"] == ["Euclid", "worker"]
    assert wait.t == 40.0 and wait.attributes["called_at"] == 12.0  # output at 00:00:30, call at 00:00:02
    answers = [_event(team, EUCLID, 15), _event(team, WORKER, 13)]
    assert {(e.type, e.to) for e in answers} == {("return", "codex")}
    assert {(e.id, wait.id) for e in answers} <= edge_set(team, "return")
    inner = _event(team, EUCLID, 12)
    assert inner.type == "aggregate" and (_event(team, GRAND, 8).id, inner.id) in edge_set(team, "return")

    assert [(e.agent, e.to) for e in team.events if e.type == "despawn"] == [("codex", "Euclid"), ("codex", "worker")]
    assert team.agent("Euclid").despawned_at == 41.1 and team.agent("worker").despawned_at == 42.1
    assert team.agent(GRAND).despawned_at is None and team.agent(GRAND).spawned_at == 13.0


def test_tools_tokens_and_stops(team, paths):
    calls = [(e.agent, e.tool) for e in team.events if e.type == "tool_call"]
    assert sorted(calls) == sorted(
        [
            ("codex", "shell_command"),
            ("Euclid", "shell_command"),
            ("worker", "shell_command"),
            ("worker", "apply_patch"),  # a custom tool call
            (GRAND, "local_shell"),
        ]
    )
    assert team.costs["tool_calls"] == 5 and len(edge_set(team, "tool_dependency")) == 5
    assert all(
        dst.endswith(":" + str(int(src.rsplit(":", 1)[1]) + 2)) for src, dst in edge_set(team, "tool_dependency")
    )
    last = [_last_usage(p) for p in paths.values()]
    for key in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens"):
        assert team.costs[key] == sum(u[key] for u in last)
    assert team.costs["tokens"] == sum(u["total_tokens"] for u in last) == sum(e.tokens or 0 for e in team.events)
    # the root's repeated count (line 31) adds nothing to its answer (line 29)
    root_counts = [r for r in _lines(paths[ROOT]) if r["payload"].get("type") == "token_count"]
    final, after = _event(team, ROOT, 29), _last_usage(paths[ROOT])
    before = root_counts[-3]["payload"]["info"]["total_token_usage"]
    assert (
        root_counts[-1]["payload"]["info"]["total_token_usage"]
        == root_counts[-2]["payload"]["info"]["total_token_usage"]
    )
    assert final.tokens == sum(after[k] - before[k] for k in ("input_tokens", "output_tokens"))
    assert final.attributes["output_tokens"] == after["output_tokens"] - before["output_tokens"]
    assert _event(team, ROOT, 8, ":spawn").attributes["reasoning"].startswith("Split the job")
    stops = [e for e in team.events if e.type == "stop"]
    assert len(stops) == 4 and stops[-1].agent == "codex" and stops[-1].content.startswith("The nightly build")
    assert sum(e.type == "message" and e.agent == "user" for e in team.events) == 1
    assert not any(e.attributes.get("undelegated") for e in team.events)


def test_one_model_response_is_one_step(team):
    """The root rollout's model outputs are lines 8 (spawn_agent), 11 (spawn_agent), 14 (send_input),
    17 (wait), 20 and 23 (close_agent), 26 (shell_command) and 29 (the answer), each followed by a
    token_count (9, 12, ..., 30): eight responses, numbered 0..7 in `response_id`; a spawn and its
    delegation share theirs. The task_complete (33) is the harness's end of the turn: no step."""
    ids = {e.id.split(":", 1)[1]: e.attributes.get(RESPONSE_ID) for e in team.events if e.agent == "codex"}
    assert ids["8:spawn"] == ids["8:delegate"] == f"{ROOT}:0"
    assert [ids[key] for key in ("11:spawn", "14", "17", "20", "23", "26", "29")] == [
        f"{ROOT}:{n}" for n in range(1, 8)
    ]
    assert ids["28"] is None and ids["33"] is None  # a tool's output and the stop: no model response
    assert _event(team, ROOT, 33).attributes["harness"] is True
    steps = [step for step in TraceGraph.of(team).steps if step.agent == "codex" and step.counts]
    assert len(steps) == 8


def test_order_of_files_does_not_matter(rollout_paths, team):
    shuffled = list(rollout_paths)
    random.Random(7).shuffle(shuffled)
    shuffled.reverse()
    (again,) = read_files(_sources(shuffled)).traces
    assert again.to_dict()["events"] == team.to_dict()["events"]
    assert again.to_dict()["edges"] == team.to_dict()["edges"]


def test_events_and_edges_point_forward(team):
    position = {e.id: i for i, e in enumerate(team.events)}
    assert [e.t for e in team.events] == sorted(e.t for e in team.events)
    assert all(position[e.src] < position[e.dst] for e in team.edges)


# --- missing parents, grouping without the root ---------------------------------------------------


def test_child_without_parent_is_its_own_trace(paths):
    (trace,) = read_traces(paths[WORKER])
    assert trace.identity_key == f"codex:{WORKER}"
    assert trace.attributes["session_id"] == ROOT  # depth 1: the parent is the root thread
    assert ROOT in trace.attributes["notes"][0] and "not among the imported" in trace.attributes["notes"][0]
    assert trace.agent("worker").parent == ROOT and trace.agent(ROOT).role == "parent (rollout not imported)"
    inputs = [e for e in trace.events if e.agent == ROOT]
    assert [e.content for e in inputs] == [
        "Profile the test step and report the three slowest tests.",
        "Also check whether the remote cache is cold.",
    ]
    (grand,) = read_traces(paths[GRAND])
    assert grand.attributes["session_id"] == GRAND  # depth 2: the root is unknown


def test_explorer_and_grandchild_without_root(paths):
    (trace,) = read_traces(paths[GRAND], paths[EUCLID])
    assert trace.identity_key == f"codex:{EUCLID}" and trace.attributes["threads"] == 2
    assert trace.agent(GRAND).parent == "Euclid" and trace.agent("Euclid").parent == ROOT
    assert _delegations(trace) == {("Euclid", GRAND): 1}


# --- bad input ------------------------------------------------------------------------------------


def _broken(path: Path, line: int, change) -> SourceFile:
    records = _lines(path)
    change(records[line - 1])
    return SourceFile("broken-" + path.name, "\n".join(json.dumps(r) for r in records).encode())


def test_bad_record_names_file_line_and_field_and_imports_nothing(paths):
    bad = _broken(paths[ROOT], 8, lambda r: r["payload"].pop("call_id"))
    result = read_files([bad, *_sources([paths[EUCLID], paths[WORKER], paths[GRAND]])])
    (report,) = result.failed
    assert report.name == bad.name and report.trace_keys == []
    assert "line 8" in report.error and "payload.call_id" in report.error
    assert f"codex:{ROOT}" not in {t.identity_key for t in result.traces}
    # the children still import, as traces of their own (their parent's rollout failed)
    assert {t.identity_key for t in result.traces} == {f"codex:{EUCLID}", f"codex:{WORKER}"}
    assert all(e.id.split(":")[0] != ROOT for t in result.traces for e in t.events)


@pytest.mark.parametrize(
    ("line", "change", "field"),
    [
        (3, lambda r: r.update(type="turn"), "type"),
        (5, lambda r: r.update(timestamp="noon"), "timestamp"),
        (4, lambda r: r["payload"].update(content="text"), "payload.content"),
        (9, lambda r: r["payload"]["info"]["total_token_usage"].update(output_tokens=-1), "output_tokens"),
        (8, lambda r: r["payload"].update(arguments={"message": "x"}), "payload.arguments"),
    ],
)
def test_bad_fields(paths, line, change, field):
    bad = _broken(paths[ROOT], line, change)
    (report,) = read_files([bad]).files
    assert report.error and f"line {line}" in report.error and field in report.error, report.error
    assert report.trace_keys == []


def test_two_different_copies_of_a_thread_fail_together(paths):
    edited = _broken(paths[WORKER], 13, lambda r: r["payload"]["content"][0].update(text="other answer"))
    result = read_files([*_sources([paths[ROOT], paths[WORKER]]), edited])
    assert result.traces == [] and len(result.failed) == 3
    assert all("two files" in r.error for r in result.failed)


def test_same_file_twice_is_one_thread(paths, team):
    sources = _sources(paths.values())
    result = read_files([*sources, SourceFile("copy.jsonl", sources[0].data)])
    (trace,) = result.traces
    assert not result.failed and len(trace.events) == len(team.events)
