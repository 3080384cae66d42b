import { test } from "node:test";
import assert from "node:assert/strict";

import { attributionBody, creditColor, creditMap, graphCredit, targetAgent, targetEvent } from "../../static/js/attribution.js";

test("the request body from the form", () => {
  assert.deepEqual(attributionBody({ method: "loo", budget: "416", seed: "" }),
    { method: "loo", budget: 416, seed: 0, players: "messages" });
  assert.deepEqual(attributionBody({ method: "kernelshap", budget: 64, seed: "3", players: "agents" }),
    { method: "kernelshap", budget: 64, seed: 3, players: "agents" });
  assert.throws(() => attributionBody({ method: "loo", budget: 10, seed: 0, players: "events" }), /players/);
  assert.throws(() => attributionBody({ method: "vibes", budget: 10, seed: 0 }), /unknown method/);
  assert.throws(() => attributionBody({ method: "loo", budget: "0", seed: 0 }), /budget/);
  assert.throws(() => attributionBody({ method: "loo", budget: "1.5", seed: 0 }), /budget/);
  assert.throws(() => attributionBody({ method: "loo", budget: 10, seed: "-1" }), /seed/);
});

test("targets name events", () => {
  assert.equal(targetEvent("event:message:fact/2"), "message:fact/2");
  assert.equal(targetEvent("agent:critic"), null);
  assert.equal(targetEvent("event:a, event:b"), null);
});

test("credit is scaled by the largest |estimate|", () => {
  const map = creditMap([{ target: "event:a", estimate: 0.4 }, { target: "event:b", estimate: -0.2 },
    { target: "agent:x", estimate: 0.9 }, { target: "event:c", estimate: 0 }]);
  assert.deepEqual([...map], [["a", 0.4 / 0.9], ["b", -0.2 / 0.9], ["c", 0]]);
  assert.deepEqual([...creditMap([{ target: "event:a", estimate: 0 }])], [["a", 0]]);
});

test("credit colours run from red through grey to green", () => {
  assert.equal(creditColor(0), "#ced4da");
  assert.equal(creditColor(1), "#2f9e44");
  assert.equal(creditColor(-1), "#e03131");
  assert.equal(creditColor(5), "#2f9e44");
  assert.equal(creditColor(Number.NaN), "#ced4da");
});

test("targets name agents", () => {
  assert.equal(targetAgent("agent:solver_1"), "solver_1");
  assert.equal(targetAgent("event:m1"), null);
  assert.equal(targetAgent("agent:a, agent:b"), null);
});

test("graph credit: message credit summed per sender and per sender→receiver edge", () => {
  const events = new Map([
    ["m1", { agent: "a", to: "o" }], ["m2", { agent: "a", to: "o" }], ["m3", { agent: "b", to: "o" }],
    ["m4", { agent: "b", to: "a" }], ["m5", { agent: "o" }]]);
  const credit = graphCredit([
    { target: "event:m1", estimate: 0.5 }, { target: "event:m2", estimate: 0.3 }, { target: "event:m3", estimate: -0.4 },
    { target: "event:m4", estimate: 0.2 }, { target: "event:m5", estimate: 0.1 }, { target: "event:gone", estimate: 9 }],
  (id) => events.get(id));
  // nodes: a 0.8, b -0.2, o 0.1 (largest 0.8); edges: a→o 0.8, b→o -0.4, b→a 0.2 (largest 0.8).
  assert.deepEqual([...credit.nodes].map(([k, v]) => [k, Number(v.toFixed(6))]), [["a", 1], ["b", -0.25], ["o", 0.125]]);
  assert.deepEqual([...credit.edges].map(([k, v]) => [k.replace("\u0000", "->"), Number(v.toFixed(6))]),
    [["a->o", 1], ["b->o", -0.5], ["b->a", 0.25]]);
  assert.equal(Number(credit.largest.nodes.toFixed(6)), 0.8);
  assert.equal(Number(credit.largest.edges.toFixed(6)), 0.8);
});

test("graph credit of agent players colours nodes only", () => {
  const credit = graphCredit([{ target: "agent:x", estimate: -0.6 }, { target: "agent:y", estimate: 0.3 }], () => undefined);
  assert.deepEqual([...credit.nodes], [["x", -1], ["y", 0.5]]);
  assert.equal(credit.edges.size, 0);
  const none = graphCredit([{ target: "agent:x", estimate: 0 }], () => undefined);
  assert.deepEqual([...none.nodes], [["x", 0]]);
});
