/**
 * The runs list: formats each run's ETA and steps as the run page does (runs_model), enables Compare
 * when 2–4 runs or seed groups are selected, and is live: runs created after the page loaded
 * arrive over `/ws/projects/<id>/runs/` (one socket per project of the user, from the newest run
 * id the page was rendered with; webapp/training/consumers.py RunListConsumer) and appear at the
 * top (with `?group=`, only those of the group); each queued, running or cancelling run's row
 * listens to its run socket (`/ws/runs/<id>/`, the run page's) and updates its status, progress,
 * ETA and best reward in place, until the run ends.
 *
 * For browser tests: `<tr data-run-seq>` is the last run seq applied to a row, `<body
 * data-live-runs>` the number of rows still listening, `<body data-run-list-socket>` the state
 * of the (last) runs-list socket and `<body data-runs-added>` the rows added live.
 */

import { el } from "../lib/dom.js";
import { LiveConnection, NO_ACCESS_CODES, websocketUrl } from "../lib/live_connection.js";
import { etaText, shouldApply, stepsText } from "../model/runs_model.js";

const ACTIVE = new Set(["queued", "running", "cancelling"]);
/** At most this many rows listen at once (one socket each); the rest update on a reload. */
const MAX_LIVE_ROWS = 20;

for (const cell of document.querySelectorAll("[data-eta]")) cell.textContent = etaText(cell.dataset.eta);
// The steps as the server rendered them, grouped as the browser's locale groups thousands.
for (const steps of document.querySelectorAll("[data-col=steps][data-env-steps]")) {
  steps.textContent = stepsText(Number(steps.dataset.envSteps), Number(steps.dataset.budgetSteps));
}

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
  if (steps) steps.textContent = stepsText(run.env_steps, run.budget_steps);
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

/** Have row `tr` follow its run's socket until the run ends (at most MAX_LIVE_ROWS at once). */
function listen(tr) {
  if (live.size >= MAX_LIVE_ROWS) return;
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

for (const tr of document.querySelectorAll("tr[data-run-id]")) if (ACTIVE.has(tr.dataset.status)) listen(tr);
countLive();

// --- runs created after the page loaded ----------------------------------------------------------

const configNode = document.getElementById("runs-list-live");
const config = configNode ? JSON.parse(configNode.textContent) : null;
const tbody = document.querySelector("[data-testid=run-table] tbody");
let added = 0;

/** A cell of column `column` (`data-col`), with `className`. */
function cell(column, className) {
  const td = el("td", null, className);
  if (column) td.dataset.col = column;
  return td;
}

/** The row of a run created after the page loaded (`run`: run_summary), as the page renders one;
 * its seed group is shown as a link to the group (a reload tells how many seeds it has). */
function newRow(run) {
  const tr = document.createElement("tr");
  tr.dataset.runId = String(run.id);
  tr.className = "just-added";
  const pick = el("td");
  const box = el("input");
  Object.assign(box, { type: "checkbox", name: "runs", value: String(run.id) });
  box.setAttribute("aria-label", `Select ${run.name.slice(0, 40)} to compare`);
  pick.append(box);
  const name = el("td");
  const link = el("a", run.name.length > 80 ? `${run.name.slice(0, 79)}…` : run.name);
  link.href = `/runs/${run.id}/`;
  name.append(link);
  if (run.external) {
    const badge = el("span", "external", "badge");
    badge.title = "reported through the runs API";
    name.append(" ", badge);
  }
  const status = el("td");
  status.append(el("span", run.status, "run-status"));
  status.firstChild.dataset.col = "status";
  const progressCell = el("td");
  const progress = el("progress");
  progress.setAttribute("aria-label", "environment steps");
  progress.dataset.col = "progress";
  const steps = el("span", null, "muted");
  steps.dataset.col = "steps";
  progressCell.append(progress, "\n", steps);
  const eta = cell(null, "num");
  eta.dataset.testid = "run-eta";
  const group = el("td");
  const groupLink = el("a");
  groupLink.href = `?group=${encodeURIComponent(run.seed_group)}`;
  groupLink.dataset.testid = "seed-group";
  groupLink.append(el("code", run.seed_group.slice(0, 8) + (run.seed_group.length > 9 ? "…" : run.seed_group.slice(8))));
  group.append(groupLink);
  const created = el("td", "just now");
  created.title = run.created_at || "";
  eta.dataset.eta = "";
  tr.append(pick, name, status, progressCell, eta, cell("best_reward", "num"), group, created);
  fill(tr, run);
  return tr;
}

/** Show run `run` (run_summary) of a runs-list message, unless its row is there or it is filtered out. */
function addRun(run) {
  if (document.querySelector(`tr[data-run-id="${run.id}"]`)) return;
  if (config.group && run.seed_group !== config.group) return;
  if (!tbody) {
    window.location.reload(); // the empty state: the first run brings the table
    return;
  }
  const tr = newRow(run);
  tbody.prepend(tr);
  added += 1;
  document.body.dataset.runsAdded = String(added);
  while (tbody.rows.length > (config.max_rows || 200)) tbody.lastElementChild.remove();
  if (ACTIVE.has(run.status)) {
    listen(tr);
    countLive();
  }
}

if (config) {
  for (const socket of config.sockets) {
    let lastSeq = socket.seq;
    const connection = new LiveConnection(() => websocketUrl(socket.url), {
      seq: () => lastSeq,
      onMessage: (msg) => {
        if (msg.type !== "snapshot" && msg.type !== "delta") return;
        // a snapshot (a resume that missed too much) holds the newest runs: those not shown are new
        for (const run of msg.runs || []) if (msg.type === "delta" || run.id > socket.seq) addRun(run);
        lastSeq = Math.max(lastSeq, msg.seq);
      },
      onState: (state) => {
        document.body.dataset.runListSocket = state;
      },
    });
    connection.start();
  }
}
