// The browser's side of the server-side level of detail (static/js/model/server_window.js).
import { test } from "node:test";
import assert from "node:assert/strict";

import { ServerWindow, windowRecords, windowUrl } from "../../static/js/model/server_window.js";

// Two lanes over [0, 10) in 5 bins of 2 s: a has 3 events in bin 0, 1 in bin 4; b 2 in bin 2.
const overview = () => ({
  t0: 0, t1: 10, bins: 5, width: 2, grouped_by: "agent", event_count: 6,
  lanes: [
    { name: "a", agents: ["a"], count: 4, cells: [[0, 3, 1, { tool_result: 3 }], [4, 1, 0, { stop: 1 }]] },
    { name: "b", agents: ["b"], count: 2, cells: [[2, 2, 0, { message: 2 }]] },
  ],
});

test("estimate counts whole bins inside and the overlapped part of the end bins", () => {
  const w = new ServerWindow(overview());
  assert.equal(w.estimate(0, 10), 6);
  assert.equal(w.estimate(0, 2), 3);
  assert.equal(w.estimate(1, 5), 1.5 + 2 * 0.5);
  assert.equal(w.wantsDetail(0, 10, 5), false);
  assert.equal(w.wantsDetail(4, 6, 5), true);
});

test("deltas count into the bins of the snapshot's grid, past t1 too", () => {
  const w = new ServerWindow(overview());
  const added = w.addEvents([
    { id: "x", t: 0.5, type: "tool_result", agent: "a", attributes: { status: "error" } },
    { id: "y", t: 13, type: "message", agent: "c" },
    { id: "known", t: 1, type: "message", agent: "a" },
  ], (id) => id === "known");
  assert.equal(added, 2);
  assert.deepEqual(w.cells.get("a").get(0), [0, 4, 2, { tool_result: 4 }]);
  assert.deepEqual(w.cells.get("c").get(6), [6, 1, 0, { message: 1 }]);
  assert.deepEqual(w.extent(), [0, 13]);
  assert.equal(w.eventCount, 8);
  assert.deepEqual(w.cellsIn("c", 11, 20).map((c) => [c.x0, c.x1, c.count]), [[12, 14, 1]]);
});

test("the loaded window says which live events the store takes and what it covers", () => {
  const w = new ServerWindow(overview());
  assert.equal(w.covers(1, 2), false);
  w.loaded = { t0: 1, t1: 5, truncated: false };
  assert.equal(w.covers(2, 4), true);
  assert.equal(w.covers(0, 4), false);
  assert.equal(w.inLoaded({ t: 5 }), true);
  assert.equal(w.inLoaded({ t: 6 }), false);
  w.loaded.truncated = true;
  assert.equal(w.covers(2, 4), false); // a capped window is fetched again when zoomed further
  assert.deepEqual(w.fetchRange(4, 6), [3, 7]);
});

test("a window answer keeps events up to the model's seq and the edges between them", () => {
  const answer = {
    events: [{ id: "p", seq: 1 }, { id: "q", seq: 2 }, { id: "r", seq: 3 }],
    edges: [{ src: "p", dst: "q", seq: 2 }, { src: "q", dst: "r", seq: 3 }, { src: "p", dst: "z", seq: 1 }],
  };
  const { events, edges } = windowRecords(answer, 2);
  assert.deepEqual(events.map((e) => e.id), ["p", "q"]);
  assert.deepEqual(edges, [{ src: "p", dst: "q", seq: 2 }]);
  assert.equal(windowUrl("/api/traces/4/", 1.5, 2, 10), "/api/traces/4/window/?t0=1.5&t1=2&limit=10");
});
