import { test } from "node:test";
import assert from "node:assert/strict";

import { CONTENT_FROM_INPUT_TITLE, contentFromInput, contentLabel, emptyTraceText, formatNumber, formatPercent, formatSeconds, formatValue,
  localizeNumbers, tokenFigure, tokensEstimated } from "../../static/js/lib/format.js";
import { eventSignature } from "../../static/js/panels/compare.js";

test("seconds read as ms, s or m:ss", () => {
  assert.equal(formatSeconds(0), "0 s");
  assert.equal(formatSeconds(0.25), "250 ms");
  assert.equal(formatSeconds(12.3456), "12.35 s");
  assert.equal(formatSeconds(185), "3:05");
});

test("numbers, shares and values", () => {
  assert.equal(formatNumber(12345, "en-US"), "12,345");
  assert.equal(formatNumber(12345, "de-DE"), "12.345"); // the locale's grouping, not a fixed comma
  assert.equal(formatNumber(1234.56, "fr-FR"), "1\u202f235");
  assert.equal(formatNumber(0.123456, "en-US"), "0.123");
  assert.equal(formatNumber(0.123456, "de-DE"), "0,123");
  assert.equal(formatNumber(12345), new Intl.NumberFormat().format(12345)); // by default the browser's own
  assert.equal(formatNumber(null), "—");
  assert.equal(formatPercent(0.125), "12.5 %");
  assert.equal(formatValue(true), "yes");
  assert.equal(formatValue({ a: 1 }), '{"a":1}');
});

test("a trace's tokens read measured, or as an estimate marked as one (services.token_figure)", () => {
  assert.deepEqual(tokenFigure(744, 0), { text: "744", estimated: false, title: "measured token usage, as the source reported it" });
  const both = tokenFigure(744, 1346);
  assert.equal(both.text, "744");
  assert.ok(!both.estimated && both.title.includes("~1,346 more estimated") && both.title.includes("not counted"));
  assert.deepEqual(tokenFigure(0, 0).text, "0");
  const guess = tokenFigure(null, 6690);
  assert.equal(guess.text, "~6,690 est."); // node's locale here: en-US
  assert.ok(guess.estimated && guess.title.startsWith("estimate:"));
  assert.deepEqual(tokenFigure(undefined, undefined), { text: "–", estimated: false, title: "no token usage reported" });
});

test("token figures and server-rendered counts read in the same number format", () => {
  const grouped = (n) => new Intl.NumberFormat().format(n);
  assert.equal(tokenFigure(1234567, 0).text, grouped(1234567));
  assert.equal(tokenFigure(null, 66900).text, `~${grouped(66900)} est.`);
  assert.ok(tokenFigure(12, 45678).title.includes(`~${grouped(45678)} more estimated`));
  // localizeNumbers rewrites what carries data-number (a minimal DOM: what it reads and writes).
  const cells = [{ dataset: { number: "250000" }, textContent: "250000" }, { dataset: { number: "" }, textContent: "–" },
    { dataset: { number: "n/a" }, textContent: "n/a" }];
  localizeNumbers({ querySelectorAll: (selector) => (selector === "[data-number]" ? cells : []) });
  assert.deepEqual(cells.map((c) => c.textContent), [grouped(250000), "–", "n/a"]);
});

test("an event's tokens are an estimate when the importer flagged them", () => {
  assert.ok(tokensEstimated({ tokens: 7, attributes: { tokens_estimated: true } }));
  assert.ok(!tokensEstimated({ tokens: 7, attributes: {} }) && !tokensEstimated({ tokens: 7 }));
});

test("content taken from an event's input is marked as such, never as what the agent said", () => {
  const prompt = { id: "e1", agent: "visa_agent", type: "message", content: "User did not respond.",
    attributes: { content_from: "input" } };
  const said = { ...prompt, attributes: { model: "gpt-4o" } };
  assert.equal(contentFromInput(prompt), true);
  assert.equal(contentFromInput(said), false);
  assert.equal(contentFromInput({ id: "e2" }), false);
  assert.equal(contentLabel(prompt, "User did not respond."), "[input] User did not respond.");
  assert.equal(contentLabel(said, "User did not respond."), "User did not respond.");
  assert.equal(contentLabel(prompt, ""), "");
  assert.match(CONTENT_FROM_INPUT_TITLE, /no output recorded/);
  // compare: the prompt an agent received is not the same event as that text said by it
  assert.notEqual(eventSignature(prompt), eventSignature(said));
  assert.equal(eventSignature(prompt), eventSignature({ ...prompt, id: "e9" }));
});

test("an empty trace says why: live, spans none of which the conventions read, or nothing", () => {
  assert.equal(emptyTraceText({ live: true, attributes: { spans: 4 } }), "No events yet: waiting for the swarm to send some…");
  assert.match(emptyTraceText({ live: false, attributes: { spans: 4 } }), /^This trace has no events: none of its 4 spans is an agent/);
  assert.match(emptyTraceText({ attributes: { spans: 1 } }), /none of its 1 span is/);
  assert.equal(emptyTraceText({ attributes: {} }), "This trace has no events.");
  assert.equal(emptyTraceText(null), "This trace has no events.");
});
