import { test } from "node:test";
import assert from "node:assert/strict";

import { nearestInDirection } from "../../static/js/views/agent_graph.js";
import { nearestInLane } from "../../static/js/views/timeline.js";

// A root above three children (screen pixels, y down), and a grandchild under the middle child.
const points = new Map([
  ["root", { x: 100, y: 0 }],
  ["a", { x: 0, y: 100 }],
  ["b", { x: 100, y: 100 }],
  ["c", { x: 200, y: 100 }],
  ["b1", { x: 110, y: 200 }],
]);
const RIGHT = [1, 0];
const LEFT = [-1, 0];
const UP = [0, -1];
const DOWN = [0, 1];

test("arrows go to the nearest agent within 45° of their direction", () => {
  assert.equal(nearestInDirection(points, "root", DOWN), "b");
  assert.equal(nearestInDirection(points, "b", DOWN), "b1");
  assert.equal(nearestInDirection(points, "b", RIGHT), "c");
  assert.equal(nearestInDirection(points, "b", LEFT), "a");
  assert.equal(nearestInDirection(points, "b1", UP), "b");
});

test("outside the cone the nearest in the half-plane ahead counts; nothing ahead is null", () => {
  assert.equal(nearestInDirection(points, "a", UP), "root"); // exactly 45° is in the cone
  const steep = new Map([["o", { x: 0, y: 0 }], ["p", { x: 10, y: -50 }]]);
  assert.equal(nearestInDirection(steep, "o", RIGHT), "p"); // 79° off: only the half-plane has it
  assert.equal(nearestInDirection(points, "c", RIGHT), null);
  assert.equal(nearestInDirection(points, "root", UP), null);
  assert.equal(nearestInDirection(points, "nobody", UP), null);
});

test("a cone candidate beats a nearer one off to the side", () => {
  const spread = new Map([["o", { x: 0, y: 0 }], ["side", { x: 10, y: 30 }], ["ahead", { x: 80, y: 5 }]]);
  assert.equal(nearestInDirection(spread, "o", RIGHT), "ahead");
});

test("the lane neighbour is the event nearest in x, the earliest of a tie", () => {
  const x = { e1: 0, e2: 4, e3: 6, e4: 10 };
  assert.equal(nearestInLane(["e1", "e2", "e3", "e4"], (id) => x[id], 5), "e2");
  assert.equal(nearestInLane(["e1", "e2", "e3", "e4"], (id) => x[id], 5.5), "e3");
  assert.equal(nearestInLane(["e1", "e4"], (id) => x[id], 99), "e4");
  assert.equal(nearestInLane([], (id) => x[id], 1), null);
});
