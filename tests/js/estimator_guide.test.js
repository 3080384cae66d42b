import { test } from "node:test";
import assert from "node:assert/strict";

import { ESTIMATOR_BENCH } from "../../static/js/panels/estimator_bench.js";
import { coverageNote, estimatorGuide, llmCouplingNote, samplesPerPlayer } from "../../static/js/panels/estimator_guide.js";
import { METHODS } from "../../static/js/panels/attribution.js";

/** A hand-made benchmark result: loo covers 0.80 at N = 4, 0.90 at 8, 0.95 at 16 and 32. */
function bench() {
  const cell = (rollouts, top1, pass) => ({ rollouts_to_error: rollouts, mean_error: 0.02, max_error_pass: pass, top1 });
  const coverage = (values) => Object.fromEntries([4, 8, 16, 32].map((n, i) => [String(n),
    { real: values[i], real_wilson: [0, 1], real_worst: values[i] - 0.05, real_worst_cell: "noisy 0.0", null: 1 }]));
  const families = (rollouts, synergyPass) => ({
    pairwise: { "1.0": cell(rollouts, 0.9, 0.8), "0.0": cell(null, 0.7, 0.1) },
    synergy4: { "1.0": cell(rollouts, 0.8, synergyPass) },
  });
  return {
    measured: "2026-12-01 20:00 UTC", command: "python bench/bench_estimators.py", target_error: 0.05,
    reference_budget: 1024, coverage_floor: 0.93,
    methods: {
      loo: { families: families(150, 0.5), coverage: coverage([0.8, 0.9, 0.95, 0.95]) },
      shapley: { families: families(300, 0.97), coverage: coverage([0.95, 0.95, 0.95, 0.95]) },
      shapley2: { families: families(120, 0.06), coverage: coverage([0.6, 0.7, 0.8, 0.85]) },
    },
  };
}

test("samples per player follow the app's rollouts per sample", () => {
  assert.equal(samplesPerPlayer("loo", 13 * 32, 12), 32);
  assert.equal(samplesPerPlayer("shapley", 24 * 5 + 3, 12), 5);
  assert.equal(samplesPerPlayer("kernelshap", 40, 12), 10);
  assert.equal(samplesPerPlayer("shapley2", 32 * 3, 12), 3); // design of 16 pairs: 32 rollouts a sample
  assert.equal(samplesPerPlayer("loo", 5, 12), 2); // at least 2, as the job draws
  assert.equal(samplesPerPlayer("loo", 100, "?"), null);
  assert.equal(samplesPerPlayer("vibes", 100, 4), null);
});

test("the guide line states the measured rollouts and flags the 2-additive estimator", () => {
  const b = bench();
  const loo = estimatorGuide("loo", b);
  assert.match(loo, /^Leave-one-out Δ/);
  assert.match(loo, /mean error ≤ 0.05 after ≈ 150 rollouts on pairwise games with shared randomness/);
  assert.match(loo, /more than the ladder's top without/);
  assert.match(loo, /the top message right in 90 % and 70 % of those games at 1,024 rollouts/);
  assert.doesNotMatch(loo, /4-way/);
  const two = estimatorGuide("shapley2", b);
  assert.match(two, /one 4-way synergy only 6 % of games have every error ≤ 0.05 at 1,024 rollouts \(permutations: 97 %\)/);
  assert.match(two, /use Shapley \(permutations\)/);
  assert.equal(estimatorGuide("kernelshap", b), "Shapley values by paired KernelSHAP: fair shares under any interactions.");
});

test("the coverage note appears only below the floor, at the sample count's measured N", () => {
  const b = bench();
  assert.match(coverageNote("loo", 4, b), /at 4 samples: measured at N = 4, it covered real effects 80.0 % of the time/);
  assert.match(coverageNote("loo", 12, b),
    /at N = 8, it covered real effects 90.0 % .*\(worst: 85.0 % on noisy games, ρ = 0.0\), below 93 %\. It reached 95.0 % at N = 16/);
  assert.equal(coverageNote("loo", 16, b), null);
  assert.equal(coverageNote("loo", 500, b), null);
  assert.match(coverageNote("loo", 2, b), /at N = 4/); // below the smallest measured N: that N's figure
  assert.match(coverageNote("loo", null, b), /at few samples: measured at N = 8,/);
  assert.equal(coverageNote("shapley", 4, b), null);
  assert.match(coverageNote("shapley2", 8, b), /at N = 8.* Nor did it at any larger measured N \(up to 32\)\.$/);
  assert.match(coverageNote("shapley2", 64, b), /at N = 32, .*below 93 %\.$/);
  assert.equal(coverageNote("kernelshap", 4, b), null); // nothing measured: nothing claimed
});

test("the benchmark's numbers cover every estimator the panel offers", () => {
  assert.match(ESTIMATOR_BENCH.command, /bench_estimators\.py/);
  assert.match(ESTIMATOR_BENCH.measured, /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
  for (const [method] of METHODS) {
    const m = ESTIMATOR_BENCH.methods[method];
    assert.ok(m, method);
    for (const n of ["4", "8", "16", "32"]) assert.ok(m.coverage[n].real >= 0 && m.coverage[n].real <= 1);
    for (const family of ["pairwise", "synergy3", "synergy4", "redundancy", "noisy"]) {
      for (const rho of ["1.0", "0.5", "0.0"]) assert.ok(m.families[family][rho], `${method} ${family} ${rho}`);
    }
    assert.ok(estimatorGuide(method).includes(ESTIMATOR_BENCH.measured));
  }
});

test("the LLM coupling note gives ρ and the saving per task, and says where an arm never varied", () => {
  const coupling = {
    measured: "2026-12-06 14:32:00 UTC", model: "SmolLM2-135M-Instruct", command: "bench/bench_real_model.py ...",
    rows: [
      { task: "secret word", removed: "chatter-says", outcome: "exact_match", traces: 1, pairs: 128,
        rho_pooled_within: 0.8123, saving_within: 5.31, control_mean: 0.3, treated_mean: 0.31 },
      { task: "secret word", removed: "keeper-says", outcome: "exact_match", traces: 1, pairs: 128,
        rho_pooled_within: null, saving_within: 1.0, control_mean: 0.3, treated_mean: 0 },
      { task: "secret word", removed: "keeper-says", outcome: "token_f1", traces: 1, pairs: 128,
        rho_pooled_within: 0.45, saving_within: 1.8 },
      { task: "Who&When", removed: "one message per log", outcome: "exact_match", traces: 45, pairs: 360,
        rho_pooled_within: null, saving_within: null, control_mean: 0, treated_mean: 0 },
      { task: "Who&When", removed: "one message per log", outcome: "verifier", traces: 45, pairs: 360,
        rho_pooled_within: 0.5, saving_within: 2.04 },
    ],
  };
  const note = llmCouplingNote(coupling);
  assert.match(note, /^Paired outcomes on real LLM re-rollouts \(SmolLM2-135M-Instruct, measured 2026-12-06 14:32:00 UTC\): /);
  assert.match(note, /secret word, chatter-says removed, exact match: ρ = 0\.81, pairing saves 5\.3×/);
  assert.match(note, /secret word, keeper-says removed, exact match: no ρ \(one arm never varied; pairing saves nothing\)/);
  assert.match(note, /Who&When \(45 logs\), exact match: no ρ \(both arms never varied/);
  assert.match(note, /Who&When \(45 logs\), verifier verdict: ρ = 0\.50, pairing saves 2\.0×/);
  assert.doesNotMatch(note, /token_f1|F1/); // not a scoring the app offers
  assert.equal(llmCouplingNote({ rows: [] }), null);
  assert.equal(llmCouplingNote(null), null);
});
