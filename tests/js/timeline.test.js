import { test } from "node:test";
import assert from "node:assert/strict";

import { clickModifiers, formatTick, niceTicks } from "../../static/js/views/timeline.js";
import { DETAIL_BUDGET, eventSpan, hitTest, TimelineLayout } from "../../static/js/views/timeline_layout.js";
import { TraceModel } from "../../static/js/model/trace_model.js";
import { syntheticSnapshot } from "./synthetic.js";

test("ticks are 1, 2 or 5 times a power of ten, inside the range", () => {
  assert.deepEqual(niceTicks(0, 10, 5), [0, 2, 4, 6, 8, 10]);
  assert.deepEqual(niceTicks(0.13, 0.61, 4), [0.2, 0.4, 0.6]);
  assert.deepEqual(niceTicks(5, 5), [5]);
});

test("shift, ctrl or meta on a click toggle the event in the multi-selection", () => {
  assert.deepEqual(clickModifiers({ shiftKey: true }), { toggle: true });
  assert.deepEqual(clickModifiers({ ctrlKey: true, shiftKey: false }), { toggle: true });
  assert.deepEqual(clickModifiers({ metaKey: true }), { toggle: true });
  assert.deepEqual(clickModifiers({ shiftKey: false, ctrlKey: false, metaKey: false, altKey: true }), { toggle: false });
  assert.deepEqual(clickModifiers(undefined), { toggle: false });
});

test("tick labels are as precise as the tick step needs", () => {
  assert.equal(formatTick(200, 100), "3:20");
  assert.equal(formatTick(4.25, 0.05), "4.25 s");
  assert.equal(formatTick(750.5, 0.5), "12:30.5");
  assert.equal(formatTick(60.02, 0.01), "1:00.02");
});

/** Two agents: a span with a duration, an instantaneous event, and a tool call -> result edge. */
function spansModel() {
  const model = new TraceModel();
  model.applySnapshot({
    type: "snapshot", seq: 1, trace: { id: "t", live: false },
    agents: [{ name: "a", parent: null, seq: 1 }, { name: "b", parent: "a", seq: 1 }],
    events: [
      { id: "e1", t: 0, t_end: 4, type: "tool_call", agent: "a", seq: 1 },
      { id: "e2", t: 4.5, type: "tool_result", agent: "a", seq: 1 },
      { id: "e3", t: 2, t_end: 3, type: "message", agent: "b", seq: 1 },
    ],
    edges: [{ src: "e1", dst: "e2", type: "tool_dependency", seq: 1 }],
  });
  return model;
}

test("spans with a duration span t..t_end (bars); instantaneous events and steps are points", () => {
  const model = spansModel();
  assert.deepEqual(eventSpan(model.events.get("e1"), model, "time"), [0, 4]);
  assert.deepEqual(eventSpan(model.events.get("e2"), model, "time"), [4.5, 4.5]);
  assert.deepEqual(eventSpan(model.events.get("e3"), model, "step"), [1, 1]);
  const layout = new TimelineLayout(model);
  layout.syncAll(model.view("time"), "time");
  const e1 = layout.items.get("e1");
  assert.equal(e1.x1 - e1.x0, 4);
  assert.equal(layout.items.get("e3").row, 1);
  const drawn = layout.visible([0, 10], [0, 1]);
  assert.equal(drawn.items.length, 3);
  assert.deepEqual(layout.edges(model.view("time"), drawn).map(([a, b]) => [a.key, b.key]), [["e1", "e2"]]);
  // Outside the window or the visible rows: not drawn.
  assert.deepEqual(layout.visible([4.2, 10], [0, 0]).items.map((i) => i.key), ["e2"]);
});

test("zoomed in, budget bins on screen are drawn as their events; zoomed out they stay bins", () => {
  const model = new TraceModel({ nodeBudget: 100 });
  model.applySnapshot(syntheticSnapshot({ agents: 10, events: 2000, seed: 3 }));
  const view = model.view("time");
  assert.ok(view.budgeted, "the view bins by the node budget");
  const layout = new TimelineLayout(model);
  layout.syncAll(view, "time");
  const [t0, t1] = model.timeRange();
  const rows = [0, view.lanes.length - 1];
  const all = layout.visible([t0, t1], rows, 500);
  assert.equal(all.expanded.size, 0);
  assert.ok(all.items.every((i) => i.node.kind === "bin" || i.node.kind === "event"));
  // A window of a twentieth of the trace holds few enough events: drawn one by one.
  const win = [t0, t0 + (t1 - t0) / 20];
  const zoomed = layout.visible(win, rows, 500);
  assert.ok(zoomed.expanded.size > 0);
  assert.ok(zoomed.items.every((i) => i.node.kind === "event"));
  const inWindow = [...model.events.values()].filter((e) => (e.t_end ?? e.t) >= win[0] && e.t <= win[1]).length;
  assert.equal(zoomed.items.length, inWindow);
  // Every edge between the drawn events is drawn, between their own positions.
  for (const [a, b] of layout.edges(view, zoomed)) assert.ok(a.key !== b.key);
  assert.ok(DETAIL_BUDGET >= 1000);
});

test("a hit prefers events to bins, then the nearest, then the narrowest", () => {
  const bin = { item: { node: { kind: "bin" } }, x0: 0, x1: 100, y0: 0, y1: 10 };
  const long = { item: { node: { kind: "event" } }, x0: 10, x1: 90, y0: 2, y1: 8 };
  const short = { item: { node: { kind: "event" } }, x0: 40, x1: 44, y0: 2, y1: 8 };
  assert.equal(hitTest([bin, long, short], 42, 5), short);
  assert.equal(hitTest([bin, long, short], 20, 5), long);
  assert.equal(hitTest([bin, long, short], 5, 5), bin);
  assert.equal(hitTest([bin, long, short], 5, 30), null);
  assert.equal(hitTest([short], 46, 5), short); // within the tolerance
});
