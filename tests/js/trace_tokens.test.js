import { test } from "node:test";
import assert from "node:assert/strict";

import { renderTokens } from "../../static/js/panels/trace_facts.js";

/** The few element features renderTokens uses, without a browser. */
function fakeElement(tag) {
  return {
    tag, textContent: "", className: "", title: "", hidden: false, dataset: {}, children: [],
    replaceChildren(...nodes) { this.children = nodes; },
    get text() { return this.children.map((c) => (typeof c === "string" ? c : c.textContent)).join(""); },
  };
}
globalThis.document = { createElement: fakeElement };

test("the page header shows the measured tokens, the estimate apart, kept up to date", () => {
  const root = fakeElement("span");
  renderTokens(root, { total_tokens: 1071, estimated_tokens: 513 });
  assert.equal(root.text, "· 1,071 tokens (~513 est. apart)");
  assert.equal(root.children[1].className, "");
  assert.equal(root.children[3].className, "estimate muted");
  assert.deepEqual([root.dataset.measured, root.dataset.estimated, root.hidden], ["1071", "513", false]);
  renderTokens(root, { total_tokens: 1200, estimated_tokens: 0 });  // a delta
  assert.equal(root.text, "· 1,200 tokens");
});

test("a trace without measurement shows its estimate marked; one with neither is hidden", () => {
  const root = fakeElement("span");
  renderTokens(root, { total_tokens: null, estimated_tokens: 6690 });
  assert.equal(root.text, "· ~6,690 est. tokens");
  assert.equal(root.children[1].className, "estimate");
  assert.ok(root.children[1].title.startsWith("estimate:"));
  renderTokens(root, { total_tokens: null, estimated_tokens: 0 });
  assert.ok(root.hidden);
});
