import assert from "node:assert/strict";
import test from "node:test";

import { budgetEstimate, formatDuration, timeEstimate } from "../../static/js/model/run_estimate.js";

// policy llm's defaults (trainer/recipes/config.py LLM_DEFAULTS) and costs (LLM_DECISION_S)
const COSTS = { server: [1.1, 1.4], local: [1.15, 14.0], update: [4.3, 5.5] };

test("an iteration's env steps against the budget: a budget below one iteration is warned about", () => {
  const small = budgetEstimate({ episodes: 4, maxSteps: 12, budget: 20, credit: "shared" });
  assert.equal(small.steps, 48);
  assert.match(small.text, /4 episodes of at most 12 steps: up to 48 env steps\./);
  assert.match(small.warning, /budget of 20 env steps is less than one iteration: the run plays one whole iteration, up to 48/);
  const enough = budgetEstimate({ episodes: 4, maxSteps: 12, budget: 480, credit: "shared" });
  assert.equal(enough.warning, null);
  assert.match(enough.text, /last one can end past the budget/);
  const rerolled = budgetEstimate({ episodes: 16, maxSteps: 400, budget: 200000, credit: "counterfactual" });
  assert.match(rerolled.text, /up to 6400 env steps, plus the credit scheme's re-rollouts/);
  assert.equal(budgetEstimate({ episodes: 4, maxSteps: 12, budget: null }), null);
  assert.equal(budgetEstimate({ episodes: 0, maxSteps: 12, budget: 20 }), null);
});

test("an iteration's time is decisions x (sampling + update), said as an estimate with its source", () => {
  const server = timeEstimate({ decisions: 48, decisionS: COSTS, rollouts: "server" });
  assert.ok(Math.abs(server.low - 48 * 5.4) < 1e-9 && Math.abs(server.high - 48 * 6.9) < 1e-9);
  assert.match(server.text, /^Estimated time per iteration: 4\.3 min to 5\.5 min \(up to 48 decisions × 1\.1–1\.4 s sampled on the vLLM server/);
  assert.match(server.text, /2-CPU machine.*bench\/RESULTS\.md/);
  const local = timeEstimate({ decisions: 48, decisionS: COSTS, rollouts: "local" });
  assert.ok(Math.abs(local.high - 48 * 19.5) < 1e-9);
  assert.match(local.text, /sampled in torch on the worker/);
  assert.doesNotMatch(local.text, /re-rollouts/);
  const credit = timeEstimate({ decisions: 48, decisionS: COSTS, rollouts: "local", credit: "counterfactual_baseline" });
  assert.match(credit.text, /re-rollouts add decisions on top\.$/);
  assert.equal(timeEstimate({ decisions: 48, decisionS: undefined, rollouts: "local" }), null); // policy mlp
  assert.equal(timeEstimate({ decisions: null, decisionS: COSTS, rollouts: "local" }), null);
  assert.deepEqual([formatDuration(45), formatDuration(259.2), formatDuration(9000)], ["45 s", "4.3 min", "2.5 h"]);
});
