import { test } from "node:test";
import assert from "node:assert/strict";

import { formatNumber, formatPercent, formatSeconds, formatValue, tokenFigure, tokensEstimated } from "../../static/js/lib/format.js";

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

test("a trace's tokens read measured, or as an estimate marked as one (services.token_figure)", () => {
  assert.deepEqual(tokenFigure(744, 0), { text: "744", estimated: false, title: "measured token usage, as the source reported it" });
  const both = tokenFigure(744, 1346);
  assert.equal(both.text, "744");
  assert.ok(!both.estimated && both.title.includes("~1346 more estimated") && both.title.includes("not counted"));
  assert.deepEqual(tokenFigure(0, 0).text, "0");
  const guess = tokenFigure(null, 6690);
  assert.equal(guess.text, "~6690 est.");
  assert.ok(guess.estimated && guess.title.startsWith("estimate:"));
  assert.deepEqual(tokenFigure(undefined, undefined), { text: "–", estimated: false, title: "no token usage reported" });
});

test("an event's tokens are an estimate when the importer flagged them", () => {
  assert.ok(tokensEstimated({ tokens: 7, attributes: { tokens_estimated: true } }));
  assert.ok(!tokensEstimated({ tokens: 7, attributes: {} }) && !tokensEstimated({ tokens: 7 }));
});
