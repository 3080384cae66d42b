/**
 * The swimlane timeline, drawn with sigma.js (WebGL): x = time or step, y = the agent's lane.
 * (Over 500 lines: the renderer, the lane column and the axis follow one camera, kept together.)
 *
 * Nodes are the events of `TraceModel.view()` coloured by type (bins of folded lanes are sized
 * by their count); edges are every dependency edge between them. Open events are drawn
 * hollow, the Who&When mistake step with a red ring, the critical path with a dark ring and
 * dark edges. The lane labels are an HTML column beside the canvas that follows the camera,
 * as does the axis; lane stripes are a CSS background with the same geometry. A click on an
 * event hands `onSelectEvent` its modifier keys (`clickModifiers`: shift, ctrl or meta toggle the
 * event in a multi-selection); `setMarked(ids)` rings the multi-selected events.
 */

import { formatSeconds } from "../lib/format.js";
import { creditColor, eventColor, edgeColor, MARK_COLORS, fade } from "../lib/palette.js";
import { applyChanges, createGraph, panTo, syncGraph, vendor } from "./sigma_sync.js";

/** When fitted, a lane is at most this many pixels tall. */
const MAX_LANE_PX = 34;
const EVENT_SIZE = 4;
/** When a live trace outgrows its x scale, the new scale fits this many times its extent. */
const GROWTH_HEADROOM = 1.5;

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

export class Timeline {
  /**
   * @param {{canvas: HTMLElement, lanes: HTMLElement, axis: HTMLElement, model: object,
   *   onSelectEvent: (id: string, modifiers?: {toggle: boolean}) => void, onSelectAgent: (name: string) => void,
   *   onToggleLane: (name: string) => void}} options `canvas` holds the WebGL view,
   *   `lanes` the lane-label column, `axis` the tick labels; the three share a parent
   *   whose CSS variables `--lane-h` / `--lane-offset` they use.
   */
  constructor({ canvas, lanes, axis, model, onSelectEvent, onSelectAgent, onToggleLane }) {
    this.canvas = canvas;
    this.laneColumn = lanes;
    this.axis = axis;
    this.model = model;
    this.onSelectEvent = onSelectEvent;
    this.onSelectAgent = onSelectAgent;
    this.onToggleLane = onToggleLane;
    /** "time" or "step". */
    this.mode = "time";
    this.showCritical = true;
    this.selectedEvent = null;
    this.selectedAgent = null;
    this.graph = createGraph();
    this.sigma = null;
    this.kx = null; // graph units per second (or step); fixed until fit() or a mode change
    this.userMoved = false;
    this._laneElements = new Map();
    this._laneSignature = "";
    this._overlayFrame = 0;
    this._viewNodes = new Map();
    this._selectedKey = null; // the drawn node showing the selected event
    this._bboxSignature = "";
    this._scaledSpan = 0;
    this._view = null;
    this._drawnView = null; // the view object the graph was last fully synced to
    this._drawnCritical = true;
    /** event id -> credit in [-1, 1] ("Attribute this trace"): colours and sizes those events. */
    this.credit = new Map();
    this._drawnCredit = this.credit;
    /** Ids of the multi-selected events (shift/ctrl-click): ringed like the selected one. */
    this.marked = new Set();
    this._drawnMarked = this.marked;
  }

  /**
   * Bring the drawing in line with the model. Only what changed reaches sigma: after a live
   * delta, the nodes and edges the model reports as changed (`takeViewChanges`); after a
   * rebuild of the view, a re-scale or a display option change, every node is compared.
   */
  render() {
    const view = this.model.view(this.mode);
    const changes = this.model.takeViewChanges(this.mode);
    this._viewNodes = view.nodes;
    this._view = view;
    const selectedBefore = this._selectedKey;
    this._selectedKey = this.selectedEvent === null ? null : this._nodeKeyOf(this.selectedEvent);
    let full = changes.full || view !== this._drawnView || this.showCritical !== this._drawnCritical
      || this.credit !== this._drawnCredit || this.marked !== this._drawnMarked;
    if (this.kx === null) {
      this.kx = this._scale(view);
      full = true;
    } else if (!this.userMoved && this._outgrown(view)) {
      // A growing (live) trace: re-scale with room to grow, so that it is rarely re-scaled
      // (each re-scale moves every node on screen).
      this.kx = this._scale(view, GROWTH_HEADROOM);
      full = true;
    }
    if (full) this._syncAll(view);
    else {
      if (selectedBefore !== this._selectedKey) {
        for (const key of [selectedBefore, this._selectedKey]) {
          if (key === null) continue;
          changes.nodes.add(key);
          if (this.graph.hasNode(key)) for (const edge of this.graph.edges(key)) changes.edges.add(edge);
        }
      }
      this._syncChanged(view, changes);
    }
    this._drawnView = view;
    this._drawnCritical = this.showCritical;
    this._drawnCredit = this.credit;
    this._drawnMarked = this.marked;
    this._renderLanes(view.lanes);
    if (!this.sigma) this._mount();
    else if (!this.userMoved) this._frame(view, false);
    this._scheduleOverlay();
  }

  /** Compare every node and edge of `view` with the graph (rebuilding it past BULK_CHANGES). */
  _syncAll(view) {
    const nodes = new Map();
    for (const n of view.nodes.values()) nodes.set(n.key, this._nodeAttributes(n));
    const edges = new Map();
    for (const e of view.edges.values()) {
      edges.set(e.key, { source: e.source, target: e.target, attributes: this._edgeAttributes(e) });
    }
    const { graph } = syncGraph(this.graph, nodes, edges);
    if (graph !== this.graph) {
      this.graph = graph;
      this.sigma?.setGraph(graph);
    }
  }

  /** Update only the nodes and edges whose keys are in `changes` (absent from the view: dropped). */
  _syncChanged(view, changes) {
    const nodes = new Map();
    for (const key of changes.nodes) {
      const n = view.nodes.get(key);
      nodes.set(key, n === undefined ? null : this._nodeAttributes(n));
    }
    const edges = new Map();
    for (const key of changes.edges) {
      const e = view.edges.get(key);
      edges.set(key, e === undefined ? null
        : { source: e.source, target: e.target, attributes: this._edgeAttributes(e) });
    }
    applyChanges(this.graph, nodes, edges);
  }

  /** Switch the x axis between "time" and "step"; everything is laid out again. */
  setMode(mode) {
    if (mode === this.mode) return;
    this.mode = mode;
    this.fit();
  }

  /** Highlight the critical path or not. */
  setShowCritical(show) {
    this.showCritical = show;
    this.render();
  }

  /** Ring the multi-selected events `ids` (an iterable of event ids; a new Set each time). */
  setMarked(ids) {
    const next = new Set(ids);
    if (next.size === this.marked.size && [...next].every((id) => this.marked.has(id))) return;
    this.marked = next;
    this.render();
  }

  /** Paint events by credit: `credit` maps event id -> credit in [-1, 1] (a new Map each time). */
  setCredit(credit) {
    this.credit = credit;
    this.render();
  }

  /** Re-scale x to the current data and show everything. */
  fit() {
    this.userMoved = false;
    this.kx = null;
    this.render();
    if (this.sigma) this._frame(this.model.view(this.mode), true);
  }

  /** Select event `id` (null to clear); pans to it when it is off screen. */
  selectEvent(id) {
    this.selectedEvent = id;
    this.render();
    if (this._selectedKey && this.sigma) panTo(this.sigma, this._selectedKey);
  }

  /** Mark the lane that shows agent `name` (its own, or the one it is folded into) as selected. */
  selectAgent(name) {
    this.selectedAgent = name;
    this._markSelectedLane();
  }

  _markSelectedLane() {
    const lane = this.selectedAgent === null ? null : this.model.displayLanes().get(this.selectedAgent)?.lane;
    for (const [agent, el] of this._laneElements) el.classList.toggle("is-selected", agent === lane);
  }

  /** The drawn node that shows event `id`: itself, or the bin it is folded into. */
  _nodeKeyOf(id) {
    return this._view?.nodeOf.get(id) ?? null;
  }

  /** x scale so that, fitted, the trace fills the width and lanes fill the height. */
  _scale(view, headroom = 1) {
    const [x0, x1] = this._xExtent(view);
    const { width, height } = this._size();
    const rows = Math.max(view.lanes.length, height / MAX_LANE_PX);
    this._scaledSpan = (x1 - x0) * headroom;
    return x1 > x0 ? (width / height) * rows / this._scaledSpan : 1;
  }

  /**
   * True when a growing (live) trace's x extent is a quarter past the one the scale was fitted
   * to: re-scaling then keeps the lanes readable (rarely: each time the extent grows by 25 %).
   */
  _outgrown(view) {
    const [x0, x1] = this._xExtent(view);
    return x1 - x0 > 1.25 * this._scaledSpan;
  }

  _xExtent(view) {
    if (this.mode === "step") return [0, Math.max(0, this.model.eventCount - 1)];
    const [t0, t1] = this.model.timeRange();
    if (view.nodes.size === 0) return [0, 0];
    return [t0, t1];
  }

  _size() {
    const width = this.canvas.clientWidth || 800;
    const height = this.canvas.clientHeight || 400;
    return { width, height };
  }

  /**
   * Frame sigma on the data: the bounding box is the x extent and the lanes (at least a
   * viewport's worth of `MAX_LANE_PX` rows). Refreshes only when the box changed; resets the
   * camera when `resetCamera`.
   */
  _frame(view, resetCamera) {
    const [x0, x1] = this._xExtent(view);
    const { height } = this._size();
    const rows = Math.max(view.lanes.length, height / MAX_LANE_PX);
    const pad = x1 > x0 ? 0 : 1;
    const bbox = { x: [x0 * this.kx - pad, x1 * this.kx + pad], y: [-(rows - 0.5), 0.5] };
    const signature = JSON.stringify(bbox);
    if (signature !== this._bboxSignature) {
      this._bboxSignature = signature;
      this.sigma.setCustomBBox(bbox);
      this.sigma.refresh();
    }
    if (resetCamera) this.sigma.getCamera().setState({ x: 0.5, y: 0.5, ratio: 1, angle: 0 });
  }

  _mount() {
    const { Sigma } = vendor();
    const { createNodeBorderProgram, NodePointProgram } = Sigma.rendering;
    this.sigma = new Sigma(this.graph, this.canvas, {
      allowInvalidContainer: true,
      renderLabels: false,
      renderEdgeLabels: false,
      hideEdgesOnMove: true,
      hideLabelsOnMove: true,
      enableEdgeEvents: false,
      zIndex: true,
      stagePadding: 16,
      defaultNodeType: "point",
      defaultEdgeType: "arrow",
      minCameraRatio: 0.002,
      maxCameraRatio: 4,
      nodeProgramClasses: {
        point: NodePointProgram,
        ring: createNodeBorderProgram({
          borders: [
            { size: { attribute: "borderSize", defaultValue: 0 }, color: { attribute: "borderColor" } },
            { size: { fill: true }, color: { attribute: "color" } },
          ],
        }),
      },
    });
    this._frame(this.model.view(this.mode), true);
    this.sigma.on("clickNode", ({ node, event }) => this._clickNode(node, clickModifiers(event?.original)));
    // Sigma reads a second click within its doubleClickTimeout as a double click, with no click
    // event: quick clicks on two events (a multi-selection) must each count, not zoom.
    this.sigma.on("doubleClickNode", ({ node, event }) => {
      event?.preventSigmaDefault?.();
      this._clickNode(node, clickModifiers(event?.original));
    });
    this.sigma.on("enterNode", () => { this.canvas.style.cursor = "pointer"; });
    this.sigma.on("leaveNode", () => { this.canvas.style.cursor = ""; });
    this.sigma.getCamera().on("updated", () => this._scheduleOverlay());
    const moved = () => { this.userMoved = true; };
    this.canvas.addEventListener("wheel", moved, { passive: true });
    this.canvas.addEventListener("pointerdown", moved);
    new ResizeObserver(() => {
      this.sigma.resize();
      this.sigma.refresh();
      this._scheduleOverlay();
    }).observe(this.canvas);
  }

  /**
   * Where event `id` is drawn, in client (page viewport) pixels: `{x, y}`, or null when it is
   * folded into a bin or not on screen. Lets browser tests click an event like a person would.
   */
  eventClientPoint(id) {
    if (!this.sigma) return null;
    const key = this._nodeKeyOf(id);
    const node = key === null ? undefined : this._viewNodes.get(key);
    if (node && node.kind === "event" && this.graph.hasNode(key)) {
      const { x, y } = this.graph.getNodeAttributes(key);
      const point = this.sigma.graphToViewport({ x, y });
      const box = this.canvas.getBoundingClientRect();
      if (point.x < 0 || point.y < 0 || point.x > box.width || point.y > box.height) return null;
      return { x: box.left + point.x, y: box.top + point.y };
    }
    return null;
  }

  _clickNode(key, modifiers = { toggle: false }) {
    const node = this._viewNodes.get(key);
    if (!node) return;
    if (node.kind === "event") {
      this.onSelectEvent(node.eventId, modifiers);
      return;
    }
    // A bin: unfold its lane and select the first event in it.
    this.onToggleLane(node.lane);
    this.onSelectEvent(node.eventIds[0]);
  }

  _nodeAttributes(n) {
    const color = eventColor(n.type);
    const selected = n.key === this._selectedKey;
    let size = n.kind === "bin" ? Math.min(7, EVENT_SIZE + 0.6 * Math.log2(n.count)) : EVENT_SIZE;
    const credit = n.kind === "event" ? this.credit.get(n.eventId) : undefined;
    if (credit !== undefined) size *= 1 + Math.abs(credit);
    let fill = credit === undefined ? color : creditColor(credit);
    let borderColor = fill;
    let borderSize = 0;
    let zIndex = 0;
    if (n.open) {
      fill = "#ffffff";
      borderSize = 0.45;
    }
    if (n.critical && this.showCritical) {
      borderColor = MARK_COLORS.critical;
      borderSize = Math.max(borderSize, 0.3);
      zIndex = 1;
    }
    if (n.mistake) {
      borderColor = MARK_COLORS.mistake;
      borderSize = 0.5;
      size *= 1.5;
      zIndex = 2;
    }
    if (!selected && n.kind === "event" && this.marked.has(n.eventId)) {
      borderColor = MARK_COLORS.selected;
      borderSize = Math.max(borderSize, 0.4);
      size *= 1.4;
      zIndex = 3;
    }
    if (selected) {
      borderColor = MARK_COLORS.selected;
      borderSize = Math.max(borderSize, 0.4);
      size *= 1.8;
      zIndex = 3;
    }
    // Plain nodes use sigma's point program, several times cheaper to draw (in software
    // WebGL too) than the ring program, which only the marked few need.
    return {
      x: n.x * this.kx, y: -n.row, size, color: fill, borderColor, borderSize, zIndex,
      type: borderSize > 0 ? "ring" : "point", label: this._label(n),
    };
  }

  _label(n) {
    if (n.kind === "bin") return `${n.count} events folded into ${n.lane}`;
    const ev = this.model.events.get(n.eventId);
    const at = this.mode === "time" ? formatSeconds(ev.t) : `step ${n.x}`;
    return `${ev.type} · ${ev.agent} · ${at}${n.mistake ? " · mistake step" : ""}`;
  }

  _edgeAttributes(e) {
    const touchesSelected = this._selectedKey !== null
      && (e.source === this._selectedKey || e.target === this._selectedKey);
    if (e.critical && this.showCritical) {
      return { color: fade(MARK_COLORS.critical, 0.85), size: 2.5, type: "arrow", zIndex: 2 };
    }
    if (e.aggregated) {
      return {
        color: fade(edgeColor(e.type), touchesSelected ? 0.9 : 0.35),
        size: Math.min(6, 1 + Math.log2(e.count)), type: "line", zIndex: 0,
      };
    }
    return {
      color: fade(edgeColor(e.type), touchesSelected ? 1 : 0.55),
      size: touchesSelected ? 2 : 1, type: "arrow", zIndex: touchesSelected ? 3 : 1,
    };
  }

  /** One element per visible lane, in order; rebuilt only when the lanes changed. */
  _renderLanes(lanes) {
    const signature = lanes.map((l) => `${l.name}\u0000${l.depth}\u0000${l.collapsed}\u0000${l.hidden}`).join("\u0001")
      + `\u0002${this.model.version}`;
    if (signature === this._laneSignature) return;
    this._laneSignature = signature;
    const wanted = new Set(lanes.map((l) => l.name));
    for (const [name, el] of this._laneElements) {
      if (!wanted.has(name)) {
        el.remove();
        this._laneElements.delete(name);
      }
    }
    const inner = this.laneColumn;
    for (const lane of lanes) {
      let el = this._laneElements.get(lane.name);
      if (!el) {
        el = this._laneElement(lane.name);
        this._laneElements.set(lane.name, el);
      }
      this._updateLane(el, lane);
      inner.appendChild(el); // appending an existing child moves it into order
    }
    this._markSelectedLane();
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
    el.append(toggle, label, folded);
    return el;
  }

  _updateLane(el, lane) {
    const [toggle, label, folded] = el.children;
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
  }

  _scheduleOverlay() {
    if (this._overlayFrame) return;
    this._overlayFrame = requestAnimationFrame(() => {
      this._overlayFrame = 0;
      this._placeOverlay();
    });
  }

  /** Align the lane column, the stripes and the axis with the camera. */
  _placeOverlay() {
    if (!this.sigma || this.kx === null) return;
    const top = this.sigma.graphToViewport({ x: 0, y: 0 }).y;
    const laneH = this.sigma.graphToViewport({ x: 0, y: -1 }).y - top;
    const host = this.canvas.parentElement;
    host.style.setProperty("--lane-h", `${laneH}px`);
    host.style.setProperty("--lane-offset", `${top - laneH / 2}px`);
    host.classList.toggle("lanes-compact", laneH < 8);
    const { width } = this._size();
    const left = this.sigma.viewportToGraph({ x: 0, y: 0 }).x / this.kx;
    const right = this.sigma.viewportToGraph({ x: width, y: 0 }).x / this.kx;
    const ticks = niceTicks(left, right, Math.max(2, Math.floor(width / 110)))
      .filter((v) => this.mode === "time" || Number.isInteger(v));
    const labels = ticks.map((v) => {
      const span = document.createElement("span");
      span.className = "axis-tick";
      span.style.left = `${this.sigma.graphToViewport({ x: v * this.kx, y: 0 }).x}px`;
      span.textContent = this.mode === "time" ? formatSeconds(v) : String(v);
      return span;
    });
    this.axis.replaceChildren(...labels);
  }
}
