// The New run form: choosing a policy sets the fields it changes (algorithm, ...) and leaves only
// the credit schemes it trains with; "Policy llm plays on" shows for policy llm only. The rules come
// from the view (`policy_rules`: the recipe's POLICY_DEFAULTS and POLICY_CREDITS), so the page and the
// server's validation agree. On load (a form sent back with errors) nothing is changed but the
// offered credits.

const rules = JSON.parse(document.getElementById("policy-rules")?.textContent || "{}");
const form = document.querySelector("[data-testid=run-form]");
const policy = form?.elements.namedItem("policy");

function restrict() {
  const rule = rules[policy.value] || {};
  const credit = form.elements.namedItem("credit");
  if (credit) {
    for (const option of credit.options) option.disabled = Boolean(rule.credits) && !rule.credits.includes(option.value);
    if (credit.selectedOptions[0]?.disabled) credit.value = rule.credits[0];
  }
  const rollouts = form.querySelector("[data-field=llm_rollouts]");
  if (rollouts) rollouts.hidden = policy.value !== "llm";
}

function fill() {
  for (const [name, value] of Object.entries((rules[policy.value] || {}).set || {})) {
    const field = form.elements.namedItem(name);
    if (field && value !== null && value !== undefined) field.value = String(value);
  }
}

if (policy instanceof HTMLSelectElement) {
  restrict();
  policy.addEventListener("change", () => {
    fill();
    restrict();
  });
}
