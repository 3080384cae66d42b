import { test } from "node:test";
import assert from "node:assert/strict";

import { ESTIMATOR_BENCH } from "../../static/js/panels/estimator_bench.js";
import {
  coverageLine, coverageNote, estimatorGuide, llmCouplingNote, samplesPerPlayer,
} from "../../static/js/panels/estimator_guide.js";
import { METHODS } from "../../static/js/panels/attribution.js";

/**
 * A hand-made benchmark result. loo: at N = 4 noisy games at ρ = 0 are under-covered and pairwise
 * ones at ρ = 1 flag nulls too often; at N = 8 noisy ρ = 0 still under-covers; from N = 16 nothing
 * is off. shapley: nothing off anywhere. shapley2: under-covers at every N. kernelshap: no coverage.
 */
function bench() {
  const cell = (rollouts, top1, pass) => ({ rollouts_to_error: rollouts, mean_error: 0.02, max_error_pass: pass, top1 });
  const coupling = (real, worst, family, flag) => ({
    real, real_runs: 320, real_wilson: [real - 0.02, real + 0.02], real_worst: worst, real_worst_family: family,
    real_worst_wilson: [worst - 0.05, worst + 0.03], null_flag: flag, null_flag_runs: 300,
    null_flag_wilson: [0, flag + 0.02], null_flag_worst: flag + 0.01, null_flag_worst_family: "pairwise",
    null_flag_worst_wilson: [0, flag + 0.04], real_width: 1.2 - real,
  });
  const at = (real, under, over) => ({
    real, real_wilson: [real - 0.01, real + 0.01], real_worst: real - 0.1, real_worst_cell: "noisy 0.0",
    null_flag: 0.03, null_flag_wilson: [0.02, 0.04], null_flag_worst: 0.081, null_flag_worst_cell: "pairwise 1.0",
    couplings: {
      "0.0": coupling(real - 0.02, real - 0.1, "noisy", 0.04),
      "1.0": coupling(real + 0.01, real - 0.05, "synergy4", 0.012),
      "0.5": coupling(real, real - 0.03, "redundancy", 0.025),
    },
    under, over_null: over,
  });
  const coverage = (cells) => Object.fromEntries([4, 8, 16, 32].map((n, i) => [String(n), cells[i]]));
  const families = (rollouts, synergyPass) => ({
    pairwise: { "1.0": cell(rollouts, 0.9, 0.8), "0.0": cell(null, 0.7, 0.1) },
    synergy4: { "1.0": cell(rollouts, 0.8, synergyPass) },
  });
  const fine = at(0.97, [], []);
  const biased = at(0.6, ["synergy4 1.0", "synergy3 0.5"], []);
  return {
    measured: "2026-12-01 20:00 UTC", command: "python bench/bench_estimators.py", target_error: 0.05,
    reference_budget: 1024, nominal: 0.95, null_nominal: 0.05, games_per_family: 160, reps: 2,
    methods: {
      loo: {
        families: families(150, 0.5),
        coverage: coverage([at(0.9, ["noisy 0.0"], ["pairwise 1.0"]), at(0.93, ["noisy 0.0"], []), fine, fine]),
      },
      shapley: { families: families(300, 0.97), coverage: coverage([fine, fine, fine, fine]) },
      shapley2: { families: families(120, 0.06), coverage: coverage([biased, biased, biased, biased]) },
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

test("the coverage line states each coupling, its worst family and the null-flag rate", () => {
  const b = bench();
  const line = coverageLine("loo", 12, b);
  assert.match(line, /^95 % interval, measured at N = 8 \(160 games × 2 runs per game family and coupling ρ/);
  // couplings from the most shared randomness down, each with its worst family: no pooled figure hides one
  assert.match(line, new RegExp("real effects covered 94\\.0 % at ρ = 1 \\(worst 88\\.0 %, synergy4\\), "
    + "93\\.0 % at ρ = 0\\.5 \\(worst 90\\.0 %, redundancy\\), 91\\.0 % at ρ = 0 \\(worst 83\\.0 %, noisy\\)\\."));
  assert.match(line, new RegExp("A null message called real \\(its interval without 0\\) in 1\\.2 % at ρ = 1, "
    + "2\\.5 % at ρ = 0\\.5, 4\\.0 % at ρ = 0 of runs \\(worst 8\\.1 %, pairwise games, ρ = 1\\)\\.$"));
  assert.match(line, /Their intervals were 0\.26 at ρ = 1, 0\.27 at ρ = 0\.5, 0\.29 at ρ = 0 wide on average \(reward units\)\. A null/);
  assert.match(coverageLine("loo", 2, b), /measured at N = 4 /); // below the smallest measured N: that N's figures
  assert.match(coverageLine("loo", null, b), /measured at N = 8 /);
  assert.match(coverageLine("loo", 500, b), /measured at N = 32 /);
  assert.equal(coverageLine("kernelshap", 8, b), null); // nothing measured: nothing claimed
  assert.match(coverageLine("loo", 8, { ...b, reps: 1 }), /\(160 games per game family/);
  // where the worst family is no worse than the coupling's figure, no family is singled out
  const even = bench();
  const at = even.methods.loo.coverage["8"];
  for (const c of Object.values(at.couplings)) Object.assign(c, { real: 1, real_worst: 1, null_flag: 0 });
  at.null_flag_worst = 0;
  assert.match(coverageLine("loo", 8, even), /covered 100\.0 % at ρ = 1 \(in every family\), 100\.0 % at ρ = 0\.5 /);
  assert.match(coverageLine("loo", 8, even), /0\.0 % at ρ = 0 of runs \(in every family\)\.$/);
});

test("the coverage note names the families and couplings off nominal, and where that ends", () => {
  const b = bench();
  const four = coverageNote("loo", 4, b);
  assert.match(four, /^The 95 % interval says more than it holds at 4 samples: measured at N = 4, /);
  assert.match(four, /covered real effects significantly less than 95 % of the time on noisy games at ρ = 0 \(worst 80\.0 %\)/);
  assert.match(four, new RegExp("called a null message real significantly more than 5 % of the time on pairwise "
    + "games at ρ = 1 \\(worst 8\\.1 %\\)\\. At N = 16 no family and coupling was\\.$"));
  assert.match(coverageNote("loo", 12, b), /measured at N = 8, it covered .* on noisy games at ρ = 0 .*At N = 16 no/);
  assert.doesNotMatch(coverageNote("loo", 12, b), /null message/);
  assert.equal(coverageNote("loo", 16, b), null);
  assert.equal(coverageNote("loo", 500, b), null);
  assert.match(coverageNote("loo", null, b), /at few samples: measured at N = 8,/);
  assert.equal(coverageNote("shapley", 4, b), null);
  assert.match(coverageNote("shapley2", 8, b), new RegExp("on synergy4 games at ρ = 1, synergy3 games at ρ = 0\\.5 "
    + "\\(worst 50\\.0 %\\)\\. Nor at any larger measured N \\(up to 32\\)\\.$"));
  assert.match(coverageNote("shapley2", 64, b), /at N = 32, .*\(worst 50\.0 %\)\.$/);
  assert.equal(coverageNote("kernelshap", 4, b), null);
});

test("the benchmark's numbers cover every estimator the panel offers, per coupling", () => {
  assert.match(ESTIMATOR_BENCH.command, /bench_estimators\.py/);
  assert.match(ESTIMATOR_BENCH.measured, /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
  assert.equal(ESTIMATOR_BENCH.nominal, 0.95);
  for (const [method] of METHODS) {
    const m = ESTIMATOR_BENCH.methods[method];
    assert.ok(m, method);
    for (const n of ["2", "4", "8", "16", "32", "64"]) {
      const at = m.coverage[n];
      assert.ok(at.real >= 0 && at.real <= 1 && at.null_flag >= 0 && at.null_flag <= 1, `${method} ${n}`);
      assert.deepEqual(Object.keys(at.couplings).sort(), ["0.0", "0.5", "1.0"]);
      for (const c of Object.values(at.couplings)) assert.ok(c.real_worst <= c.real && c.real_runs > 0);
      assert.ok(Array.isArray(at.under) && Array.isArray(at.over_null));
    }
    for (const family of ["pairwise", "synergy3", "synergy4", "redundancy", "noisy"]) {
      for (const rho of ["1.0", "0.5", "0.0"]) assert.ok(m.families[family][rho], `${method} ${family} ${rho}`);
    }
    assert.ok(estimatorGuide(method).includes(ESTIMATOR_BENCH.measured));
    assert.match(coverageLine(method, 8), /at ρ = 1 .* at ρ = 0\.5 .* at ρ = 0 /);
  }
  // the estimators issue 30 item 6 is about reach nominal at every measured N, in every family and coupling
  for (const method of ["shapley", "kernelshap"]) {
    for (const n of ["2", "4", "8", "16", "32", "64"]) {
      const at = ESTIMATOR_BENCH.methods[method].coverage[n];
      assert.deepEqual([at.under, at.over_null], [[], []], `${method} at N = ${n}`);
      assert.equal(coverageNote(method, Number(n)), null);
    }
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
