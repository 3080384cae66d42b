import { test } from "node:test";
import assert from "node:assert/strict";

import { attributionBody, creditColor, creditMap, targetEvent } from "../../static/js/attribution.js";

test("the request body from the form", () => {
  assert.deepEqual(attributionBody({ method: "loo", budget: "416", seed: "" }), { method: "loo", budget: 416, seed: 0 });
  assert.deepEqual(attributionBody({ method: "kernelshap", budget: 64, seed: "3" }), { method: "kernelshap", budget: 64, seed: 3 });
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
