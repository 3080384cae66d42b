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
import { CLUSTER_ABOVE, fitScale, gridShape, labelledLayout } from "../../static/js/views/agent_graph.js";

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

/** The layout's extent with the boxes: [width, height]. */
function extent(layout) {
  const rects = [...layout].map(([name, at]) => rect(name, at));
  const w = Math.max(...rects.map((r) => r.x1)) - Math.min(...rects.map((r) => r.x0));
  const h = Math.max(...rects.map((r) => r.y1)) - Math.min(...rects.map((r) => r.y0));
  return [w, h];
}

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
  // At the threshold a grid only where their column would not fit the panel: in a tall panel one
  // column (dagre's rank), in a low one a grid that fits.
  const few = kids.slice(0, CLUSTER_ABOVE);
  const column = labelledLayout(dagre, ["lead"], (n) => (n === "lead" ? few : []), boxOf, { panel: { width: 300, height: 400 } });
  assert.equal(new Set(few.map((k) => column.get(k).x)).size, 1);
  const low = { width: 500, height: 100 };
  const wide = labelledLayout(dagre, ["lead"], (n) => (n === "lead" ? few : []), boxOf, { panel: low });
  assert.ok(new Set(few.map((k) => wide.get(k).x)).size > 1);
  assertNoOverlap(wide);
  const [w, h] = extent(wide);
  assert.ok(w <= low.width && h <= low.height, `${w} x ${h}`);
});

const rowsOf = (layout) => new Set([...layout.values()].map((p) => p.y)).size;

test("a group chat (every agent a root without children) is packed in rows as wide as the panel", () => {
  const roots = ["Debugging_Problem_Solving_Expert", "DebuggingTesting_Expert", "Computer_terminal", "Validation_Expert",
    "PlantClassification_Expert", "Verification_Expert"];
  // Boxes 248, 185, 143, 143, 206, 157 px wide, 20 high; 24 px apart, rows 12 px apart.
  const layout = labelledLayout(dagre, roots, () => [], boxOf, { panel: { width: 480, height: 200 } });
  assertNoOverlap(layout);
  const [w, h] = extent(layout);
  assert.ok(w <= 480 && w > 400 && h <= 200, `${w} x ${h}`);
  assert.equal(rowsOf(layout), 3); // 248 + 185; 143 + 143 (+ 206 would not fit); 206 + 157
  assert.equal(layout.get("Computer_terminal").y, layout.get("Validation_Expert").y);
  // One row where it fits; where no row width fits, the rows that fit at the largest scale: for a
  // tall panel one column, for a low one one row.
  assert.equal(rowsOf(labelledLayout(dagre, roots, () => [], boxOf, { panel: { width: 1300, height: 100 } })), 1);
  const tall = labelledLayout(dagre, roots, () => [], boxOf, { panel: { width: 100, height: 400 } });
  assert.equal(new Set([...tall.values()].map((p) => p.x)).size, 1);
  assert.equal(rowsOf(labelledLayout(dagre, roots, () => [], boxOf, { panel: { width: 600, height: 10 } })), 1);
});

test("trees and lone agents are packed together, each tree laid out whole", () => {
  const tree = { Orchestrator: ["WebSurfer", "FileSurfer", "ComputerTerminal"] };
  const layout = labelledLayout(dagre, ["human", "Orchestrator"], (n) => tree[n] ?? [], boxOf, { panel: { width: 500, height: 200 } });
  assert.equal(layout.size, 5);
  assertNoOverlap(layout);
  for (const child of tree.Orchestrator) assert.ok(layout.get(child).x > layout.get("Orchestrator").x);
  const few = labelledLayout(dagre, ["solo"], () => [], boxOf);
  assert.deepEqual(few.get("solo"), { x: 10, y: 10 });
});

test("fitScale and gridShape: the fewest columns that fit, else the grid shrunk least", () => {
  assert.equal(fitScale(200, 100, { width: 400, height: 100 }), 1);
  assert.equal(fitScale(800, 100, { width: 400, height: 100 }), 0.5);
  const parent = { width: 100, height: 20 };
  // A column is 98 px high, 2 x 2 is 326 x 46 px (the parent and 36 px to its right included).
  assert.deepEqual(gridShape(4, 100, 26, parent, { width: 400, height: 100 }), { cols: 1, rows: 4 });
  assert.deepEqual(gridShape(4, 100, 26, parent, { width: 400, height: 60 }), { cols: 2, rows: 2 });
  // Nothing fits 200 x 40: 2 x 2 at 0.61, the column at 0.41, one row at 0.37.
  assert.deepEqual(gridShape(4, 100, 26, parent, { width: 200, height: 40 }), { cols: 2, rows: 2 });
  assert.deepEqual(gridShape(1, 100, 26, parent, { width: 10, height: 10 }), { cols: 1, rows: 1 });
});
