import { test } from "node:test";
import assert from "node:assert/strict";

import { insertionIndex, minuteOf, VERB_TEXT, verbText } from "../../static/js/lib/activity_feed.js";

test("a live activity reads as the review page's server-rendered one", () => {
  assert.equal(verbText({ verb: "set_status", data: { status: "done" } }), "set the review status");
  assert.equal(verbText({ verb: "voted", data: { value: 1 } }), "voted");
  assert.equal(verbText({ verb: "voted", data: { value: null } }), "withdrew a vote");
  assert.equal(verbText({ verb: "voted", data: {} }), "withdrew a vote");
  assert.equal(verbText({ verb: "renamed", data: {} }), "renamed", "an unknown verb reads as itself");
  assert.equal(Object.keys(VERB_TEXT).length, 6);
  assert.equal(minuteOf("2026-01-02T13:04:59.123456+00:00"), "2026-01-02 13:04");
  assert.equal(minuteOf(null), "");
});

test("a new activity goes above the first older one, once", () => {
  assert.equal(insertionIndex([], 5), 0);
  assert.equal(insertionIndex([9, 7, 3], 10), 0);
  assert.equal(insertionIndex([9, 7, 3], 8), 1);
  assert.equal(insertionIndex([9, 7, 3], 1), 3);
  assert.equal(insertionIndex([9, 7, 3], 7), -1);
  // snapshots of two projects arriving one after the other end newest first
  const ids = [];
  for (const id of [4, 6, 2, 5, 3]) ids.splice(insertionIndex(ids, id), 0, id);
  assert.deepEqual(ids, [6, 5, 4, 3, 2]);
});
