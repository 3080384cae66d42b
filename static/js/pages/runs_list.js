/**
 * The runs list: formats each run's ETA as the run page does (runs_model.etaText), enables Compare
 * when 2–4 runs or seed groups are selected, and refreshes the page while runs are active (a cheap
 * reload every few seconds; the run page itself is live).
 */

import { etaText } from "../model/runs_model.js";

for (const cell of document.querySelectorAll("[data-eta]")) cell.textContent = etaText(cell.dataset.eta);

const form = document.querySelector('[data-testid="run-compare-form"]');
if (form) {
  const button = form.querySelector('[data-testid="run-compare"]');
  const max = Number(form.dataset.max || 4);
  const update = () => {
    // Every run of a seed group has its group's checkbox: count each group once.
    const picked = [...form.querySelectorAll('input[name="runs"]:checked, input[name="groups"]:checked')];
    const n = new Set(picked.map((box) => `${box.name}:${box.value}`)).size;
    button.disabled = n < 2 || n > max;
    button.textContent = n < 2 ? `Select 2–${max} runs or seed groups to compare` : n > max ? `At most ${max} at once` : `Compare ${n}`;
  };
  form.addEventListener("change", update);
  update();
  const active = form.querySelector('tr[data-status="queued"], tr[data-status="running"], tr[data-status="cancelling"]');
  if (active) {
    setInterval(() => {
      if (!form.querySelector("input:checked") && document.visibilityState === "visible") window.location.reload();
    }, 5000);
  }
}
