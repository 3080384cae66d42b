/**
 * The runs list: formats each run's ETA as the run page does (runs_model.etaText), enables Compare
 * when 2–4 runs or seed groups are selected, and keeps the rows of active runs live: each queued,
 * running or cancelling run's row listens to its run socket (`/ws/runs/<id>/`, the run page's) and
 * updates its status, progress, ETA and best reward in place, until the run ends. Runs started
 * after the page loaded appear on a reload.
 *
 * For browser tests: `<tr data-run-seq>` is the last run seq applied to a row, and
 * `<body data-live-runs>` the number of rows still listening.
 */

import { LiveConnection, NO_ACCESS_CODES, websocketUrl } from "../lib/live_connection.js";
import { etaText, shouldApply } from "../model/runs_model.js";

const ACTIVE = new Set(["queued", "running", "cancelling"]);
/** At most this many rows listen at once (one socket each); the rest update on a reload. */
const MAX_LIVE_ROWS = 20;

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
}

/** Show `run` (a run summary of the socket, webapp/training/services.py run_summary) in row `tr`. */
function fill(tr, run) {
  tr.dataset.status = run.status;
  const status = tr.querySelector("[data-col=status]");
  if (status) {
    status.dataset.status = run.status;
    status.textContent = run.status;
  }
  const progress = tr.querySelector("[data-col=progress]");
  if (progress) {
    progress.max = run.budget_steps || 1;
    progress.value = run.env_steps;
  }
  const steps = tr.querySelector("[data-col=steps]");
  if (steps) steps.textContent = `${run.env_steps} / ${run.budget_steps}`;
  const eta = tr.querySelector("[data-eta]");
  if (eta) {
    eta.dataset.eta = run.eta_s ?? "";
    eta.textContent = etaText(eta.dataset.eta);
    eta.title = run.eta_s === null || run.eta_s === undefined ? "" : `${Math.round(run.eta_s)} s left`;
  }
  const best = tr.querySelector("[data-col=best_reward]");
  if (best) best.textContent = run.best_reward === null || run.best_reward === undefined ? "–" : Number(run.best_reward).toFixed(3);
}

const live = new Set();
const countLive = () => {
  document.body.dataset.liveRuns = String(live.size);
};

const activeRows = [...document.querySelectorAll("tr[data-run-id]")].filter((tr) => ACTIVE.has(tr.dataset.status));
for (const tr of activeRows.slice(0, MAX_LIVE_ROWS)) {
  let lastSeq = null;
  const connection = new LiveConnection(websocketUrl(`/ws/runs/${tr.dataset.runId}/`), {
    seq: () => lastSeq,
    onMessage: (msg) => {
      if (!shouldApply(lastSeq, msg) || !msg.run) return;
      lastSeq = msg.seq;
      tr.dataset.runSeq = String(msg.seq);
      fill(tr, msg.run);
      if (!ACTIVE.has(msg.run.status)) {
        connection.close();
        live.delete(connection);
        countLive();
      }
    },
    onClose: (code) => {
      if (!NO_ACCESS_CODES.includes(code)) return; // a drop: it reconnects with ?seq=N
      live.delete(connection);
      countLive();
    },
  });
  live.add(connection);
  connection.start();
}
countLive();
