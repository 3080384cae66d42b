/**
 * "What if removed?": counterfactual re-rollouts of a message-like event, from the inspector.
 *
 * `Counterfactual.actionsFor(ev)` gives the inspector its button; the button opens a dialog
 * (intervention kind, replacement text, N paired samples, rollout backend; Enter submits, Esc
 * closes) that POSTs `/api/traces/<id>/counterfactuals/`. Jobs then show in the "Counterfactuals"
 * panel: a progress bar fed by the trace websocket's `{"type": "job", "job": {...}}` messages
 * (`handleJob`), and once done Δ = E[R | h] − E[R | do(intervention)] with its 95 % interval and
 * rollout count, the per-sample outcomes (control → intervention reward) and a link that opens the
 * branch trace side by side with the original. Server text is only ever set with `textContent`.
 */

import { formatNumber } from "./format.js";
import { csrfToken, el } from "./dom.js";

/** Event types an intervention may target (webapp.core.interventions.MESSAGE_LIKE_TYPES). */
export const MESSAGE_LIKE_TYPES = ["message", "delegate", "return"];
export const INTERVENTION_KINDS = ["remove", "mask", "resample", "replace"];
export const DEFAULT_SAMPLES = 32;

/** The one-line form of an intervention, as webapp.core's `describe()`: "remove(event:m3)". */
export function describeIntervention(intervention) {
  const targets = [...(intervention.events ?? []).map((e) => `event:${e}`),
    ...(intervention.agents ?? []).map((a) => `agent:${a}`)];
  return `${intervention.kind}(${targets.join(", ")})`;
}

/** "Δ = 0.281 [0.12, 0.442], 95 %, 64 rollouts" for a job's `result` (an attribution). */
export function formatDelta(result) {
  return `Δ = ${formatNumber(result.estimate)} [${formatNumber(result.ci_low)}, ${formatNumber(result.ci_high)}]`
    + `, 95 %, ${result.n_rollouts} rollouts`;
}

/**
 * The request body from the dialog's values; throws Error naming what is wrong.
 * @param {string} eventId @param {{kind: string, text: string, n: string|number, backend: string}} values
 */
export function requestBody(eventId, { kind, text, n, backend }) {
  if (!INTERVENTION_KINDS.includes(kind)) throw new Error(`unknown intervention ${kind}`);
  const samples = Number(n);
  if (!Number.isInteger(samples) || samples < 2) throw new Error("N must be an integer of at least 2");
  const intervention = { kind, events: [eventId] };
  if (kind === "replace") {
    if (!text.trim()) throw new Error("replace needs the replacement text");
    intervention.text = text;
  }
  return { intervention, n: samples, backend };
}

export class Counterfactual {
  /**
   * @param {HTMLElement} panel the `[data-testid=counterfactual-panel]` section (hidden until a job)
   * @param {{traceId: string, backends: string[]}} options
   */
  constructor(panel, { traceId, backends }) {
    this.panel = panel;
    this.traceId = traceId;
    this.backends = backends;
    /** job id -> latest job state (websocket messages may arrive before the POST answers). */
    this.jobs = new Map();
    this.rows = new Map();
    this.dialog = this._buildDialog();
    document.body.append(this.dialog);
  }

  /** The inspector's action for event `ev`: a "What if removed?" button, or null. */
  actionsFor(ev) {
    if (!MESSAGE_LIKE_TYPES.includes(ev.type)) return null;
    const button = el("button", "What if removed?", "button small");
    button.type = "button";
    button.dataset.testid = "what-if";
    button.addEventListener("click", () => this.open(ev.id));
    return button;
  }

  /** Open the dialog for event `eventId`. */
  open(eventId) {
    this.eventId = eventId;
    this.dialog.querySelector("[data-field=target]").textContent = eventId;
    this.error.textContent = "";
    this.dialog.showModal();
    this.dialog.querySelector("[name=kind]").focus();
  }

  /** Apply a job state from the websocket or the API. */
  handleJob(job) {
    const known = this.jobs.get(job.id);
    // Messages of several workers may cross: progress only moves forward, and a late progress
    // message must not undo a finished job.
    const active = (j) => j.status === "queued" || j.status === "running";
    if (known && active(job) && (!active(known) || job.done < known.done)) return;
    this._renderJob(job);
  }

  _buildDialog() {
    const dialog = el("dialog", null, "counterfactual-dialog");
    dialog.dataset.testid = "what-if-dialog";
    const form = el("form", null, "stack");
    form.method = "dialog";
    const title = el("h2", "What if it had not been sent?");
    const target = el("p", null, "muted");
    target.append("Event ", el("code"));
    target.lastChild.dataset.field = "target";
    const kind = el("select");
    kind.name = "kind";
    for (const k of INTERVENTION_KINDS) kind.append(new Option(k, k));
    const text = el("textarea");
    text.name = "text";
    text.rows = 3;
    text.placeholder = "Replacement text";
    const textLabel = this._label("Replacement", text);
    textLabel.hidden = true;
    kind.addEventListener("change", () => { textLabel.hidden = kind.value !== "replace"; });
    const n = el("input");
    Object.assign(n, { name: "n", type: "number", min: "2", max: "4096", value: String(DEFAULT_SAMPLES) });
    const backend = el("select");
    backend.name = "backend";
    for (const b of this.backends) backend.append(new Option(b, b));
    this.error = el("p", null, "notice");
    this.error.setAttribute("role", "alert");
    const run = el("button", "Run", "button primary");
    run.type = "submit";
    run.dataset.testid = "what-if-run";
    const close = el("button", "Close", "button");
    close.type = "button";
    close.addEventListener("click", () => dialog.close());
    const buttons = el("div", null, "button-row");
    buttons.append(run, close);
    form.append(title, target, this._label("Intervention", kind), textLabel,
      this._label("Paired samples N", n), this._label("Rollout backend", backend), this.error, buttons);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this._submit({ kind: kind.value, text: text.value, n: n.value, backend: backend.value });
    });
    // Esc closes the dialog (the browser's `cancel`) and nothing else: the page's Esc would
    // clear the selection.
    dialog.addEventListener("keydown", (e) => {
      if (e.key === "Escape") e.stopPropagation();
      if (e.key === "Enter" && e.target.tagName !== "TEXTAREA" && e.target.tagName !== "BUTTON") {
        e.preventDefault();
        form.requestSubmit();
      }
    });
    dialog.append(form);
    return dialog;
  }

  _label(text, control) {
    const label = el("label", text, "field");
    label.append(control);
    return label;
  }

  async _submit(values) {
    let body;
    try {
      body = requestBody(this.eventId, values);
    } catch (err) {
      this.error.textContent = err.message;
      return;
    }
    const response = await fetch(`/api/traces/${this.traceId}/counterfactuals/`, {
      method: "POST", credentials: "same-origin", body: JSON.stringify(body),
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    });
    const answer = await response.json();
    if (!response.ok) {
      this.error.textContent = `${answer.field ? `${answer.field}: ` : ""}${answer.error}`;
      return;
    }
    this.dialog.close();
    this._renderJob(this.jobs.get(answer.id) ?? answer);
  }

  async _cancel(job) {
    const response = await fetch(`/api/jobs/${job.id}/cancel/`, {
      method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": csrfToken() },
    });
    if (response.ok) this.handleJob(await response.json());
  }

  _renderJob(job) {
    this.jobs.set(job.id, job);
    let row = this.rows.get(job.id);
    if (!row) {
      row = el("article", null, "counterfactual-job");
      row.dataset.testid = "job";
      row.dataset.jobId = String(job.id);
      this.rows.set(job.id, row);
      this.panel.querySelector("[data-field=jobs]").prepend(row);
      this.panel.hidden = false;
    }
    row.dataset.status = job.status;
    const head = el("p");
    head.append(el("code", describeIntervention(job.intervention)), ` · ${job.backend} · `,
      el("span", job.status, `job-status job-${job.status}`));
    const progress = el("progress");
    progress.max = job.total;
    progress.value = job.done;
    progress.dataset.testid = "job-progress";
    const count = el("span", `${job.done} / ${job.total} samples`, "muted");
    const parts = [head, progress, count];
    if (job.status === "queued" || job.status === "running") {
      const cancel = el("button", "Cancel", "button small");
      cancel.type = "button";
      cancel.addEventListener("click", () => this._cancel(job));
      parts.push(cancel);
    }
    if (job.error) parts.push(el("p", job.error, "notice"));
    if (job.result) {
      const delta = el("p", formatDelta(job.result), "job-delta");
      delta.dataset.testid = "job-delta";
      const samples = el("ol", null, "sample-strip");
      samples.dataset.testid = "job-samples";
      samples.setAttribute("aria-label", "Per-sample rewards: control → intervention");
      for (const s of job.samples) {
        const li = el("li", `${s.control}→${s.intervention}`, s.control === s.intervention ? "same" : "changed");
        li.title = `seed ${s.seed}: control ${s.control}, intervention ${s.intervention}`;
        samples.append(li);
      }
      parts.push(delta, samples);
    }
    if (job.compare_url) {
      const link = el("a", "Open branch trace side by side", "button small");
      link.href = job.compare_url;
      link.dataset.testid = "open-branch";
      parts.push(link);
    }
    row.replaceChildren(...parts);
  }
}
