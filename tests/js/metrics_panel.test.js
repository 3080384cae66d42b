import { test } from "node:test";
import assert from "node:assert/strict";

import { agentsAliveSeries, raisedFlags } from "../../static/js/panels/metrics_panel.js";

test("agents alive pairs become sorted uPlot columns", () => {
  assert.deepEqual(agentsAliveSeries([[2, 3], [0, 1], [1, 2]]), [[0, 1, 2], [1, 2, 3]]);
  assert.deepEqual(agentsAliveSeries(undefined), [[], []]);
});

test("only raised flags are listed, with their detail", () => {
  assert.deepEqual(raisedFlags({ serial_collapse: true, free_riding: [], pseudo_parallelism: ["w1", "w2"], tokens_estimated: false }),
    [["serial_collapse", ""], ["pseudo_parallelism", '["w1","w2"]']]);
});
