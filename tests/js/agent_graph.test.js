import { test } from "node:test";
import assert from "node:assert/strict";

import { CREDIT_EDGE_MAX, creditEdgeStyle, treeLayout } from "../../static/js/views/agent_graph.js";

const tree = { root: ["a", "b"], a: ["c", "d"], b: [], c: [], d: [] };

test("layered layout: leaves in slots, parents centred over their children", () => {
  const at = treeLayout(["root"], (n) => tree[n]);
  assert.deepEqual(Object.fromEntries([...at].map(([k, v]) => [k, [v.x, v.y]])), {
    c: [0, -2], d: [1, -2], a: [0.5, -1], b: [2, -1], root: [1.25, 0],
  });
});

test("radial layout for many leaves: the root in the centre, leaves on a circle", () => {
  const children = (n) => (n === "hub" ? Array.from({ length: 30 }, (_, i) => `w${i}`) : []);
  const at = treeLayout(["hub"], children, { radialAbove: 24 });
  assert.deepEqual(at.get("hub"), { x: 0, y: 0 });
  const radii = new Set([...at].filter(([k]) => k !== "hub").map(([, p]) => Math.hypot(p.x, p.y).toFixed(6)));
  assert.equal(radii.size, 1);
});

test("credit edges: width by |credit|, colour by its sign", () => {
  assert.deepEqual(creditEdgeStyle(0), { size: 1, color: "#ced4da" });
  assert.deepEqual(creditEdgeStyle(1), { size: CREDIT_EDGE_MAX, color: "#2f9e44" });
  assert.deepEqual(creditEdgeStyle(-0.5), { size: 1 + (CREDIT_EDGE_MAX - 1) / 2, color: creditEdgeStyle(-0.5).color });
  assert.equal(creditEdgeStyle(-1).color, "#e03131");
  assert.equal(creditEdgeStyle(7).size, CREDIT_EDGE_MAX);
  assert.equal(creditEdgeStyle("x").size, 1);
});

// ---------------------------------------------------------------- labelledLayout (dagre)

import dagre from "@dagrejs/dagre";
import { CLUSTER_ABOVE, labelledLayout } from "../../static/js/views/agent_graph.js";

/** Agent boxes as the page makes them: circle (r = 10) plus a label of 7 px per character. */
const boxOf = (name) => ({ width: 24 + 7 * name.length, height: 20, r: 10 });
const rect = (name, at) => ({ x0: at.x - 10, x1: at.x - 10 + boxOf(name).width, y0: at.y - 10, y1: at.y + 10 });
const overlaps = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;

function assertNoOverlap(layout) {
  const rects = [...layout].map(([name, at]) => [name, rect(name, at)]);
  for (let i = 0; i < rects.length; i += 1) {
    for (let j = i + 1; j < rects.length; j += 1) {
      assert.ok(!overlaps(rects[i][1], rects[j][1]), `${rects[i][0]} and ${rects[j][0]} overlap`);
    }
  }
}

test("dagre's layout gives every agent a box of its label: no two overlap, children right of parents", () => {
  const tree = { main: ["Explore:a2898e3", "general-purpose:b17"], "Explore:a2898e3": [], "general-purpose:b17": [], user: [] };
  const layout = labelledLayout(dagre, ["main", "user"], (n) => tree[n] ?? [], boxOf);
  assert.equal(layout.size, 4);
  assertNoOverlap(layout);
  assert.ok(layout.get("Explore:a2898e3").x > layout.get("main").x + boxOf("main").width - 10);
  // Who&When: every agent a root, no spawn tree.
  const roots = ["Orchestrator", "WebSurfer", "Assistant", "ComputerTerminal", "FileSurfer"];
  assertNoOverlap(labelledLayout(dagre, roots, () => [], boxOf));
});

test("a wide fan-out is packed in a grid about as wide as tall, still without overlaps", () => {
  const kids = Array.from({ length: 60 }, (_, i) => `worker-${i}`);
  const layout = labelledLayout(dagre, ["lead"], (n) => (n === "lead" ? kids : []), boxOf);
  assert.equal(layout.size, 61);
  assertNoOverlap(layout);
  const xs = new Set(kids.map((k) => layout.get(k).x));
  const ys = new Set(kids.map((k) => layout.get(k).y));
  assert.ok(xs.size > 1 && xs.size < 60, `${xs.size} columns`);
  const width = Math.max(...kids.map((k) => rect(k, layout.get(k)).x1)) - Math.min(...kids.map((k) => layout.get(k).x));
  const height = (ys.size) * 26;
  assert.ok(width / height > 0.4 && width / height < 2.5, `grid ${width} x ${height}`);
  // At the threshold no grid: one column (dagre's rank).
  const few = kids.slice(0, CLUSTER_ABOVE);
  const column = labelledLayout(dagre, ["lead"], (n) => (n === "lead" ? few : []), boxOf);
  assert.equal(new Set(few.map((k) => column.get(k).x)).size, 1);
});
