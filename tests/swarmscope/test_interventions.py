"""The intervention vocabulary (swarmscope/interventions.py): validation and JSON round trip."""

import json

import pytest

from swarmscope.interventions import (
    Intervention,
    InterventionError,
    check_intervention,
    union,
)
from swarmscope.model import Event, Trace


@pytest.fixture
def trace():
    return Trace(
        "native",
        "t1",
        events=[
            Event("d1", 0.0, "delegate", "orchestrator", to="coder"),
            Event("m1", 1.0, "message", "coder", to="critic", content="draft"),
            Event("c1", 2.0, "tool_call", "critic", tool="lint"),
            Event("r1", 3.0, "return", "critic", to="orchestrator"),
        ],
    )


@pytest.mark.parametrize(
    "intervention",
    [
        Intervention("remove", ("m1",)),
        Intervention("mask", ("m1", "d1")),
        Intervention("resample", ("r1",)),
        Intervention("replace", ("m1",), text="a better draft"),
        Intervention("remove", agents=("critic",)),
        Intervention("remove", ("m1",), ("critic",)),
    ],
)
def test_json_round_trip(intervention, trace):
    data = json.loads(json.dumps(intervention.to_dict()))
    assert Intervention.from_dict(data) == intervention
    check_intervention(trace, intervention)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"kind": "delete", "events": ("m1",)}, "kind"),
        ({"kind": "remove"}, "events"),
        ({"kind": "remove", "events": "m1"}, "events"),
        ({"kind": "remove", "events": ("m1", "m1")}, "events"),
        ({"kind": "remove", "events": ("",)}, "events"),
        ({"kind": "mask", "agents": ("critic",)}, "agents"),
        ({"kind": "replace", "events": ("m1",)}, "text"),
        ({"kind": "remove", "events": ("m1",), "text": "x"}, "text"),
    ],
)
def test_malformed_interventions_name_the_field(kwargs, field):
    with pytest.raises(InterventionError) as error:
        Intervention(**kwargs)
    assert error.value.field == field
    assert f"field {field!r}" in str(error.value)


def test_lists_are_stored_as_tuples():
    assert Intervention("remove", ["m1"], ["critic"]) == Intervention("remove", ("m1",), ("critic",))


@pytest.mark.parametrize(
    "data, field",
    [
        (["remove"], "intervention"),
        ({"events": ["m1"]}, "kind"),
        ({"kind": "remove", "events": ["m1"], "seed": 3}, "seed"),
    ],
)
def test_from_dict_errors(data, field):
    with pytest.raises(InterventionError) as error:
        Intervention.from_dict(data)
    assert error.value.field == field


@pytest.mark.parametrize(
    "intervention, field, words",
    [
        (Intervention("remove", ("m9",)), "events", "no event 'm9'"),
        (Intervention("mask", ("c1",)), "events", "is a tool_call"),
        (Intervention("remove", agents=("planner",)), "agents", "no event of agent 'planner'"),
    ],
)
def test_check_against_the_trace(trace, intervention, field, words):
    with pytest.raises(InterventionError) as error:
        check_intervention(trace, intervention)
    assert error.value.field == field and words in str(error.value)


def test_targets_and_describe():
    both = Intervention("remove", ("m1",), ("critic",))
    assert both.targets == ("event:m1", "agent:critic")
    assert both.describe() == "remove(event:m1, agent:critic)"


def test_union_joins_removals_in_order_without_repeats():
    joined = union([Intervention("remove", ("m1",)), Intervention("remove", ("d1", "m1"), ("critic",))])
    assert joined == Intervention("remove", ("m1", "d1"), ("critic",))
    with pytest.raises(InterventionError, match="only removals"):
        union([Intervention("mask", ("m1",))])
    with pytest.raises(InterventionError):
        union([])
