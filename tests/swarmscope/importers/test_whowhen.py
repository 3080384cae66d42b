"""Who&When importer (swarmscope.importers.whowhen)."""

import json

import pytest

from swarmscope.importers import SourceFile, read_files, whowhen
from swarmscope.importers.chatlog import TOKENS_ESTIMATED
from swarmscope.model import estimate_tokens
from tests.swarmscope.importers import edge_set as _edges
from tests.swarmscope.importers import read_paths as _read

SUBSETS = {"Hand-Crafted": whowhen.HAND_CRAFTED, "Algorithm-Generated": whowhen.ALGORITHM_GENERATED}


def _labels(trace):
    return {label.key: label for label in trace.labels}


# --- hand-written fixtures: run without ../shared -----------------------------------------------


@pytest.fixture
def hand_crafted(fixtures):
    return _read(fixtures / "whowhen_hand_crafted.json").traces[0]


@pytest.fixture
def algorithm(fixtures):
    return _read(fixtures / "whowhen_algorithm.json").traces[0]


def test_hand_crafted_events(hand_crafted, fixtures):
    history = json.loads((fixtures / "whowhen_hand_crafted.json").read_text())["history"]
    trace = hand_crafted
    assert trace.attributes["subset"] == whowhen.HAND_CRAFTED and trace.attributes["synthetic_time"] is True
    assert [e.id for e in trace.events] == [f"h{i}" for i in range(len(history))]
    assert [e.t for e in trace.events] == [float(i) for i in range(len(history))]
    assert [(e.type, e.agent, e.to) for e in trace.events] == [
        ("message", "human", None),
        ("orchestrator_decision", "Orchestrator", None),
        ("delegate", "Orchestrator", "WebSurfer"),
        ("return", "WebSurfer", "Orchestrator"),  # "Websurfer" spelled as first seen: in the delegation
        ("orchestrator_decision", "Orchestrator", None),
        ("delegate", "Orchestrator", "ComputerTerminal"),
        ("tool_result", "ComputerTerminal", None),
        ("delegate", "Orchestrator", "WebSurfer"),
        ("delegate", "Orchestrator", "WebSurfer"),
        ("return", "WebSurfer", "Orchestrator"),
        ("stop", "Orchestrator", None),
    ]
    assert [e.content for e in trace.events] == [h["content"] for h in history]
    assert all(e.tokens == estimate_tokens(e.content) and e.attributes[TOKENS_ESTIMATED] for e in trace.events)
    assert trace.events[2].attributes["speaker"] == "Orchestrator (-> WebSurfer)"
    assert trace.events[6].tool == "ComputerTerminal"


def test_hand_crafted_edges(hand_crafted):
    trace = hand_crafted
    assert len(_edges(trace, "temporal")) == len(trace.events) - 1
    # h7 is superseded by h8 before WebSurfer speaks: no edge from it
    assert _edges(trace, "message") == {("h0", "h1"), ("h2", "h3"), ("h5", "h6"), ("h8", "h9")}
    assert _edges(trace, "return") == {("h3", "h4"), ("h6", "h7"), ("h9", "h10")}
    assert _edges(trace, "tool_dependency") == {("h5", "h6")}


def test_hand_crafted_agents_labels_identity(hand_crafted):
    trace = hand_crafted
    agents = {a.name: a for a in trace.agents}
    assert list(agents) == ["human", "Orchestrator", "WebSurfer", "ComputerTerminal"]
    assert agents["Orchestrator"].role == "orchestrator" and agents["Orchestrator"].parent is None
    assert agents["WebSurfer"].parent == agents["ComputerTerminal"].parent == "Orchestrator"
    assert agents["human"].parent is None
    labels = _labels(trace)
    assert (labels["mistake_agent"].value, labels["mistake_agent"].agent) == ("websurfer", "WebSurfer")
    assert (labels["mistake_step"].value, labels["mistake_step"].event_id) == ("3", "h3")
    assert labels["mistake_reason"].value == "WebSurfer misread the page."
    assert whowhen.MISMATCH not in labels
    assert trace.source_id.startswith("hand-crafted:fixture-q1:") and trace.task_id == "fixture-q1"
    assert (trace.system, trace.topology, trace.name) == ("Magentic-One", "centralized", "What is 6 times 7?")
    assert trace.attributes["ground_truth"] == "42" and trace.attributes["level"] == 1


def test_algorithm_generated(algorithm):
    trace = algorithm
    assert trace.attributes["subset"] == whowhen.ALGORITHM_GENERATED
    assert [(e.type, e.agent) for e in trace.events] == [
        ("message", "Counting_Expert"),
        ("message", "Python_Expert"),
        ("tool_result", "Computer_terminal"),
        ("message", "Verification_Expert"),
        ("message", "Verification_Expert"),
    ]
    assert trace.events[0].attributes["chat_role"] == "assistant"
    assert _edges(trace, "message") == {("h0", "h1"), ("h2", "h3")}
    assert _edges(trace, "tool_dependency") == {("h1", "h2")}
    agents = {a.name: a for a in trace.agents}
    assert list(agents) == [
        "Counting_Expert",
        "Python_Expert",
        "Computer_terminal",
        "Verification_Expert",
        "Silent_Expert",
    ]
    assert all(a.parent is None for a in trace.agents)
    assert agents["Python_Expert"].system_prompt.startswith("## Your role\nPython_Expert")
    assert agents["Computer_terminal"].role == "tool" and agents["Computer_terminal"].system_prompt is None
    assert (trace.system, trace.topology) == ("AG2 (CaptainAgent)", "unknown")
    assert trace.attributes["is_correct"] is False


def test_step_speaker_mismatch_is_kept_and_reported(algorithm):
    labels = _labels(algorithm)
    assert (labels["mistake_step"].event_id, labels["mistake_agent"].agent) == ("h2", "Python_Expert")
    mismatch = labels[whowhen.MISMATCH]
    assert mismatch.value == {"mistake_agent": "Python_Expert", "step_speaker": "Computer_terminal"}
    assert (mismatch.event_id, mismatch.agent) == ("h2", "Computer_terminal")


def test_same_question_in_both_subsets_gets_two_identities(fixtures):
    hand = json.loads((fixtures / "whowhen_hand_crafted.json").read_text())
    generated = json.loads((fixtures / "whowhen_algorithm.json").read_text())
    generated["question_ID"] = hand["question_ID"]
    keys = {whowhen.parse(doc, "x.json")[0].identity_key for doc in (hand, generated)}
    assert len(keys) == 2


def test_mistake_step_index():
    assert whowhen.mistake_step_index("12", 13) == 12
    assert whowhen.mistake_step_index(0, 1) == 0
    assert whowhen.mistake_step_index("13", 13) is None
    assert whowhen.mistake_step_index("step 3", 13) is None


# --- the 45 logs in ../shared/data --------------------------------------------------------------


def _logs(shared_data):
    return sorted((shared_data / "who-and-when").glob("*/*.json"))


def _speaker(entry):
    """The agent of a history entry, computed independently of the importer."""
    return (entry.get("name") or entry["role"]).split(" (")[0]


@pytest.fixture(scope="module")
def imported(shared_data):
    paths = _logs(shared_data)
    result = _read(*paths)
    assert [f.format for f in result.files] == ["whowhen"] * len(paths)
    return list(zip(paths, (json.loads(p.read_text()) for p in paths), result.traces))


def test_counts_per_subset(imported):
    for folder, subset in SUBSETS.items():
        logs = [(raw, trace) for path, raw, trace in imported if path.parent.name == folder]
        assert len(logs) == {"Hand-Crafted": 15, "Algorithm-Generated": 30}[folder]
        assert all(trace.attributes["subset"] == subset for _, trace in logs)
        assert sum(len(t.events) for _, t in logs) == sum(len(raw["history"]) for raw, _ in logs)
        for raw, trace in logs:
            assert len(trace.events) == len(raw["history"])
            names = {_speaker(h).casefold() for h in raw["history"]}
            names |= {name.casefold() for name in raw.get("system_prompt", {})}
            assert {a.name.casefold() for a in trace.agents} == names
            assert len(trace.agents) == len(names)
    assert sum(len(t.events) for _, _, t in imported) == 1174


def test_identities_are_unique(imported):
    keys = [trace.identity_key for _, _, trace in imported]
    assert len(set(keys)) == len(keys) == 45


def test_mistake_step_maps_to_the_labelled_event_and_agent(imported):
    mismatches = set()
    for path, raw, trace in imported:
        labels = _labels(trace)
        step = int(raw["mistake_step"])
        event = next(e for e in trace.events if e.id == labels["mistake_step"].event_id)
        assert event.id == f"h{step}" and event.content == raw["history"][step]["content"], path
        assert event.agent.casefold() == _speaker(raw["history"][step]).casefold(), path
        assert labels["mistake_step"].value == raw["mistake_step"]
        assert labels["mistake_agent"].value == raw["mistake_agent"]
        assert labels["mistake_agent"].agent.casefold() == raw["mistake_agent"].casefold(), path
        if _speaker(raw["history"][step]).casefold() != raw["mistake_agent"].casefold():
            mismatches.add(path.parent.name + "/" + path.name)
        assert (whowhen.MISMATCH in labels) == (path.parent.name + "/" + path.name in mismatches), path
    assert mismatches == {"Algorithm-Generated/14.json", "Algorithm-Generated/15.json"}


def test_hand_crafted_structure(imported):
    for path, raw, trace in imported:
        if path.parent.name != "Hand-Crafted":
            continue
        roles = [h["role"] for h in raw["history"]]
        types = [e.type for e in trace.events]
        assert types.count("delegate") == sum("(->" in r for r in roles)
        assert types.count("stop") == roles.count("Orchestrator (termination condition)")
        assert types.count("orchestrator_decision") == roles.count("Orchestrator (thought)")
        assert types[0] == "message" and trace.events[0].agent == "human"
        assert trace.agent("Orchestrator").parent is None
        for agent in trace.agents:
            delegated = any(f"(-> {agent.name})".casefold() in r.casefold() for r in roles)
            assert (agent.parent == "Orchestrator") == delegated, (path, agent.name)
        delegations = _edges(trace, "message") - {("h0", "h1")}
        assert all(trace.events[int(src[1:])].type == "delegate" for src, _ in delegations)
        answers = {dst for _, dst in delegations}
        answered_back = {a for a in answers if any(e.agent == "Orchestrator" for e in trace.events[int(a[1:]) + 1 :])}
        assert {src for src, _ in _edges(trace, "return")} == answered_back


def test_algorithm_generated_structure(imported):
    for path, raw, trace in imported:
        if path.parent.name != "Algorithm-Generated":
            continue
        terminal = [i for i, h in enumerate(raw["history"]) if h["name"] == "Computer_terminal"]
        assert [i for i, e in enumerate(trace.events) if e.type == "tool_result"] == terminal
        assert {dst for _, dst in _edges(trace, "tool_dependency")} == {f"h{i}" for i in terminal if i > 0}
        assert all(a.parent is None for a in trace.agents)
        prompts = {a.name.casefold(): a.system_prompt for a in trace.agents if a.system_prompt is not None}
        assert prompts == {name.casefold(): prompt for name, prompt in raw["system_prompt"].items()}
        assert trace.attributes["level"] == raw["level"] and trace.attributes["is_correct"] == raw["is_correct"]


def test_a_mistake_step_outside_the_history_is_kept_and_flagged(fixtures):
    record = json.loads((fixtures / "whowhen_hand_crafted.json").read_text())
    record["mistake_step"] = "9999"
    trace = read_files([SourceFile("w.json", json.dumps(record).encode())]).traces[0]
    labels = {label.key: label for label in trace.labels}
    assert labels["mistake_step"].value == "9999" and labels["mistake_step"].event_id is None
    assert "9999" in labels[whowhen.UNRESOLVED].value
