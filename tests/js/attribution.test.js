import { test } from "node:test";
import assert from "node:assert/strict";

import { attributionBody, creditMap, formatAttributionEstimate, graphCredit, targetAgent, targetEvent }
  from "../../static/js/panels/attribution.js";

test("the request body from the form", () => {
  assert.deepEqual(attributionBody({ method: "loo", budget: "416", seed: "" }),
    { method: "loo", budget: 416, seed: 0, players: "messages", backend: "sim" });
  assert.deepEqual(attributionBody({ method: "kernelshap", budget: 64, seed: "3", players: "agents", backend: "openai" }),
    { method: "kernelshap", budget: 64, seed: 3, players: "agents", backend: "openai" });
  assert.throws(() => attributionBody({ method: "loo", budget: 10, seed: 0, backend: "" }), /backend/);
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

test("the attribution's cost estimate reads as tokens, requests, picks, verdicts and rollouts", () => {
  const estimate = { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500, requests: 52, speaker_requests: 0,
    verdict_requests: 20, method: "loo", players: 4, player_kind: "messages", n: 4, rollouts: 20 };
  assert.equal(formatAttributionEstimate(estimate), "≈ 1,200 prompt + 300 completion tokens (1,500 in all) in 52 "
    + "requests, 20 verdicts: loo over 4 messages, 4 samples (20 rollouts)");
  assert.match(formatAttributionEstimate({ ...estimate, speaker_requests: 8, verdict_requests: 0 }),
    /in 52 requests, 8 speaker picks: loo/);
});
