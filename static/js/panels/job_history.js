/**
 * The trace's jobs, kept across reloads and restarts: the "Jobs" panel of the trace page.
 *
 * `load()` reads `GET /api/traces/<id>/jobs/` (newest first), lists every job (kind, method,
 * players, status, samples, date) with a "Show" button that fetches its full form
 * (`/api/jobs/<id>/`) and hands it to `onShowAttribution` or `onShowCounterfactual`, and a link to
 * that JSON; then it shows again what was on the page before: the latest finished attribution
 * job and the latest counterfactual jobs (`restorePlan`, pure). `handleJob` keeps the list in step
 * with the trace websocket's job messages. Server text is only ever set with `textContent`.
 */

import { el } from "../lib/dom.js";

/** Counterfactual jobs shown again after a reload (the newest ones). */
export const RESTORED_COUNTERFACTUALS = 10;

/**
 * Which jobs to show again, from the list (newest first): the newest finished attribution job,
 * and the newest `counterfactuals` counterfactual jobs (any status: active ones keep updating),
 * oldest first so that each lands above the one before.
 * @param {{id: number, kind: string, status: string}[]} jobs
 * @returns {{attribution: number|null, counterfactuals: number[]}}
 */
export function restorePlan(jobs, counterfactuals = RESTORED_COUNTERFACTUALS) {
  const attribution = jobs.find((j) => j.kind === "attribution" && j.status === "done");
  const recent = jobs.filter((j) => j.kind === "counterfactual").slice(0, counterfactuals);
  return { attribution: attribution ? attribution.id : null, counterfactuals: recent.map((j) => j.id).reverse() };
}

/** "2026-11-30 01:23 UTC" for an ISO time ("" for none). */
export function formatWhen(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** A job's history line: "attribution · loo · agents · 32 / 32 samples · sim". */
export function historyLine(job) {
  const what = job.kind === "attribution"
    ? ["attribution", job.method, job.player_kind ?? "messages"]
    : ["counterfactual", describeTargets(job.intervention)];
  return [...what, `${job.done} / ${job.total} samples`, job.backend].join(" · ");
}

function describeTargets(intervention) {
  const targets = [...(intervention?.events ?? []), ...(intervention?.agents ?? []).map((a) => `agent ${a}`)];
  return `${intervention?.kind ?? "?"} ${targets.join(", ")}`;
}

export class JobHistory {
  /**
   * @param {HTMLElement} panel the `[data-testid=job-history]` section (hidden until loaded)
   * @param {{traceId: string, onShowAttribution: (job: object) => void,
   *   onShowCounterfactual: (job: object) => void}} options
   */
  constructor(panel, { traceId, onShowAttribution, onShowCounterfactual }) {
    this.panel = panel;
    this.traceId = traceId;
    this.onShowAttribution = onShowAttribution;
    this.onShowCounterfactual = onShowCounterfactual;
    /** job id -> summary, for the list. */
    this.jobs = new Map();
    this.list = panel.querySelector("[data-field=jobs]");
    this.empty = panel.querySelector("[data-field=empty]");
    this.loaded = false;
  }

  /** List the trace's jobs and show again the latest results; a failure is shown in the panel. */
  async load() {
    let jobs;
    try {
      const response = await fetch(`/api/traces/${this.traceId}/jobs/`, { credentials: "same-origin" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      jobs = (await response.json()).results;
    } catch (err) {
      this.panel.hidden = false;
      this.empty.hidden = false;
      this.empty.textContent = `Could not load the jobs of this trace (${err.message}).`;
      return;
    }
    for (const job of jobs) if (!this.jobs.has(job.id)) this.jobs.set(job.id, job);
    this.loaded = true;
    this._render();
    const plan = restorePlan(jobs);
    const wanted = [...plan.counterfactuals, ...(plan.attribution === null ? [] : [plan.attribution])];
    const full = await Promise.all(wanted.map((id) => this._fetchJob(id)));
    for (const job of full) {
      if (!job) continue;
      if (job.kind === "attribution") this.onShowAttribution(job);
      else this.onShowCounterfactual(job, { focus: false });
    }
  }

  /** A job state from the websocket (or a POST's answer): add or update its line. */
  handleJob(job) {
    const known = this.jobs.get(job.id);
    if (known && ["queued", "running"].includes(job.status) && job.done < known.done) return;
    this.jobs.set(job.id, { ...known, ...job, results: undefined, samples: undefined });
    if (this.loaded) this._render();
  }

  async _fetchJob(id) {
    try {
      const response = await fetch(`/api/jobs/${id}/`, { credentials: "same-origin" });
      return response.ok ? await response.json() : null;
    } catch {
      return null;
    }
  }

  async _show(id) {
    const job = await this._fetchJob(id);
    if (!job) return;
    if (job.kind === "attribution") this.onShowAttribution(job);
    else this.onShowCounterfactual(job, { focus: true });
  }

  _render() {
    this.panel.hidden = false;
    const jobs = [...this.jobs.values()].sort((a, b) => b.id - a.id);
    this.empty.hidden = jobs.length > 0;
    this.empty.textContent = "No jobs on this trace yet: select a message and press “What if removed?”, "
      + "or “Attribute this trace”.";
    this.list.replaceChildren(...jobs.map((job) => {
      const item = el("li", null, "job-history-item");
      item.dataset.testid = "history-item";
      item.dataset.jobId = String(job.id);
      item.dataset.status = job.status;
      const line = el("span", historyLine(job));
      const when = el("time", formatWhen(job.created_at), "muted");
      when.dateTime = job.created_at ?? "";
      const status = el("span", job.status, `job-status job-${job.status}`);
      const show = el("button", "Show", "button small");
      show.type = "button";
      show.dataset.testid = "history-show";
      show.disabled = job.kind === "attribution" && job.status !== "done";
      show.setAttribute("aria-label", `Show job ${job.id}`);
      show.addEventListener("click", () => this._show(job.id));
      const json = el("a", "JSON", "muted");
      json.href = `/api/jobs/${job.id}/`;
      item.append(status, " ", line, " ", when, " ", show, " ", json);
      return item;
    }));
  }
}
