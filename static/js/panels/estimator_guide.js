/**
 * The attribution panel's estimator guide: which estimator for which situation, from the numbers
 * bench/bench_estimators.py measured (`ESTIMATOR_BENCH`, written by the benchmark into
 * estimator_bench.js with its date and command; bench/RESULTS.md has the same tables).
 *
 * `estimatorGuide(method, bench)` gives the line shown under the estimator: what it estimates,
 * the rollouts it needed for a mean error of 0.05 on the benchmark's game families, and, for the
 * 2-additive estimator, its bias where three or more messages interact. `coverageLine(method,
 * samples, bench)` states what the 95 % interval did at that many samples (the largest measured N
 * not above it): the share of real effects it covered at each coupling ρ, with each coupling's
 * worst game family, and the share of runs in which it called a null message real (an interval
 * without 0), so the worst case shows rather than a pooled figure, and the intervals' mean width.
 * `coverageNote(method, samples,
 * bench)` is the warning when some family and coupling were significantly off nominal there
 * (coverage's Wilson interval wholly below 95 %, or the null-flag rate's wholly above 5 %), null
 * otherwise. `samplesPerPlayer(method, budget, players)` is the sample count a budget buys
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

/** A coupling ρ as the guide writes it ("1.0" -> "1", "0.5" -> "0.5"). */
const rhoText = (rho) => String(Number(rho));

/**
 * The measured coverage of `method` at the largest measured N not above `samples` (the smallest
 * measured N when `samples` is below it; N = 8 when it is unknown): { n, at, ns, known }, or null
 * when nothing was measured.
 */
function measuredAt(method, samples, bench) {
  const coverage = bench?.methods?.[method]?.coverage;
  if (!coverage) return null;
  const ns = Object.keys(coverage).map(Number).sort((a, b) => a - b);
  if (!ns.length) return null;
  const known = Number.isFinite(samples) && samples !== null;
  const wanted = known ? samples : 8;
  const n = ns.filter((x) => x <= wanted).pop() ?? ns[0];
  return { n, at: coverage[String(n)], ns, known };
}

/**
 * What `method`'s 95 % interval did at `samples` per player (`measuredAt`): per coupling, the share
 * of real effects covered and its worst family, then the share of runs that called a null message
 * real per coupling and the worst cell. Null when nothing was measured.
 * @returns {string|null}
 */
export function coverageLine(method, samples, bench = ESTIMATOR_BENCH) {
  const m = measuredAt(method, samples, bench);
  if (!m?.at?.couplings) return null;
  const couplings = Object.entries(m.at.couplings).sort(([a], [b]) => Number(b) - Number(a));
  const real = couplings.filter(([, c]) => c.real !== null && c.real !== undefined).map(([rho, c]) =>
    `${share(c.real)} at ρ = ${rhoText(rho)} `
    + (c.real_worst < c.real ? `(worst ${share(c.real_worst)}, ${c.real_worst_family})` : "(in every family)"));
  const nulls = couplings.filter(([, c]) => c.null_flag !== null && c.null_flag !== undefined).map(([rho, c]) =>
    `${share(c.null_flag)} at ρ = ${rhoText(rho)}`);
  const runs = bench.reps > 1 ? `${bench.games_per_family} games × ${bench.reps} runs` : `${bench.games_per_family} games`;
  const widths = couplings.filter(([, c]) => Number.isFinite(c.real_width)).map(([rho, c]) =>
    `${c.real_width.toFixed(2)} at ρ = ${rhoText(rho)}`);
  let line = `95 % interval, measured at N = ${m.n} (${runs} per game family and coupling ρ, the share of `
    + `randomness a re-rollout shares with the trace): real effects covered ${real.join(", ")}.`;
  if (widths.length) line += ` Their intervals were ${widths.join(", ")} wide on average (reward units).`;
  if (nulls.length) {
    const [family, rho] = String(m.at.null_flag_worst_cell).split(" ");
    line += ` A null message called real (its interval without 0) in ${nulls.join(", ")} of runs`
      + (m.at.null_flag_worst > 0 ? ` (worst ${share(m.at.null_flag_worst)}, ${family} games, ρ = ${rhoText(rho)}).`
        : " (in every family).");
  }
  return line;
}

/**
 * The warning for `method`'s 95 % interval at `samples` per player: the families and couplings
 * whose real-effect coverage was significantly below nominal (`under`), or whose null-flag rate was
 * significantly above it (`over_null`), at the measured N (`measuredAt`), and the first larger
 * measured N with none; null when there is none at that N, or nothing was measured.
 * @returns {string|null}
 */
export function coverageNote(method, samples, bench = ESTIMATOR_BENCH) {
  const m = measuredAt(method, samples, bench);
  if (!m?.at) return null;
  const under = m.at.under ?? [];
  const over = m.at.over_null ?? [];
  if (!under.length && !over.length) return null;
  const nominal = bench.nominal ?? 0.95;
  const cells = (list) => list.map((cell) => {
    const [family, rho] = cell.split(" ");
    return `${family} games at ρ = ${rhoText(rho)}`;
  }).join(", ");
  const parts = [];
  if (under.length) {
    parts.push(`it covered real effects significantly less than ${percent(nominal)} of the time on ${cells(under)} `
      + `(worst ${share(m.at.real_worst)})`);
  }
  if (over.length) {
    parts.push(`it called a null message real significantly more than ${percent(1 - nominal)} of the time on `
      + `${cells(over)} (worst ${share(m.at.null_flag_worst)})`);
  }
  const larger = m.ns.filter((x) => x > m.n);
  const off = (x) => {
    const at = bench.methods[method].coverage[String(x)];
    return (at.under?.length ?? 0) + (at.over_null?.length ?? 0) > 0;
  };
  const enough = larger.find((x) => !off(x));
  let after = "";
  if (enough) after = ` At N = ${enough} no family and coupling was.`;
  else if (larger.length) after = ` Nor at any larger measured N (up to ${larger[larger.length - 1]}).`;
  return `The 95 % interval says more than it holds at ${m.known ? `${samples} samples` : "few samples"}: measured `
    + `at N = ${m.n}, ${parts.join("; and ")}.${after}`;
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
