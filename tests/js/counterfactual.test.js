import { test } from "node:test";
import assert from "node:assert/strict";

import { describeIntervention, formatDelta, requestBody } from "../../static/js/counterfactual.js";

test("interventions read as webapp.core describes them", () => {
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
