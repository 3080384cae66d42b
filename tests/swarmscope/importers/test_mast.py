"""MAST importer (swarmscope.importers.mast)."""

import json
import math
import re

import pytest

from swarmscope.importers import SourceFile, mast, read_files
from swarmscope.importers.chatlog import TOKENS_ESTIMATED
from swarmscope.model import content_hash, estimate_tokens

MAST_FILE = ("mast", "MAD_human_labelled_dataset.json")


def _read(path):
    result = read_files([SourceFile(path.name, path.read_bytes())])
    assert not result.failed, result.failed
    assert [f.format for f in result.files] == ["mast"]
    return result.traces


def _edges(trace, kind):
    return [(e.src, e.dst) for e in trace.edges if e.type == kind]


def _majority(annotation):
    votes = [v for k, v in annotation.items() if k != "failure mode" and not (isinstance(v, float) and math.isnan(v))]
    return sum(map(bool, votes)) * 2 > len(votes)


# --- hand-written fixture: runs without ../shared -----------------------------------------------


@pytest.fixture
def small(fixtures):
    path = fixtures / "mast_small.json"
    return json.loads(path.read_text()), _read(path)


def test_fixture_turns_concatenate_to_the_raw_text(small):
    records, traces = small
    assert len(traces) == len(records) == 5
    for record, trace in zip(records, traces):
        assert "".join(e.content for e in trace.events) == record["trace"]
        assert [e.id for e in trace.events] == [f"turn{i}" for i in range(len(trace.events))]
        assert all(e.tokens == estimate_tokens(e.content) and e.attributes[TOKENS_ESTIMATED] for e in trace.events)
        assert len(_edges(trace, "temporal")) == len(trace.events) - 1


def test_fixture_magentic_one_with_swapped_names(small):
    _, traces = small
    trace = traces[0]
    assert (trace.system, trace.attributes["benchmark"], trace.name) == ("Magentic-One", "GAIA", "Magentic-One GAIA #0")
    assert [e.agent for e in trace.events] == [
        "system",
        "user",
        "MagenticOneOrchestrator",
        "Coder",
        "MagenticOneOrchestrator",
    ]
    assert [a.name for a in trace.agents] == ["system", "user", "MagenticOneOrchestrator", "Coder"]
    assert all(a.parent is None for a in trace.agents)
    assert _edges(trace, "message") == [("turn0", "turn1"), ("turn1", "turn2"), ("turn2", "turn3"), ("turn3", "turn4")]


def test_fixture_labels_take_the_majority_and_keep_all_votes(small):
    _, traces = small
    magentic, ag2, chatdev = traces[:3]
    assert [(lb.key, lb.value, lb.source) for lb in magentic.labels] == [
        ("failure_mode", "1.1 Disobey Task Specification", "mast")
    ]
    assert [lb.value for lb in ag2.labels] == ["3.3 Incorrect Verification"]
    assert [lb.value for lb in chatdev.labels] == ["1.1 Disobey Task Specification"]
    annotation = magentic.attributes["annotations"][1]
    assert annotation == {
        "failure_mode": "3.3 Incorrect Verification",
        "definition": "Failure to verify the result.",
        "votes": {"annotator_1": False, "annotator_2": False, "annotator_3": None},
        "majority": False,
    }


def test_fixture_ag2_json_trajectory(small):
    _, traces = small
    trace = traces[1]
    assert trace.attributes["splitter"] == mast.JSON_TRAJECTORY
    assert [e.agent for e in trace.events] == ["system", "mathproxyagent", "assistant", "system"]
    assert trace.events[1].attributes["chat_role"] == "assistant"
    assert '"note"' in trace.events[-1].content and "boxed" in trace.events[2].content
    assert trace.task_id == "fixture-gsm-1"


def test_fixture_chatdev_pairs_give_the_addressee(small):
    _, traces = small
    trace = traces[2]
    assert [(e.agent, e.to) for e in trace.events] == [
        ("system", None),
        ("Chief Executive Officer", "Programmer"),
        ("Programmer", "Chief Executive Officer"),
    ]
    assert trace.events[1].attributes["log_time"] == "2025-17-01 11:36:46"
    assert "flask app.py" in trace.events[1].content  # log lines stay in the turn they follow


def test_fixture_unknown_framework_falls_back(small):
    _, traces = small
    generic, single = traces[3], traces[4]
    assert generic.system == "SomeNewFramework" and generic.attributes["splitter"] == "generic (AG2 markers)"
    assert [(e.agent, e.to) for e in generic.events] == [("user_proxy", "assistant"), ("assistant", "user_proxy")]
    assert single.attributes["splitter"] == mast.SINGLE_TURN
    assert [(e.agent, e.type) for e in single.events] == [("system", "message")] and not single.labels


def test_identity_is_the_record_hash(small):
    records, traces = small
    without_nan = json.loads(json.dumps(records[0]).replace("NaN", "null"))
    assert traces[0].source_id == content_hash(json.dumps(without_nan, sort_keys=True, ensure_ascii=False))
    assert len({t.identity_key for t in traces}) == len(traces)


def test_split_turns_marker_kinds():
    text = (
        "Task\nResponse from Supervisor Agent\n    send\nCode Execution Output\n\n    ok\n"
        "Response from send_message API\n    done\n"
    )
    turns, splitter = mast.split_turns(text, next(f for f in mast.FRAMEWORKS if f.name == "AppWorld"))
    assert splitter == "AppWorld"
    assert [(t.agent, t.type, t.tool) for t in turns] == [
        ("system", "message", None),
        ("Supervisor Agent", "message", None),
        ("environment", "tool_result", None),
        ("environment", "tool_result", "send_message"),
    ]
    assert "".join(text[t.start : t.end] for t in turns) == text
    assert mast.split_turns("", None) == ([], mast.SINGLE_TURN)


# --- the 19 human-labelled traces in ../shared/data ---------------------------------------------


@pytest.fixture(scope="module")
def labelled(shared_data):
    path = shared_data.joinpath(*MAST_FILE)
    return json.loads(path.read_text()), _read(path)


def _expected_turns(framework, text):
    """Turn count of a raw log from its framework's markers, counted independently of the importer."""
    lines = text.split("\n")
    if framework == "AG2":
        return len(json.loads(text)["trajectory"]) + 2  # + preamble + note epilogue
    if framework == "HyperAgent":
        markers = [ln for ln in lines if " - INFO - " in ln and ln.lstrip().startswith('"HyperAgent_')]
        return len(markers) + 2
    counted = {
        "Magentic-One": lambda ln: re.fullmatch(r"-{10} .+ -{10}", ln),
        "AppWorld": lambda ln: (
            ln.strip().startswith(("Response from ", "Message to ")) or ln in ("Code Execution Output", "Evaluation")
        ),
        "ChatDev": lambda ln: re.match(r"\[[^\]]+ INFO\] [^:*\[\]]+: \*\*", ln),
        "OpenManus": lambda ln: re.match(
            r"\d{4}-.* \| (app\.agent\.toolcall:(think|act):\d+ - \W*"
            r"(\w+'s thoughts|Tool '.*' completed)|app\.flow\.|__main__:)",
            ln,
        ),
        "MetaGPT": lambda ln: re.match(r"\[[^\]]+\] (FROM: |NEW MESSAGES:)", ln),
    }[framework]
    preamble = 1
    if framework == "MetaGPT" and text.startswith("{"):
        return text.count("): to do ") + preamble
    return sum(1 for ln in lines if counted(ln)) + preamble


def test_nineteen_traces_whose_turns_concatenate_exactly(labelled):
    records, traces = labelled
    assert len(records) == len(traces) == 19
    for record, trace in zip(records, traces):
        assert "".join(e.content for e in trace.events) == record["trace"], record["trace_id"]


def test_frameworks_and_turn_counts(labelled):
    records, traces = labelled
    systems = [t.system for t in traces]
    assert sorted(set(systems)) == ["AG2", "AppWorld", "ChatDev", "HyperAgent", "Magentic-One", "MetaGPT", "OpenManus"]
    for record, trace in zip(records, traces):
        assert trace.attributes["splitter"] in (trace.system, mast.JSON_TRAJECTORY), record["trace_id"]
        assert len(trace.events) == _expected_turns(trace.system, record["trace"]), record["trace_id"]
    assert sum(len(t.events) for t in traces) == sum(
        _expected_turns(t.system, r["trace"]) for r, t in zip(records, traces)
    )


def test_agents_per_framework(labelled):
    _, traces = labelled
    expected = {
        "Magentic-One": {"system", "user", "MagenticOneOrchestrator", "WebSurfer"},
        "OpenManus": {"system", "PlanningFlow", "Manus", "environment"},
        "AG2": {"system", "mathproxyagent", "assistant"},
    }
    for trace in traces:
        names = {a.name for a in trace.agents}
        assert names == {e.agent for e in trace.events}
        if trace.system in expected:
            assert names == expected[trace.system]
        if trace.system == "HyperAgent":
            assert {"Planner", "Navigator", "Editor", "Executor"} <= names
            assert {e.to for e in trace.events if e.type == "return"} == {"Planner"}
        if trace.system == "AppWorld":
            assert {"Supervisor Agent", "environment"} <= names and len(names) == 4
        if trace.system == "ChatDev":
            assert {"Chief Executive Officer", "Programmer", "Code Reviewer"} <= names
        if trace.system == "MetaGPT":
            assert names & {"Alice", "SimpleCoder"}


def test_failure_mode_labels(labelled):
    records, traces = labelled
    for record, trace in zip(records, traces):
        expected = [a["failure mode"].split("\n")[0].strip() for a in record["annotations"] if _majority(a)]
        assert [lb.value for lb in trace.labels] == expected
        assert len(trace.attributes["annotations"]) == len(record["annotations"])
    assert sum(len(t.labels) for t in traces) > 0
    json.dumps([t.to_dict() for t in traces], allow_nan=False)  # no NaN left anywhere


def test_identities_are_unique(labelled):
    _, traces = labelled
    assert len({t.identity_key for t in traces}) == 19


def test_a_record_without_trace_text_fails_the_file_naming_the_record():
    bad = json.dumps(
        [
            {"mas_name": "AG2", "trace": "[user]: hi", "annotations": {}},
            {"mas_name": "AG2", "trace": None, "annotations": {}},
        ]
    ).encode()
    result = read_files([SourceFile("bad.json", bad)])
    assert result.traces == [] and "record 1, field 'trace'" in result.files[0].error
