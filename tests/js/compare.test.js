import { test } from "node:test";
import assert from "node:assert/strict";

import { alignTraces, diffSequences, summarise } from "../../static/js/panels/compare.js";
import { TraceModel } from "../../static/js/model/trace_model.js";

const model = (events) => {
  const m = new TraceModel();
  m.applySnapshot({ type: "snapshot", seq: 1, trace: {}, agents: [], edges: [], labels: [],
    events: events.map(([id, agent, type, content], i) => ({ id, t: i, agent, type, content })) });
  return m;
};

test("diffSequences matches prefix, suffix and the longest common middle", () => {
  const ops = diffSequences([..."abcxd"], [..."abyzcd"], (c) => c);
  assert.deepEqual(ops.map((o) => `${o.op[0]}${o.a ?? ""}${o.b ?? ""}`),
    ["e00", "e11", "i2", "i3", "e24", "d3", "e45"]);
});

test("by step: same, changed content, and events in one trace only", () => {
  const left = model([["1", "orch", "delegate", "plan"], ["2", "a", "message", "draft v1"],
    ["3", "a", "tool_call", "search"], ["4", "orch", "aggregate", "done"]]);
  const right = model([["1", "orch", "delegate", "plan"], ["2", "a", "message", "draft v2"],
    ["4", "orch", "aggregate", "done"], ["5", "orch", "stop", ""]]);
  const rows = alignTraces(left, right, "step");
  assert.deepEqual(rows.map((r) => [r.status, r.left?.id ?? null, r.right?.id ?? null]), [
    ["same", "1", "1"], ["changed", "2", "2"], ["left-only", "3", null], ["same", "4", "4"],
    ["right-only", null, "5"],
  ]);
  assert.deepEqual(summarise(rows), { same: 2, changed: 1, "left-only": 1, "right-only": 1 });
});

test("by agent: each agent's events are aligned on their own, agents of both traces listed", () => {
  const left = model([["1", "orch", "delegate", "x"], ["2", "a", "message", "hi"]]);
  const right = model([["1", "orch", "delegate", "x"], ["2", "b", "message", "hi"], ["3", "a", "message", "hi"]]);
  const rows = alignTraces(left, right, "agent");
  assert.deepEqual(rows.map((r) => [r.agent, r.status]), [["orch", "same"], ["a", "same"], ["b", "right-only"]]);
});
