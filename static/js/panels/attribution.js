/**
 * "Attribute this trace": credit for every message, or every agent, with a chosen estimator and
 * rollout budget.
 *
 * The header's "Attribute this trace" button reveals the "Attribution" panel and focuses its form
 * (estimator, players: messages | agents, budget in rollouts, seed, rollout backend; Enter submits).
 * Submitting first asks `/api/traces/<id>/attributions/estimate/`; where the backend calls an LLM
 * the panel shows the estimated requests and tokens and only a second press ("Confirm and run")
 * POSTs `/api/traces/<id>/attributions/run/` with `confirmed: true`; any change to the form asks
 * again (estimated_run.js, as in the counterfactual dialog). The job's progress comes over the trace websocket
 * (`{"type": "job", "job": {kind: "attribution", ...}}`, routed here by `handleJob`); once done,
 * its `results` (one attribution per message or agent, highest credit first) fill a ranked table
 * — a row's click (or Enter) selects the event or agent — and `onCredit(map)` hands the timeline
 * event id -> credit in [-1, 1] (estimate / largest |estimate|) to paint, `onGraphCredit(credit)`
 * the agent graph its node and edge credit (`graphCredit`), with a legend here. `show(job)`
 * displays a stored job (after a reload, or from the history). The job's server usage shows under
 * its progress (job_usage.js: requests beside the confirmed estimate's, prompt tokens, cache hit
 * rate, wall time counting on while it runs). Server text is only ever set with
 * `textContent`. For a viewer (`readOnly`: the reason) the form's Run is disabled with the reason
 * as tooltip and a note, and stored results still show. The backend selector offers the backends
 * that can attribute this trace (`capabilities`, with their message and agent counts); where none
 * can, Run is disabled and the reason shows as text with a link to the README section. Under the
 * form, the estimator guide (estimator_guide.js: what the chosen estimator estimates and what
 * bench/bench_estimators.py measured for it), what its 95 % interval did at the sample count the
 * budget buys (real-effect coverage per coupling with its worst family, and how often it called a
 * null message real), and, where some family and coupling were significantly off nominal there, a
 * note that says so.
 */

import { formatNumber } from "../lib/format.js";
import { el } from "../lib/dom.js";
import { creditColor } from "../lib/palette.js";
import { EstimatedRun, estimateTokens } from "./estimated_run.js";
import { coverageLine, coverageNote, estimatorGuide, llmCouplingNote, samplesPerPlayer } from "./estimator_guide.js";
import { normaliseCapabilities, reasonElement } from "./counterfactual.js";
import { WALL_TICK_MS, liveWall, usageElement } from "./job_usage.js";

export const METHODS = [
  ["loo", "Paired leave-one-out"],
  ["shapley", "Shapley (permutations, antithetic)"],
  ["kernelshap", "KernelSHAP (paired)"],
  ["shapley2", "Shapley, pairwise interactions (orthogonal design; Banzhaf otherwise)"],
];
export const DEFAULT_BUDGET = 416;
/** Who is credited: every message event, or every agent that sends a message (removed with all its events). */
export const PLAYER_KINDS = [["messages", "messages"], ["agents", "agents"]];

/** The request body from the form's values; throws Error naming what is wrong. */
export function attributionBody({ method, budget, seed, players = "messages", backend = "sim" }) {
  if (!METHODS.some(([m]) => m === method)) throw new Error(`unknown method ${method}`);
  if (!PLAYER_KINDS.some(([p]) => p === players)) throw new Error(`players must be messages or agents, not ${players}`);
  const rollouts = Number(budget);
  if (!Number.isInteger(rollouts) || rollouts < 1) throw new Error("the budget must be a positive number of rollouts");
  const s = Number(seed || 0);
  if (!Number.isInteger(s) || s < 0) throw new Error("the seed must be a non-negative integer");
  if (typeof backend !== "string" || !backend) throw new Error("choose a rollout backend");
  return { method, budget: rollouts, seed: s, players, backend };
}

/**
 * The panel's line for an attribution's cost estimate (`POST .../attributions/estimate/`):
 * "≈ 1,200 prompt + 300 completion tokens (1,500 in all) in 52 requests: loo over 4 messages, 4 samples (20 rollouts)"
 * (the tokens with their range where the estimate gives one: `estimateTokens`).
 */
export function formatAttributionEstimate(e) {
  const picks = e.speaker_requests ? `, ${e.speaker_requests} speaker picks` : "";
  const verdicts = e.verdict_requests ? `, ${e.verdict_requests} verdicts` : "";
  return `${estimateTokens(e)} in ${formatNumber(e.requests)} requests${picks}${verdicts}: `
    + `${e.method} over ${e.players} ${e.player_kind}, ${e.n} samples (${formatNumber(e.rollouts)} rollouts)`;
}

/** The event id an attribution's target names (`event:<id>`), or null for another target. */
export function targetEvent(target) {
  return target.startsWith("event:") && !target.includes(", ") ? target.slice("event:".length) : null;
}

/** The trace page's deep link that opens trace `traceId` with event `id` selected. */
export function eventLink(traceId, id) {
  return `/traces/${traceId}/?event=${encodeURIComponent(id)}`;
}

/** The agent an attribution's target names (`agent:<name>`), or null for another target. */
export function targetAgent(target) {
  return target.startsWith("agent:") && !target.includes(", ") ? target.slice("agent:".length) : null;
}

/** Each value of `sums` over the largest |value| (all 0 when none is): credit in [-1, 1]. */
function scaled(sums) {
  const scale = Math.max(0, ...[...sums.values()].map(Math.abs));
  return new Map([...sums].map(([k, v]) => [k, scale > 0 ? v / scale : 0]));
}

/**
 * The agent graph's credit from one job's results (estimates in reward units).
 * Agent targets credit their node. Message targets credit their sender's node (the sum of its
 * messages' estimates) and the sender→receiver edge (the sum over the messages on it; `\u0000`
 * joins the pair in the key). Each map is scaled by its own largest |sum| into [-1, 1];
 * `largest` keeps those sums for the legend.
 * @param {{target: string, estimate: number}[]} results
 * @param {(id: string) => ({agent: string, to?: string}|undefined)} eventOf
 * @returns {{nodes: Map<string, number>, edges: Map<string, number>, largest: {nodes: number, edges: number}}}
 */
export function graphCredit(results, eventOf) {
  const nodes = new Map();
  const edges = new Map();
  const add = (map, key, value) => map.set(key, (map.get(key) ?? 0) + value);
  for (const r of results) {
    const agent = targetAgent(r.target);
    if (agent !== null) {
      add(nodes, agent, r.estimate);
      continue;
    }
    const id = targetEvent(r.target);
    const ev = id === null ? undefined : eventOf(id);
    if (!ev) continue;
    add(nodes, ev.agent, r.estimate);
    if (typeof ev.to === "string" && ev.to && ev.to !== ev.agent) add(edges, `${ev.agent}\u0000${ev.to}`, r.estimate);
  }
  const largest = (map) => Math.max(0, ...[...map.values()].map(Math.abs));
  return { nodes: scaled(nodes), edges: scaled(edges), largest: { nodes: largest(nodes), edges: largest(edges) } };
}

/** event id -> credit in [-1, 1]: each estimate over the largest |estimate| (all 0 when none is). */
export function creditMap(results) {
  const scale = Math.max(0, ...results.map((r) => Math.abs(r.estimate)));
  const map = new Map();
  for (const r of results) {
    const id = targetEvent(r.target);
    if (id !== null) map.set(id, scale > 0 ? r.estimate / scale : 0);
  }
  return map;
}

export class AttributionPanel {
  /**
   * @param {HTMLElement} panel the `[data-testid=attribution-panel]` section (hidden until opened)
   * @param {{traceId: string, onSelectEvent: (id: string) => void, onSelectAgent?: (name: string) => void,
   *   onCredit: (map: Map) => void, onGraphCredit?: (credit: object|null) => void,
   *   eventOf?: (id: string) => object|undefined, backends?: string[]}} options
   *   `backends`: the rollout backends offered (the page's `data-rollout-backends`); `readOnly`: why
   *   the caller may not run attributions (a viewer), "" when they may; `capabilities`: the page's
   *   `data-capabilities` (which backend can attribute this trace, over how many messages or agents)
   */
  constructor(panel, { traceId, onSelectEvent, onCredit, onSelectAgent = () => {}, onGraphCredit = () => {},
    eventOf = () => undefined, backends = ["sim"], readOnly = "", capabilities = null }) {
    this.panel = panel;
    this.readOnly = readOnly;
    this.traceId = traceId;
    /** What each backend can run on this trace (counterfactual.js's `normaliseCapabilities`). */
    this.capabilities = normaliseCapabilities(capabilities, backends.length ? backends : ["sim"]);
    this.backends = Object.keys(this.capabilities.backends);
    this.onSelectEvent = onSelectEvent;
    this.onSelectAgent = onSelectAgent;
    this.onCredit = onCredit;
    this.onGraphCredit = onGraphCredit;
    this.eventOf = eventOf;
    this.job = null;
    this.received = 0;
    this.ticker = null;
    this._build();
  }

  /** Show the panel and focus the estimator. */
  open() {
    this.panel.hidden = false;
    this.method.focus();
  }

  /** Show the stored attribution job `job` (its full form, `/api/jobs/<id>/`), e.g. after a reload. */
  show(job) {
    this.panel.hidden = false;
    this.job = null;
    this.handleJob(job);
  }

  /** Apply an attribution job's state (websocket or API); only the latest job requested here. */
  handleJob(job) {
    if (this.job && job.id !== this.job.id) return;
    const active = (j) => j.status === "queued" || j.status === "running";
    if (this.job && active(job) && (!active(this.job) || job.done < this.job.done)) return;
    this.job = job;
    this._render();
  }

  _build() {
    const form = el("form", null, "attribution-form");
    form.dataset.testid = "attribution-form";
    this.method = el("select");
    this.method.name = "method";
    for (const [value, label] of METHODS) this.method.append(new Option(label, value));
    const players = el("select");
    players.name = "players";
    players.dataset.testid = "attribution-players";
    for (const [value, label] of PLAYER_KINDS) players.append(new Option(label, value));
    const budget = el("input");
    Object.assign(budget, { name: "budget", type: "number", min: "1", value: String(DEFAULT_BUDGET) });
    const seed = el("input");
    Object.assign(seed, { name: "seed", type: "number", min: "0", value: "0" });
    const backend = el("select");
    backend.name = "backend";
    backend.dataset.testid = "attribution-backend";
    const caps = this.capabilities.backends;
    for (const b of this.backends) {
      const able = caps[b].available && caps[b].attribution?.available !== false;
      const option = new Option(able ? `${b} (${caps[b].messages ?? "?"} messages, ${caps[b].agents ?? "?"} agents)`
        : `${b} (unavailable)`, b);
      option.disabled = !able;
      if (!able) option.title = caps[b].reason || caps[b].attribution?.reason || "";
      backend.append(option);
    }
    const firstAble = this.backends.find((b) => caps[b].available && caps[b].attribution?.available !== false);
    if (firstAble) backend.value = firstAble;
    this._values = () => ({ method: this.method.value, budget: budget.value, seed: seed.value, players: players.value,
      backend: backend.value });
    /** The estimate -> confirm -> run flow of the form. */
    this.runner = new EstimatedRun({
      estimateUrl: `/api/traces/${this.traceId}/attributions/estimate/`,
      runUrl: `/api/traces/${this.traceId}/attributions/run/`,
      body: () => attributionBody(this._values()),
      describe: formatAttributionEstimate,
      onStarted: (job) => {
        this.job = null;
        this.handleJob(job);
      },
      runClass: "button primary small", runTestid: "attribution-run", estimateTestid: "attribution-estimate",
      pendingText: "Estimating the cost…",
    });
    const run = this.runner.run;
    const label = (text, control) => {
      const l = el("label", text, "field");
      l.append(control);
      return l;
    };
    form.append(label("Estimator", this.method), label("Players", players), label("Budget (rollouts)", budget),
      label("Seed", seed), label("Rollout backend", backend), run);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      if (!this.readOnly && !run.disabled) this.runner.submit();
    });
    if (this.readOnly) {
      Object.assign(run, { disabled: true, title: this.readOnly });
      const note = el("p", this.readOnly, "hint");
      note.dataset.testid = "attribution-read-only";
      form.append(note);
    } else if (this.capabilities.attribution && !this.capabilities.attribution.available) {
      // No backend can attribute this trace: say why, and where the README says how.
      Object.assign(run, { disabled: true, title: this.capabilities.attribution.reason });
      form.append(reasonElement(this.capabilities.attribution.reason, this.capabilities.docs ?? "",
        "attribution-reason"));
    }
    const unavailable = this.backends.filter((b) => !(caps[b].available && caps[b].attribution?.available !== false));
    const notes = [...(firstAble ? caps[firstAble].notes ?? [] : []),
      ...(firstAble ? unavailable.map((b) => `${b}: ${caps[b].reason || caps[b].attribution?.reason}`) : [])];
    if (notes.length) {
      const line = el("p", notes.join(" "), "hint");
      line.dataset.testid = "attribution-backend-note";
      form.append(line);
    }
    // Which estimator for which situation, from bench/bench_estimators.py (estimator_guide.js), the
    // interval's measured coverage at the sample count this budget buys, and a note where it falls short.
    this.guide = el("div", null, "estimator-guide");
    this.guide.dataset.testid = "estimator-guide";
    const showGuide = () => {
      const method = this.method.value;
      const line = el("p", estimatorGuide(method), "hint");
      line.dataset.testid = "estimator-guide-text";
      const counts = caps[backend.value] ?? {};
      const samples = samplesPerPlayer(method, budget.value, players.value === "agents" ? counts.agents : counts.messages);
      const note = coverageNote(method, samples);
      const parts = [line];
      const coverage = coverageLine(method, samples);
      if (coverage) {
        const measured = el("p", coverage, "hint");
        measured.dataset.testid = "estimator-coverage";
        parts.push(measured);
      }
      const coupling = backend.value.startsWith("openai") ? llmCouplingNote() : null;
      if (coupling) {
        const measured = el("p", coupling, "hint");
        measured.dataset.testid = "estimator-llm-coupling";
        parts.push(measured);
      }
      if (note) {
        const warning = el("p", note, "notice");
        warning.dataset.testid = "estimator-coverage-note";
        parts.push(warning);
      }
      this.guide.replaceChildren(...parts);
    };
    for (const control of [this.method, players, budget, backend]) control.addEventListener("input", showGuide);
    for (const control of [this.method, players, backend]) control.addEventListener("change", showGuide);
    showGuide();
    // A confirmation is for the request whose estimate was shown: any change to it asks again.
    this.runner.watch(form, [budget, seed]);
    // Keys typed here are the form's, not the page's shortcuts (arrows step, Esc clears).
    form.addEventListener("keydown", (e) => e.stopPropagation());
    this.status = el("div", null, "attribution-status");
    this.status.setAttribute("aria-live", "polite");
    this.table = el("div", null, "attribution-results");
    this.panel.querySelector("[data-field=body]").append(form, this.guide, this.runner.estimate, this.runner.error,
      this.status, this.table);
  }

  _render() {
    const job = this.job;
    const progress = el("progress");
    progress.max = job.total;
    progress.value = job.done;
    progress.dataset.testid = "attribution-progress";
    const line = el("p", `${job.method} · ${job.player_kind ?? "messages"} · ${job.status} · `
      + `${job.done} / ${job.total} samples`, "muted");
    line.dataset.testid = "attribution-status";
    line.dataset.status = job.status;
    const parts = [line, progress];
    const usage = usageElement(job, "attribution-usage");
    if (usage) parts.push(usage);
    if (job.error) parts.push(el("p", job.error, "notice"));
    this.status.replaceChildren(...parts);
    this.received = performance.now();
    const active = job.status === "queued" || job.status === "running";
    if (active && usage && this.ticker === null) this.ticker = setInterval(() => this._tick(), WALL_TICK_MS);
    if (job.status !== "done") {
      this.table.replaceChildren();
      return;
    }
    const results = job.results ?? [];
    this._renderTable(results);
    this.onCredit(creditMap(results));
    this.onGraphCredit(graphCredit(results, this.eventOf));
  }

  /** Redraw the running job's wall time between messages; the ticker stops once it is not active. */
  _tick() {
    const job = this.job;
    if (!job || (job.status !== "queued" && job.status !== "running")) {
      clearInterval(this.ticker);
      this.ticker = null;
      return;
    }
    const fresh = usageElement(job, "attribution-usage",
      liveWall(job, (performance.now() - this.received) / 1000));
    const line = this.status.querySelector("[data-testid=attribution-usage]");
    if (line && fresh) line.textContent = fresh.textContent;
  }

  _renderTable(results) {
    const table = el("table", null, "attribution-table");
    table.dataset.testid = "attribution-table";
    const head = el("tr");
    const agents = results.some((r) => targetAgent(r.target) !== null);
    for (const h of ["#", agents ? "Agent" : "Message", "Credit", "95 % interval"]) head.append(el("th", h));
    const credit = agents ? new Map(results.map((r) => [r.target, r.estimate])) : null;
    const scale = Math.max(0, ...results.map((r) => Math.abs(r.estimate)));
    table.append(el("thead"), el("tbody"));
    table.tHead.append(head);
    results.forEach((r, i) => {
      const row = el("tr");
      row.dataset.testid = "attribution-row";
      row.dataset.target = r.target;
      row.tabIndex = 0;
      const swatch = el("span", null, "credit-swatch");
      swatch.style.background = creditColor(scale > 0 ? (credit?.get(r.target) ?? r.estimate) / scale : 0);
      const estimate = el("td");
      estimate.append(swatch, formatNumber(r.estimate));
      const name = el("td");
      const eventId = targetEvent(r.target);
      if (eventId !== null) {
        // A link that opens the trace page with the event selected (`?event=`): to share or open in a tab.
        const link = el("a", eventId);
        link.href = eventLink(this.traceId, eventId);
        link.dataset.testid = "attribution-event-link";
        link.addEventListener("click", (e) => {
          if (e.button === 0 && !(e.ctrlKey || e.metaKey || e.shiftKey || e.altKey)) e.preventDefault();
        });
        name.append(link);
      } else name.append(targetAgent(r.target) ?? r.target);
      row.append(el("td", i + 1), name, estimate,
        el("td", `[${formatNumber(r.ci_low)}, ${formatNumber(r.ci_high)}]`));
      row.title = `${r.method}, ${r.n_rollouts} rollouts, seed ${r.seed}`;
      const select = () => {
        const id = targetEvent(r.target);
        const agent = targetAgent(r.target);
        if (id !== null) this.onSelectEvent(id);
        else if (agent !== null) this.onSelectAgent(agent);
      };
      row.addEventListener("click", select);
      row.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          select();
        }
      });
      table.tBodies[0].append(row);
    });
    const legend = el("p", null, "credit-legend");
    legend.dataset.testid = "credit-legend";
    legend.append(el("span", "negative"), el("span", null, "credit-ramp"), el("span", "positive credit"),
      el("span", ` · largest |Δ| ${formatNumber(Math.max(0, ...results.map((r) => Math.abs(r.estimate))))}`, "muted"));
    const exportLinks = el("p", null, "button-row");
    for (const fmt of ["csv", "json"]) {
      const a = el("a", `Export ${fmt.toUpperCase()}`, "button small");
      a.href = `/api/traces/${this.traceId}/attributions/?format=${fmt}`;
      exportLinks.append(a);
    }
    this.table.replaceChildren(legend, table, exportLinks);
  }
}
