import { test } from "node:test";
import assert from "node:assert/strict";

import { spanWaterfall } from "../../static/js/model/span_waterfall.js";

const ev = (id, t, tEnd, span, parent, name = span, agent = "a") => ({
  id, t, t_end: tEnd, agent, type: "message", attributes: { span_id: span, parent_span_id: parent, span_name: name },
});

test("events become their spans, children under their parent by start time, with depth and extent", () => {
  const { rows, t0, t1 } = spanWaterfall([
    ev("e3", 5, 6, "s3", "s1", "tool"),
    ev("e1", 0, 10, "s1", null, "invoke_agent"),
    ev("e2", 1, 4, "s2", "s1", "chat"),
    ev("e2b", 3, null, "s2", "s1", "chat"), // a second event of the same span
    ev("e4", 2, 2.5, "s4", "s2", "chat"),
    ev("e5", 12, 13, "s5", "gone", "orphan"), // its parent made no event: a root
  ]);
  assert.deepEqual(rows.map((r) => [r.span, r.depth]), [["s1", 0], ["s2", 1], ["s4", 2], ["s3", 1], ["s5", 0]]);
  assert.deepEqual(rows[1].events, ["e2", "e2b"]);
  assert.deepEqual([rows[1].t0, rows[1].t1], [1, 4]);
  assert.equal(rows[0].name, "invoke_agent");
  assert.deepEqual([t0, t1], [0, 13]);
});

test("a trace without spans has no waterfall; a parent cycle does not loop", () => {
  assert.deepEqual(spanWaterfall([{ id: "x", t: 0, agent: "a", attributes: {} }]).rows, []);
  const { rows } = spanWaterfall([ev("a", 0, 1, "s1", "s2"), ev("b", 0, 1, "s2", "s1")]);
  assert.equal(rows.length, 2);
});
