/**
 * "What if removed?": counterfactual re-rollouts of message-like events or agents, from the inspector.
 *
 * `Counterfactual.actionsFor(ev)` gives the inspector its button for an event, `agentActionsFor(name)`
 * for an agent (the dialog opens with the agent checked). Events shift/ctrl-clicked on the timeline
 * form a multi-selection (`toggleSelected`, `clearSelected`; the page keeps the timeline's rings in
 * step) that the event's button pre-checks together with the event. The button opens a dialog
 * (targets: the event, plus any other messages and agents checked there — one intervention on
 * all of them; intervention kind, replacement text, N paired samples, rollout backend; Enter
 * submits, Esc closes). Submitting first asks `/api/traces/<id>/counterfactuals/estimate/`; where
 * the backend calls an LLM the dialog shows the estimated prompt and completion tokens and only
 * a second press ("Confirm and run") POSTs `/api/traces/<id>/counterfactuals/` with
 * `confirmed: true`; any change to the form asks again (estimated_run.js). Jobs then show in the
 * "Counterfactuals" panel: a progress bar fed by the trace websocket's `{"type": "job", "job": {...}}` messages
 * (`handleJob`), and once done Δ = E[R | h] − E[R | do(intervention)] with its 95 % interval and
 * rollout count, the per-sample outcomes (control → intervention reward) and a link that opens the
 * branch trace side by side with the original. Each job shows the server's usage all along
 * (job_usage.js: requests beside the confirmed estimate's, prompt tokens, cache hit rate, wall
 * time, counting on between messages while it runs). Server text is only ever set with `textContent`.
 * For a viewer (`readOnly`: the reason, from the page's `data-read-only-hint`) the buttons and
 * the jobs' Cancel are disabled with that reason as their tooltip; the server refuses them too.
 * Where no backend can run it (`capabilities`, the page's `data-capabilities`: which backend can
 * re-run the trace, and its message types, the one definition of a removable message), the button
 * is disabled with the reason as visible text and a link to the README section (`whatIfState`);
 * the dialog offers the backends that can, lists the chosen backend's messages, and says why the
 * others cannot (and what the chosen one notes: verifier scoring, a long history).
 */

import { contentLabel, formatNumber } from "../lib/format.js";
import { csrfToken, el } from "../lib/dom.js";
import { EstimatedRun, estimateTokens } from "./estimated_run.js";
import { WALL_TICK_MS, liveWall, usageElement } from "./job_usage.js";

/** Event types an intervention may target (swarmscope.interventions.MESSAGE_LIKE_TYPES). */
export const MESSAGE_LIKE_TYPES = ["message", "delegate", "return"];
export const INTERVENTION_KINDS = ["remove", "mask", "resample", "replace"];
export const DEFAULT_SAMPLES = 32;

/** The one-line form of an intervention, as swarmscope's `describe()`: "remove(event:m3)". */
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
 * The request body from the dialog's targets and values; throws Error naming what is wrong.
 * @param {string|{events?: string[], agents?: string[]}} targets one event id, or the checked
 *   events and agents (one intervention on all of them: a coalition removed together)
 * @param {{kind: string, text: string, n: string|number, backend: string}} values
 */
export function requestBody(targets, { kind, text, n, backend }) {
  if (!INTERVENTION_KINDS.includes(kind)) throw new Error(`unknown intervention ${kind}`);
  const { events = [], agents = [] } = typeof targets === "string" ? { events: [targets] } : targets;
  if (events.length + agents.length === 0) throw new Error("select at least one message or agent");
  if (agents.length && kind !== "remove") throw new Error(`agents can only be removed, not ${kind}`);
  const samples = Number(n);
  if (!Number.isInteger(samples) || samples < 2) throw new Error("N must be an integer of at least 2");
  const intervention = { kind };
  if (events.length) intervention.events = [...events];
  if (agents.length) intervention.agents = [...agents];
  if (kind === "replace") {
    if (!text.trim()) throw new Error("replace needs the replacement text");
    intervention.text = text;
  }
  return { intervention, n: samples, backend };
}

/**
 * The dialog's line for a cost estimate (`POST .../counterfactuals/estimate/`; speaker picks of an
 * LLM orchestrator and verifier verdicts are named when there are any):
 * "≈ 17 prompt + 32 completion tokens (49 in all) in 2 requests: 2 arms × 4 samples from e2, 2 re-generated turns per pair"
 * (the tokens with their range where the estimate gives one: `estimateTokens`).
 */
export function formatEstimate(e) {
  const picks = e.speaker_requests ? `, ${formatNumber(e.speaker_requests)} of them speaker picks` : "";
  const verdicts = e.verdict_requests ? `, ${formatNumber(e.verdict_requests)} verdicts` : "";
  return `${estimateTokens(e)} in ${formatNumber(e.requests)} requests${picks}${verdicts}: `
    + `2 arms × ${e.n} samples from ${e.fork_event}, ${e.turns} re-generated turns per pair`;
}

/**
 * The messages of a trace (events of `types`: the backend's message types, `capabilities`'
 * `message_types`) that match `query` (in id, agent, receiver or content; case folded), in time
 * order, at most `limit`.
 * @param {Iterable<{id: string, type: string, t: number, agent: string, to?: string, content?: any}>} events
 * @returns {{matches: object[], total: number}} `total`: all matches before the limit
 */
export function targetChoices(events, query = "", limit = 300, types = MESSAGE_LIKE_TYPES) {
  const q = query.trim().toLowerCase();
  const matches = [...events].filter((ev) => types.includes(ev.type)
    && (!q || [ev.id, ev.agent, ev.to, typeof ev.content === "string" ? ev.content : ""]
      .some((v) => typeof v === "string" && v.toLowerCase().includes(q))))
    .sort((a, b) => a.t - b.t || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { matches: matches.slice(0, limit), total: matches.length };
}

/**
 * The page's capabilities (`data-capabilities`: webapp/counterfactuals/capabilities.py's
 * `action_capabilities`) or, without them, every offered backend as available for every
 * message-like event.
 * @param {object|null} capabilities
 * @param {string[]} backends the offered backend names (`data-rollout-backends`)
 */
export function normaliseCapabilities(capabilities, backends = []) {
  if (capabilities && capabilities.backends) return capabilities;
  const on = { available: true, reason: "" };
  const entries = (backends.length ? backends : ["sim"]).map((name) => [name, {
    backend: name, available: true, reason: "", message_types: MESSAGE_LIKE_TYPES, what_if: on, attribution: on,
    notes: [],
  }]);
  const names = entries.map(([name]) => name);
  return { backends: Object.fromEntries(entries), docs: "", what_if: { ...on, backends: names },
    attribution: { ...on, backends: names } };
}

/**
 * Whether "What if removed?" can run on an event of type `type` (or, `type` null, on an agent)
 * and on which backends: {enabled, backends (names, in the page's order), reason (words, "" when
 * enabled), docs (the README section)}. An event is removable by a backend that can re-run the
 * trace and counts its type among its messages (`message_types`); an agent by any backend that
 * can re-run the trace.
 * @param {object} capabilities `normaliseCapabilities`' answer
 * @param {string|null} type
 */
export function whatIfState(capabilities, type = null) {
  const entries = Object.entries(capabilities.backends);
  const able = entries.filter(([, cap]) => cap.available && (type === null
    ? true : (cap.message_types ?? MESSAGE_LIKE_TYPES).includes(type))).map(([name]) => name);
  if (able.length) return { enabled: true, backends: able, reason: "", docs: capabilities.docs ?? "" };
  let reason = capabilities.what_if?.reason ?? "";
  if (capabilities.what_if?.available || !reason) {
    const removes = entries.filter(([, cap]) => cap.available)
      .map(([name, cap]) => `${name} removes ${(cap.message_types ?? MESSAGE_LIKE_TYPES).join("/")} events`);
    reason = `No backend can remove a ${type} event here: ${removes.join("; ")}.`;
  }
  return { enabled: false, backends: [], reason, docs: capabilities.docs ?? "" };
}

/**
 * A disabled action's visible reason: a paragraph with the words and a link to the README section.
 * @param {string} reason
 * @param {string} docs
 * @param {string} testid
 */
export function reasonElement(reason, docs, testid) {
  const note = el("p", null, "hint action-reason");
  note.dataset.testid = testid;
  note.append(reason);
  if (docs) {
    const link = el("a", "How to enable it (README)");
    link.href = docs;
    link.dataset.testid = `${testid}-docs`;
    note.append(" ", link);
  }
  return note;
}

/**
 * `selection` (a Set of event ids) with `id` added, or removed when it is in it: a new Set.
 * @param {Set<string>} selection
 * @param {string} id
 */
export function toggleSelection(selection, id) {
  const next = new Set(selection);
  if (next.has(id)) next.delete(id);
  else next.add(id);
  return next;
}

/**
 * The events the dialog opened from event `id` pre-checks: the multi-selection in the order it
 * was made, then `id` when it is not in it — unless `id` was just toggled out of it
 * (`toggledOff`), which leaves the selection alone (or `id`, when nothing else is selected).
 * @param {Set<string>} selection
 * @param {string} id
 * @param {string|null} toggledOff
 * @returns {string[]}
 */
export function selectedTargets(selection, id, toggledOff = null) {
  if (selection.has(id)) return [...selection];
  if (id === toggledOff) return selection.size ? [...selection] : [id];
  return [...selection, id];
}

export class Counterfactual {
  /**
   * @param {HTMLElement} panel the `[data-testid=counterfactual-panel]` section (hidden until a job)
   * @param {{traceId: string, backends: string[], model?: {events: Map, agents: Map}}} options
   *   `model` (model/trace_model.js's TraceModel) lists the dialog's other targets; `readOnly`: why the
   *   caller may not request or cancel jobs (a viewer), "" when they may; `capabilities`: the
   *   page's `data-capabilities` (null: every backend offered runs every message-like event)
   */
  constructor(panel, { traceId, backends, model = { events: new Map(), agents: new Map() }, readOnly = "",
    capabilities = null }) {
    this.panel = panel;
    this.readOnly = readOnly;
    this.traceId = traceId;
    /** What each backend can run on this trace (`normaliseCapabilities`). */
    this.capabilities = normaliseCapabilities(capabilities, backends);
    this.backends = Object.keys(this.capabilities.backends);
    this.model = model;
    /** job id -> latest job state (websocket messages may arrive before the POST answers). */
    this.jobs = new Map();
    this.rows = new Map();
    /** job id -> performance.now() when its state last arrived (the wall time runs on from there). */
    this.received = new Map();
    this.ticker = null;
    /** The checked targets of the dialog. */
    this.checked = { events: new Set(), agents: new Set() };
    /** The multi-selected events (shift/ctrl-click on the timeline), in the order selected. */
    this.selection = new Set();
    /** The event the last toggle took out of the selection, else null. */
    this.toggledOff = null;
    this.dialog = this._buildDialog();
    document.body.append(this.dialog);
  }

  /**
   * The inspector's action for event `ev`: a "What if removed?" button that opens the dialog with
   * the event and the multi-selection checked (`selectedTargets`), or null for an event no
   * intervention can target.
   */
  actionsFor(ev) {
    if (!MESSAGE_LIKE_TYPES.includes(ev.type)) return null;
    const targets = selectedTargets(this.selection, ev.id, this.toggledOff);
    const button = el("button", targets.length > 1 ? `What if removed? (${targets.length} selected)`
      : "What if removed?", "button small");
    button.type = "button";
    button.dataset.testid = "what-if";
    button.title = "Shift- or Ctrl-click events on the timeline to select several";
    button.addEventListener("click", () => this.open({ events: targets }));
    return this._capable(this._guard(button), whatIfState(this.capabilities, ev.type), "what-if-reason");
  }

  /** The inspector's action for agent `name`: a "What if removed?" button (the agent and all its events). */
  agentActionsFor(name) {
    const button = el("button", "What if removed?", "button small");
    button.type = "button";
    button.dataset.testid = "what-if-agent";
    button.title = `Remove ${name} with all its events`;
    button.addEventListener("click", () => this.open({ agents: [name] }));
    return this._capable(this._guard(button), whatIfState(this.capabilities), "what-if-agent-reason");
  }

  /**
   * `button` as it is where some backend can run it (`state`: `whatIfState`), else disabled in a
   * block with the reason as visible text and a link to the README section. For a viewer the role
   * is the reason (`_guard`): no backend would make the action theirs.
   */
  _capable(button, state, testid) {
    if (state.enabled || this.readOnly) return button;
    button.disabled = true;
    button.title = state.reason;
    const block = el("div", null, "action-block");
    block.append(button, reasonElement(state.reason, state.docs, testid));
    return block;
  }

  /** `button`, disabled with the reason as its tooltip when the caller may only read. */
  _guard(button) {
    if (this.readOnly) Object.assign(button, { disabled: true, title: this.readOnly });
    return button;
  }

  /**
   * Add message-like event `id` to the multi-selection, or remove it when it is in it (others
   * are ignored). Returns the selection (a new Set).
   */
  toggleSelected(id) {
    const ev = this.model.events.get(id);
    if (ev && MESSAGE_LIKE_TYPES.includes(ev.type)) {
      this.selection = toggleSelection(this.selection, id);
      this.toggledOff = this.selection.has(id) ? null : id;
    }
    return this.selection;
  }

  /** Empty the multi-selection. Returns it (a new, empty Set). */
  clearSelected() {
    this.selection = new Set();
    this.toggledOff = null;
    return this.selection;
  }

  /**
   * Open the dialog with event `eventId` (or, given an object, the events and agents it lists)
   * as the checked targets; more can be checked in the dialog.
   * @param {string|{events?: string[], agents?: string[]}} targets
   */
  open(targets) {
    if (this.readOnly) return;
    const { events = [], agents = [] } = typeof targets === "string" ? { events: [targets] } : targets;
    this.checked = { events: new Set(events), agents: new Set(agents) };
    this.search.value = "";
    this.runner.setError("");
    this.runner.reset();
    this._renderTargets();
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

  /** Show job `job` (its full form) and move the focus to it. */
  reveal(job) {
    this.handleJob(job);
    const row = this.rows.get(job.id);
    row?.scrollIntoView({ block: "nearest" });
    row?.focus();
  }

  _targets() {
    return { events: [...this.checked.events], agents: [...this.checked.agents] };
  }

  _buildDialog() {
    const dialog = el("dialog", null, "counterfactual-dialog");
    dialog.dataset.testid = "what-if-dialog";
    const form = el("form", null, "stack");
    form.method = "dialog";
    const title = el("h2", "What if it had not been sent?");
    const target = el("p", null, "muted");
    target.append("Targets: ", el("code"));
    target.lastChild.dataset.field = "target";
    target.lastChild.dataset.testid = "what-if-targets";
    this.targetLine = target.lastChild;
    const targets = el("fieldset", null, "field what-if-targets");
    targets.append(el("legend", "Messages and agents (one intervention on all checked)"));
    this.search = el("input");
    Object.assign(this.search, { type: "search", placeholder: "Find a message…", autocomplete: "off" });
    this.search.setAttribute("aria-label", "Find a message to add");
    this.search.addEventListener("input", () => this._renderTargets());
    this.eventList = el("div", null, "check-list scroll");
    this.eventList.dataset.testid = "what-if-events";
    this.agentList = el("div", null, "check-list scroll");
    this.agentList.dataset.testid = "what-if-agents";
    this.moreNote = el("p", null, "hint");
    targets.append(this.search, this.eventList, this.moreNote, el("span", "Agents (remove all their events)", "hint"),
      this.agentList);
    const kind = el("select");
    kind.name = "kind";
    for (const k of INTERVENTION_KINDS) kind.append(new Option(k, k));
    const text = el("textarea");
    text.name = "text";
    text.rows = 3;
    text.placeholder = "Replacement text";
    const textLabel = this._label("Replacement", text);
    textLabel.hidden = true;
    kind.addEventListener("change", () => {
      textLabel.hidden = kind.value !== "replace";
      this._renderTargets();
    });
    this.kind = kind;
    const n = el("input");
    Object.assign(n, { name: "n", type: "number", min: "2", max: "4096", value: String(DEFAULT_SAMPLES) });
    const backend = el("select");
    backend.name = "backend";
    this.backendSelect = backend;
    for (const b of this.backends) {
      const cap = this.capabilities.backends[b];
      const option = new Option(cap.available ? b : `${b} (unavailable)`, b);
      option.disabled = !cap.available;
      if (!cap.available) option.title = cap.reason;
      backend.append(option);
    }
    const firstAble = this.backends.find((b) => this.capabilities.backends[b].available);
    if (firstAble) backend.value = firstAble;
    this.backendNote = el("p", null, "hint");
    this.backendNote.dataset.testid = "what-if-backend-note";
    const note = () => {
      const cap = this.capabilities.backends[backend.value];
      this.backendNote.textContent = [...(cap?.notes ?? []),
        ...this.backends.filter((b) => !this.capabilities.backends[b].available)
          .map((b) => `${b}: ${this.capabilities.backends[b].reason}`)].join(" ");
      this.backendNote.hidden = !this.backendNote.textContent;
    };
    note();
    backend.addEventListener("change", () => {
      note();
      this._renderTargets();
    });
    this._values = () => ({ kind: kind.value, text: text.value, n: n.value, backend: backend.value });
    /** The estimate -> confirm -> run flow of the dialog's form. */
    this.runner = new EstimatedRun({
      estimateUrl: `/api/traces/${this.traceId}/counterfactuals/estimate/`,
      runUrl: `/api/traces/${this.traceId}/counterfactuals/`,
      body: () => requestBody(this._targets(), this._values()),
      describe: formatEstimate,
      onStarted: (job) => {
        dialog.close();
        this._renderJob(this.jobs.get(job.id) ?? job);
      },
      runClass: "button primary", runTestid: "what-if-run", estimateTestid: "what-if-estimate",
      pendingText: "Estimating the cost…",
    });
    const close = el("button", "Close", "button");
    close.type = "button";
    close.addEventListener("click", () => dialog.close());
    const buttons = el("div", null, "button-row");
    buttons.append(this.runner.run, close);
    form.append(title, target, targets, this._label("Intervention", kind), textLabel,
      this._label("Paired samples N", n), this._label("Rollout backend", backend), this.backendNote, this.runner.estimate,
      this.runner.error, buttons);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.runner.submit();
    });
    // A confirmation is for the request whose estimate was shown: any change to it asks again.
    this.runner.watch(form, [text, n]);
    // A closed dialog (Close, Esc, a started job) shows no estimate and asks for none (a pilot's polling).
    dialog.addEventListener("close", () => this.runner.reset());
    // Esc closes the dialog (the browser's `cancel`) and nothing else: the page's Esc would
    // clear the selection.
    dialog.addEventListener("keydown", (e) => {
      if (e.key === "Escape") e.stopPropagation();
      if (e.key === "Enter" && !["TEXTAREA", "BUTTON"].includes(e.target.tagName) && e.target.type !== "checkbox") {
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

  _checkbox(set, value, text, disabled = false) {
    const label = el("label", null, "check");
    const box = el("input");
    Object.assign(box, { type: "checkbox", value, checked: set.has(value), disabled });
    box.addEventListener("change", () => {
      if (box.checked) set.add(value);
      else set.delete(value);
      this._renderTargetLine();
    });
    label.append(box, el("span", text));
    label.title = text;
    return label;
  }

  /** The dialog's checklists: the chosen backend's matching messages (checked first) and agents. */
  _renderTargets() {
    const types = this.capabilities.backends[this.backendSelect?.value]?.message_types ?? MESSAGE_LIKE_TYPES;
    const { matches, total } = targetChoices(this.model.events.values(), this.search.value, 300, types);
    const checkedEvents = [...this.checked.events].map((id) => this.model.events.get(id) ?? { id, agent: "?" });
    const shown = [...checkedEvents, ...matches.filter((ev) => !this.checked.events.has(ev.id))];
    this.eventList.replaceChildren(...shown.map((ev) => {
      const content = contentLabel(ev, typeof ev.content === "string" ? ev.content.slice(0, 60) : "");
      return this._checkbox(this.checked.events, ev.id,
        `${ev.id} · ${ev.agent}${ev.to ? ` → ${ev.to}` : ""}${content ? ` · ${content}` : ""}`);
    }));
    this.moreNote.textContent = total > matches.length ? `${total - matches.length} more: type to narrow the list` : "";
    const removable = this.kind.value === "remove";
    if (!removable) this.checked.agents.clear();
    this.agentList.replaceChildren(...[...this.model.agents.keys()].sort().map(
      (name) => this._checkbox(this.checked.agents, name, name, !removable)));
    this._renderTargetLine();
  }

  _renderTargetLine() {
    const { events, agents } = this._targets();
    this.targetLine.textContent = events.length + agents.length
      ? describeIntervention({ kind: this.kind.value, events, agents }).replace(/^[a-z]+\(|\)$/g, "")
      : "none selected";
    this.runner.changed();
  }

  async _cancel(job) {
    const response = await fetch(`/api/jobs/${job.id}/cancel/`, {
      method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": csrfToken() },
    });
    if (response.ok) this.handleJob(await response.json());
  }

  /** Redraw the wall time of active jobs; the ticker stops once none is active. */
  _tick() {
    let active = 0;
    for (const [id, job] of this.jobs) {
      if (job.status !== "queued" && job.status !== "running") continue;
      active += 1;
      const line = this.rows.get(id)?.querySelector("[data-testid=job-usage]");
      const wall = liveWall(job, (performance.now() - (this.received.get(id) ?? performance.now())) / 1000);
      const fresh = usageElement(job, "job-usage", wall);
      if (line && fresh) line.textContent = fresh.textContent;
    }
    if (!active) {
      clearInterval(this.ticker);
      this.ticker = null;
    }
  }

  _renderJob(job) {
    this.jobs.set(job.id, job);
    this.received.set(job.id, performance.now());
    let row = this.rows.get(job.id);
    if (!row) {
      row = el("article", null, "counterfactual-job");
      row.dataset.testid = "job";
      row.dataset.jobId = String(job.id);
      row.id = `job-${job.id}`;
      row.tabIndex = -1;
      this.rows.set(job.id, row);
      // Newest first: a job lands above the ones requested before it (restored ones arrive in any order).
      const later = [...this.rows.keys()].filter((id) => id > job.id && this.rows.get(id).isConnected)
        .sort((a, b) => a - b)[0];
      const list = this.panel.querySelector("[data-field=jobs]");
      if (later === undefined) list.prepend(row);
      else this.rows.get(later).after(row);
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
    const usage = usageElement(job, "job-usage");
    if (usage) parts.push(usage);
    if (usage && (job.status === "queued" || job.status === "running") && this.ticker === null) {
      this.ticker = setInterval(() => this._tick(), WALL_TICK_MS);
    }
    if (job.status === "queued" || job.status === "running") {
      const cancel = el("button", "Cancel", "button small");
      cancel.type = "button";
      cancel.addEventListener("click", () => this._cancel(job));
      parts.push(this._guard(cancel));
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
