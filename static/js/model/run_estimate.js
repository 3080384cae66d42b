/**
 * The New run form's estimate of one iteration (static/js/pages/run_new.js), no DOM: how many
 * environment steps it plays, what that means for the budget (the recipe checks the budget between
 * iterations, so a run plays whole iterations and its last one can end past the budget), and, for a
 * policy whose decisions are measured in seconds (policy llm: the view's `decision_s`, from
 * trainer/recipes/config.py LLM_DECISION_S and bench/RESULTS.md), the time an iteration takes.
 * Tested by tests/js/run_estimate.test.js.
 */

/** Where the seconds of `decision_s` were measured (said with every time estimate). */
export const COST_SOURCE = "an estimate for this project's 2-CPU machine (SmolLM2-135M, torch at 1 thread), from "
  + "bench/RESULTS.md, issue 31: \"policy llm played on the vLLM server\" and \"a decision's cost is set by torch's "
  + "thread count\"; a GPU worker is faster, a busier machine slower";

/** Credit schemes without re-rollouts (every other one adds environment steps to an iteration). */
const NO_REROLLOUTS = new Set(["shared", "expected"]);

const positive = (n) => Number.isInteger(n) && n > 0;

/** Seconds as "45 s", "4.2 min", "1.3 h". */
export function formatDuration(s) {
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

/**
 * What one iteration plays against the budget: `{steps, text, warning}`. `steps` = episodes ×
 * maxSteps, the most environment steps its episodes take (credit re-rollouts add more, said where
 * `credit` has them); `warning` (or null) where the budget is below one iteration: the run still
 * plays one whole iteration and ends past its budget. Null where a number is missing or not a
 * positive integer.
 */
export function budgetEstimate({ episodes, maxSteps, budget, credit }) {
  if (![episodes, maxSteps, budget].every(positive)) return null;
  const steps = episodes * maxSteps;
  const extra = credit && !NO_REROLLOUTS.has(credit) ? ", plus the credit scheme's re-rollouts" : "";
  const text = `One iteration plays ${episodes} episode${episodes === 1 ? "" : "s"} of at most ${maxSteps} steps: `
    + `up to ${steps} env steps${extra}. The budget is checked between iterations, so the run plays whole `
    + "iterations and its last one can end past the budget.";
  const warning = budget < steps
    ? `The budget of ${budget} env steps is less than one iteration: the run plays one whole iteration, up to `
      + `${steps} env steps${extra}. Raise the budget to at least ${steps} or lower the episodes per iteration to `
      + "keep to it."
    : null;
  return { steps, text, warning };
}

/**
 * The time one iteration of `decisions` model decisions takes: `{low, high, text}` in seconds,
 * decisions × (sampling + update) with `decisionS` = {server|local|update: [low, high]} and
 * `rollouts` "server" or "local" (a `credit` scheme with re-rollouts adds decisions, said so); null
 * without measured costs for it.
 */
export function timeEstimate({ decisions, decisionS, rollouts, credit }) {
  const sample = decisionS?.[rollouts];
  const update = decisionS?.update;
  if (!positive(decisions) || !sample || !update) return null;
  const low = decisions * (sample[0] + update[0]);
  const high = decisions * (sample[1] + update[1]);
  const where = rollouts === "server" ? "sampled on the vLLM server" : "sampled in torch on the worker";
  const text = `Estimated time per iteration: ${formatDuration(low)} to ${formatDuration(high)} (up to ${decisions} `
    + `decisions × ${sample[0]}–${sample[1]} s ${where} + ${update[0]}–${update[1]} s of update each; `
    + `${COST_SOURCE}).${credit && !NO_REROLLOUTS.has(credit) ? " The credit scheme's re-rollouts add decisions on top." : ""}`;
  return { low, high, text };
}
