import assert from "node:assert/strict";
import test from "node:test";

import {
  applyRunDelta, attributionIndexes, budgetSpent, curveOf, etaText, formatEta, groupBand, interpolate, iterationNumber, llmGapNote,
  llmStopNote, metricSeries, overrunNote, resumeState, runBadge, shareSeries, shouldApply, stepsText, stopCurves, stopRegretLabel,
  tQuantile975,
} from "../../static/js/model/runs_model.js";

const it = (n, steps, reward, extra = {}) => ({ iteration: n, env_steps: steps, metrics: { reward }, stop: {}, credit: {},
  episodes: [], seq: n + 1, ...extra });

test("applyRunDelta replaces the run, upserts iterations by number, and refuses old deltas", () => {
  const snap = { type: "snapshot", seq: 2, run: { status: "running" }, iterations: [it(0, 100, 0.1), it(1, 200, 0.2)] };
  const next = applyRunDelta(snap, { type: "delta", seq: 4, run: { status: "finished" },
    iterations: [it(2, 300, 0.3), it(1, 200, 0.25)] });
  assert.equal(next.seq, 4);
  assert.equal(next.run.status, "finished");
  assert.deepEqual(next.iterations.map((x) => [x.iteration, x.metrics.reward]), [[0, 0.1], [1, 0.25], [2, 0.3]]);
  assert.equal(snap.iterations.length, 2, "the old snapshot is unchanged");
  assert.throws(() => applyRunDelta(next, { type: "delta", seq: 3, run: {}, iterations: [] }));
});

test("shouldApply takes snapshots and newer deltas only", () => {
  assert.equal(shouldApply(null, { type: "snapshot", seq: 5 }), true);
  assert.equal(shouldApply(null, { type: "delta", seq: 5 }), false);
  assert.equal(shouldApply(5, { type: "delta", seq: 5 }), false);
  assert.equal(shouldApply(5, { type: "delta", seq: 9 }), true); // a folded catch-up
  assert.equal(shouldApply(5, { type: "error" }), false);
});

test("metricSeries and curveOf put env steps on x and leave missing values out", () => {
  const its = [it(0, 100, 0.5), it(1, 250, null), it(2, 400, 0.75)];
  assert.deepEqual(metricSeries(its, ["reward"]), [[100, 250, 400], [0.5, null, 0.75]]);
  assert.deepEqual(curveOf(its, "reward"), [[100, 0.5], [400, 0.75]]);
});

test("attributionIndexes draws the removal-effect free-rider index only, not the superseded credit-share one", () => {
  const its = [
    it(0, 100, 0.1, { credit: { free_rider_index: 0.8, pseudo_parallelism_index: 0.25 } }), // stored before issue 30
    it(1, 200, 0.2, { credit: { free_rider_index: 0.2, free_rider_episodes: 4, pseudo_parallelism_index: 0.5 } }),
    it(2, 300, 0.3, { credit: {} }),
  ];
  assert.deepEqual(attributionIndexes(its), [[100, 200, 300], [null, 0.2, null], [0.25, 0.5, null]]);
});

test("stopRegretLabel names the regret the iteration reports", () => {
  assert.equal(stopRegretLabel({ stop: { regret: "offered" } }), "Stop regret (offered stops)");
  assert.equal(stopRegretLabel({ stop: { regret: "hindsight" } }), "Stop regret (hindsight, superseded)");
  assert.equal(stopRegretLabel(null), "Stop regret (offered stops)");
  assert.equal(stopRegretLabel({ stop: { regret: "not_measured" } }), "Stop regret (not measured with LLM workers)");
});

test("stopCurves aligns p(stop) and the value of continuing on their steps", () => {
  const curves = stopCurves({ stop: { p_stop_by_step: [[0, 0.1], [10, 0.4]], continue_value_by_step: [[10, 0.2], [20, 0.1]] } });
  assert.deepEqual(curves, [[0, 10, 20], [0.1, 0.4, null], [null, 0.2, 0.1]]);
  assert.deepEqual(stopCurves(null), [[], [], []]);
});

test("shareSeries ranks names by total share and folds the rest into 'other'", () => {
  const its = [it(0, 10, 0, { credit: { by_role: { a: 0.5, b: 0.3, c: 0.2 } } }),
    it(1, 20, 0, { credit: { by_role: { a: 0.4, b: 0.1, c: 0.5 } } })];
  const { names, data } = shareSeries(its, "by_role", 2);
  assert.deepEqual(names, ["a", "c", "other"]);
  assert.deepEqual(data, [[10, 20], [0.5, 0.4], [0.2, 0.5], [0.3, 0.1]]);
});

test("groupBand: mean ± t·sd/√n on the union grid, by hand", () => {
  // Two seeds at x = 0 and 10; the second also at 5 (the first interpolates there).
  const band = groupBand([[[0, 1], [10, 3]], [[0, 3], [5, 4], [10, 5]]]);
  assert.deepEqual(band[0], [0, 5, 10]);
  assert.deepEqual(band[1], [2, 3, 4]);
  // At x = 0: ys 1 and 3, sd = √2, half = 12.706 · √2 / √2 = 12.706.
  assert.ok(Math.abs(band[2][0] - (2 - 12.706)) < 1e-9 && Math.abs(band[3][0] - (2 + 12.706)) < 1e-9);
  assert.deepEqual(band[4], [2, 2, 2]);
  assert.equal(tQuantile975(2), 4.303);
  assert.equal(tQuantile975(100), 1.96);
});

test("groupBand leaves out points that not every seed reaches, and one run is its own band", () => {
  const band = groupBand([[[0, 1], [10, 2]], [[0, 3], [20, 5]]]);
  assert.deepEqual(band[0], [0, 10, 20]);
  assert.equal(band[1][2], null, "only the second seed reaches x = 20");
  const one = groupBand([[[0, 1], [10, 2]]]);
  assert.deepEqual([one[1], one[2], one[3]], [[1, 2], [1, 2], [1, 2]]);
});

test("interpolate is linear inside the curve and null outside", () => {
  assert.equal(interpolate([[0, 0], [10, 5]], 4), 2);
  assert.equal(interpolate([[0, 0], [10, 5]], 11), null);
  assert.equal(interpolate([], 0), null);
});

test("formatEta", () => {
  assert.equal(formatEta(null), "–");
  assert.equal(formatEta(42.4), "42 s");
  assert.equal(formatEta(185), "3 min 05 s");
  assert.equal(formatEta(3720), "1 h 02 min");
});

test("etaText: the runs list's data-eta strings get the run page's formatter", () => {
  // The trial's run: the list showed "303182727 s" while the run page showed "84217 h 25 min".
  assert.equal(etaText("303182727.27"), "84217 h 25 min");
  assert.equal(etaText("303182727.27"), formatEta(303182727.27));
  assert.equal(etaText(185), "3 min 05 s");
  assert.equal(etaText("0"), "0 s");
  for (const unknown of ["", "  ", null, undefined, "n/a"]) assert.equal(etaText(unknown), "–");
});

test("stepsText: a run past its budget (its last iteration ran over) shows its steps and the budget, not a fraction", () => {
  assert.equal(stepsText(260, 600, " env steps"), "260 / 600 env steps");
  assert.equal(stepsText(6480, 600, " env steps"), "6,480 env steps (budget 600)");
  assert.equal(stepsText(6480, 600), "6,480 (budget 600)");
  assert.equal(stepsText(250_000, 1_000_000), "250,000 / 1,000,000"); // the browser's grouping (en here)
  assert.equal(stepsText(12, 0), "12");
});

test("runBadge: an ended run shows how it ended (finished is not an error); the socket's state otherwise", () => {
  assert.deepEqual(runBadge("open", "finished"), ["finished", "Finished"]);
  assert.deepEqual(runBadge("connecting", "failed"), ["failed", "Failed"]);
  assert.deepEqual(runBadge("open", "cancelled"), ["cancelled", "Cancelled"]);
  assert.deepEqual(runBadge("open", "running"), ["live", "Live"]);
  assert.deepEqual(runBadge("connecting", undefined), ["connecting", "Connecting…"]);
  assert.deepEqual(runBadge("reconnecting", "finished"), ["reconnecting", "Reconnecting…"]);
  assert.deepEqual(runBadge("closed", "running"), ["offline", "Offline"]); // the connection, dropped for good
});

test("iterations are shown from 1, as the run page's count of them", () => {
  assert.deepEqual([it(0, 46, 0.1), it(1, 90, 0.2)].map(iterationNumber), [1, 2]);
});

test("Resume is refused for a run whose budget is spent, saying so", () => {
  const run = { status: "cancelled", external: false, env_steps: 46, budget_steps: 20 };
  assert.ok(budgetSpent(run));
  assert.deepEqual(resumeState(run, false), { disabled: true,
    title: "its budget of 20 env steps is spent: start a new run with a larger budget" });
  assert.deepEqual(resumeState({ ...run, env_steps: 12 }, false), { disabled: false, title: "" });
  assert.deepEqual(resumeState({ ...run, status: "queued" }, false), { disabled: false, title: "" }); // re-send its task
  assert.deepEqual(resumeState({ ...run, env_steps: 12 }, true, "viewer"), { disabled: true, title: "viewer" });
  assert.equal(resumeState({ ...run, status: "finished", env_steps: 12 }, false).disabled, true);
});

test("a run that ended past its budget says which iteration crossed it and why", () => {
  const run = { env_steps: 46, budget_steps: 20 };
  assert.equal(overrunNote(run, [it(0, 46, 0.1)]),
    "Iteration 1 started with 20 of the budget's 20 env steps left and played 46: the budget is checked between "
    + "iterations and an iteration plays all its episodes, so the run ended 26 steps past its budget.");
  assert.match(overrunNote({ env_steps: 130, budget_steps: 100 }, [it(0, 60, 0), it(1, 130, 0)]),
    /^Iteration 2 started with 40 of the budget's 100 env steps left and played 70: .* 30 steps past/);
  assert.equal(overrunNote({ env_steps: 20, budget_steps: 20 }, [it(0, 20, 0)]), null);
  assert.equal(overrunNote({ env_steps: 10, budget_steps: 20 }, [it(0, 10, 0)]), null);
});

test("policy llm's stop panel says where p(stop) comes from, or why an iteration has none", () => {
  const withStop = it(0, 46, 0, { stop: { p_stop_by_step: [[0, 0.2]] } });
  const without = it(0, 46, 0);
  assert.equal(llmStopNote({ policy: "mlp" }, without), null);
  assert.match(llmStopNote({ policy: "llm", llm_rollouts: "local" }, withStop), /at the steps where the model chose.*no value head/);
  assert.equal(llmGapNote({ policy: "llm", llm_rollouts: "local" }, withStop, "entropy"), null);
  assert.match(llmStopNote({ policy: "llm", llm_rollouts: "server" }, without),
    /^No p\(stop\) for this run: its actions were sampled on the vLLM server, which returns the sampled action/);
  assert.match(llmGapNote({ policy: "llm", llm_rollouts: "server" }, without, "entropy"), /^No entropy for this run/);
  assert.match(llmGapNote({ policy: "llm", llm_rollouts: "local" }, without, "entropy"), /stored before policy llm reported/);
  assert.equal(llmGapNote({ policy: "llm" }, null, "entropy"), null); // no iteration yet: "No data yet."
});
