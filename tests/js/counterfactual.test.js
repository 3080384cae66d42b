import { test } from "node:test";
import assert from "node:assert/strict";

import { describeIntervention, formatDelta, formatEstimate, requestBody, selectedTargets, targetChoices, toggleSelection }
  from "../../static/js/panels/counterfactual.js";

test("interventions read as swarmscope describes them", () => {
  assert.equal(describeIntervention({ kind: "remove", events: ["m3"], agents: ["critic"] }), "remove(event:m3, agent:critic)");
  assert.equal(describeIntervention({ kind: "mask", events: ["m1"] }), "mask(event:m1)");
});

test("Δ with its 95 % interval and rollout count", () => {
  assert.equal(formatDelta({ estimate: 0.28125, ci_low: 0.1234, ci_high: 0.439, n_rollouts: 64 }),
    "Δ = 0.281 [0.123, 0.439], 95 %, 64 rollouts");
});

test("the request body from the dialog", () => {
  assert.deepEqual(requestBody("m1", { kind: "remove", text: "", n: "32", backend: "sim" }),
    { intervention: { kind: "remove", events: ["m1"] }, n: 32, backend: "sim" });
  assert.deepEqual(requestBody("m1", { kind: "replace", text: "hi", n: 8, backend: "sim" }).intervention,
    { kind: "replace", events: ["m1"], text: "hi" });
  assert.throws(() => requestBody("m1", { kind: "replace", text: " ", n: 8, backend: "sim" }), /replacement text/);
  assert.throws(() => requestBody("m1", { kind: "remove", text: "", n: "1", backend: "sim" }), /at least 2/);
  assert.throws(() => requestBody("m1", { kind: "explode", text: "", n: 8, backend: "sim" }), /unknown/);
});

test("several messages and agents make one intervention", () => {
  assert.deepEqual(requestBody({ events: ["m1", "m4"], agents: ["critic"] }, { kind: "remove", text: "", n: 8, backend: "sim" }),
    { intervention: { kind: "remove", events: ["m1", "m4"], agents: ["critic"] }, n: 8, backend: "sim" });
  assert.deepEqual(requestBody({ agents: ["critic"] }, { kind: "remove", text: "", n: 8, backend: "sim" }).intervention,
    { kind: "remove", agents: ["critic"] });
  assert.throws(() => requestBody({ events: [], agents: [] }, { kind: "remove", text: "", n: 8, backend: "sim" }), /at least one/);
  assert.throws(() => requestBody({ events: ["m1"], agents: ["critic"] }, { kind: "mask", text: "", n: 8, backend: "sim" }),
    /agents can only be removed/);
});

test("the cost estimate reads as tokens, requests, arms and samples", () => {
  assert.equal(formatEstimate({ prompt_tokens: 17, completion_tokens: 32, total_tokens: 49, requests: 2, n: 4, turns: 2,
    fork_event: "e2" }), "≈ 17 prompt + 32 completion tokens (49 in all) in 2 requests: 2 arms × 4 samples from e2, "
    + "2 re-generated turns per pair");
  assert.match(formatEstimate({ prompt_tokens: 1234567, completion_tokens: 0, total_tokens: 1234567, requests: 3, n: 2,
    turns: 1, fork_event: "x" }), /^≈ 1,234,567 prompt/);
  assert.match(formatEstimate({ prompt_tokens: 9, completion_tokens: 9, total_tokens: 18, requests: 30, n: 2, turns: 3,
    fork_event: "h3", speaker_requests: 10, verdict_requests: 6 }),
  /in 30 requests, 10 of them speaker picks, 6 verdicts: 2 arms × 2 samples from h3/);
});

test("target choices: message-like events in time order, filtered, capped", () => {
  const events = [
    { id: "m2", type: "message", t: 2, agent: "b", to: "a", content: "Paris is the capital" },
    { id: "s1", type: "spawn", t: 0, agent: "a", to: "b" },
    { id: "d1", type: "delegate", t: 1, agent: "a", to: "b", content: "find it" },
    { id: "r1", type: "return", t: 3, agent: "b", to: "a", content: { answer: 1 } },
    { id: "t1", type: "tool_call", t: 1.5, agent: "b", content: "paris" },
  ];
  assert.deepEqual(targetChoices(events).matches.map((e) => e.id), ["d1", "m2", "r1"]);
  assert.deepEqual(targetChoices(events, "PARIS").matches.map((e) => e.id), ["m2"]);
  assert.deepEqual(targetChoices(events, "b").matches.map((e) => e.id), ["d1", "m2", "r1"]);
  const capped = targetChoices(events, "", 2);
  assert.deepEqual([capped.matches.length, capped.total], [2, 3]);
});

test("the multi-selection toggles events and pre-checks them with the inspected one", () => {
  const empty = new Set();
  const one = toggleSelection(empty, "m1");
  const two = toggleSelection(one, "m4");
  assert.deepEqual([...empty], []);  // a new Set each time
  assert.deepEqual([...two], ["m1", "m4"]);
  assert.deepEqual([...toggleSelection(two, "m1")], ["m4"]);
  assert.deepEqual(selectedTargets(two, "m4"), ["m1", "m4"]);
  assert.deepEqual(selectedTargets(two, "m7"), ["m1", "m4", "m7"]);
  assert.deepEqual(selectedTargets(empty, "m7"), ["m7"]);
  // An event just toggled out of the selection is not put back by the inspector showing it.
  assert.deepEqual(selectedTargets(new Set(["m1"]), "m4", "m4"), ["m1"]);
  assert.deepEqual(selectedTargets(empty, "m4", "m4"), ["m4"]);
});
