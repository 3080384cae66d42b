import { test } from "node:test";
import assert from "node:assert/strict";

import { splitCodeBlocks } from "../../static/js/panels/inspector.js";

test("fenced code blocks are split from prose, with their language", () => {
  const parts = splitCodeBlocks("Run this:\n```python\nprint(1)\n```\nthen <b>stop</b>.");
  assert.deepEqual(parts, [
    { kind: "text", text: "Run this:\n" },
    { kind: "code", lang: "python", text: "print(1)" },
    { kind: "text", text: "\nthen <b>stop</b>." },
  ]);
});

test("an unclosed fence runs to the end", () => {
  assert.deepEqual(splitCodeBlocks("```\nls -la\nmore"), [{ kind: "code", lang: "", text: "ls -la\nmore" }]);
});

test("a JSON object is pretty-printed as one code block; broken JSON stays prose", () => {
  assert.deepEqual(splitCodeBlocks('{"a":[1,2]}'), [{ kind: "code", lang: "json", text: '{\n  "a": [\n    1,\n    2\n  ]\n}' }]);
  assert.deepEqual(splitCodeBlocks("{not json}"), [{ kind: "text", text: "{not json}" }]);
});
