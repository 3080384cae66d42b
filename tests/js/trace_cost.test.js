import { test } from "node:test";
import assert from "node:assert/strict";

import { costFigure, formatUsd } from "../../static/js/lib/format.js";
import { renderCost } from "../../static/js/panels/trace_facts.js";

test("dollars read as the server writes them (webapp.traces.prices.format_usd)", () => {
  assert.equal(formatUsd(0.00131), "$0.0013");
  assert.equal(formatUsd(0.002), "$0.0020");
  assert.equal(formatUsd(0.1612), "$0.16");
  assert.equal(formatUsd(4.5), "$4.50");
  assert.equal(formatUsd(1204.4), "$1,204");
  assert.equal(formatUsd(0), "$0");
  assert.equal(formatUsd(null), "");
});

test("the cost marks estimates with ~, an unpriced model is never $0, no model no cost", () => {
  const cost = (usd, estimated = false, unknown = []) => ({ usd, estimated, models: ["m"], unknown_models: unknown });
  assert.equal(costFigure(cost(0.5)).text, "$0.50");
  assert.equal(costFigure(cost(0.5, true)).text, "~$0.50");
  assert.match(costFigure(cost(0.5, true)).title, /estimates/);
  assert.equal(costFigure(cost(0.5, true, ["x-1"])).text, "~$0.50+", "a model without a price: at least this");
  const unknown = costFigure(cost(null, false, ["in-house-7b"]));
  assert.equal(unknown.text, "unknown model");
  assert.match(unknown.title, /no price for in-house-7b/);
  assert.equal(costFigure(cost(null)).text, "");
  assert.equal(costFigure(undefined).text, "");
});

test("the header's cost follows the trace summary and hides without a model", () => {
  const classes = new Set();
  const root = { hidden: false, textContent: "", title: "",
    classList: { toggle: (name, on) => (on ? classes.add(name) : classes.delete(name)) } };
  renderCost(root, { cost: { usd: 0.1612, estimated: true, models: ["gpt-4o"], unknown_models: [] } });
  assert.equal(root.textContent, "· ~$0.16");
  assert.equal(root.hidden, false);
  assert.ok(classes.has("estimate"));
  renderCost(root, { cost: { usd: null, estimated: false, models: ["x"], unknown_models: ["x"] } });
  assert.equal(root.textContent, "· unknown model");
  assert.ok(classes.has("unknown") && !classes.has("estimate"));
  renderCost(root, { cost: { usd: null, estimated: false, models: [], unknown_models: [] } });
  assert.equal(root.hidden, true);
});
