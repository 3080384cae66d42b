import assert from "node:assert/strict";
import test from "node:test";

import { METRIC_INFO, compareCharts, compareMetrics, pickMetric } from "../../static/js/model/compare_metric.js";

test("compareMetrics adds the sweep's metrics after the chart series, each once", () => {
  assert.deepEqual(compareMetrics(["reward", "task_reward", "entropy"]), ["reward", "task_reward", "entropy", "expected_success"]);
});

test("pickMetric takes ?metric= when offered, else the first metric", () => {
  const metrics = compareMetrics(["reward", "success_rate"]);
  assert.equal(pickMetric("?groups=a&metric=expected_success", metrics), "expected_success");
  assert.equal(pickMetric("?metric=nonsense", metrics), "reward");
  assert.equal(pickMetric("", metrics), "reward");
});

test("compareCharts draws every metric, the linked one first, each with its title and units", () => {
  const metrics = compareMetrics(["reward", "success_rate", "mystery_metric"]);
  const charts = compareCharts("?metric=expected_success", metrics);
  assert.deepEqual(charts.map((c) => c.key), ["expected_success", "reward", "success_rate", "mystery_metric", "task_reward"]);
  assert.deepEqual(charts[0], { key: "expected_success", title: "Expected success E[R]", units: "probability, 0–1 (closed form)" });
  assert.deepEqual(charts[3], { key: "mystery_metric", title: "mystery metric", units: "" });
  assert.equal(compareCharts("", metrics)[0].key, "reward");
  for (const key of Object.keys(METRIC_INFO)) assert.ok(METRIC_INFO[key][1], `${key} has units`);
});
