// The New run form: choosing a policy sets the fields it changes (algorithm, ...) and leaves only
// the credit schemes it trains with; the fields of one policy (`data-policy`: policy llm's model,
// LoRA rank, group size, episodes per iteration, where it plays) show for that policy only. The
// rules come from the view (`policy_rules`: the recipe's POLICY_DEFAULTS, POLICY_CREDITS and
// POLICY_DECISION_S), so the page and the server's validation agree. On load (a form sent back with
// errors) nothing is changed but the offered credits and the fields shown. Below the fields, the
// estimate of one iteration (model/run_estimate.js): its env steps against the budget and, for policy
// llm, its time, updated as the fields change.

import { budgetEstimate, timeEstimate } from "../model/run_estimate.js";

const rules = JSON.parse(document.getElementById("policy-rules")?.textContent || "{}");
const form = document.querySelector("[data-testid=run-form]");
const policy = form?.elements.namedItem("policy");

/** The chosen policy ("" for a recipe with one). */
const chosen = () => (policy instanceof HTMLSelectElement ? policy.value : "");

function restrict() {
  const rule = rules[chosen()] || {};
  const credit = form.elements.namedItem("credit");
  if (credit) {
    for (const option of credit.options) option.disabled = Boolean(rule.credits) && !rule.credits.includes(option.value);
    if (credit.selectedOptions[0]?.disabled) credit.value = rule.credits[0];
  }
  for (const node of form.querySelectorAll("[data-policy]")) node.hidden = node.dataset.policy !== chosen();
}

function fill() {
  for (const [name, value] of Object.entries((rules[chosen()] || {}).set || {})) {
    const field = form.elements.namedItem(name);
    if (field && value !== null && value !== undefined) field.value = String(value);
  }
}

/** A whole number the form holds in `name` (shown or not), else `fallback`. */
function intField(name, fallback) {
  const field = form.elements.namedItem(name);
  const value = field ? Number(field.value) : NaN;
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

function estimate() {
  const rule = rules[chosen()] || {};
  const episodes = intField("episodes_per_iteration", rule.episodes);
  const budget = budgetEstimate({
    episodes, maxSteps: rule.max_steps, budget: intField("budget_steps", null),
    credit: form.elements.namedItem("credit")?.value,
  });
  const part = (id) => form.querySelector(`[data-testid=${id}]`);
  part("estimate-steps").textContent = budget?.text ?? "";
  part("estimate-budget").hidden = !budget?.warning;
  part("estimate-budget").textContent = budget?.warning ?? "";
  const time = timeEstimate({
    decisions: budget ? budget.steps : null, decisionS: rule.decision_s,
    rollouts: form.elements.namedItem("llm_rollouts")?.value || "local", credit: form.elements.namedItem("credit")?.value,
  });
  part("estimate-time").hidden = !time;
  part("estimate-time").textContent = time?.text ?? "";
}

if (form) {
  restrict();
  estimate();
  policy?.addEventListener("change", () => {
    fill();
    restrict();
  });
  form.addEventListener("input", estimate);
  form.addEventListener("change", estimate);
}
