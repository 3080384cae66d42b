import { test } from "node:test";
import assert from "node:assert/strict";

import { insertMention, matchMembers, mentionAt } from "../../static/js/model/mentions.js";

test("a mention is typed after an @ that starts a word, up to the caret", () => {
  assert.deepEqual(mentionAt("@", 1), { start: 0, query: "" });
  assert.deepEqual(mentionAt("Looks off, @be", 14), { start: 11, query: "be" });
  assert.deepEqual(mentionAt("(@ann.lee", 9), { start: 1, query: "ann.lee" });
  assert.deepEqual(mentionAt("cc @bob and", 7), { start: 3, query: "bob" }); // the caret in the text
  assert.deepEqual(mentionAt("@zoë", 4), { start: 0, query: "zoë" });
  assert.equal(mentionAt("mail ann@example", 16), null); // an e-mail address, not a mention
  assert.equal(mentionAt("@@bob", 5), null);
  assert.equal(mentionAt("@bob is", 7), null); // past the name
  assert.equal(mentionAt("no at here", 5), null);
  assert.equal(mentionAt("", 0), null);
});

const MEMBERS = [
  { username: "ann", name: "Ann Lee" },
  { username: "bob", name: "Robert Annan" },
  { username: "joanna", name: "" },
  { username: "zed", name: "Zed" },
];

test("members match by user name first, then by a word of their name or inside the user name", () => {
  const names = (q, limit) => matchMembers(MEMBERS, q, limit).map((m) => m.username);
  assert.deepEqual(names(""), ["ann", "bob", "joanna", "zed"]);
  assert.deepEqual(names("AN"), ["ann", "bob", "joanna"]); // ann by user name; Robert Annan; jo-ann-a
  assert.deepEqual(names("rob"), ["bob"]);
  assert.deepEqual(names("an", 2), ["ann", "bob"]);
  assert.deepEqual(names("x"), []);
});

test("picking a member replaces what was typed with the whole mention and a space", () => {
  const text = "Too high, @b";
  const picked = insertMention(text, mentionAt(text, 12), 12, "bob");
  assert.deepEqual(picked, { text: "Too high, @bob ", caret: 15 });
  const middle = "cc @an and @bob";
  assert.deepEqual(insertMention(middle, mentionAt(middle, 6), 6, "ann"), { text: "cc @ann and @bob", caret: 7 });
  assert.deepEqual(insertMention("@", { start: 0, query: "" }, 1, "zed"), { text: "@zed ", caret: 5 });
});
