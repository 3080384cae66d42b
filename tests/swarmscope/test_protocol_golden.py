"""The live protocol's golden fixture (tests/fixtures/live_protocol_golden.json, written by
tests/fixtures/make_live_protocol_golden.py from the app's own write path): Python's apply functions
reach the stored final state, its critical path is swarmscope.metrics', and every message fits its
schema. tests/js/live_protocol_golden.test.js checks the browser's side against the same file."""

import json

import pytest
from jsonschema import Draft202012Validator, ValidationError

from swarmscope import metrics, model, protocol, protocol_schema
from tests.conftest import FIXTURES

GOLDEN = json.loads((FIXTURES / "live_protocol_golden.json").read_text())


def collections(snapshot):
    """The snapshot's records in canonical order, without the trace summary (which deltas do not
    always carry, and whose clock fields differ)."""
    return {k: v for k, v in protocol.canonical(snapshot).items() if k != "trace"}


def without_seq(records):
    return [{k: v for k, v in r.items() if k != "seq"} for r in records]


def test_applying_the_trace_deltas_gives_the_final_snapshot():
    golden = GOLDEN["trace"]
    state = golden["snapshot"]
    for delta in golden["deltas"]:
        state = protocol.apply_delta(state, delta)
    assert collections(state) == collections(golden["final"])
    assert state["seq"] == golden["final"]["seq"] == golden["deltas"][-1]["seq"]
    # The fixture exercises an upsert: e8 arrives open, then again with its t_end.
    assert "t_end" not in next(e for e in golden["deltas"][0]["events"] if e["id"] == "e8")
    assert next(e for e in golden["final"]["events"] if e["id"] == "e8")["t_end"] == 5.0


def test_the_critical_path_of_the_final_trace():
    final = GOLDEN["trace"]["final"]
    trace = model.trace_from_dict(
        {**final["trace"], **{name: without_seq(final[name]) for name in protocol.COLLECTIONS}}
    )
    length, ids = metrics.critical_path(trace)
    assert ids == GOLDEN["trace"]["critical_path"]["events"]
    assert length == pytest.approx(GOLDEN["trace"]["critical_path"]["length"], abs=1e-9)


def test_applying_the_run_deltas_gives_the_final_snapshot():
    golden = GOLDEN["run"]
    state = golden["snapshot"]
    for delta in golden["deltas"]:
        state = protocol.apply_run_delta(state, delta)
    assert state == golden["final"]
    assert [it["iteration"] for it in state["iterations"]] == [0, 1, 2]
    assert state["iterations"][1]["metrics"]["reward"] == 0.55  # the re-sent iteration replaced the first


def test_a_delta_older_than_the_snapshot_is_refused():
    with pytest.raises(ValueError):
        protocol.apply_delta(GOLDEN["trace"]["final"], GOLDEN["trace"]["deltas"][0])
    with pytest.raises(ValueError):
        protocol.apply_run_delta(GOLDEN["run"]["final"], GOLDEN["run"]["deltas"][0])


@pytest.mark.parametrize("socket", ["trace", "run"])
def test_every_golden_message_fits_its_schema(socket):
    golden = GOLDEN[socket]
    for message in [golden["snapshot"], *golden["deltas"], golden["final"]]:
        protocol_schema.validate_message(socket, message)


def test_the_schemas_are_valid_and_strict():
    for schemas in (*protocol_schema.SERVER_MESSAGES.values(), protocol_schema.CLIENT_MESSAGES):
        for schema in schemas.values():
            Draft202012Validator.check_schema(schema)
    snapshot = GOLDEN["trace"]["snapshot"]
    broken = [
        ("trace", {**snapshot, "seq": -1}),
        ("trace", {**snapshot, "events": [{"id": "x", "t": 0, "type": "message"}]}),  # no agent, no seq
        ("trace", {"type": "patch", "seq": 1}),
        ("run", {**GOLDEN["run"]["snapshot"], "iterations": [{"iteration": 0}]}),
        ("review", {"type": "delta", "seq": 3, "project": 1, "activities": [{"id": 3}]}),
        ("review", {"type": "error", "code": "snapshot_too_large", "message": "GET ..."}),  # no seq
    ]
    for socket, message in broken:
        with pytest.raises(ValidationError):
            protocol_schema.validate_message(socket, message)
    protocol_schema.validate_message("review", {"type": "resume", "seq": 0}, client=True)
    with pytest.raises(ValidationError):
        protocol_schema.validate_message("review", {"type": "resume", "after": 0}, client=True)
