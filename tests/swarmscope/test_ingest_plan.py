"""`swarmscope.ingest.plan_batch` on small hand-made fragments: merges, refusals, agents, edges, labels."""

import copy

import pytest

from swarmscope import model as core
from swarmscope.ingest import (
    IngestConflict,
    Stored,
    check_storable,
    holds_nul,
    label_key,
    new_trace_agents,
    plan_batch,
)


def fragment(events=(), edges=(), agents=(), labels=()):
    trace = core.Trace(source_format="swarmscope", source_id="t1")
    trace.events = [core.event_from_dict(e, i) for i, e in enumerate(events)]
    trace.edges = [core.edge_from_dict(e, i) for i, e in enumerate(edges)]
    trace.agents = [core.agent_from_dict(a, i) for i, a in enumerate(agents)]
    trace.labels = [core.label_from_dict(lb, i) for i, lb in enumerate(labels)]
    return trace


OPEN = {"id": "m1", "t": 7.0, "type": "message", "agent": "adder", "to": "orchestrator"}


def stored_open_event() -> Stored:
    return Stored(
        events={"m1": core.event_from_dict(OPEN)},
        agents={"adder": core.Agent(name="adder", role="worker"), "orchestrator": core.Agent(name="orchestrator")},
    )


def test_a_new_trace_inserts_everything_and_creates_the_acting_agents():
    plan = plan_batch(
        Stored(),
        fragment(
            [OPEN, {"id": "m2", "t": 8, "type": "return", "agent": "orchestrator"}],
            edges=[{"src": "m1", "dst": "m2", "type": "return"}],
        ),
    )
    assert [e.id for e in plan.insert_events] == ["m1", "m2"] and plan.update_events == []
    assert [a.name for a in plan.create_agents] == ["adder", "orchestrator"]
    assert [e.to_dict() for e in plan.add_edges] == [{"src": "m1", "dst": "m2", "type": "return"}]
    assert not plan.empty


def test_t_end_of_an_open_event_updates_it():
    plan = plan_batch(stored_open_event(), fragment([{**OPEN, "t_end": 7.5, "attributes": {"ok": True}}]))
    assert plan.insert_events == [] and plan.create_agents == [] and plan.update_agents == []
    [updated] = plan.update_events
    assert (updated.id, updated.t, updated.t_end, updated.attributes) == ("m1", 7.0, 7.5, {"ok": True})
    assert plan.touched_events == [updated]


def test_an_identical_re_send_changes_nothing():
    stored = stored_open_event()
    assert plan_batch(stored, fragment([OPEN])).empty


def test_a_conflicting_re_send_refuses_the_batch_naming_index_id_and_field():
    batch = fragment([{"id": "new-one", "t": 8.0, "type": "message", "agent": "adder"}, {**OPEN, "agent": "checker"}])
    with pytest.raises(IngestConflict) as refused:
        plan_batch(stored_open_event(), batch)
    error = refused.value.error
    assert (error.index, error.event_id, error.field) == (1, "m1", "agent")
    assert error.as_dict()["index"] == 1 and "contradicts the stored value 'adder'" in str(refused.value)


def test_a_contradiction_inside_one_batch_is_a_conflict_too():
    with pytest.raises(IngestConflict) as refused:
        plan_batch(Stored(), fragment([OPEN, {**OPEN, "t_end": 8.0}, {**OPEN, "t_end": 9.0}]))
    assert (refused.value.error.index, refused.value.error.field) == (2, "t_end")


def test_a_re_sent_event_merges_into_the_earlier_one_of_its_batch():
    plan = plan_batch(Stored(), fragment([OPEN, {**OPEN, "t_end": 8.0}]))
    [event] = plan.insert_events
    assert event.t_end == 8.0


def test_a_spawn_creates_its_target_with_parent_and_spawn_time():
    spawn = {"id": "s1", "t": 2.0, "type": "spawn", "agent": "orchestrator", "to": "checker", "role": "verifier"}
    plan = plan_batch(stored_open_event(), fragment([spawn]))
    [checker] = plan.create_agents
    assert (checker.name, checker.parent, checker.spawned_at, checker.role) == (
        "checker",
        "orchestrator",
        2.0,
        "verifier",
    )
    assert plan.update_agents == []


def test_a_spawn_fills_in_a_stored_agent_without_changing_the_stored_value():
    stored = stored_open_event()
    before = copy.deepcopy(stored)
    plan = plan_batch(
        stored, fragment([{"id": "s1", "t": 1.5, "type": "spawn", "agent": "orchestrator", "to": "adder"}])
    )
    [adder] = plan.update_agents
    assert (adder.name, adder.role, adder.parent, adder.spawned_at) == ("adder", "worker", "orchestrator", 1.5)
    assert plan.create_agents == [] and stored == before


def test_a_fragment_agent_fills_only_missing_fields_of_the_stored_one():
    plan = plan_batch(
        stored_open_event(),
        fragment(
            agents=[{"name": "adder", "role": "other", "system_prompt": "p"}, {"name": "adder", "despawned_at": 9.0}]
        ),
    )
    [adder] = plan.update_agents
    assert (adder.role, adder.system_prompt, adder.despawned_at) == ("worker", "p", 9.0)
    assert plan_batch(stored_open_event(), fragment(agents=[{"name": "adder", "role": "other"}])).empty


def test_duplicate_edges_are_added_once_and_stored_ones_not_again():
    stored = Stored(edges={("a", "b", "causal")}, event_ids={"a", "b", "c"})
    plan = plan_batch(
        stored,
        fragment(
            edges=[
                {"src": "a", "dst": "b", "type": "causal"},
                {"src": "b", "dst": "c", "type": "causal"},
                {"src": "b", "dst": "c", "type": "causal"},
                {"src": "b", "dst": "c", "type": "message"},
            ]
        ),
    )
    assert [(e.src, e.dst, e.type) for e in plan.add_edges] == [("b", "c", "causal"), ("b", "c", "message")]


def test_an_edge_naming_an_unknown_event_is_refused_with_its_index():
    batch = fragment(
        [{"id": "x1", "t": 9, "type": "message", "agent": "adder"}],
        edges=[{"src": "e1", "dst": "x1", "type": "causal"}, {"src": "x1", "dst": "nowhere", "type": "message"}],
    )
    with pytest.raises(core.TraceValidationError) as error:
        plan_batch(Stored(event_ids={"e1"}), batch)
    assert (error.value.kind, error.value.index, error.value.field) == ("edge", 1, "dst")
    assert error.value.message == "names unknown event 'nowhere'"


def test_labels_already_stored_are_not_added_again():
    label = {"key": "mistake_agent", "value": "adder"}
    stored = Stored(labels={label_key(core.label_from_dict(label))})
    plan = plan_batch(stored, fragment(labels=[label, {"key": "mistake_step", "value": 3}]))
    assert [lb.key for lb in plan.add_labels] == ["mistake_step"]


def test_a_stored_label_whose_dict_value_comes_back_in_another_key_order_is_the_same_label():
    # PostgreSQL's jsonb returns {"mistake_agent": .., "step_speaker": ..} with the shorter key first.
    sent = {"key": "mismatch", "value": {"mistake_agent": "a", "step_speaker": "b"}, "event_id": "h2"}
    stored = {**sent, "value": {"step_speaker": "b", "mistake_agent": "a"}}
    known = Stored(labels={label_key(core.label_from_dict(stored))})
    assert plan_batch(known, fragment(labels=[sent])).add_labels == []
    other = {**sent, "value": {"mistake_agent": "a", "step_speaker": "c"}}
    assert len(plan_batch(known, fragment(labels=[other])).add_labels) == 1


def test_new_trace_agents_is_the_agent_rule_of_a_new_trace():
    trace = fragment(
        [
            {"id": "s1", "t": 1, "type": "spawn", "agent": "orchestrator", "to": "adder"},
            {"id": "m1", "t": 2, "type": "message", "agent": "adder", "role": "worker"},
        ],
        agents=[{"name": "orchestrator", "role": "lead"}, {"name": "orchestrator", "role": "ignored"}],
    )
    agents = new_trace_agents(trace)
    assert {n: (a.role, a.parent, a.spawned_at) for n, a in agents.items()} == {
        "orchestrator": ("lead", None, None),
        "adder": ("worker", "orchestrator", 1),
    }
    assert [a.name for a in plan_batch(Stored(), trace).create_agents] == list(agents)
    assert trace.agents[0].parent is None and len(trace.agents) == 2  # the input is not changed


def test_a_nul_character_is_found_and_refused_naming_where():
    assert holds_nul({"a": ["ok", "x\x00"]}) and not holds_nul({"a": ["ok", 1]})
    with pytest.raises(core.TraceValidationError) as error:
        check_storable(fragment([OPEN, {**OPEN, "id": "m2", "content": "a\x00b"}]))
    assert (error.value.kind, error.value.index, error.value.event_id, error.value.field) == (
        "event",
        1,
        "m2",
        "content",
    )
