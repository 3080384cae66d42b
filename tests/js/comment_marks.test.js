import { test } from "node:test";
import assert from "node:assert/strict";

import {
  commentsText, eventCommentCounts, laneCommentCounts,
} from "../../static/js/model/comment_marks.js";

const comment = (id, target, extra = {}) => ({ id, target, deleted: false, parent: null, ...extra });

test("comments are counted per event of this trace; deleted ones and other targets are not", () => {
  const comments = [
    comment(1, { kind: "event", id: "e1", trace: 7 }),
    comment(2, { kind: "event", id: "e1", trace: 7 }, { parent: 1 }),
    comment(3, { kind: "event", id: "e2", trace: 7 }, { deleted: true }),
    comment(4, { kind: "trace", id: "7", trace: 7 }),
    comment(5, { kind: "attribution", id: "12", trace: 7 }),
    comment(6, { kind: "event", id: "e9", trace: 8 }),
  ];
  assert.deepEqual([...eventCommentCounts(comments, 7)], [["e1", 2]]);
  assert.deepEqual([...eventCommentCounts(comments, "7")], [["e1", 2]]);
});

test("lanes add up their events' comments; events not held count nowhere", () => {
  const counts = new Map([["e1", 2], ["e2", 1], ["e3", 4]]);
  const agents = { e1: "planner", e2: "planner", e3: null };
  assert.deepEqual([...laneCommentCounts(counts, (id) => agents[id])], [["planner", 3]]);
  assert.equal(commentsText(1), "1 comment");
  assert.equal(commentsText(3), "3 comments");
});
