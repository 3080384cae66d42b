import { test } from "node:test";
import assert from "node:assert/strict";

import { RowHeights } from "../../static/js/lib/windowing.js";
import {
  contentText, estimateRowHeight, FOLD_LINES, lineCount, mistakeEventId, nextHit, pairToolCalls, queryPattern,
  ROW_LAYOUT, searchRows, snippet, traceFacts, wordsPattern,
} from "../../static/js/lib/transcript_data.js";
import { clampWidth } from "../../static/js/lib/resizer.js";
import { markdownHtml, prettyJson } from "../../static/js/lib/markdown.js";

// ---------------------------------------------------------------- windowing

test("offsets are prefix sums of the heights; indexAt finds the row under a y", () => {
  const h = new RowHeights(10);
  h.reset(5, (i) => [10, 20, 30, 40, 50][i]);
  assert.equal(h.total, 150);
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((i) => h.offset(i)), [0, 10, 30, 60, 100, 150]);
  assert.equal(h.indexAt(-5), 0);
  assert.equal(h.indexAt(0), 0);
  assert.equal(h.indexAt(9.9), 0);
  assert.equal(h.indexAt(10), 1);
  assert.equal(h.indexAt(59), 2);
  assert.equal(h.indexAt(60), 3);
  assert.equal(h.indexAt(1000), 4);
  assert.equal(new RowHeights().indexAt(0), -1);
});

test("set() updates the offsets of the rows below, and says whether anything changed", () => {
  const h = new RowHeights(10);
  h.reset(4);
  assert.equal(h.total, 40);
  assert.equal(h.set(1, 10), false);
  assert.equal(h.set(1, 30), true);
  assert.equal(h.offset(2), 40);
  assert.equal(h.total, 60);
  assert.equal(h.set(9, 5), false); // out of range
});

test("range() covers the viewport plus the overscan, and nothing past the rows", () => {
  const h = new RowHeights(20);
  h.reset(30000);
  assert.deepEqual(h.range(0, 100, 0), { start: 0, end: 6 });
  assert.deepEqual(h.range(1000, 100, 0), { start: 50, end: 56 });
  assert.deepEqual(h.range(1000, 100, 40), { start: 48, end: 58 });
  const end = h.range(h.total - 100, 100, 200);
  assert.equal(end.end, 30000);
  assert.ok(end.end - end.start <= 16);
  assert.deepEqual(new RowHeights().range(0, 100, 0), { start: 0, end: 0 });
});

test("at 30,000 rows the window stays a few dozen rows wherever it is", () => {
  const h = new RowHeights();
  h.reset(30000, (i) => 40 + (i % 7) * 30);
  for (const y of [0, 12345, h.total / 2, h.total - 900]) {
    const { start, end } = h.range(y, 900, 800);
    assert.ok(end - start < 80, `${end - start} rows at ${y}`);
    assert.ok(h.offset(start) <= y && h.offset(end) >= Math.min(h.total, y + 900));
  }
});

test("scrollTopFor: nearest moves the least, center centres, start tops; clamped", () => {
  const h = new RowHeights(50);
  h.reset(100);
  assert.equal(h.scrollTopFor(3, 200, "nearest", 100), 100); // 150..200 already in view
  assert.equal(h.scrollTopFor(10, 200, "nearest", 100), 350); // below: its bottom at the bottom
  assert.equal(h.scrollTopFor(1, 200, "nearest", 100), 50); // above: at the top
  assert.equal(h.scrollTopFor(10, 200, "center", 0), 425);
  assert.equal(h.scrollTopFor(10, 200, "start", 0), 500);
  assert.equal(h.scrollTopFor(0, 200, "center", 0), 0);
  assert.equal(h.scrollTopFor(99, 200, "start", 0), 4800); // max scroll
  h.set(20, 500); // taller than the viewport: its top
  assert.equal(h.scrollTopFor(20, 200, "center", 0), 1000);
});

// ---------------------------------------------------------------- pairing, search, facts

test("tool calls pair with their results over tool_dependency edges only", () => {
  const edges = [
    { src: "h1", dst: "h2", type: "temporal" },
    { src: "h1", dst: "h2", type: "tool_dependency" },
    { src: "h1", dst: "h4", type: "tool_dependency" },
    { src: "h3", dst: "h4", type: "tool_dependency" }, // a second call for h4: the first wins
    { src: "h5", dst: "missing", type: "tool_dependency" },
    { src: "h6", dst: "h6", type: "tool_dependency" },
    { src: "h2", dst: "h3", type: "message" },
  ];
  const known = new Set(["h1", "h2", "h3", "h4", "h5", "h6"]);
  const { resultsOf, callOf } = pairToolCalls(edges, (id) => known.has(id));
  assert.deepEqual([...resultsOf], [["h1", ["h2", "h4"]]]);
  assert.deepEqual([...callOf], [["h2", "h1"], ["h4", "h1"]]);
});

test("search finds rows by their lower-case text, in order; nextHit wraps", () => {
  const ids = ["a", "b", "c", "d"];
  const text = { a: "hello world", b: "nothing", c: "Say HELLO", d: "hello again" };
  const textOf = (id) => text[id].toLowerCase();
  assert.deepEqual(searchRows(ids, textOf, "  Hello "), [0, 2, 3]);
  assert.deepEqual(searchRows(ids, textOf, ""), []);
  assert.deepEqual(searchRows(ids, textOf, "zzz"), []);
  const hits = [0, 2, 3];
  assert.equal(nextHit(hits, null, 1), 0);
  assert.equal(nextHit(hits, null, -1), 3);
  assert.equal(nextHit(hits, 0, 1), 2);
  assert.equal(nextHit(hits, 1, 1), 2); // from a row that is not a hit
  assert.equal(nextHit(hits, 3, 1), 0); // wraps
  assert.equal(nextHit(hits, 0, -1), 3);
  assert.equal(nextHit(hits, 2, -1), 0);
  assert.equal(nextHit(hits, 1, -1), 0);
  assert.equal(nextHit([], 0, 1), -1);
});

test("a content search's words mark whole words (a word* its prefix), case-insensitive", () => {
  const marks = (pattern, text) => [...text.matchAll(pattern)].map((m) => m[0]);
  const text = "Paris is the capital; a comparison of capitals (PARIS) in Île-de-France, 2024.";
  assert.deepEqual(marks(wordsPattern("paris"), text), ["Paris", "PARIS"]); // not inside "comparison"
  assert.deepEqual(marks(wordsPattern("Paris, capit*"), text), ["Paris", "capital", "capitals", "PARIS"]);
  assert.deepEqual(marks(wordsPattern("île 2024"), text), ["Île", "2024"]);
  assert.deepEqual(marks(wordsPattern("a.b (c)"), "a.b c a b"), ["a", "b", "c", "a", "b"]); // punctuation is no pattern
  assert.equal(wordsPattern(" ,;* "), null);
  // The transcript's own search marks the text as typed, inside words too.
  assert.deepEqual(marks(queryPattern(" Aris "), text), ["aris", "aris", "ARIS"]);
  assert.deepEqual(marks(queryPattern("(PARIS)"), text), ["(PARIS)"]);
  assert.equal(queryPattern("  "), null);
});

test("snippets cut around the match and flatten whitespace", () => {
  const text = `${"x".repeat(100)} the\n\nNeedle is here ${"y".repeat(100)}`;
  const s = snippet(text, "needle", 10);
  assert.equal(s.match, "Needle");
  assert.ok(s.before.startsWith("…") && s.before.endsWith("the "));
  assert.ok(s.after.startsWith(" is here") && s.after.endsWith("…"));
  assert.deepEqual(snippet("short text", "absent", 10), { before: "", match: "", after: "short text" });
  assert.equal(snippet("a".repeat(50), "", 10).after, `${"a".repeat(20)}…`);
});

test("content as text, line counts and height estimates fold long content", () => {
  assert.equal(contentText({ content: "hi" }), "hi");
  assert.equal(contentText({ content: { a: 1 } }), '{\n  "a": 1\n}');
  assert.equal(contentText({}), "");
  assert.equal(lineCount(""), 0);
  assert.equal(lineCount("a\nb", 70), 2);
  assert.equal(lineCount("x".repeat(141), 70), 3);
  const L = ROW_LAYOUT;
  const long = "line\n".repeat(50);
  assert.equal(estimateRowHeight("one line"), L.header + L.padding + L.line);
  assert.equal(estimateRowHeight(long), L.header + L.padding + FOLD_LINES * L.line + L.more);
  assert.equal(estimateRowHeight(long, { expanded: true }), L.header + L.padding + lineCount(long) * L.line + L.more);
  assert.equal(estimateRowHeight("x", { paired: 2 }), L.header + L.padding + L.line + 2 * L.pair);
});

test("trace facts: Who&When question, ground truth, outcome and the mistake with its reason", () => {
  const trace = { attributes: { question: "What is 6 times 7?", ground_truth: "42", is_corrected: false, level: 1 }, reward: null };
  const labels = [
    { key: "mistake_agent", value: "websurfer", agent: "WebSurfer", event_id: null },
    { key: "mistake_step", value: "3", agent: null, event_id: "h3" },
    { key: "mistake_reason", value: "WebSurfer misread the page.", agent: null, event_id: null },
    { key: "note", value: { a: 1 }, agent: null, event_id: null },
  ];
  const facts = traceFacts(trace, labels);
  assert.equal(facts.question, "What is 6 times 7?");
  assert.equal(facts.groundTruth, "42");
  assert.equal(facts.outcomeOk, false);
  assert.match(facts.outcome, /incorrect \(is_corrected: false\)/);
  assert.deepEqual(facts.mistake, { agent: "WebSurfer", step: "3", eventId: "h3", reason: "WebSurfer misread the page." });
  assert.equal(facts.labels.at(-1).value, '{"a":1}');
  assert.equal(mistakeEventId(labels), "h3");
  assert.equal(mistakeEventId([]), null);

  const ag = traceFacts({ attributes: { is_correct: "True" }, reward: 0.5 }, []);
  assert.equal(ag.outcomeOk, true);
  assert.equal(ag.outcome, "correct (is_correct: True) · reward 0.5");
  assert.equal(ag.mistake, null);
  assert.equal(traceFacts(null, []).question, "");
  // SwarmSim's `task` is an object with no text: the header names it, not its JSON
  const sim = { id: "pivot-12/0", level: "pivot-12", subtasks: [[0, 0.3, []], [1, 0.5, [0]]] };
  assert.equal(traceFacts({ attributes: { task: sim } }, []).question, "pivot-12/0: 2 subtasks (level pivot-12)");
  assert.equal(traceFacts({ attributes: { task: { text: "Plan the release" } } }, []).question, "Plan the release");
});

test("resizer widths are clamped and whole", () => {
  assert.equal(clampWidth(100, 240, 900), 240);
  assert.equal(clampWidth(1000.4, 240, 900), 900);
  assert.equal(clampWidth(300.6, 240, 900), 301);
});

test("markdown: JSON is pretty-printed; without the browser libraries there is no HTML (plain text)", () => {
  assert.equal(prettyJson('{"a":[1,2]}'), '{\n  "a": [\n    1,\n    2\n  ]\n}');
  assert.equal(prettyJson("{not json}"), null);
  assert.equal(prettyJson("plain"), null);
  assert.equal(markdownHtml("**bold** <script>alert(1)</script>"), null);
});
