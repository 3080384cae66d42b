/**
 * Entry point of the trace page (templates/traces/trace_detail.html).
 *
 * Reads `data-trace-id`, `data-ws-url` and `data-snapshot-url` from `#trace-app`; loads the
 * snapshot over HTTP (or takes the websocket's first message), then opens the websocket with
 * `?seq=N`, applies the live deltas, sends `{"type":"resume","seq":N}` on a gap and after every
 * (re)connect, reconnects with backoff, and keeps the timeline,
 * agent graph, inspector, metrics and filters in step. Selecting an event or an agent in one
 * view selects it in the others and opens the inspector.
 *
 * Keyboard: ArrowRight / ArrowLeft step through the visible events in time order, `/`
 * focuses the search, Esc closes the inspector; in the transcript (panels/transcript.js), j / k
 * or ↓ / ↑ step too. The transcript and the header's task facts follow the same selection.
 *
 * `data-can-write="false"` (a viewer) with `data-read-only-hint` disables the counterfactual and
 * attribution controls, the hint as their tooltip; the server refuses those writes as well.
 *
 * Deep links (`openDeepLink`): `?event=<id>` selects that event on load, `?job=<id>` shows that job.
 * The header's disabled actions say why in the page (webapp/counterfactuals "capabilities"); the
 * panels get `data-capabilities` to offer only the backends that can run them.
 *
 * For browser tests: `window.swarmscope` = {model, ready, selectEvent(id), selectAgent(name),
 * eventClientPoint(id), timeline (its camera: setWindow, fit, debugState, drawnItems), lastSeq(),
 * eventCount()}; `<body data-seq data-event-count data-selected>` mirror the state.
 */

import { AgentGraph } from "../views/agent_graph.js";
import { AttributionPanel } from "../panels/attribution.js";
import { Counterfactual } from "../panels/counterfactual.js";
import { FiltersPanel } from "../panels/filters.js";
import { formatNumber } from "../lib/format.js";
import { TraceModel } from "../model/trace_model.js";
import { Inspector } from "../panels/inspector.js";
import { JobHistory } from "../panels/job_history.js";
import { LiveConnection, websocketUrl, withParam } from "../lib/live_connection.js";
import { MetricsPanel } from "../panels/metrics_panel.js";
import { Timeline } from "../views/timeline.js";
import { TraceFacts } from "../panels/trace_facts.js";
import { Transcript } from "../panels/transcript.js";
import { makeResizer } from "../lib/resizer.js";

/** The events/s counter averages over this window. */
const RATE_WINDOW_MS = 5000;
/** A resume request for the same seq is not repeated within this time. */
const RESUME_RETRY_MS = 3000;
/** A trace is shown as live this long after its last events (the server's LIVE_WINDOW_S). */
const LIVE_WINDOW_MS = 30000;

const BADGES = {
  connecting: ["connecting", "Connecting…"],
  reconnecting: ["reconnecting", "Reconnecting…"],
  closed: ["offline", "Offline"],
};

class TracePage {
  /** @param {HTMLElement} app the `#trace-app` element */
  constructor(app) {
    this.app = app;
    this.model = new TraceModel();
    this.selection = null; // {kind: "event", id} | {kind: "agent", name}
    this.pending = []; // deltas that arrived before the first snapshot
    this.arrivals = []; // [ms, events] per delta, for the events/s counter
    this.lastResume = { seq: null, at: 0 };
    this.liveUntil = 0; // performance.now() until which the trace counts as live
    this.connection = null;
    this.renderFrame = 0;
    this.renderedVersion = -1;
    this.ready = new Promise((resolve) => { this._resolveReady = resolve; });
    const part = (testid) => app.querySelector(`[data-testid="${testid}"]`);
    this.badge = part("live-badge");
    this.rate = part("events-per-second");
    this.empty = part("empty-state");
    this.notice = part("notice");
    this.timeline = new Timeline({
      canvas: part("timeline-canvas"), lanes: part("lane-column"), axis: part("timeline-axis"),
      overview: part("timeline-overview"), only: part("timeline-only"),
      model: this.model,
      onSelectEvent: (id, modifiers) => this.selectEvent(id, modifiers),
      onSelectAgent: (name) => this.selectAgent(name),
      onToggleLane: (name) => {
        this.model.toggleCollapsed(name);
        this.scheduleRender();
      },
      onOnlyAgent: (name) => this.onlyAgent(name),
    });
    this.agentGraph = new AgentGraph({
      container: part("agent-graph-canvas"), model: this.model,
      onSelectAgent: (name) => this.selectAgent(name),
    });
    const readOnly = app.dataset.canWrite === "false" ? (app.dataset.readOnlyHint || "Viewers only read") : "";
    // What each rollout backend can run here (webapp/counterfactuals/capabilities.py), and why not.
    const capabilities = JSON.parse(app.dataset.capabilities || "null");
    this.counterfactual = new Counterfactual(part("counterfactual-panel"), {
      traceId: app.dataset.traceId, backends: JSON.parse(app.dataset.rolloutBackends || "[]"), model: this.model, readOnly,
      capabilities,
    });
    this.attribution = new AttributionPanel(part("attribution-panel"), {
      traceId: app.dataset.traceId, backends: JSON.parse(app.dataset.rolloutBackends || "[]"), readOnly, capabilities,
      onSelectEvent: (id) => this.selectEvent(id),
      onCredit: (credit) => this.timeline.setCredit(credit),
      onSelectAgent: (name) => this.selectAgent(name),
      onGraphCredit: (credit) => this.agentGraph.setCredit(credit),
      eventOf: (id) => this.model.events.get(id),
    });
    this.history = new JobHistory(part("job-history"), {
      traceId: app.dataset.traceId,
      onShowAttribution: (job) => this.attribution.show(job),
      onShowCounterfactual: (job, { focus }) => (focus ? this.counterfactual.reveal(job) : this.counterfactual.handleJob(job)),
    });
    this.inspector = new Inspector(part("inspector"), {
      model: this.model,
      eventActions: (ev) => this.counterfactual.actionsFor(ev),
      agentActions: (name) => this.counterfactual.agentActionsFor(name),
      onSelectEvent: (id) => this.selectEvent(id),
      onSelectAgent: (name) => this.selectAgent(name),
      onClose: () => this.clearSelection(),
    });
    this.metrics = new MetricsPanel(part("metrics-panel"));
    this.transcript = new Transcript(part("transcript-panel"), {
      model: this.model,
      onSelectEvent: (id) => this.selectEvent(id),
      onSelectAgent: (name) => this.selectAgent(name),
    });
    this.facts = new TraceFacts(part("trace-facts"), { onGoToMistake: () => this.transcript.goToMistake() });
    this.filters = new FiltersPanel(part("filters"), {
      model: this.model,
      onChange: () => this.scheduleRender(),
      onMode: (mode) => this.timeline.setMode(mode),
      onCritical: (show) => this.timeline.setShowCritical(show),
    });
  }

  /** Load the snapshot, connect, and wire the controls. */
  start() {
    const { wsUrl, snapshotUrl } = this.app.dataset;
    document.addEventListener("keydown", (e) => this.onKey(e));
    this.app.querySelector('[data-action="fit-timeline"]')?.addEventListener("click", () => this.timeline.fit());
    this.app.querySelector('[data-action="attribute"]')?.addEventListener("click", () => this.attribution.open());
    this.app.querySelector('[data-action="fit-graph"]')?.addEventListener("click", () => this.agentGraph.fit());
    this.app.querySelector('[data-action="size-by"]')?.addEventListener("change", (e) => this.agentGraph.setSizeBy(e.target.value));
    makeResizer(this.app.querySelector('[data-resizer="transcript"]'), {
      host: this.app.querySelector(".trace-main"), column: this.transcript.root, variable: "--transcript-w",
      min: 280, max: 1200, storageKey: "swarmscope.transcript-w",
    });
    makeResizer(this.app.querySelector('[data-resizer="side"]'), {
      host: this.app.querySelector(".trace-layout"), column: this.app.querySelector(".trace-side"), variable: "--side-w",
      min: 260, max: 900, storageKey: "swarmscope.side-w",
    });
    // The snapshot comes over HTTP when there is a URL for it (one request, no size limit);
    // the websocket then only needs what came after (`?seq=`). Without it, or when the request
    // fails, the websocket's own first message is the snapshot.
    const connect = () => wsUrl && this.connect(websocketUrl(wsUrl));
    if (snapshotUrl) this.fetchSnapshot(snapshotUrl).finally(connect);
    else connect();
    // Stored jobs come back once the events are there (attribution credit paints them).
    this.ready.then(() => this.history.load());
    this.ready.then(() => this.openDeepLink(new URLSearchParams(window.location.search)));
    this.updateBadge();
    setInterval(() => {
      this.updateRate();
      this.updateBadge();
    }, 1000);
  }

  /**
   * Deep links: `?event=<id>` selects the event once the trace is loaded (attribution rows link so),
   * `?job=<id>` shows that job of the trace (a branch trace's banner links its job so).
   */
  async openDeepLink(params) {
    const event = params.get("event");
    if (event !== null) {
      if (this.model.events.has(event)) this.selectEvent(event);
      else this.showNotice(`There is no event ${event} in this trace.`);
    }
    const job = params.get("job");
    if (job !== null && /^\d+$/.test(job)) {
      try {
        const response = await fetch(`/api/jobs/${job}/`, { credentials: "same-origin" });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        const answer = await response.json();
        if (String(answer.trace) !== this.app.dataset.traceId) return;
        if (answer.kind === "attribution") this.attribution.show(answer);
        else this.counterfactual.reveal(answer);
      } catch {
        this.showNotice(`Job ${job} could not be shown.`);
      }
    }
  }

  /** Open the websocket; each (re)connect asks for what came after the last applied seq. */
  connect(url) {
    this.connection = new LiveConnection(() => (this.model.seq === null ? url : withParam(url, "seq", this.model.seq)), {
      onMessage: (msg) => this.handle(msg),
      onOpen: () => {
        if (this.model.seq !== null) this.requestResume(this.model.seq, true);
      },
      onState: () => this.updateBadge(),
    });
    this.connection.start();
  }

  async fetchSnapshot(url) {
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      this.handle({ type: "snapshot", ...(await response.json()) });
    } catch (err) {
      if (this.model.seq === null) this.showNotice(`Could not load the trace snapshot (${err.message}).`);
    }
  }

  /** Apply one server message (snapshot, delta or error). */
  handle(msg) {
    if (msg.type === "error") {
      // Too much to send over the socket (a large trace, or a long time away): load it over HTTP.
      if (msg.code === "snapshot_too_large" && this.app.dataset.snapshotUrl) this.fetchSnapshot(this.app.dataset.snapshotUrl);
      else this.showNotice(msg.message ?? "The server reported an error.");
      return;
    }
    if (msg.type === "job") {
      this.history.handleJob(msg.job);
      if (msg.job.kind === "attribution") this.attribution.handleJob(msg.job);
      else this.counterfactual.handleJob(msg.job);
      return;
    }
    if (msg.type === "snapshot") {
      const result = this.model.applySnapshot(msg);
      if (result.status === "applied") {
        this.showNotice(null);
        this.liveUntil = msg.trace?.live ? performance.now() + LIVE_WINDOW_MS : 0;
      }
      const queued = this.pending.sort((a, b) => a.seq - b.seq);
      this.pending = [];
      for (const delta of queued) this.applyDelta(delta);
      this.scheduleRender();
      return;
    }
    if (msg.type !== "delta") return;
    this.arrivals.push([performance.now(), msg.events?.length ?? 0]);
    if (this.model.seq === null) this.pending.push(msg);
    else this.applyDelta(msg);
  }

  applyDelta(msg) {
    const result = this.model.applyDelta(msg);
    if (result.status === "gap") this.requestResume(result.resumeFrom);
    else if (result.status === "applied") {
      if (result.changes.events.length) this.liveUntil = performance.now() + LIVE_WINDOW_MS;
      this.scheduleRender();
    }
  }

  /** Ask for everything after `seq` (not twice in a row for the same seq unless `force`). */
  requestResume(seq, force = false) {
    const now = performance.now();
    if (!force && this.lastResume.seq === seq && now - this.lastResume.at < RESUME_RETRY_MS) return;
    if (this.connection?.send({ type: "resume", seq })) this.lastResume = { seq, at: now };
  }

  scheduleRender() {
    if (this.renderFrame) return;
    this.renderFrame = requestAnimationFrame(() => {
      this.renderFrame = 0;
      this.render();
    });
  }

  render() {
    if (this.model.seq === null) return;
    const model = this.model;
    if (this._resolveReady && model.trace?.attributes?.synthetic_time) {
      // Times made up from the order of the source (e.g. Who&When): steps read better.
      this.timeline.setMode("step");
      this.filters.showMode("step");
    }
    this.timeline.render();
    this.agentGraph.render();
    this.metrics.render(model.trace, model.traceLabels());
    this.transcript.render();
    this.facts.render(model.trace, model.labels);
    this.filters.sync();
    if (this.renderedVersion !== model.version) {
      this.renderedVersion = model.version;
      this.inspector.refresh();
    }
    const empty = model.eventCount === 0;
    this.empty.hidden = !empty;
    if (empty) {
      this.empty.textContent = model.trace?.live
        ? "No events yet: waiting for the swarm to send some…"
        : "This trace has no events.";
    }
    this.updateBadge();
    document.body.dataset.seq = String(model.seq);
    document.body.dataset.eventCount = String(model.eventCount);
    this._resolveReady?.();
    this._resolveReady = null;
  }

  // ---------------------------------------------------------------- selection

  /**
   * Select event `id` everywhere: timeline (the event, or the bin it is folded into: lanes do
   * not unfold by themselves, so stepping keeps the layout still), its agent in the graph, the
   * inspector. From a timeline click (`modifiers`), a shift/ctrl-click toggles the event in the
   * "What if removed?" multi-selection and a plain click empties it.
   */
  selectEvent(id, modifiers = null) {
    const ev = this.model.events.get(id);
    if (!ev) return;
    if (modifiers) {
      const counterfactual = this.counterfactual;
      // The first shift/ctrl-click also takes the event selected before it, as lists do.
      if (modifiers.toggle && !counterfactual.selection.size && this.selection?.kind === "event"
        && this.selection.id !== id) counterfactual.toggleSelected(this.selection.id);
      this.timeline.setMarked(modifiers.toggle ? counterfactual.toggleSelected(id) : counterfactual.clearSelected());
    }
    this.selection = { kind: "event", id };
    this.timeline.selectEvent(id);
    this.timeline.selectAgent(ev.agent);
    this.agentGraph.select(ev.agent);
    this.inspector.showEvent(id);
    this.transcript.select(id);
    document.body.dataset.selected = id;
  }

  /** Select agent `name` everywhere: its lane, the graph node, the inspector. */
  selectAgent(name) {
    if (!this.model.agents.has(name)) return;
    this.selection = { kind: "agent", name };
    this.timeline.selectEvent(null);
    this.timeline.selectAgent(name);
    this.agentGraph.select(name);
    this.inspector.showAgent(name);
    this.transcript.select(null);
    document.body.dataset.selected = `agent:${name}`;
  }

  /**
   * "Only this agent" (a lane's button): hide every other agent's events (the agent filter, whose
   * checkboxes follow); null shows every agent again.
   */
  onlyAgent(name) {
    const hidden = name === null ? null : new Set([...this.model.agents.keys()].filter((a) => a !== name));
    this.model.setFilters({ agents: hidden });
    for (const box of this.app.querySelectorAll('[data-testid="filter-agents"] [data-agent] input[type="checkbox"]')) {
      box.checked = !hidden?.has(box.closest("[data-agent]").dataset.agent);
    }
    this.timeline.setOnlyAgent(name);
    this.timeline.fit();
    this.scheduleRender();
  }

  clearSelection() {
    this.selection = null;
    this.timeline.setMarked(this.counterfactual.clearSelected());
    this.timeline.selectEvent(null);
    this.timeline.selectAgent(null);
    this.agentGraph.select(null);
    this.inspector.close();
    this.transcript.select(null);
    delete document.body.dataset.selected;
  }

  onKey(e) {
    const typing = e.target.closest?.("input, textarea, select, [contenteditable='true']");
    if (e.key === "Escape") {
      if (typing) e.target.blur();
      this.clearSelection();
      return;
    }
    if (typing || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "/") {
      e.preventDefault();
      this.filters.focusSearch();
    } else if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      e.preventDefault();
      const current = this.selection?.kind === "event" ? this.selection.id : null;
      const next = this.model.stepFrom(current, e.key === "ArrowRight" ? 1 : -1);
      if (next !== null) this.selectEvent(next);
    }
  }

  // ---------------------------------------------------------------- status

  /** The badge: connecting / reconnecting / offline, else live (events in the last 30 s) or recorded. */
  updateBadge() {
    const live = performance.now() < this.liveUntil;
    const state = this.connection ? this.connection.state : "none";
    let [key, text] = BADGES[state] ?? ["static", "Recorded"];
    if (state === "open" || state === "none") [key, text] = live ? ["live", "Live"] : ["static", "Recorded"];
    if (this.badge.dataset.state === key) return;
    this.badge.dataset.state = key;
    this.badge.textContent = text;
  }

  updateRate() {
    const now = performance.now();
    while (this.arrivals.length && now - this.arrivals[0][0] > RATE_WINDOW_MS) this.arrivals.shift();
    const events = this.arrivals.reduce((n, [, count]) => n + count, 0);
    const rate = events / (RATE_WINDOW_MS / 1000);
    this.rate.dataset.rate = String(rate);
    this.rate.textContent = `${formatNumber(rate)} events/s`;
  }

  showNotice(text) {
    this.notice.hidden = !text;
    this.notice.textContent = text ?? "";
  }
}

const app = document.getElementById("trace-app");
if (app) {
  const page = new TracePage(app);
  window.swarmscope = {
    model: page.model,
    ready: page.ready,
    selectEvent: (id) => page.selectEvent(id),
    selectAgent: (name) => page.selectAgent(name),
    eventClientPoint: (id) => page.timeline.eventClientPoint(id),
    timeline: page.timeline,
    lastSeq: () => page.model.seq,
    eventCount: () => page.model.eventCount,
    transcript: page.transcript,
  };
  page.start();
}
