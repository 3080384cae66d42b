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
 * focuses the search, Esc closes the inspector, `?` lists every key (lib/keys_help.js); the skip
 * links (the first Tab stops) focus the timeline, the agent graph and the transcript. In the
 * timeline ↑ / ↓ move between lanes; in the agent graph the arrows move between agents and Enter
 * selects; in the transcript (panels/transcript.js), j / k or ↓ / ↑ step too. The transcript and
 * the header's task facts follow the same selection.
 *
 * Live: deltas grow the model; the metrics panel (and its agents-alive chart) shows the newest
 * `metrics` message, the worker's recomputation while the trace streams (webapp/traces/services.py
 * `do_publish_metrics`), so it reads what a reload does. The badge says Live until the trace has
 * had no events for the server's idle time (`trace.live_idle_s`, SWARMSCOPE_LIVE_IDLE_S), or
 * until a delta says `trace.live: false` (the sender closed its stream, POST
 * /api/traces/<id>/close/): then it says Recorded at once.
 *
 * `data-can-write="false"` (a viewer) with `data-read-only-hint` disables the counterfactual and
 * attribution controls, the hint as their tooltip; the server refuses those writes as well.
 *
 * Deep links (`openDeepLink`): `?event=<id>` selects that event on load, `?job=<id>` shows that job.
 * The header's disabled actions say why in the page (webapp/counterfactuals "capabilities"); the
 * panels get `data-capabilities` to offer only the backends that can run them.
 *
 * Huge traces (above SWARMSCOPE_LOD_EVENTS, webapp/traces/lod.py): the page loads the overview
 * snapshot (`snapshot/lod/`: agents, no events), the timeline draws its bins, and once the camera
 * rests on a window of at most DETAIL_LIMIT events (by the overview's counts) the window's events
 * are fetched and replace the model's (model/server_window.js). Live deltas count into the overview;
 * the store takes only their events inside the loaded window. The transcript lists the window's
 * events; its search (Enter) and `?event=` deep links go through the server and load the hit's window.
 * `<body data-lod="server" data-window-events>`, `window.swarmscope.server()`.
 *
 * For browser tests: `window.swarmscope` = {model, ready, selectEvent(id), selectAgent(name),
 * eventClientPoint(id), timeline (its camera: setWindow, fit, debugState, drawnItems), lastSeq(),
 * eventCount()}; `<body data-seq data-event-count data-selected data-metrics-seq>` mirror the state.
 */

import { AgentGraph } from "../views/agent_graph.js";
import { AttributionPanel } from "../panels/attribution.js";
import { Counterfactual } from "../panels/counterfactual.js";
import { FiltersPanel } from "../panels/filters.js";
import { emptyTraceText, formatNumber } from "../lib/format.js";
import { TraceModel } from "../model/trace_model.js";
import { DETAIL_LIMIT, ServerWindow, windowRecords, windowUrl } from "../model/server_window.js";
import { Inspector } from "../panels/inspector.js";
import { JobHistory } from "../panels/job_history.js";
import { installKeyboardPaths, isTyping, TRACE_PAGE_KEYS } from "../lib/keys_help.js";
import { LiveConnection, websocketUrl, withParam } from "../lib/live_connection.js";
import { MetricsPanel } from "../panels/metrics_panel.js";
import { Timeline } from "../views/timeline.js";
import { renderCost, renderTokens, TraceFacts } from "../panels/trace_facts.js";
import { Transcript } from "../panels/transcript.js";
import { dragWithPointer, makeResizer } from "../lib/resizer.js";
import { laneCommentCounts } from "../model/comment_marks.js";
import { SpanWaterfall } from "../panels/span_waterfall.js";
import {
  criticalPathNote, decodeView, encodeView, idleTime, layoutKey, PANELS, readLayout, spanText, togglePanel,
} from "../model/trace_view_state.js";

/** The events/s counter averages over this window. */
const RATE_WINDOW_MS = 5000;
/** A resume request for the same seq is not repeated within this time. */
const RESUME_RETRY_MS = 3000;
/** A trace is shown as live this long after its last events, unless the server says (`live_idle_s`). */
const LIVE_WINDOW_MS = 30000;
/** A huge trace's camera must rest this long before its window's events are fetched. */
const WINDOW_FETCH_DELAY_MS = 150;
/** The address follows the view this long after the last change (a wheel zoom is many changes). */
const ADDRESS_DELAY_MS = 150;
/** A time axis at least this long (s), mostly idle, is offered the Step axis. */
const LONG_SESSION_S = 600;
/** The timeline row's height bounds (px) and the key step of its splitter. */
const TIMELINE_H = { min: 160, key: 24, storageKey: "swarmscope.timeline-h" };
/** The page's snapshot: the overview of a huge trace, else the full one (webapp/traces/lod.py). */
const lodSnapshotUrl = (url) => url.replace(/snapshot\/?$/, "snapshot/lod/");

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
    this.computedMetrics = null; // the newest computed metrics: the snapshot's, then `metrics` messages
    this.metricsSeq = -1; // the trace seq they are of
    this.connection = null;
    /** A huge trace's overview and loaded window (model/server_window.js), else null. */
    this.server = null;
    this.graphView = "agents"; // the graph panel's view: "agents" or "spans"
    this.windowTimer = 0;
    this.windowFetching = null; // the [t0, t1] being fetched
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
      onDiscuss: (id) => document.dispatchEvent(new CustomEvent("swarmscope:discuss", { detail: { event: id } })),
    });
    this.waterfall = new SpanWaterfall(part("span-waterfall"), {
      model: this.model, onSelectEvent: (id) => this.selectEvent(id),
    });
    // The review panel (panels/review.js) says where the comments are: markers everywhere.
    this.commentCounts = new Map();
    document.addEventListener("swarmscope:comments", (e) => {
      this.commentCounts = e.detail.events;
      this.showCommentMarks();
    });
    this.metrics = new MetricsPanel(part("metrics-panel"));
    this.transcript = new Transcript(part("transcript-panel"), {
      model: this.model,
      onSelectEvent: (id) => this.selectEvent(id),
      onSelectAgent: (name) => this.selectAgent(name),
    });
    this.facts = new TraceFacts(part("trace-facts"), { onGoToMistake: () => this.transcript.goToMistake() });
    this.tokens = part("trace-tokens");
    this.cost = part("trace-cost");
    this.filters = new FiltersPanel(part("filters"), {
      model: this.model,
      onChange: () => this.scheduleRender(),
      onMode: (mode) => {
        this.timeline.setMode(mode);
        this.showIdleHint();
      },
      onCritical: (show) => {
        this.wantCritical = show;
        this.showCritical();
      },
    });
    this.wantCritical = true; // the filter's checkbox; the timeline highlights only a telling path
    this.criticalNote = criticalPathNote(0, 0);
    this.criticalNoteEl = part("critical-note");
    this.spanEl = part("timeline-span");
    this.addressReady = false; // the address is written once the one the page was opened with is applied
    this.addressTimer = 0;
    this.timeline.onCamera = (win) => {
      this.spanEl.textContent = spanText(win[1] - win[0], this.timeline.mode);
      this.scheduleAddress();
    };
  }

  // ---------------------------------------------------------------- layout and address

  /**
   * Panels (model/trace_view_state.js): the user's remembered layout, then what the address asks;
   * the rails, the notices' × and the header's buttons open and close them.
   */
  installLayout() {
    this.layoutStorage = layoutKey(this.app.dataset.user);
    let stored = null;
    try {
      stored = localStorage.getItem(this.layoutStorage);
    } catch {
      stored = null; // storage unavailable: the defaults
    }
    this.layout = readLayout(stored);
    const asked = decodeView(window.location.search).panels;
    if (asked) this.layout = { ...this.layout, ...asked };
    this.applyLayout(false);
    for (const button of this.app.querySelectorAll("[data-panel]")) {
      button.addEventListener("click", () => this.setPanel(button.dataset.panel));
    }
    this.app.addEventListener("click", (e) => {
      const dismiss = e.target.closest?.("[data-dismiss]");
      if (!dismiss) return;
      e.preventDefault(); // a <summary>'s button: hide, not unfold
      this.setPanel(dismiss.dataset.dismiss, false);
    });
    this.installRowResizer(this.app.querySelector('[data-resizer="timeline"]'), this.app.querySelector(".trace-main"));
  }

  /** Open, close (`open`) or flip panel `name`; remembered for this user, written to the address. */
  setPanel(name, open) {
    this.layout = togglePanel(this.layout, name, open);
    this.applyLayout(true);
    if (name === "full" && this.layout.full) this.app.querySelector('[data-testid="timeline-canvas"]')?.focus();
  }

  applyLayout(save) {
    const { layout, app } = this;
    app.classList.toggle("filters-closed", !layout.filters);
    app.classList.toggle("side-closed", !layout.side);
    app.classList.toggle("full-open", layout.full);
    app.classList.toggle("facts-off", !layout.facts);
    app.classList.toggle("notice-off", !layout.notice);
    const part = (testid) => app.querySelector(`[data-testid="${testid}"]`);
    part("toggle-filters")?.setAttribute("aria-expanded", String(layout.filters));
    part("toggle-side")?.setAttribute("aria-expanded", String(layout.side));
    part("timeline-full")?.setAttribute("aria-pressed", String(layout.full));
    const facts = part("show-facts");
    if (facts) facts.hidden = layout.facts;
    const notice = part("show-notice");
    if (notice) notice.hidden = layout.notice || !part("actions-unavailable");
    if (save) {
      try {
        // Full screen is a moment, not a preference (readLayout drops it too).
        const kept = Object.fromEntries(PANELS.filter((p) => p !== "full").map((p) => [p, layout[p]]));
        localStorage.setItem(this.layoutStorage, JSON.stringify(kept));
      } catch {
        // storage unavailable: the layout just is not remembered
      }
    }
    this.scheduleAddress();
  }

  /**
   * The splitter between the timeline and the row under it: dragging (or ↑ ↓, Shift for 4×) sets
   * `--timeline-h` on `host` in px, remembered in localStorage; double-click restores 3 : 2.
   */
  installRowResizer(handle, host) {
    if (!handle || !host) return;
    const timeline = host.querySelector(".timeline-panel");
    const apply = (h, save = true) => {
      const max = Math.max(TIMELINE_H.min, host.clientHeight - 130);
      const px = Math.round(Math.max(TIMELINE_H.min, Math.min(max, h)));
      host.style.setProperty("--timeline-h", `${px}px`);
      handle.setAttribute("aria-valuenow", String(px));
      if (save) {
        try {
          localStorage.setItem(TIMELINE_H.storageKey, String(px));
        } catch {
          // not remembered
        }
      }
    };
    let saved = null;
    try {
      saved = Number(localStorage.getItem(TIMELINE_H.storageKey));
    } catch {
      saved = null;
    }
    if (saved && Number.isFinite(saved)) apply(saved, false);
    dragWithPointer(
      handle,
      "y",
      () => timeline.getBoundingClientRect().height,
      (startH, delta) => apply(startH + delta),
    );
    handle.addEventListener("keydown", (e) => {
      if (e.key !== "ArrowUp" && e.key !== "ArrowDown") return;
      e.preventDefault();
      e.stopPropagation();
      const step = (e.shiftKey ? 4 : 1) * TIMELINE_H.key * (e.key === "ArrowUp" ? -1 : 1);
      apply(timeline.getBoundingClientRect().height + step);
    });
    handle.addEventListener("dblclick", () => {
      host.style.removeProperty("--timeline-h");
      try {
        localStorage.removeItem(TIMELINE_H.storageKey);
      } catch {
        // nothing stored
      }
    });
  }

  /** Write the view to the address a moment after the last change (history.replaceState). */
  scheduleAddress() {
    if (!this.addressReady) return;
    clearTimeout(this.addressTimer);
    this.addressTimer = setTimeout(() => this.writeAddress(), ADDRESS_DELAY_MS);
  }

  /** Write the view to the address now: a new history entry when `push` (a switch Back undoes). */
  writeAddress(push = false) {
    clearTimeout(this.addressTimer);
    const sel = this.selection;
    const search = encodeView(window.location.search, {
      event: sel?.kind === "event" ? sel.id : null,
      agent: sel?.kind === "agent" ? sel.name : null,
      window: this.timeline.userMoved ? this.timeline.window : null,
      mode: this.timeline.mode,
      layout: this.layout,
      graph: this.graphView,
    });
    if (search === window.location.search) return;
    const url = `${window.location.pathname}${search}${window.location.hash}`;
    if (push) history.pushState(history.state, "", url);
    else history.replaceState(history.state, "", url);
    document.body.dataset.address = search;
  }

  /**
   * A time axis that is mostly idle (bursts of events hours apart) offers the Step axis, which
   * gives every event the same width; the button says how much idle time it skips.
   */
  showIdleHint() {
    const button = this.app.querySelector('[data-action="skip-idle"]');
    if (!button) return;
    const idle = this.idle;
    const show = Boolean(idle) && this.timeline.mode === "time" && !this.server
      && idle.span >= LONG_SESSION_S && idle.share >= 0.5;
    button.hidden = !show;
    if (show) button.textContent = `Step axis: skip ${spanText(idle.idle, "time")} idle (${Math.round(idle.share * 100)} %)`;
  }

  /**
   * The graph panel shows the agent graph ("agents") or the span waterfall ("spans"; only where the
   * trace has spans). A user's switch (`push`) is a new history entry, so Back returns to the other.
   */
  showGraphView(view, push = false) {
    const spans = view === "spans" && this.waterfall.hasSpans();
    this.graphView = spans ? "spans" : "agents";
    if (push && this.addressReady) this.writeAddress(true);
    this.app.querySelector('[data-testid="agent-graph-canvas"]').hidden = spans;
    this.waterfall.root.hidden = !spans;
    for (const button of this.app.querySelectorAll("[data-view]")) {
      button.setAttribute("aria-pressed", String(button.dataset.view === this.graphView));
    }
    this.app.querySelector("#graph-title").textContent = spans ? "Spans" : "Agents";
    this.waterfall.render();
  }

  /** Comment markers on transcript rows, lanes and the inspector (`commentCounts`: event id -> n). */
  showCommentMarks() {
    const counts = this.commentCounts;
    this.transcript.setCommentCounts(counts);
    this.inspector.setCommentCounts(counts);
    this.timeline.setLaneCommentCounts(laneCommentCounts(counts, (id) => this.model.events.get(id)?.agent));
    document.body.dataset.commentedEvents = String(counts.size);
  }

  /** Highlight the critical path when the filter asks and the path is telling (not the whole trace). */
  showCritical() {
    const note = this.criticalNote;
    this.timeline.setShowCritical(this.wantCritical && note.highlight);
    const el = this.criticalNoteEl;
    if (!el) return;
    el.textContent = this.wantCritical ? note.text : "";
    el.title = el.textContent;
    el.classList.toggle("serial", !note.highlight);
    el.dataset.highlight = String(this.wantCritical && note.highlight);
  }

  /** Load the snapshot, connect, and wire the controls. */
  start() {
    const { wsUrl, snapshotUrl } = this.app.dataset;
    this.keysHelp = installKeyboardPaths(TRACE_PAGE_KEYS);
    this.installLayout();
    for (const button of this.app.querySelectorAll("[data-view]")) {
      button.addEventListener("click", () => this.showGraphView(button.dataset.view, true));
    }
    // Back and Forward between the graph panel's views (the only state written as history entries).
    window.addEventListener("popstate", () => this.showGraphView(decodeView(window.location.search).graph));
    this.app.querySelector('[data-action="skip-idle"]')?.addEventListener("click", () => {
      this.timeline.setMode("step");
      this.filters.showMode("step");
      this.showIdleHint();
    });
    this.app.querySelector('[data-action="zoom-in"]')?.addEventListener("click", () => this.timeline.zoom(0.5));
    this.app.querySelector('[data-action="zoom-out"]')?.addEventListener("click", () => this.timeline.zoom(2));
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
    if (snapshotUrl) this.fetchSnapshot(lodSnapshotUrl(snapshotUrl)).finally(connect);
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
   * Deep links: `?event=<id>` selects the event once the trace is loaded (attribution rows link so;
   * with `&find=<words>`, the trace list's content search, its row marks those words),
   * `?job=<id>` shows that job of the trace (a branch trace's banner links its job so).
   */
  async openDeepLink(params) {
    try {
      await this.openView(params);
    } finally {
      this.addressReady = true;
      this.scheduleAddress();
    }
  }

  async openView(params) {
    const view = decodeView(params);
    if (view.problems.length) this.showNotice(`The address asks for what cannot be shown: ${view.problems.join("; ")}.`);
    if (view.graph === "spans") this.showGraphView("spans");
    if (view.mode && !this.server) {
      this.timeline.setMode(view.mode);
      this.filters.showMode(view.mode);
    }
    if (view.event === null && view.agent !== null) {
      if (this.model.agents.has(view.agent)) this.selectAgent(view.agent);
      else this.showNotice(`There is no agent ${view.agent} in this trace.`);
    }
    const event = params.get("event");
    if (event !== null) {
      // A huge trace holds only a window: the server finds the event (by id) and its window.
      const hit = this.server && !this.model.events.has(event)
        ? (await this.searchServer(event).catch(() => ({ hits: [] }))).hits.find((h) => h.id === event) : null;
      if (hit) await this.goToHit(hit);
      else if (this.model.events.has(event)) this.selectEvent(event);
      else this.showNotice(`There is no event ${event} in this trace.`);
      // Opened from the trace list's content search: its words are marked in the event's row.
      const found = params.get("find");
      if (found && this.model.events.has(event)) this.transcript.showFound(event, found);
    }
    if (view.window) {
      this.timeline.setWindow(...view.window);
      this.timeline.render();
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
    // The first call's request is the one templates/traces/trace_detail.html preloads (`<link
    // rel="preload" as="fetch" crossorigin>`, started before the modules load): it is used only
    // while this stays a GET of the same URL with credentials "same-origin" (what `crossorigin`
    // means for this site); otherwise the browser fetches the snapshot twice.
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
      if (msg.code === "snapshot_too_large" && this.app.dataset.snapshotUrl) {
        this.fetchSnapshot(lodSnapshotUrl(this.app.dataset.snapshotUrl));
      }
      else this.showNotice(msg.message ?? "The server reported an error.");
      return;
    }
    if (msg.type === "job") {
      this.history.handleJob(msg.job);
      if (msg.job.kind === "attribution") this.attribution.handleJob(msg.job);
      else this.counterfactual.handleJob(msg.job);
      return;
    }
    if (msg.type === "metrics") {
      this.showMetrics(msg.seq, msg.computed_metrics);
      return;
    }
    if (msg.type === "snapshot") {
      if (this.model.isRebuild(msg)) this.resetModel();
      const result = this.model.applySnapshot(msg);
      if (result.status === "applied") {
        this.showNotice(null);
        if (this.selection?.kind === "event" && !this.model.events.has(this.selection.id)) this.clearSelection();
        this.liveUntil = msg.trace?.live ? performance.now() + this.liveWindowMs() : 0;
        if (msg.trace?.computed_metrics) this.showMetrics(msg.seq, msg.trace.computed_metrics, true);
        if (msg.trace?.lod) this.enterServerLod(msg.trace.lod.overview);
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

  /**
   * Empty the model before a rebuild's snapshot (a live restart): the transcript, the timeline and
   * the graph rebuild from it (a new view stamp); the filters stay, a selected event that is gone
   * is cleared after the snapshot (`render`).
   */
  resetModel() {
    const { filters, viewVersion } = this.model;
    this.model.reset();
    this.model.viewVersion = viewVersion + 1;
    this.model.filters = filters;
    document.body.dataset.rebuilds = String(Number(document.body.dataset.rebuilds ?? 0) + 1);
  }

  applyDelta(msg) {
    const fresh = this.server ? (msg.events ?? []).filter((e) => !this.model.events.has(e.id)) : [];
    if (this.server) msg = this.serverDelta(msg);
    const result = this.model.applyDelta(msg);
    if (this.server && result.status === "applied") this.server.addEvents(fresh);
    if (result.status === "gap") this.requestResume(result.resumeFrom);
    else if (result.status === "applied") {
      if (msg.trace?.live === false) this.liveUntil = 0; // the stream was closed
      else if (result.changes.events.length) this.liveUntil = performance.now() + this.liveWindowMs();
      this.scheduleRender();
    }
  }

  // ---------------------------------------------------------------- huge traces

  /**
   * A huge trace (its snapshot has `trace.lod`): the timeline draws the overview's bins, and the
   * events of the visible window are fetched once it holds at most DETAIL_LIMIT of them.
   */
  enterServerLod(overview) {
    const loaded = this.server?.loaded ?? null;
    this.server = new ServerWindow(overview);
    this.server.loaded = loaded;
    document.body.dataset.lod = "server";
    this.transcript.setServer({
      note: "showing events of the visible window",
      search: (q) => this.searchServer(q),
      goTo: (hit) => this.goToHit(hit),
    });
    this.timeline.setServerWindow(this.server, (win) => this.onTimelineWindow(win));
  }

  /**
   * A delta of a huge trace: only its events inside the loaded window (or already held) go to
   * the store, with the edges between held events; `applyDelta` counts every event new to the
   * store into the overview once the delta is applied (a rewrite of an event outside the window,
   * e.g. a span closing, is counted again: the overview's counts can run high on live traces).
   */
  serverDelta(msg) {
    const events = msg.events ?? [];
    const kept = events.filter((e) => this.model.events.has(e.id) || this.server.inLoaded(e));
    const ids = new Set(kept.map((e) => e.id));
    const held = (id) => ids.has(id) || this.model.events.has(id);
    const edges = (msg.edges ?? []).filter((e) => held(e.src) && held(e.dst));
    return { ...msg, events: kept, edges };
  }

  /** After each timeline draw: fetch the window's events when it rests small enough and is not loaded. */
  onTimelineWindow([a, b]) {
    const server = this.server;
    if (!server || server.covers(a, b) || !server.wantsDetail(a, b)) return;
    clearTimeout(this.windowTimer);
    this.windowTimer = setTimeout(() => this.fetchWindow(...server.fetchRange(a, b)), WINDOW_FETCH_DELAY_MS);
  }

  /** Fetch the events of `[t0, t1]` and make them the model's events. */
  async fetchWindow(t0, t1) {
    const key = `${t0}:${t1}`;
    if (this.windowFetching === key) return;
    this.windowFetching = key;
    try {
      const base = `/api/traces/${this.app.dataset.traceId}/`;
      const response = await fetch(windowUrl(base, t0, t1, DETAIL_LIMIT * 2), { credentials: "same-origin" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      this.loadWindow(await response.json());
    } catch (err) {
      this.showNotice(`Could not load the events of this window (${err.message}).`);
    } finally {
      if (this.windowFetching === key) this.windowFetching = null;
    }
  }

  /**
   * Replace the model's events with a window answer's (those up to the model's seq; later ones
   * come as deltas): the store holds exactly the loaded window. Agents, labels, filters and the
   * trace stay.
   */
  loadWindow(answer) {
    const model = this.model;
    if (model.seq === null || !this.server) return;
    const { seq, trace, filters, viewVersion } = model;
    const agents = [...model.agents.values()].filter((a) => !a.implicit);
    const labels = [...model.labels];
    const { events, edges } = windowRecords(answer, seq);
    model.reset();
    model.viewVersion = viewVersion + 1; // views and the transcript rebuild (their stamps differ)
    model.filters = filters;
    model.applySnapshot({ type: "snapshot", seq, trace, agents, labels, events, edges });
    this.server.loaded = { t0: answer.t0, t1: answer.t1, truncated: answer.truncated };
    if (this.selection?.kind === "event" && !model.events.has(this.selection.id)) this.clearSelection();
    document.body.dataset.windowEvents = String(events.length);
    this.scheduleRender();
  }

  /** Server search of a huge trace: `{hits: [{id, t, agent, type}], truncated}`. */
  async searchServer(q) {
    const url = `/api/traces/${this.app.dataset.traceId}/search/?q=${encodeURIComponent(q)}&limit=1000`;
    const response = await fetch(url, { credentials: "same-origin" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return response.json();
  }

  /** Show a search hit anywhere: load a window around it, zoom there, select it. */
  async goToHit(hit) {
    const span = Math.max(this.server.width / 4, 1e-3);
    if (!this.model.events.has(hit.id)) await this.fetchWindow(hit.t - span, hit.t + span);
    if (!this.model.events.has(hit.id)) await this.fetchWindow(hit.t, hit.t + span / 16); // a crowded window
    this.timeline.setWindow(hit.t - span / 2, hit.t + span / 2);
    this.timeline.render();
    this.selectEvent(hit.id);
  }

  /** How long the trace stays live after events (ms): the server's idle time, else 30 s. */
  liveWindowMs() {
    const seconds = Number(this.model.trace?.live_idle_s);
    return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : LIVE_WINDOW_MS;
  }

  /**
   * Show computed metrics of trace seq `seq` unless newer ones are shown; a snapshot's (`reset`,
   * e.g. after a rebuild) replaces whatever was shown.
   */
  showMetrics(seq, computed, reset = false) {
    if (!computed || (!reset && seq < this.metricsSeq)) return;
    this.metricsSeq = seq;
    this.computedMetrics = computed;
    this.scheduleRender();
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
    if (!this.server && this.renderedCritical !== model.version) {
      this.renderedCritical = model.version;
      this.criticalNote = criticalPathNote(model.criticalPath().events.size, model.eventCount);
      this.showCritical();
      this.idle = idleTime([...model.events.values()]);
    }
    this.showIdleHint();
    this.timeline.render();
    this.agentGraph.render();
    if (this.spansOffered !== true && !this.server && this.waterfall.hasSpans()) {
      this.spansOffered = true;
      this.app.querySelector('[data-testid="graph-views"]').hidden = false;
    }
    this.waterfall.render();
    this.metrics.render(model.trace, model.traceLabels(), this.computedMetrics ?? model.trace?.computed_metrics);
    if (this.computedMetrics) document.body.dataset.metricsSeq = String(this.metricsSeq);
    this.transcript.render();
    this.facts.render(model.trace, model.labels);
    renderTokens(this.tokens, model.trace);
    renderCost(this.cost, model.trace);
    this.filters.sync();
    if (this.renderedVersion !== model.version) {
      this.renderedVersion = model.version;
      this.inspector.refresh();
    }
    const empty = model.eventCount === 0 && !this.server;
    this.empty.hidden = !empty;
    if (empty) {
      this.empty.textContent = emptyTraceText(model.trace);
    }
    if (this.commentsShownFor !== model.version && this.commentCounts.size) {
      this.commentsShownFor = model.version; // lanes of events that arrived since
      this.showCommentMarks();
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
    this.waterfall.select(id);
    document.body.dataset.selected = id;
    this.scheduleAddress();
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
    this.scheduleAddress();
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
    this.scheduleAddress();
  }

  onKey(e) {
    const typing = isTyping(e.target);
    if (this.keysHelp?.isOpen) return; // its Escape closes the key help only
    if (e.key === "Escape") {
      if (typing) e.target.blur();
      if (this.layout?.full) {
        this.setPanel("full", false);
        return;
      }
      this.clearSelection();
      return;
    }
    // e.defaultPrevented: a focused view's own key (the agent graph's arrows, a resizer's ← →)
    if (typing || e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "f") {
      e.preventDefault();
      this.setPanel("full");
    } else if (e.key === "/") {
      e.preventDefault();
      if (this.layout.full) this.setPanel("full", false);
      if (!this.layout.filters) this.setPanel("filters", true);
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
    agentGraph: page.agentGraph,
    lastSeq: () => page.model.seq,
    eventCount: () => page.model.eventCount,
    transcript: page.transcript,
    server: () => page.server,
  };
  page.start();
}
