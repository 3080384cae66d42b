import assert from "node:assert/strict";
import test from "node:test";

import { compareMetrics, pickMetric } from "../../static/js/model/compare_metric.js";

test("compareMetrics adds the sweep's metrics after the chart series, each once", () => {
  assert.deepEqual(compareMetrics(["reward", "task_reward", "entropy"]), ["reward", "task_reward", "entropy", "expected_success"]);
});

test("pickMetric takes ?metric= when offered, else the first metric", () => {
  const metrics = compareMetrics(["reward", "success_rate"]);
  assert.equal(pickMetric("?groups=a&metric=expected_success", metrics), "expected_success");
  assert.equal(pickMetric("?metric=nonsense", metrics), "reward");
  assert.equal(pickMetric("", metrics), "reward");
});
