// The live protocol's golden fixture (tests/fixtures/live_protocol_golden.json, written by
// tests/fixtures/make_live_protocol_golden.py): the browser's trace model and run apply reach the
// same final state, and the same critical path, as Python (tests/swarmscope/test_protocol_golden.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { TraceModel } from "../../static/js/model/trace_model.js";
import { applyRunDelta, shouldApply } from "../../static/js/model/runs_model.js";

const GOLDEN = JSON.parse(readFileSync(new URL("../fixtures/live_protocol_golden.json", import.meta.url)));

/** A record's key in its collection (swarmscope/protocol.py `_key`), as a string to sort by. */
const KEYS = {
  agents: (r) => JSON.stringify([r.name]),
  events: (r) => JSON.stringify([r.id]),
  edges: (r) => JSON.stringify([r.src, r.dst, r.type]),
  labels: (r) => JSON.stringify([r.key ?? null, r.event_id ?? null, r.agent ?? null, JSON.stringify(r.value)]),
};

/** The four collections of a snapshot (or a model), each sorted by key. */
function canonical(collections) {
  const out = {};
  for (const [name, key] of Object.entries(KEYS)) {
    out[name] = [...collections[name]].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  }
  return out;
}

test("the trace model applies the golden deltas and reaches the final snapshot", () => {
  const { snapshot, deltas, final } = GOLDEN.trace;
  const model = new TraceModel();
  assert.equal(model.applySnapshot(snapshot).status, "applied");
  for (const delta of deltas) assert.equal(model.applyDelta(delta).status, "applied", `delta ${delta.seq}`);
  assert.equal(model.seq, final.seq);
  const state = canonical({
    agents: [...model.agents.values()], events: [...model.events.values()], edges: model.edges, labels: model.labels,
  });
  assert.deepEqual(state, canonical(final));
  assert.equal(model.events.get("e8").t_end, 5.0, "the event re-sent with its t_end replaced the open one");
});

test("the trace model's critical path is swarmscope.metrics.critical_path's", () => {
  const { snapshot, deltas, critical_path: expected } = GOLDEN.trace;
  const model = new TraceModel();
  model.applySnapshot(snapshot);
  model.criticalPath(); // computed part-way too: the incremental path must end where a fresh one does
  for (const delta of deltas) model.applyDelta(delta);
  const path = model.criticalPath();
  assert.deepEqual(path.ids, expected.events);
  assert.ok(Math.abs(path.length - expected.length) < 1e-9, `${path.length} vs ${expected.length}`);
  assert.equal(path.unit, "s");
  const fresh = new TraceModel();
  fresh.applySnapshot(GOLDEN.trace.final);
  assert.deepEqual(fresh.criticalPath().ids, expected.events);
});

test("runs_model applies the golden run deltas and reaches the final snapshot", () => {
  const { snapshot, deltas, final } = GOLDEN.run;
  let state = snapshot;
  for (const delta of deltas) {
    assert.ok(shouldApply(state.seq, delta), `delta ${delta.seq}`);
    state = applyRunDelta(state, delta);
  }
  assert.deepEqual(state, final);
  assert.deepEqual(state.iterations.map((it) => it.iteration), [0, 1, 2]);
  assert.throws(() => applyRunDelta(final, deltas[0]), /older than snapshot/);
});
