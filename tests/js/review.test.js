import { test } from "node:test";
import assert from "node:assert/strict";

import { feedStep, groupHeading, myVote, tallyText, targetKey, targetText, threadOrder }
  from "../../static/js/panels/review.js";

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

test("feed messages: the first snapshot loads, later ones reload, newer deltas apply, referrals re-read", () => {
  const activity = { id: 7, verb: "commented", target: { kind: "trace", id: "1", trace: 1 }, data: {} };
  assert.deepEqual(feedStep(null, { type: "snapshot", seq: 5, project: 1, activities: [] }),
    { action: "load", seq: 5, activities: [] });
  assert.equal(feedStep(5, { type: "snapshot", seq: 9, project: 1, activities: [] }).action, "reload");
  // A project's seqs are Activity ids shared with other projects: a jump is not a gap.
  assert.deepEqual(feedStep(5, { type: "delta", seq: 7, project: 1, activities: [activity] }),
    { action: "apply", seq: 7, activities: [activity] });
  assert.deepEqual(feedStep(7, { type: "delta", seq: 7, project: 1, activities: [activity] }),
    { action: "ignore", seq: 7, activities: [] });
  assert.deepEqual(feedStep(7, { type: "error", code: "snapshot_too_large", seq: 12, message: "GET …" }),
    { action: "refer", seq: 12, activities: [] });
  assert.equal(feedStep(7, { type: "error", message: "expected resume" }).action, "ignore");
  assert.equal(feedStep(7, null).action, "ignore");
});

test("vote rows: one's own vote, group headings, target text", () => {
  const tally = { agree: 1, disagree: 1, votes: [{ user: "ada", value: "agree" }, { user: "ben", value: "disagree" }] };
  assert.equal(myVote(tally, "ben"), "disagree");
  assert.equal(myVote(tally, "cy"), null);
  assert.equal(myVote(undefined, "ada"), null);
  const row = { attribution: { id: 1 } };
  assert.equal(groupHeading({ job: 12, method: "loo", rows: [row, row, row] }), "Job #12 · loo · 3 attributions");
  assert.equal(groupHeading({ job: null, method: "shapley", rows: [row] }), "Stored without a job · shapley · 1 attribution");
  assert.equal(targetText("event:e5"), "event e5");
  assert.equal(targetText("agent:planner"), "agent planner");
  assert.equal(targetText("event:e1, event:e2"), "event:e1, event:e2");
});
