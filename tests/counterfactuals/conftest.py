"""A SwarmSim trace of pivot-12 stored in the test project, and its pivotal message."""

import json

import pytest

from swarmscope import model as core
from trainer.sim.suites import pivot12_case
from webapp.traces import ingest


@pytest.fixture(scope="session")
def case():
    return pivot12_case(0)


@pytest.fixture
def sim_trace(project, case):
    """The episode's trace after a JSON round trip (as an import stores it)."""
    document = json.loads(json.dumps(case.episode.trace.to_dict()))
    return ingest.do_ingest(project, core.trace_from_dict(document)).trace


@pytest.fixture
def pivotal(case):
    """The event id of the pivotal message."""
    return next(
        f"message:{case.episode.actions[c].item}" for c, k in zip(case.candidates, case.kinds) if k == "pivotal"
    )
