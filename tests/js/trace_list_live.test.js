import { test } from "node:test";
import assert from "node:assert/strict";

import { formatDuration, formatReward, ListRows, matchesFilters, truncate } from "../../static/js/lib/trace_list_live.js";

const row = {
  id: 7, project: 1, name: "Streamed run", system: "swarmsim", source_format: "api", kind: "streamed",
  derived_from: "", session_id: "", seq: 3, labels: "", reward: null, duration_s: 2.25,
};

test("a pushed row passes the page's filters like the server's ListFilters", () => {
  assert.ok(matchesFilters(row, { kinds: ["imported", "streamed"] }));
  assert.ok(!matchesFilters({ ...row, kind: "branch" }, { kinds: ["imported", "streamed"] }));
  assert.ok(!matchesFilters(row, { formats: ["native"] }));
  assert.ok(matchesFilters(row, { systems: ["swarmsim"], projects: [1], outcome: "none", label: "no" }));
  assert.ok(!matchesFilters(row, { label: "yes" }));
  assert.ok(!matchesFilters(row, { outcome: "success" }));
  assert.ok(matchesFilters({ ...row, reward: 0 }, { outcome: "failure" }));
  assert.ok(matchesFilters(row, { query: "STREAMED" }));
  assert.ok(!matchesFilters(row, { query: "nothing" }));
  assert.ok(!matchesFilters(row, { derived_from: "trace:1" }));
  // a model, errors, time or range filter: the row's facts come later, so it is never guessed in
  assert.ok(!matchesFilters(row, { kinds: ["streamed"], server_only: true }));
});

test("a row is an upsert: an older row of a trace is ignored", () => {
  const rows = new ListRows();
  rows.know(7, 3);
  assert.ok(!rows.accept({ ...row, seq: 2 }));
  assert.ok(rows.accept({ ...row, seq: 4 }));
  assert.ok(rows.accept({ ...row, id: 8, seq: 1 }) && rows.known(8));
});

test("cells read as the server renders them", () => {
  assert.equal(formatDuration({ ...row, duration_s: 2.5 }), "2.5 s");
  assert.equal(formatDuration({ ...row, synthetic_time: true, duration_s: 4 }), "4.0 steps");
  assert.equal(formatReward(null), "–");
  assert.equal(formatReward(0.5), "0.50");
  assert.equal(truncate("abcdef", 4), "abc…");
});
