"""LangGraph's agents and `Command(goto=...)` hand-offs from real span dumps of the hand-written
`StateGraph` supervisor (tests/frameworks/programs/lg_stategraph.py; tests/fixtures/README.txt),
so a clone without the framework venvs checks the rule too (docs/otel-mapping.md, "Agent identity").
The program: supervisor -> researcher (calls `search`, reports) -> supervisor -> writer ->
supervisor -> FINISH; usage 31+2, 29+11, 37+7, 43+3, 47+13, 59+4."""

from __future__ import annotations

import pytest

from tests.swarmscope.importers import read_paths

DUMPS = ["otel_sdk_langgraph_stategraph_openinference.json", "otel_sdk_langgraph_stategraph_langsmith.json"]


@pytest.mark.parametrize("name", DUMPS)
def test_stategraph_nodes_are_agents_and_goto_hands_off(fixtures, name):
    (trace,) = read_paths(fixtures / name).traces
    ordered = sorted(trace.events, key=lambda e: (e.t, trace.events.index(e)))
    assert [a.name for a in trace.agents] == ["supervisor", "researcher", "writer"]
    assert [(e.agent, e.to) for e in ordered if e.type == "delegate"] == [
        ("supervisor", "researcher"),
        ("researcher", "supervisor"),
        ("supervisor", "writer"),
        ("writer", "supervisor"),
    ]
    assert all(e.attributes["transfer_mode"] == "pass_control" for e in ordered if e.type == "delegate")
    assert [(e.agent, e.content) for e in ordered if e.type == "message"] == [
        ("supervisor", "researcher"),
        ("researcher", 'search({"query": "Eiffel Tower height"})'),
        ("researcher", "It is 330 metres tall."),
        ("supervisor", "writer"),
        ("writer", "The Eiffel Tower stands 330 metres tall."),
        ("supervisor", "FINISH"),
    ]
    (result,) = [e for e in ordered if e.type == "tool_result"]
    assert (result.agent, result.tool, result.content) == (
        "researcher",
        "search",
        "The Eiffel Tower is 330 metres tall.",
    )
    assert trace.costs["tokens"] == 33 + 40 + 44 + 46 + 60 + 63
