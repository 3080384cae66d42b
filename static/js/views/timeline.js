/**
 * The swimlane timeline, drawn on a 2D canvas: x = time or step, one lane per visible agent.
 *
 * Nodes are the items of timeline_layout.js (the events of `TraceModel.view()`, bins of folded
 * lanes and of the node budget): a span with a duration is a bar from `t` to `t_end` (a Gantt
 * view), an instantaneous event a dot, a bin a band over its events with their count. Edges
 * are every dependency edge between them. Open events are drawn hollow, the Who&When mistake
 * step with a red ring, the critical path with a dark outline and dark edges, credit
 * ("Attribute this trace") as colour and size, the selected and multi-selected events ringed.
 *
 * The camera (lib/camera.js) is a window on the x axis plus the lanes' vertical scroll: the
 * wheel zooms time about the pointer (shift+wheel, or the wheel over the lane names, scrolls the
 * lanes), a drag pans time and scrolls lanes, and neither leaves the data's extent. Lanes keep a
 * readable height and scroll; Fit shows the whole x extent. The lane names are an HTML column
 * that scrolls with the lanes and never pans with time. Selecting an event (a click, the arrow
 * keys) moves the camera as little as needed to show it. Clicking a bin of a folded lane unfolds
 * the lane and zooms to the bin; clicking a budget bin zooms to it, and zoomed in, budget bins
 * on screen are drawn as their events. The overview strip (timeline_overview.js) shows the whole
 * trace and the window. A lane's "only" button filters the trace to that agent (`onOnlyAgent`).
 *
 * Keyboard (the plot is one tab stop): ← → step through the events in time (the page's keys),
 * ↑ ↓ select the event nearest in x in the lane above / below (`nearestInLane`; lanes without
 * visible events are skipped), + − zoom time and 0 fits.
 */

import {
  clampScroll, clampWindow, dataExtent, fromPx, keepInView, laneHeight, minSpan, panBy, centreOn,
  scrollRowIntoView, toPx, visibleRows, wheelFactor, zoomAbout,
} from "../lib/camera.js";
import { formatSeconds } from "../lib/format.js";
import { commentsText } from "../model/comment_marks.js";
import { creditColor, eventColor, edgeColor, MARK_COLORS, fade } from "../lib/palette.js";
import { eventSpan, hitTest, TimelineLayout } from "./timeline_layout.js";
import { TimelineOverview } from "./timeline_overview.js";

/** Pixels kept free at each end of the x axis (events at the ends are not cut in half). */
const PAD_PX = 12;
/** The smallest window: in step mode a few steps, in time mode a tenth of a millisecond. */
const MIN_SPAN = { step: 4, time: 1e-4 };
/** A drag shorter than this (px) is a click. */
const CLICK_SLOP_PX = 4;
const STRIPE = "#f3f4f6";
const SELECTED_LANE = "rgba(66, 99, 235, 0.09)";
const GRID = "rgba(15, 23, 42, 0.06)";

/**
 * What a click's modifier keys ask for: `toggle` (shift, ctrl or meta held) adds the clicked
 * event to, or removes it from, the multi-selection; a plain click selects it alone.
 * @param {{shiftKey?: boolean, ctrlKey?: boolean, metaKey?: boolean}|undefined} e the original mouse event
 * @returns {{toggle: boolean}}
 */
export function clickModifiers(e) {
  return { toggle: Boolean(e && (e.shiftKey || e.ctrlKey || e.metaKey)) };
}

/**
 * "Nice" axis ticks (1, 2 or 5 times a power of ten) covering [min, max].
 * @returns {number[]} about `count` ticks, ascending
 */
export function niceTicks(min, max, count = 6) {
  if (!(max > min) || count < 1) return [min];
  const raw = (max - min) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const ticks = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) {
    ticks.push(Number(v.toPrecision(12)));
  }
  return ticks;
}

/**
 * A time tick's label, as precise as the tick step needs: "12:30" for steps of seconds and
 * more, "12:30.25" or "4.25 s" below a second.
 */
export function formatTick(v, step) {
  if (!(step < 1)) return formatSeconds(v);
  const digits = Math.min(6, Math.max(1, Math.ceil(-Math.log10(step) - 1e-9)));
  if (Math.abs(v) < 60) return `${v.toFixed(digits)} s`;
  const m = Math.floor(v / 60);
  const s = (v - m * 60).toFixed(digits).padStart(digits + 3, "0");
  return `${m}:${s}`;
}

/**
 * Of `ids` (one lane's visible events) the one whose x (`xOf(id)`) is nearest to `x`; the earliest
 * of equally near ones. null for no ids.
 * @param {string[]} ids
 * @param {(id: string) => number} xOf
 * @param {number} x
 * @returns {string|null}
 */
export function nearestInLane(ids, xOf, x) {
  let best = null;
  let distance = Infinity;
  for (const id of ids) {
    const d = Math.abs(xOf(id) - x);
    if (d < distance) {
      best = id;
      distance = d;
    }
  }
  return best;
}

export class Timeline {
  /**
   * @param {{canvas: HTMLElement, lanes: HTMLElement, axis: HTMLElement, overview?: HTMLElement,
   *   only?: HTMLElement, model: object,
   *   onSelectEvent: (id: string, modifiers?: {toggle: boolean}) => void, onSelectAgent: (name: string) => void,
   *   onToggleLane: (name: string) => void, onOnlyAgent?: (name: string|null) => void}} options
   *   `canvas` holds the drawing, `lanes` the lane names (inside the element that scrolls them),
   *   `axis` the tick labels, `overview` the overview strip, `only` the "only this agent" note;
   *   they share a parent whose CSS variable `--lane-h` the lanes use.
   */
  constructor({ canvas, lanes, axis, overview, only, model, onSelectEvent, onSelectAgent, onToggleLane, onOnlyAgent }) {
    this.canvas = canvas;
    this.laneColumn = lanes;
    this.scroller = lanes.parentElement;
    this.axis = axis;
    this.only = only ?? null;
    this.model = model;
    this.onSelectEvent = onSelectEvent;
    this.onSelectAgent = onSelectAgent;
    this.onToggleLane = onToggleLane;
    this.onOnlyAgent = onOnlyAgent ?? (() => {});
    /** "time" or "step". */
    this.mode = "time";
    this.showCritical = true;
    this.selectedEvent = null;
    this.selectedAgent = null;
    /** The agent the trace is filtered to by a lane's "only" button, or null. */
    this.onlyAgent = null;
    /** The camera: x window (data units), and whether the user moved it (else it follows the data). */
    this.window = [0, 1];
    this.extent = [0, 1];
    this.userMoved = false;
    this.laneH = 24;
    /** event id -> credit in [-1, 1] ("Attribute this trace"): colours and sizes those events. */
    this.credit = new Map();
    /** Ids of the multi-selected events (shift/ctrl-click): ringed like the selected one. */
    this.marked = new Set();
    /** A huge trace's overview (model/server_window.js, `setServerWindow`), else null. */
    this.server = null;
    this.onWindow = null;
    /** Called after every draw with the window ([x0, x1], data units) and whether the user moved it (the page's address). */
    this.onCamera = null;
    this.layout = new TimelineLayout(model);
    this._view = null;
    this._drawnView = null;
    this._selectedKey = null;
    this._rowOf = new Map(); // lane name -> row
    this._laneElements = new Map();
    this._laneSignature = "";
    this._frame = 0;
    this._drawn = []; // {item, x0, x1, y0, y1} in canvas pixels, of the last draw
    this._drawnByKey = new Map();
    this._stats = {};
    this._drag = null;
    this._mounted = false;
    this.element = document.createElement("canvas");
    this.element.className = "timeline-plot";
    this.element.setAttribute("aria-hidden", "true");
    canvas.append(this.element);
    this.overview = overview ? new TimelineOverview(overview, {
      onCentre: (x) => this._setWindow(centreOn(this.window, x, this.extent)),
      onZoom: (factor, x) => this._setWindow(zoomAbout(this.window, factor, x, this.extent, this._minSpan())),
    }) : null;
    this.only?.querySelector("button")?.addEventListener("click", () => this.onOnlyAgent(null));
  }

  /** Bring the drawing in line with the model (only the changed nodes are laid out again). */
  render() {
    const view = this.model.view(this.mode);
    const changes = this.model.takeViewChanges(this.mode);
    if (changes.full || view !== this._drawnView || this.layout.mode !== this.mode) this.layout.syncAll(view, this.mode);
    else this.layout.syncChanged(view, changes.nodes);
    this._view = view;
    this._drawnView = view;
    this._selectedKey = this.selectedEvent === null ? null : view.nodeOf.get(this.selectedEvent) ?? null;
    this._renderLanes(view.lanes);
    this._checkOnly();
    this._updateExtent();
    if (!this._mounted) this._mount();
    this._scheduleDraw();
  }

  /** The data's x extent; the window follows it until the user moves the camera. */
  _updateExtent() {
    const mode = this.mode;
    let [t0, t1] = mode === "step" ? [0, Math.max(0, this.model.eventCount - 1)] : this.model.timeRange();
    if (this.server) {
      // A huge trace (server-side level of detail): the extent is the whole trace's, not the window's.
      const [s0, s1] = this.server.extent();
      [t0, t1] = this.model.eventCount ? [Math.min(t0, s0), Math.max(t1, s1)] : [s0, s1];
    }
    this.extent = dataExtent(t0, t1);
    this.window = this.userMoved ? clampWindow(this.window, this.extent, this._minSpan()) : [...this.extent];
    this.overview?.setData(this.extent, `${mode}:${this.model.version}:${this.model.viewVersion}`, () => {
      const xs = [];
      for (const id of this.model.sequence()) xs.push(eventSpan(this.model.events.get(id), this.model, mode)[0]);
      return xs;
    });
  }

  _minSpan() {
    return minSpan(this.extent, MIN_SPAN[this.mode]);
  }

  /** Switch the x axis between "time" and "step"; everything is laid out again. */
  setMode(mode) {
    if (mode === this.mode || (this.server && mode !== "time")) return;
    this.mode = mode;
    this.userMoved = false;
    this.render();
  }

  /** Highlight the critical path or not. */
  setShowCritical(show) {
    this.showCritical = show;
    this._scheduleDraw();
  }

  /** Ring the multi-selected events `ids` (an iterable of event ids). */
  setMarked(ids) {
    this.marked = new Set(ids);
    this._scheduleDraw();
  }

  /** Paint events by credit: `credit` maps event id -> credit in [-1, 1]. */
  setCredit(credit) {
    this.credit = credit;
    this._scheduleDraw();
  }

  /**
   * A huge trace (model/server_window.js): draw `server`'s overview bins in the lanes under the
   * events the model holds, and call `onWindow([x0, x1])` after every draw (the page fetches the
   * window's events when it is small enough). Time mode only.
   */
  setServerWindow(server, onWindow) {
    this.server = server;
    this.onWindow = onWindow;
    this.mode = "time";
    this.render();
  }

  /** Show the whole x extent (lanes keep their height and scroll). */
  fit() {
    this.userMoved = false;
    this.render();
  }

  /** Show `[x0, x1]` (data units), clamped to the extent. */
  setWindow(x0, x1) {
    this._setWindow(clampWindow([x0, x1], this.extent, this._minSpan()));
  }

  /** Zoom by `factor` (< 1 in) about data x `anchor` (default: the window's centre). */
  zoom(factor, anchor = (this.window[0] + this.window[1]) / 2) {
    this._setWindow(zoomAbout(this.window, factor, anchor, this.extent, this._minSpan()));
  }

  /** Zoom to `[x0, x1]` with a margin (a bin's span). */
  zoomTo(x0, x1) {
    const span = Math.max(x1 - x0, this._minSpan());
    const m = span * 0.15;
    const mid = (x0 + x1) / 2;
    this.setWindow(mid - span / 2 - m, mid + span / 2 + m);
  }

  _setWindow(win) {
    const [a, b] = this.window;
    if (win[0] === a && win[1] === b) return;
    this.window = win;
    this.userMoved = win[0] !== this.extent[0] || win[1] !== this.extent[1];
    this._scheduleDraw();
  }

  /** Select event `id` (null to clear); moves the camera as little as needed to show it. */
  selectEvent(id) {
    this.selectedEvent = id;
    this.render();
    if (id !== null) this.reveal(id);
  }

  /** Pan (x) and scroll (lanes) until event `id` is on screen. */
  reveal(id) {
    const ev = this.model.events.get(id);
    if (!ev) return;
    const [lo, hi] = eventSpan(ev, this.model, this.mode);
    this._setWindow(keepInView(this.window, lo, hi, this.extent));
    const lane = this.model.displayLanes().get(ev.agent)?.lane;
    const row = lane === undefined ? undefined : this._rowOf.get(lane);
    if (row !== undefined) {
      const height = this.scroller.clientHeight || this._size().height;
      this.scroller.scrollTop = scrollRowIntoView(this.scroller.scrollTop, row, this.laneH, height, this._rowOf.size);
    }
    this._scheduleDraw();
  }

  /** Mark the lane that shows agent `name` (its own, or the one it is folded into) as selected. */
  selectAgent(name) {
    this.selectedAgent = name;
    this._markSelectedLane();
    this._scheduleDraw();
  }

  /** Filter state from the page: the agent the trace is filtered to (null: none). */
  setOnlyAgent(name) {
    this.onlyAgent = name;
    this._checkOnly();
  }

  /** Forget the "only" agent once the agent filter no longer shows just it (filters cleared). */
  _checkOnly() {
    const name = this.onlyAgent;
    const hidden = this.model.filters.agents;
    if (name !== null && !(hidden && !hidden.has(name) && hidden.size >= this.model.agents.size - 1)) this.onlyAgent = null;
    if (this.only) {
      this.only.hidden = this.onlyAgent === null;
      const label = this.only.querySelector("[data-field=agent]");
      if (label) label.textContent = this.onlyAgent ?? "";
    }
    for (const [agent, el] of this._laneElements) el.classList.toggle("is-only", agent === this.onlyAgent);
  }

  _selectedLane() {
    return this.selectedAgent === null ? null : this.model.displayLanes().get(this.selectedAgent)?.lane ?? null;
  }

  _markSelectedLane() {
    const lane = this._selectedLane();
    for (const [agent, el] of this._laneElements) el.classList.toggle("is-selected", agent === lane);
  }

  _size() {
    return { width: this.canvas.clientWidth || 800, height: this.canvas.clientHeight || 400 };
  }

  _mount() {
    this._mounted = true;
    const plot = this.canvas;
    plot.addEventListener("wheel", (e) => this._wheel(e), { passive: false });
    plot.addEventListener("pointerdown", (e) => this._down(e));
    plot.addEventListener("pointermove", (e) => this._move(e));
    plot.addEventListener("pointerup", (e) => this._up(e));
    plot.addEventListener("pointercancel", () => { this._drag = null; });
    plot.addEventListener("pointerleave", () => { if (!this._drag) plot.style.cursor = ""; });
    plot.addEventListener("keydown", (e) => this._key(e));
    this.scroller.addEventListener("scroll", () => this._scheduleDraw(), { passive: true });
    new ResizeObserver(() => {
      this._sizeLanes();
      this._scheduleDraw();
    }).observe(plot);
  }

  _wheel(e) {
    e.preventDefault();
    const { width } = this._size();
    if (e.shiftKey) {
      this.scroller.scrollTop += e.deltaY || e.deltaX;
      return;
    }
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      const span = this.window[1] - this.window[0];
      this._setWindow(panBy(this.window, (e.deltaX / Math.max(1, width - 2 * PAD_PX)) * span, this.extent));
      return;
    }
    const box = this.canvas.getBoundingClientRect();
    const anchor = fromPx(e.clientX - box.left, this.window, width, PAD_PX);
    this.zoom(wheelFactor(e.deltaY, e.deltaMode), anchor);
  }

  _down(e) {
    if (e.button !== 0) return;
    this.canvas.setPointerCapture?.(e.pointerId);
    this._drag = { x: e.clientX, y: e.clientY, win: this.window, top: this.scroller.scrollTop, moved: false };
  }

  _move(e) {
    const drag = this._drag;
    if (!drag) {
      this._hover(e);
      return;
    }
    const dx = e.clientX - drag.x;
    const dy = e.clientY - drag.y;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < CLICK_SLOP_PX) return;
    drag.moved = true;
    this.canvas.style.cursor = "grabbing";
    const { width } = this._size();
    const span = drag.win[1] - drag.win[0];
    this._setWindow(panBy(drag.win, (-dx / Math.max(1, width - 2 * PAD_PX)) * span, this.extent));
    this.scroller.scrollTop = drag.top - dy;
  }

  _up(e) {
    const drag = this._drag;
    this._drag = null;
    this.canvas.releasePointerCapture?.(e.pointerId);
    this.canvas.style.cursor = "";
    if (!drag || drag.moved) return;
    const hit = this._hitAt(e.clientX, e.clientY);
    if (hit) this._clickItem(hit.item, clickModifiers(e));
  }

  _hover(e) {
    const hit = this._hitAt(e.clientX, e.clientY);
    this.canvas.style.cursor = hit ? "pointer" : "";
    const title = hit ? this._label(hit.item.node) : "";
    if (this.canvas.title !== title) this.canvas.title = title;
  }

  _key(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "+" || e.key === "=") this.zoom(0.5);
    else if (e.key === "-") this.zoom(2);
    else if (e.key === "0") this.fit();
    else if (e.key === "ArrowUp" || e.key === "ArrowDown") {
      const next = this.eventInNextLane(e.key === "ArrowDown" ? 1 : -1);
      if (next !== null) this.onSelectEvent(next);
    } else return;
    e.preventDefault();
  }

  /**
   * The event to select one lane down (`dir` 1) or up (-1) from the selected event's lane: the
   * nearest in x there, skipping lanes without visible events; with no selection, the first
   * event of the top lane (down) or the bottom lane (up). null at the first / last lane.
   */
  eventInNextLane(dir) {
    const lanes = this.model.displayLanes();
    const laneOf = (id) => lanes.get(this.model.events.get(id)?.agent)?.lane;
    const byLane = new Map();
    for (const id of this.model.sequence()) {
      const lane = laneOf(id);
      if (lane === undefined) continue;
      if (!byLane.has(lane)) byLane.set(lane, []);
      byLane.get(lane).push(id);
    }
    const rows = [...this._rowOf].filter(([name]) => byLane.has(name)).sort((a, b) => a[1] - b[1]).map(([name]) => name);
    if (!rows.length) return null;
    const current = this.selectedEvent !== null && this.model.events.has(this.selectedEvent) ? this.selectedEvent : null;
    if (current === null) return byLane.get(rows[dir > 0 ? 0 : rows.length - 1])[0];
    const xOf = (id) => eventSpan(this.model.events.get(id), this.model, this.mode)[0];
    const row = this._rowOf.get(laneOf(current));
    const next = dir > 0 ? rows.find((name) => this._rowOf.get(name) > row) : rows.findLast((name) => this._rowOf.get(name) < row);
    return next === undefined ? null : nearestInLane(byLane.get(next), xOf, xOf(current));
  }

  _hitAt(clientX, clientY) {
    this._drawIfPending();
    const box = this.canvas.getBoundingClientRect();
    return hitTest(this._drawn, clientX - box.left, clientY - box.top);
  }

  _clickItem(item, modifiers = { toggle: false }) {
    const node = item.node;
    if (node.kind === "event") {
      this.onSelectEvent(node.eventId, modifiers);
      return;
    }
    const [x0, x1] = [item.x0, item.x1];
    if (node.folded) {
      // A bin of a collapsed lane: unfold the lane, zoom to the bin and select its first event.
      this.onToggleLane(node.lane);
      this.zoomTo(x0, x1);
      this.onSelectEvent(node.eventIds[0]);
      return;
    }
    // A budget bin: zoomed to, it is drawn as its events.
    this.zoomTo(x0, x1);
  }

  /**
   * Where event `id` is drawn, in client (page viewport) pixels: `{x, y}`, or null when it is
   * folded into a bin or not on screen. Lets browser tests click an event like a person would.
   */
  eventClientPoint(id) {
    this._drawIfPending();
    const d = this._drawnByKey.get(id);
    if (!d || d.item.node.kind !== "event") return null;
    const { width, height } = this._size();
    const y = (d.y0 + d.y1) / 2;
    const lo = Math.max(0, d.x0);
    const hi = Math.min(width, d.x1);
    if (hi < lo || y < 0 || y > height) return null;
    const box = this.canvas.getBoundingClientRect();
    // The centre of its visible part, or the first pixel of it where no other item is on top.
    const candidates = [(lo + hi) / 2];
    for (let x = lo + 1; x <= hi; x += 2) candidates.push(x);
    for (const x of candidates) {
      if (hitTest(this._drawn, x, y)?.item === d.item) return { x: box.left + x, y: box.top + y };
    }
    return null;
  }

  /** For tests and the benchmark: the camera and what the last draw drew. */
  debugState() {
    this._drawIfPending();
    return {
      window: [...this.window], extent: [...this.extent], laneH: this.laneH, scrollTop: this.scroller.scrollTop,
      rows: this._rowOf.size, mode: this.mode, userMoved: this.userMoved, onlyAgent: this.onlyAgent, ...this._stats,
    };
  }

  /** For tests: the drawn items, `{key, kind, folded, eventId, x, y, width}` in client pixels. */
  drawnItems() {
    this._drawIfPending();
    const box = this.canvas.getBoundingClientRect();
    return this._drawn.map((d) => ({
      key: d.item.key, kind: d.item.node.kind, folded: Boolean(d.item.node.folded), eventId: d.item.node.eventId ?? null,
      lane: d.item.node.lane, count: d.item.node.count ?? 1, span: d.item.x1 - d.item.x0,
      x: box.left + (Math.max(0, d.x0) + Math.min(box.width, d.x1)) / 2, y: box.top + (d.y0 + d.y1) / 2, width: d.x1 - d.x0,
    }));
  }

  // ---------------------------------------------------------------- lanes

  /** The lane height for the current lane count, as `--lane-h` for the lane names. */
  _sizeLanes() {
    const height = this.scroller.clientHeight || this._size().height;
    const laneH = laneHeight(this._rowOf.size, height);
    if (laneH !== this.laneH || !this._laneHSet) {
      this.laneH = laneH;
      this._laneHSet = true;
      this.canvas.parentElement.style.setProperty("--lane-h", `${laneH}px`);
    }
  }

  /** One element per visible lane, in order; rebuilt only when the lanes changed. */
  _renderLanes(lanes) {
    const signature = lanes.map((l) => `${l.name}\u0000${l.depth}\u0000${l.collapsed}\u0000${l.hidden}`).join("\u0001")
      + `\u0002${this.model.version}`;
    if (signature === this._laneSignature) return;
    this._laneSignature = signature;
    this._rowOf = new Map(lanes.map((l) => [l.name, l.row]));
    const wanted = new Set(lanes.map((l) => l.name));
    for (const [name, el] of this._laneElements) {
      if (!wanted.has(name)) {
        el.remove();
        this._laneElements.delete(name);
      }
    }
    const inner = this.laneColumn;
    let previous = null;
    for (const lane of lanes) {
      let el = this._laneElements.get(lane.name);
      if (!el) {
        el = this._laneElement(lane.name);
        this._laneElements.set(lane.name, el);
      }
      this._updateLane(el, lane);
      const expected = previous ? previous.nextSibling : inner.firstChild;
      if (expected !== el) inner.insertBefore(el, expected);
      previous = el;
    }
    this._markSelectedLane();
    this._sizeLanes();
  }

  _laneElement(name) {
    const el = document.createElement("div");
    el.className = "lane";
    el.dataset.testid = "lane";
    el.dataset.agent = name;
    el.setAttribute("role", "treeitem");
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.className = "lane-toggle";
    toggle.addEventListener("click", () => this.onToggleLane(name));
    const label = document.createElement("button");
    label.type = "button";
    label.className = "lane-name";
    label.textContent = name;
    label.addEventListener("click", () => this.onSelectAgent(name));
    const folded = document.createElement("span");
    folded.className = "lane-folded";
    const only = document.createElement("button");
    only.type = "button";
    only.className = "lane-only";
    only.dataset.testid = "lane-only";
    only.textContent = "only";
    only.addEventListener("click", () => this.onOnlyAgent(this.onlyAgent === name ? null : name));
    const comments = document.createElement("span");
    comments.className = "comment-mark lane-comments";
    comments.dataset.testid = "lane-comments";
    el.append(toggle, label, folded, only, comments);
    this._markLane(el, name);
    return el;
  }

  /** Comments per agent on its events (model/comment_marks.js): a count on each lane that has some. */
  setLaneCommentCounts(counts) {
    this.laneComments = counts;
    for (const [name, el] of this._laneElements) this._markLane(el, name);
  }

  _markLane(el, name) {
    const mark = el.querySelector(":scope > .lane-comments");
    const n = this.laneComments?.get(name) ?? 0;
    mark.hidden = !n;
    mark.textContent = n ? String(n) : "";
    mark.title = n ? `${commentsText(n)} on ${name}'s events` : "";
    mark.setAttribute("aria-label", mark.title);
  }

  _updateLane(el, lane) {
    const [toggle, label, folded, only] = el.children;
    el.style.setProperty("--depth", lane.depth);
    el.setAttribute("aria-level", String(lane.depth + 1));
    el.classList.toggle("is-mistake", this.model.isMistakeAgent(lane.name));
    toggle.hidden = !lane.hasChildren;
    toggle.textContent = lane.collapsed ? "▸" : "▾";
    toggle.setAttribute("aria-label", `${lane.collapsed ? "Expand" : "Collapse"} ${lane.name}`);
    toggle.setAttribute("aria-expanded", String(!lane.collapsed));
    label.title = `${lane.name}${lane.role ? ` (${lane.role})` : ""}: ${lane.events} events`;
    folded.textContent = lane.collapsed ? `+${lane.hidden}` : "";
    folded.title = lane.collapsed ? `${lane.hidden} agents folded into this lane` : "";
    only.setAttribute("aria-label", `Show only ${lane.name}'s events`);
    only.title = `Only this agent: filter the trace to ${lane.name}'s events (again to show all)`;
  }

  // ---------------------------------------------------------------- drawing

  _scheduleDraw() {
    if (this._frame) return;
    this._frame = requestAnimationFrame(() => {
      this._frame = 0;
      this._draw();
    });
  }

  _drawIfPending() {
    if (!this._frame) return;
    cancelAnimationFrame(this._frame);
    this._frame = 0;
    this._draw();
  }

  /** The fill, outline and size factor of item `it` (selection, marks, credit, critical path). */
  _style(it) {
    const n = it.node;
    const isEvent = n.kind === "event";
    const selected = isEvent ? n.eventId === this.selectedEvent : it.key === this._selectedKey;
    const credit = isEvent ? this.credit.get(n.eventId) : undefined;
    let fill = credit === undefined ? eventColor(n.type) : creditColor(credit);
    let scale = credit === undefined ? 1 : 1 + Math.abs(credit);
    let stroke = null;
    let strokeW = 0;
    if (n.open) {
      stroke = fill;
      strokeW = 1.5;
      fill = "#ffffff";
    }
    if (n.critical && this.showCritical) {
      stroke = MARK_COLORS.critical;
      strokeW = Math.max(strokeW, 1.2);
    }
    if (n.mistake) {
      stroke = MARK_COLORS.mistake;
      strokeW = 2.5;
      scale *= 1.5;
    }
    if (isEvent && !selected && this.marked.has(n.eventId)) {
      stroke = MARK_COLORS.selected;
      strokeW = 2;
      scale *= 1.3;
    }
    if (selected) {
      stroke = MARK_COLORS.selected;
      strokeW = 2.5;
      scale *= 1.6;
    }
    return { fill, stroke, strokeW, scale, selected };
  }

  _draw() {
    const { width, height } = this._size();
    const view = this._view;
    if (!view) return;
    const t0 = performance.now();
    const dpr = window.devicePixelRatio || 1;
    const c = this.element;
    if (c.width !== Math.round(width * dpr) || c.height !== Math.round(height * dpr)) {
      c.width = Math.round(width * dpr);
      c.height = Math.round(height * dpr);
      c.style.width = `${width}px`;
      c.style.height = `${height}px`;
    }
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    // The page's theme (static/css/dark.css under prefers-color-scheme: dark): panel and stripe colours.
    const css = getComputedStyle(this.canvas);
    const theme = { bg: css.getPropertyValue("--panel").trim() || "#ffffff", stripe: css.getPropertyValue("--stripe").trim() || STRIPE };
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, width, height);

    const rows = view.lanes.length;
    const laneH = this.laneH;
    const top = clampScroll(this.scroller.scrollTop, rows, laneH, height);
    const [r0, r1] = visibleRows(top, laneH, height, rows);
    const win = this.window;
    const px = (x) => toPx(x, win, width, PAD_PX);
    const yOf = (row) => row * laneH - top + laneH / 2;

    // Lane stripes (as the lane names' rows) and the selected lane.
    const selectedRow = this._rowOf.get(this._selectedLane());
    for (let r = r0; r <= r1; r += 1) {
      const fill = r === selectedRow ? SELECTED_LANE : r % 2 === 1 ? theme.stripe : null;
      if (!fill) continue;
      ctx.fillStyle = fill;
      ctx.fillRect(0, r * laneH - top, width, laneH);
    }
    const ticks = this._ticks(width);
    ctx.strokeStyle = GRID;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const v of ticks.values) {
      const x = Math.round(px(v)) + 0.5;
      ctx.moveTo(x, 0);
      ctx.lineTo(x, height);
    }
    ctx.stroke();

    const overviewCells = this.server ? this._drawServerCells(ctx, view.lanes, [r0, r1], px, top) : 0;
    const tGrid = performance.now();
    const visible = this.layout.visible(win, [r0, r1]);
    const barH = Math.max(4, Math.min(12, laneH * 0.5));
    const dotR = Math.max(2.5, Math.min(4.5, laneH * 0.18));
    const drawn = [];
    const byKey = new Map();
    const geometry = (it) => {
      const y = yOf(it.row);
      if (it.node.kind === "bin") {
        const h = Math.min(laneH - 4, barH + 4);
        let x0 = px(it.x0);
        let x1 = px(it.x1);
        if (x1 - x0 < 4) {
          const mid = (x0 + x1) / 2;
          x0 = mid - 2;
          x1 = mid + 2;
        }
        return { x0, x1, y0: y - h / 2, y1: y + h / 2, shape: "bin" };
      }
      if (it.x1 > it.x0) {
        let x0 = px(it.x0);
        let x1 = px(it.x1);
        if (x1 - x0 < 2) x1 = x0 + 2;
        return { x0, x1, y0: y - barH / 2, y1: y + barH / 2, shape: "bar" };
      }
      const x = px(it.x0);
      return { x0: x - dotR, x1: x + dotR, y0: y - dotR, y1: y + dotR, shape: "dot" };
    };

    // Edges (under the nodes), batched by style.
    const tVisible = performance.now();
    const segments = this.layout.edges(view, visible);
    const tSegments = performance.now();
    const buckets = new Map();
    let edgeCount = 0;
    const viewTop = -laneH;
    const viewBottom = height + laneH;
    for (const [a, b, e] of segments) {
      const ya = yOf(a.row);
      const yb = yOf(b.row);
      if ((ya < viewTop && yb < viewTop) || (ya > viewBottom && yb > viewBottom)) continue;
      const xa = px(a.node.kind === "bin" ? (a.x0 + a.x1) / 2 : a.x1);
      const xb = px(b.node.kind === "bin" ? (b.x0 + b.x1) / 2 : b.x0);
      if ((xa < 0 && xb < 0) || (xa > width && xb > width)) continue;
      const style = this._edgeStyle(e, a, b);
      let bucket = buckets.get(style.key);
      if (!bucket) {
        bucket = { style, lines: [] };
        buckets.set(style.key, bucket);
      }
      bucket.lines.push(xa, ya, xb, yb);
      edgeCount += 1;
    }
    for (const { style, lines } of [...buckets.values()].sort((p, q) => p.style.z - q.style.z)) {
      ctx.strokeStyle = style.color;
      ctx.lineWidth = style.width;
      ctx.beginPath();
      for (let i = 0; i < lines.length; i += 4) {
        ctx.moveTo(lines[i], lines[i + 1]);
        ctx.lineTo(lines[i + 2], lines[i + 3]);
      }
      ctx.stroke();
      if (!style.arrow) continue;
      ctx.fillStyle = style.color;
      ctx.beginPath();
      for (let i = 0; i < lines.length; i += 4) {
        const dx = lines[i + 2] - lines[i];
        const dy = lines[i + 3] - lines[i + 1];
        const len = Math.hypot(dx, dy);
        if (len < 14) continue;
        const ux = dx / len;
        const uy = dy / len;
        const tx = lines[i + 2] - ux * 2;
        const ty = lines[i + 3] - uy * 2;
        ctx.moveTo(tx, ty);
        ctx.lineTo(tx - ux * 6 - uy * 3, ty - uy * 6 + ux * 3);
        ctx.lineTo(tx - ux * 6 + uy * 3, ty - uy * 6 - ux * 3);
        ctx.closePath();
      }
      ctx.fill();
    }

    const tEdges = performance.now();
    // Nodes: bins, then bars, then dots, each batched by colour; outlines last.
    const fills = new Map();
    const outlines = [];
    const labels = [];
    let bins = 0;
    let bars = 0;
    let dots = 0;
    const order = { bin: 0, bar: 1, dot: 2 };
    const placed = visible.items.map((it) => ({ it, g: geometry(it) }))
      .sort((p, q) => order[p.g.shape] - order[q.g.shape]);
    for (const { it, g } of placed) {
      const s = this._style(it);
      let { x0, x1, y0, y1 } = g;
      if (g.shape === "bar" && s.scale !== 1) {
        const grow = ((y1 - y0) * (Math.min(s.scale, 1.8) - 1)) / 2;
        y0 -= grow;
        y1 += grow;
      } else if (g.shape === "dot" && s.scale !== 1) {
        const r = ((x1 - x0) / 2) * s.scale;
        const cx = (x0 + x1) / 2;
        const cy = (y0 + y1) / 2;
        x0 = cx - r; x1 = cx + r; y0 = cy - r; y1 = cy + r;
      }
      const fill = g.shape === "bin" ? fade(s.fill, Math.min(0.85, 0.3 + 0.12 * Math.log2(1 + (it.node.count || 1)))) : s.fill;
      const key = `${order[g.shape]}${fill}`;
      let list = fills.get(key);
      if (!list) {
        list = { fill, shapes: [] };
        fills.set(key, list);
      }
      list.shapes.push([g.shape, x0, x1, y0, y1]);
      if (s.stroke) outlines.push([g.shape, x0, x1, y0, y1, s.stroke, s.strokeW]);
      if (g.shape === "bin") {
        bins += 1;
        if (x1 - x0 >= 26 && laneH >= 16) labels.push([String(it.node.count), (x0 + x1) / 2, (y0 + y1) / 2]);
      } else if (g.shape === "bar") bars += 1;
      else dots += 1;
      const d = { item: it, x0, x1, y0, y1 };
      drawn.push(d);
      byKey.set(it.key, d);
    }
    for (const { fill, shapes } of [...fills.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, v]) => v)) {
      ctx.fillStyle = fill;
      ctx.beginPath();
      for (const [shape, x0, x1, y0, y1] of shapes) {
        if (shape === "dot") {
          const r = (x1 - x0) / 2;
          ctx.moveTo(x1, (y0 + y1) / 2);
          ctx.arc((x0 + x1) / 2, (y0 + y1) / 2, r, 0, 2 * Math.PI);
        } else ctx.rect(x0, y0, x1 - x0, y1 - y0);
      }
      ctx.fill();
    }
    for (const [shape, x0, x1, y0, y1, stroke, w] of outlines) {
      ctx.strokeStyle = stroke;
      ctx.lineWidth = w;
      ctx.beginPath();
      if (shape === "dot") ctx.arc((x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2 + w / 2, 0, 2 * Math.PI);
      else ctx.rect(x0 - w / 2, y0 - w / 2, x1 - x0 + w, y1 - y0 + w);
      ctx.stroke();
    }
    if (labels.length) {
      ctx.fillStyle = "#212529";
      ctx.font = "10px system-ui, sans-serif";
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      for (const [text, x, y] of labels) ctx.fillText(text, x, y);
    }

    const tNodes = performance.now();
    this._drawn = drawn;
    this._drawnByKey = byKey;
    this._placeAxis(ticks, px);
    this.overview?.draw(win);
    this._stats = {
      drawn: { bins, bars, dots, edges: edgeCount, expanded: visible.expanded.size, overviewCells },
      visibleRows: [r0, r1], drawMs: performance.now() - t0,
      phases: {
        grid: tGrid - t0, visible: tVisible - tGrid, segments: tSegments - tVisible, edges: tEdges - tSegments,
        nodes: tNodes - tEdges, axis: performance.now() - tNodes,
      },
    };
    this.onWindow?.([...win]);
    this.onCamera?.([...win], this.userMoved);
  }

  /**
   * The overview bins of a huge trace in lanes `[r0, r1]` of `lanes`: a band per bin, shaded by
   * its count (log scale), red where it holds errors; faint inside the loaded window, whose
   * events are drawn on top. Returns how many bins were drawn.
   */
  _drawServerCells(ctx, lanes, [r0, r1], px, top) {
    const server = this.server;
    const [a, b] = this.window;
    const laneH = this.laneH;
    const loaded = server.loaded;
    const scale = Math.log2(1 + server.maxCount);
    let n = 0;
    for (let r = r0; r <= r1 && r < lanes.length; r += 1) {
      const y = r * laneH - top + laneH * 0.2;
      for (const cell of server.cellsIn(server.lane(lanes[r].name), a, b)) {
        const inLoaded = loaded !== null && cell.x0 >= loaded.t0 && cell.x1 <= loaded.t1;
        const alpha = (inLoaded ? 0.08 : 0.15) + (inLoaded ? 0.1 : 0.6) * (Math.log2(1 + cell.count) / scale);
        ctx.fillStyle = cell.errors ? `rgba(220, 53, 69, ${alpha})` : `rgba(66, 99, 235, ${alpha})`;
        const x0 = px(cell.x0);
        ctx.fillRect(x0, y, Math.max(1, px(cell.x1) - x0 - 0.5), laneH * 0.6);
        n += 1;
      }
    }
    return n;
  }

  _edgeStyle(e, a, b) {
    const touchesSelected = this.selectedEvent !== null
      && (a.node.eventId === this.selectedEvent || b.node.eventId === this.selectedEvent
        || a.key === this._selectedKey || b.key === this._selectedKey);
    if (e.critical && this.showCritical) return { key: "critical", color: fade(MARK_COLORS.critical, 0.85), width: 2.2, arrow: true, z: 2 };
    if (e.aggregated) {
      const width = Math.min(5, 0.8 + Math.log2(e.count) * 0.6);
      const color = fade(edgeColor(e.type), touchesSelected ? 0.9 : 0.3);
      return { key: `a${color}${width}`, color, width, arrow: false, z: 0 };
    }
    const color = fade(edgeColor(e.type), touchesSelected ? 1 : 0.5);
    const width = touchesSelected ? 2 : 1;
    return { key: `e${color}${width}`, color, width, arrow: true, z: touchesSelected ? 3 : 1 };
  }

  /** Tick values over the window, inside the extent (no negative time), and their step. */
  _ticks(width) {
    const [a, b] = this.window;
    const count = Math.max(2, Math.floor(width / 110));
    let values = niceTicks(a, b, count);
    const step = values.length > 1 ? values[1] - values[0] : 1;
    const eps = step * 1e-6;
    values = values.filter((v) => v >= this.extent[0] - eps && v <= this.extent[1] + eps
      && (this.mode === "time" || Number.isInteger(v)));
    return { values, step };
  }

  _placeAxis({ values, step }, px) {
    const labels = values.map((v) => {
      const span = document.createElement("span");
      span.className = "axis-tick";
      span.style.left = `${px(v)}px`;
      span.textContent = this.mode === "time" ? formatTick(v, step) : String(v);
      return span;
    });
    this.axis.replaceChildren(...labels);
  }

  _label(n) {
    if (n.kind === "bin") {
      return `${n.count} events ${n.folded ? `folded into ${n.lane}: click to unfold` : "binned: click to zoom in"}`;
    }
    const ev = this.model.events.get(n.eventId);
    if (!ev) return "";
    const at = this.mode === "time" ? formatSeconds(ev.t) : `step ${this.model.stepOf(ev.id)}`;
    const took = this.mode === "time" && Number.isFinite(ev.t_end) && ev.t_end > ev.t ? ` (${formatSeconds(ev.t_end - ev.t)})` : "";
    return `${ev.type} · ${ev.agent} · ${at}${took}${n.mistake ? " · mistake step" : ""}`;
  }
}
