import { test } from "node:test";
import assert from "node:assert/strict";

import { formatNumber, formatPercent, formatSeconds, formatValue } from "../../static/js/lib/format.js";

test("seconds read as ms, s or m:ss", () => {
  assert.equal(formatSeconds(0), "0 s");
  assert.equal(formatSeconds(0.25), "250 ms");
  assert.equal(formatSeconds(12.3456), "12.35 s");
  assert.equal(formatSeconds(185), "3:05");
});

test("numbers, shares and values", () => {
  assert.equal(formatNumber(12345), "12,345");
  assert.equal(formatNumber(0.123456), "0.123");
  assert.equal(formatNumber(null), "—");
  assert.equal(formatPercent(0.125), "12.5 %");
  assert.equal(formatValue(true), "yes");
  assert.equal(formatValue({ a: 1 }), '{"a":1}');
});
