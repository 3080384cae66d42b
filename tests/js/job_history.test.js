import { test } from "node:test";
import assert from "node:assert/strict";

import { formatWhen, historyLine, restorePlan } from "../../static/js/panels/job_history.js";

const jobs = [ // newest first, as the API lists them
  { id: 9, kind: "attribution", status: "running" },
  { id: 8, kind: "counterfactual", status: "failed" },
  { id: 7, kind: "attribution", status: "done" },
  { id: 6, kind: "counterfactual", status: "done" },
  { id: 5, kind: "attribution", status: "done" },
  { id: 4, kind: "counterfactual", status: "done" },
];

test("a reload shows the newest finished attribution and the newest counterfactuals again", () => {
  assert.deepEqual(restorePlan(jobs), { attribution: 7, counterfactuals: [4, 6, 8] });
  assert.deepEqual(restorePlan(jobs, 2), { attribution: 7, counterfactuals: [6, 8] });
  assert.deepEqual(restorePlan([{ id: 1, kind: "attribution", status: "failed" }]), { attribution: null, counterfactuals: [] });
  assert.deepEqual(restorePlan([]), { attribution: null, counterfactuals: [] });
});

test("history lines name what ran and how far", () => {
  assert.equal(historyLine({ kind: "attribution", method: "shapley", player_kind: "agents", done: 3, total: 8, backend: "sim" }),
    "attribution · shapley · agents · 3 / 8 samples · sim");
  assert.equal(historyLine({ kind: "counterfactual", intervention: { kind: "remove", events: ["m1", "m2"], agents: ["c"] },
    done: 32, total: 32, backend: "openai" }), "counterfactual · remove m1, m2, agent c · 32 / 32 samples · openai");
});

test("times read in UTC to the minute", () => {
  assert.equal(formatWhen("2026-11-30T01:23:45.123456+00:00"), "2026-11-30 01:23 UTC");
  assert.equal(formatWhen("2026-11-30T03:23:45+02:00"), "2026-11-30 01:23 UTC");
  assert.equal(formatWhen(null), "");
  assert.equal(formatWhen("yesterday"), "yesterday");
});
