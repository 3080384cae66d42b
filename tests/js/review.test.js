import { test } from "node:test";
import assert from "node:assert/strict";

import { tallyText, targetKey, threadOrder } from "../../static/js/review.js";

const comment = (id, kind, targetId, parent = null) => ({ id, parent, target: { kind, id: targetId, trace: 1 } });

test("target keys", () => {
  assert.equal(targetKey({ kind: "trace", id: "1" }), "trace");
  assert.equal(targetKey({ kind: "event", id: "e5", trace: 1 }), "event:e5");
  assert.equal(targetKey({ kind: "attribution", id: "7" }), "attribution:7");
});

test("threads: replies follow their parent, deeper; other targets are left out", () => {
  const comments = [comment(1, "event", "e5"), comment(2, "trace", "1"), comment(3, "event", "e5"),
    comment(4, "event", "e5", 1), comment(5, "event", "e5", 4), comment(6, "event", "e7")];
  assert.deepEqual(threadOrder(comments, "event:e5").map(({ comment: c, depth }) => [c.id, depth]),
    [[1, 0], [4, 1], [5, 2], [3, 0]]);
  // A reply whose parent is not among them (another page of comments) is shown at the top level.
  assert.deepEqual(threadOrder([comment(9, "trace", "1", 42)], "trace").map((r) => r.depth), [0]);
});

test("vote tally", () => {
  assert.equal(tallyText(undefined), "No votes yet");
  assert.equal(tallyText({ agree: 0, disagree: 0 }), "No votes yet");
  assert.equal(tallyText({ agree: 2, disagree: 1 }), "2 agree · 1 disagree");
});
