import { test } from "node:test";
import assert from "node:assert/strict";

import { agentsAliveSeries, failureModeRows, metricDefinitions, metricText, raisedFlags } from "../../static/js/panels/metrics_panel.js";

test("agents alive pairs become sorted uPlot columns", () => {
  assert.deepEqual(agentsAliveSeries([[2, 3], [0, 1], [1, 2]]), [[0, 1, 2], [1, 2, 3]]);
  assert.deepEqual(agentsAliveSeries(undefined), [[], []]);
});

test("only raised flags are listed, with their detail", () => {
  assert.deepEqual(raisedFlags({ serial_collapse: true, free_riding: [], pseudo_parallelism: ["w1", "w2"], tokens_estimated: false }),
    [["serial_collapse", ""], ["pseudo_parallelism", '["w1","w2"]']]);
});

test("a metric that cannot be computed shows its reason instead of a number", () => {
  const computed = {
    critical_steps: 3,
    protocol_overhead: null,
    unavailable: { protocol_overhead: "the trace's 8 coordination events carry neither token counts nor content" },
  };
  assert.deepEqual(metricText(computed, "critical_steps"), { text: "3", reason: "" });
  assert.deepEqual(metricText(computed, "protocol_overhead"),
    { text: "n/a", reason: "the trace's 8 coordination events carry neither token counts nor content" });
  assert.deepEqual(metricText({ protocol_overhead: null }, "protocol_overhead"), { text: "—", reason: "" });
});

test("failure modes read raised, clear, or unavailable with the reason (free-riding needs attribution)", () => {
  const computed = {
    failure_modes: { pseudo_parallelism: true, pseudo_parallel_agents: ["w1", "w2"], serial_collapse: false,
      free_riding: null, free_riders: [] },
    unavailable: { free_riding: "needs attribution: no agent-removal effects" },
  };
  assert.deepEqual(failureModeRows(computed), [
    { name: "pseudo_parallelism", label: "Pseudo-parallelism", state: "raised", detail: "w1, w2" },
    { name: "serial_collapse", label: "Serial collapse", state: "clear", detail: "" },
    { name: "free_riding", label: "Free-riding", state: "unavailable", detail: "needs attribution: no agent-removal effects" },
  ]);
  assert.deepEqual(failureModeRows({}), []);
});

test("measured tokens and the estimate are two metrics; no measurement reads n/a with its reason", () => {
  assert.deepEqual(metricText({ tokens: 1071, estimated_tokens: 513 }, "tokens"), { text: "1,071", reason: "" });
  assert.deepEqual(metricText({ tokens: 1071, estimated_tokens: 513 }, "estimated_tokens"), { text: "~513 est.", reason: "" });
  const why = "no measured token usage: the source reports none (~6690 estimated from content ...)";
  assert.deepEqual(metricText({ tokens: null, estimated_tokens: 6690, unavailable: { tokens: why } }, "tokens"), { text: "n/a", reason: why });
});

test("the definitions of the shown metrics and failure modes are listed in card order", () => {
  const computed = { total_steps: 4, critical_steps: 2, estimated_tokens: 0, custom: 1, failure_modes: { serial_collapse: false } };
  const defs = metricDefinitions(computed);
  assert.deepEqual(defs.map((d) => d.key), ["critical_steps", "total_steps", "serial_collapse"]);
  assert.match(defs[0].help, /longest chain of steps/);
  assert.equal(defs[2].label, "Serial collapse");
  assert.deepEqual(metricDefinitions({}), []);
});
