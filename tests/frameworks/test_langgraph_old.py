"""Held-out versions: LangGraph 0.x, an older `langgraph-supervisor` and an older OpenInference
LangChain instrumentor, and LangSmith 0.3's OTel export (`LANGSMITH_OTEL_ENABLED`,
`LANGSMITH_OTEL_ONLY`: the names before `LANGSMITH_TRACING_MODE`) (`requirements/langgraph-old.txt`),
running programs/lg_supervisor.py and programs/lg_stategraph.py, checked against the same
hand-written facts as test_langgraph.py."""

import pytest

from tests.frameworks import test_langgraph as same

LANGSMITH_OTEL = {
    "SWARMSCOPE_LANGGRAPH_TRACING": "langsmith",
    "LANGSMITH_TRACING": "true",
    "LANGSMITH_OTEL_ENABLED": "true",
    "LANGSMITH_OTEL_ONLY": "true",
}
TRACINGS = [pytest.param({}, id="openinference"), pytest.param(LANGSMITH_OTEL, id="langsmith-otel")]


@pytest.fixture
def run_old(run_program):
    """`run_program` with the held-out venv in place of the one the checks name."""

    def run(venv, *args, **kwargs):
        assert venv == "langgraph"
        return run_program("langgraph-old", *args, **kwargs)

    return run


@pytest.mark.parametrize("tracing", TRACINGS)
def test_prebuilt_supervisor(run_old, tracing):
    same.test_prebuilt_supervisor(run_old, tracing)


@pytest.mark.parametrize("tracing", TRACINGS)
def test_stategraph_command_goto(run_old, tracing):
    same.test_stategraph_command_goto(run_old, tracing)
