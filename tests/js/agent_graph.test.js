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
