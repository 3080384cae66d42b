// The compare page's sweep-summary data (static/js/model/compare_metric.js): the server's
// [mean, low, high] cells become uPlot columns mean, high, low per arm, null where an arm has no runs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { seriesN, sweepPlotData } from "../../static/js/model/compare_metric.js";

const summary = {
  n: [4, 16],
  final: "held_out",
  targets: [0.6, null],
  arms: [
    { arm: "shared", final: [[0.6, 0.5, 0.7], [0.3, 0.2, 0.4]], steps: [[600, 300, 900], null] },
    { arm: "shapley", final: [[0.8, 0.75, 0.85], null], steps: [[400, 100, 700], null] },
  ],
};

test("each arm gives its mean, high and low columns against n", () => {
  const { data, arms } = sweepPlotData(summary, "final");
  assert.deepEqual(arms, ["shared", "shapley"]);
  assert.deepEqual(data, [[4, 16], [0.6, 0.3], [0.7, 0.4], [0.5, 0.2], [0.8, null], [0.85, null], [0.75, null]]);
  assert.deepEqual(sweepPlotData(summary, "steps").data[1], [600, null]);
});

test("a series' n is its first run's n_subtasks, else null", () => {
  assert.equal(seriesN({ runs: [{ run: { config: { n_subtasks: 16 } } }] }), 16);
  assert.equal(seriesN({ runs: [{ run: { config: {} } }] }), null);
  assert.equal(seriesN({ runs: [] }), null);
});
