import { test } from "node:test";
import assert from "node:assert/strict";

import { creditColor } from "../../static/js/lib/palette.js";

test("credit colours run from red through grey to green", () => {
  assert.equal(creditColor(0), "#ced4da");
  assert.equal(creditColor(1), "#2f9e44");
  assert.equal(creditColor(-1), "#e03131");
  assert.equal(creditColor(5), "#2f9e44");
  assert.equal(creditColor(Number.NaN), "#ced4da");
});
