import { test } from "node:test";
import assert from "node:assert/strict";

import { LIGHT_CHART, chartColors, themedAxes } from "../../static/js/lib/chart_theme.js";

const style = (vars) => ({ getPropertyValue: (name) => vars[name] ?? "" });

test("chart colours come from the CSS variables, light defaults where unset", () => {
  assert.deepEqual(chartColors(style({ "--chart-axis": " #c3cad3", "--chart-grid": "rgba(255, 255, 255, 0.1)" })),
    { axis: "#c3cad3", grid: "rgba(255, 255, 255, 0.1)" });
  assert.deepEqual(chartColors(style({})), { ...LIGHT_CHART });
  assert.deepEqual(chartColors(null), { ...LIGHT_CHART });
});

test("axes take the theme's colours; what an axis sets itself wins", () => {
  const colors = { axis: "#eee", grid: "#333" };
  const [x, right] = themedAxes([{ label: "env steps" }, { side: 1, grid: { show: false } }], colors);
  assert.equal(x.stroke, "#eee");
  assert.deepEqual(x.grid, { stroke: "#333", width: 1 });
  assert.deepEqual(x.ticks, { stroke: "#333", width: 1 });
  assert.equal(x.label, "env steps");
  assert.deepEqual(right.grid, { stroke: "#333", width: 1, show: false });
  assert.equal(themedAxes([{ stroke: "red" }], colors)[0].stroke, "red");
});
