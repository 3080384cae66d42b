/**
 * The attribution panel's estimator guide: which estimator for which situation, from the numbers
 * bench/bench_estimators.py measured (`ESTIMATOR_BENCH`, written by the benchmark into
 * estimator_bench.js with its date and command; bench/RESULTS.md has the same tables).
 *
 * `estimatorGuide(method, bench)` gives the line shown under the estimator: what it estimates,
 * the rollouts it needed for a mean error of 0.05 on the benchmark's game families, and, for the
 * 2-additive estimator, its bias where three or more messages interact. `coverageNote(method,
 * samples, bench)` says when the 95 % interval covered real effects less than `coverage_floor`
 * (0.93) of the time at that many samples (measured at N = 4, 8, 16, 32), null otherwise.
 * `samplesPerPlayer(method, budget, players)` is the sample count a budget buys
 * (webapp/counterfactuals/services.py ESTIMATORS). `llmCouplingNote(coupling)` says how strongly
 * paired outcomes of real LLM re-rollouts were coupled and what pairing saved there
 * (`LLM_COUPLING`, written by bench/bench_real_model.py into llm_coupling.js).
 */

import { ESTIMATOR_BENCH } from "./estimator_bench.js";
import { LLM_COUPLING } from "./llm_coupling.js";

/** What each app method estimates, in a few words. */
const WHAT = {
  loo: "Leave-one-out Δ: what removing each message alone changes (redundant messages each get 0).",
  shapley: "Shapley values by permutations: fair shares under any interactions.",
  kernelshap: "Shapley values by paired KernelSHAP: fair shares under any interactions.",
  shapley2: "Shapley values assuming interactions at most pairwise (Banzhaf values otherwise).",
};

/** The smallest power of two above `players` (swarmscope.credit.design_size). */
function designSize(players) {
  let size = 1;
  while (size <= players) size *= 2;
  return size;
}

/** Samples per player that `budget` rollouts buy for `method` over `players` players (>= 2), or null when unknown. */
export function samplesPerPlayer(method, budget, players) {
  const p = Number(players);
  const b = Number(budget);
  if (!Number.isInteger(p) || p < 1 || !Number.isFinite(b) || b < 1) return null;
  const per = { loo: p + 1, shapley: 2 * p, kernelshap: 4, shapley2: 2 * designSize(p) }[method];
  return per ? Math.max(2, Math.floor(b / per)) : null;
}

const percent = (x) => `${Math.round(100 * x)} %`;
/** A measured coverage share, to a tenth of a percent (0.928 is "92.8 %", not "93 %"). */
const share = (x) => `${(100 * x).toFixed(1)} %`;
const rollouts = (x) => (x === null || x === undefined ? "more than the ladder's top" : `≈ ${x.toLocaleString("en")}`);

/** The numbers of `method` in `bench` for `family` at coupling `rho` ("1.0", "0.5", "0.0"), or undefined. */
function cell(bench, method, family, rho) {
  return bench?.methods?.[method]?.families?.[family]?.[rho];
}

/**
 * The guide line for `method`: what it estimates and what the benchmark measured for it.
 * @returns {string}
 */
export function estimatorGuide(method, bench = ESTIMATOR_BENCH) {
  const what = WHAT[method] ?? "";
  const m = bench?.methods?.[method];
  if (!m) return what;
  const pair1 = cell(bench, method, "pairwise", "1.0");
  const pair0 = cell(bench, method, "pairwise", "0.0");
  const syn = cell(bench, method, "synergy4", "1.0");
  const target = bench.target_error;
  const budget = bench.reference_budget.toLocaleString("en");
  let line = `${what} Measured (${bench.measured}): mean error ≤ ${target} after ${rollouts(pair1?.rollouts_to_error)} `
    + `rollouts on pairwise games with shared randomness, ${rollouts(pair0?.rollouts_to_error)} without `
    + `(ρ = 0); the top message right in ${percent(pair1?.top1 ?? 0)} and ${percent(pair0?.top1 ?? 0)} `
    + `of those games at ${budget} rollouts.`;
  if (method === "shapley2" && syn) {
    const perm = cell(bench, "shapley", "synergy4", "1.0");
    line += ` Not for higher-order interactions: on games with one 4-way synergy only ${percent(syn.max_error_pass)} `
      + `of games have every error ≤ ${target} at ${budget} rollouts`
      + (perm ? ` (permutations: ${percent(perm.max_error_pass)}); use Shapley (permutations) when three or more `
        + "messages may act only together or any one of several suffices." : ".");
  }
  return line;
}

/**
 * The coverage caveat of `method`'s 95 % interval at `samples` per player: the measured
 * real-effect coverage (pooled over game families and couplings) at the largest measured N not
 * above `samples` (the smallest N when `samples` is below it, or unknown), when it is below the
 * floor; null when it is not.
 * @returns {string|null}
 */
export function coverageNote(method, samples, bench = ESTIMATOR_BENCH) {
  const coverage = bench?.methods?.[method]?.coverage;
  if (!coverage) return null;
  const ns = Object.keys(coverage).map(Number).sort((a, b) => a - b);
  if (!ns.length) return null;
  const known = Number.isFinite(samples) && samples !== null;
  const n = known ? ns.filter((x) => x <= samples).pop() ?? ns[0] : 8;
  const at = coverage[String(n)] ?? coverage[String(ns[0])];
  if (!at || at.real >= bench.coverage_floor) return null;
  const larger = ns.filter((x) => x > n);
  const enough = larger.find((x) => coverage[String(x)].real >= bench.coverage_floor);
  let after = "";
  if (enough) after = ` It reached ${share(coverage[String(enough)].real)} at N = ${enough}.`;
  else if (larger.length) after = ` Nor did it at any larger measured N (up to ${larger[larger.length - 1]}).`;
  const [family, rho] = String(at.real_worst_cell).split(" ");
  return `The 95 % interval covers less than it says at ${known ? `${samples} samples` : "few samples"}: measured `
    + `at N = ${n}, it covered real effects ${share(at.real)} of the time (worst: ${share(at.real_worst)} on `
    + `${family} games, ρ = ${rho}), below ${percent(bench.coverage_floor)}.${after}`;
}

/** The app's scorings of an LLM re-rollout, as `LLM_COUPLING` names them. */
const OUTCOMES = { exact_match: "exact match", verifier: "verifier verdict" };

/**
 * What pairing bought on real LLM re-rollouts: per measured task and app scoring, the within-trace ρ
 * of paired control and intervention outcomes and Var(unpaired Δ) / Var(paired Δ), the factor of
 * samples two independent arms would need for the same interval (≈ 1 / (1 − ρ)). Null without
 * measurements.
 * @returns {string|null}
 */
export function llmCouplingNote(coupling = LLM_COUPLING) {
  const rows = (coupling?.rows ?? []).filter((r) => OUTCOMES[r.outcome]);
  if (!rows.length) return null;
  const parts = rows.map((r) => {
    const what = `${r.task}${r.traces > 1 ? ` (${r.traces} logs)` : `, ${r.removed} removed`}, ${OUTCOMES[r.outcome]}`;
    if (r.rho_pooled_within === null || r.rho_pooled_within === undefined) {
      const constant = r.saving_within === null || r.saving_within === undefined ? "both arms" : "one arm";
      return `${what}: no ρ (${constant} never varied; pairing saves nothing)`;
    }
    const saving = r.saving_within === null ? "" : `, pairing saves ${r.saving_within.toFixed(1)}×`;
    return `${what}: ρ = ${r.rho_pooled_within.toFixed(2)}${saving}`;
  });
  return `Paired outcomes on real LLM re-rollouts (${coupling.model}, measured ${coupling.measured}): `
    + `${parts.join("; ")}. The × is how many more samples independent arms need for the same interval.`;
}
