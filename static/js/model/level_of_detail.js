/**
 * Level of detail: what the timeline draws of a trace, bounded for large ones.
 *
 * Pure module: no DOM, no sigma. Past `lodThreshold` events the model collapses lanes (the
 * events of a collapsed lane's descendants show as bins in it; edges to bins are aggregated);
 * past `nodeBudget` nodes the events of unfolded lanes are binned by time (or step) too.
 * `TraceViews` keeps one view per x mode and extends it while only new events and edges
 * arrive, reporting the node and edge keys each update touched.
 */

import { edgeKey, isDependency } from "./delta_store.js";

/** Above this many events the level of detail is on (auto-collapsed lanes, bins). */
export const DEFAULT_LOD_THRESHOLD = 5000;
/** With the level of detail on, lanes are collapsed until at most this many are visible. */
export const DEFAULT_MAX_LANES = 150;
/** A collapsed lane splits the trace's extent (as of its first data) into this many bins. */
export const BIN_COUNT = 100;
/**
 * The timeline draws at most about this many nodes: above it, the events of unfolded lanes are
 * grouped into time (or step) bins too, of 2^level times the base bin width, the smallest level
 * whose bins fit in the budget (half of it for a live trace: the other half is room to grow, and
 * a live trace is re-binned at the next level only when it outgrows the budget). A bin that holds
 * one event draws it.
 */
export const DEFAULT_NODE_BUDGET = 3000;

/**
 * The timeline's views of one `TraceModel`. It reads the model's public API (lanes, filters,
 * critical path, `nodeBudget`, `viewVersion`) and its `store`'s indexes.
 */
export class TraceViews {
  /** @param {import("./trace_model.js").TraceModel} model */
  constructor(model) {
    this.model = model;
    this.store = model.store;
    this._states = new Map(); // mode -> incremental view state
  }

  /** See `TraceModel.view`. */
  view(mode) {
    const store = this.store;
    let state = this._states.get(mode);
    const stamp = `${this.model.viewVersion}:${store.structure}:${store.rewrites}`
      + `:${mode === "step" ? store.orderRewrites : 0}`;
    if (!state || state.stamp !== stamp || !this._extend(state)) {
      state = this.build(mode, stamp, state ? Math.max(0, state.level) : 0);
      this._states.set(mode, state);
    }
    if (state.version !== store.version) {
      state.version = store.version;
      state.view.lanes = this.model.lanes();
    }
    return state.view;
  }

  /** See `TraceModel.takeViewChanges`. */
  takeChanges(mode) {
    const state = this._states.get(mode);
    if (!state) return { full: true, nodes: new Set(), edges: new Set() };
    const changes = state.changes;
    state.changes = { full: false, nodes: new Set(), edges: new Set() };
    return changes;
  }

  /**
   * Build the view state of `mode` from scratch; `minLevel` keeps a live trace's bins from
   * shrinking. `exactLevel` (tests) bins at that level.
   */
  build(mode, stamp, minLevel, exactLevel = undefined) {
    const model = this.model;
    const lanes = model.lanes();
    const display = model.displayLanes();
    const rowOf = new Map(lanes.map((l) => [l.name, l.row]));
    const bins = this.store.bins;
    const baseWidth = mode === "time" ? bins?.time ?? 1 : bins?.step ?? 1;
    // Nodes at the lanes' own level of detail: unbinned events plus collapsed lanes' bins.
    let single = 0;
    const binKeys = new Set();
    for (const ev of this.store.events.values()) {
      const where = display.get(ev.agent);
      if (!where || !model.passes(ev)) continue;
      if (!where.binned) single += 1;
      else binKeys.add(`${where.lane}:${Math.floor(this._x(mode, ev) / baseWidth)}`);
    }
    let level = -1; // -1: no budget binning
    if (single + binKeys.size > model.nodeBudget) {
      level = minLevel;
      // A live trace keeps half the budget as room to grow (fewer re-binnings).
      const target = this.store.trace?.live ? model.nodeBudget / 2 : model.nodeBudget;
      while (level < 60 && this._binEstimate(mode, lanes.length, baseWidth * 2 ** level) > target) level += 1;
    }
    if (exactLevel !== undefined) level = exactLevel;
    const state = {
      mode, stamp, level, version: -1, display, rowOf, baseWidth,
      width: level < 0 ? baseWidth : baseWidth * 2 ** level,
      bins: new Map(), // bin key -> bin record (drawn as a bin, or as its one event)
      edgeOf: new Map(), // model edge -> view edge key it counts in
      eventCursor: 0, edgeCursor: 0, critical: null,
      changes: { full: true, nodes: new Set(), edges: new Set() },
      view: { nodes: new Map(), edges: new Map(), lanes, nodeOf: new Map(), budgeted: level >= 0, level },
    };
    state.critical = model.criticalPath();
    this._extend(state, true);
    state.changes = { full: true, nodes: new Set(), edges: new Set() };
    return state;
  }

  _x(mode, ev) {
    return mode === "time" ? ev.t : this.store.stepOf(ev.id);
  }

  /** Upper bound of the bins of width `width` that `rows` lanes need over the whole extent. */
  _binEstimate(mode, rows, width) {
    const [x0, x1] = mode === "time" ? this.model.timeRange() : [0, Math.max(0, this.store.events.size - 1)];
    return rows * (Math.floor(x1 / width) - Math.floor(x0 / width) + 1);
  }

  /**
   * Add the events and edges that arrived since `state` was last brought up to date, and the
   * critical path's changes. Returns false when the view must be rebuilt instead (it outgrew
   * the node budget).
   */
  _extend(state, building = false) {
    const { view } = state;
    const store = this.store;
    const touchedEvents = [];
    const order = store.arrivalOrder;
    for (; state.eventCursor < order.length; state.eventCursor += 1) {
      const id = order[state.eventCursor];
      if (this._placeEvent(state, store.events.get(id))) touchedEvents.push(id);
    }
    // Outgrew the budget: rebuild (at a coarser bin level when already binning).
    if (!building && view.nodes.size > this.model.nodeBudget) return false;
    const edges = store.edges;
    for (; state.edgeCursor < edges.length; state.edgeCursor += 1) {
      const e = edges[state.edgeCursor];
      if (!state.edgeOf.has(e)) this._placeEdge(state, e);
    }
    // Edges that reached an event before it arrived.
    for (const id of touchedEvents) {
      for (const e of store.incoming.get(id) ?? []) if (!state.edgeOf.has(e)) this._placeEdge(state, e);
      for (const e of store.outgoing.get(id) ?? []) if (!state.edgeOf.has(e)) this._placeEdge(state, e);
    }
    this._updateCritical(state);
    return true;
  }

  /** Put event `ev` into the view (its own node, or a bin). Returns true when it is drawn. */
  _placeEvent(state, ev) {
    const where = state.display.get(ev.agent);
    if (!where || !this.model.passes(ev)) return false;
    const { view } = state;
    const x = this._x(state.mode, ev);
    const row = state.rowOf.get(where.lane);
    const critical = state.critical?.events.has(ev.id) ?? false;
    const mistake = this.store.mistakeEvents.has(ev.id);
    if (!where.binned && state.level < 0) {
      view.nodes.set(ev.id, this._eventNode(ev, where.lane, row, x, critical));
      view.nodeOf.set(ev.id, ev.id);
      state.changes.nodes.add(ev.id);
      return true;
    }
    const width = where.binned && state.level < 0 ? state.baseWidth : state.width;
    const index = Math.floor(x / width);
    const key = state.level < 0 ? `bin:${where.lane}:${index}` : `bin:${where.lane}:L${state.level}:${index}`;
    let bin = state.bins.get(key);
    if (!bin) {
      bin = {
        key, kind: "bin", lane: where.lane, row, x: (index + 0.5) * width, count: 0,
        types: {}, type: ev.type, open: false, mistake: false, critical: false, eventIds: [],
        folded: where.binned,
      };
      state.bins.set(key, bin);
    }
    bin.count += 1;
    bin.eventIds.push(ev.id);
    bin.types[ev.type] = (bin.types[ev.type] ?? 0) + 1;
    if (bin.types[ev.type] > bin.types[bin.type]) bin.type = ev.type;
    bin.mistake ||= mistake;
    bin.critical ||= critical;
    if (!bin.folded && bin.count === 1) {
      // An unfolded lane's bin of one event draws the event itself.
      view.nodes.set(ev.id, this._eventNode(ev, where.lane, row, x, critical));
      view.nodeOf.set(ev.id, ev.id);
      state.changes.nodes.add(ev.id);
      return true;
    }
    if (!bin.folded && bin.count === 2) {
      // Its second event: the first one's node becomes the bin (and its edges follow).
      const first = bin.eventIds[0];
      view.nodes.delete(first);
      state.changes.nodes.add(first);
      view.nodes.set(key, bin);
      view.nodeOf.set(first, key);
      this._replaceEdgesOf(state, first);
    } else if (!view.nodes.has(key)) view.nodes.set(key, bin);
    view.nodeOf.set(ev.id, key);
    state.changes.nodes.add(key);
    return true;
  }

  _eventNode(ev, lane, row, x, critical) {
    return {
      key: ev.id, kind: "event", eventId: ev.id, lane, row, x, type: ev.type,
      open: this.store.isOpen(ev), mistake: this.store.mistakeEvents.has(ev.id), critical,
    };
  }

  /** Count model edge `e` into the view edge between the nodes that show its events. */
  _placeEdge(state, e) {
    if (!isDependency(e)) return;
    const { view } = state;
    const source = view.nodeOf.get(e.src);
    const target = view.nodeOf.get(e.dst);
    if (source === undefined || target === undefined || source === target) return;
    const aggregated = view.nodes.get(source).kind === "bin" || view.nodes.get(target).kind === "bin";
    const key = aggregated ? `agg:${e.type}:${source}->${target}` : edgeKey(e);
    const edge = view.edges.get(key);
    if (edge) edge.count += 1;
    else {
      view.edges.set(key, {
        key, source, target, type: e.type, count: 1, aggregated,
        critical: !aggregated && (state.critical?.edges.has(`${e.src}\u0000${e.dst}`) ?? false),
      });
    }
    state.edgeOf.set(e, key);
    state.changes.edges.add(key);
  }

  /** Take model edge `e` out of the view edge it counts in. */
  _unplaceEdge(state, e) {
    const key = state.edgeOf.get(e);
    if (key === undefined) return;
    state.edgeOf.delete(e);
    const edge = state.view.edges.get(key);
    edge.count -= 1;
    if (edge.count === 0) state.view.edges.delete(key);
    state.changes.edges.add(key);
  }

  /** Re-count the (counted) edges of event `id`: its node changed. */
  _replaceEdgesOf(state, id) {
    const store = this.store;
    const edges = [...(store.incoming.get(id) ?? []), ...(store.outgoing.get(id) ?? [])]
      .filter((e) => state.edgeOf.has(e));
    for (const e of edges) this._unplaceEdge(state, e);
    for (const e of edges) this._placeEdge(state, e);
  }

  /** Bring the nodes' and edges' `critical` flags in line with the current critical path. */
  _updateCritical(state) {
    const cp = this.model.criticalPath();
    const old = state.critical;
    state.critical = cp;
    if (old === cp || old === null) return;
    const { view } = state;
    const nodes = new Set();
    for (const id of cp.events) if (!old.events.has(id)) nodes.add(view.nodeOf.get(id));
    for (const id of old.events) if (!cp.events.has(id)) nodes.add(view.nodeOf.get(id));
    for (const key of nodes) {
      const node = key === undefined ? undefined : view.nodes.get(key);
      if (!node) continue;
      node.critical = node.kind === "event" ? cp.events.has(node.eventId)
        : node.eventIds.some((id) => cp.events.has(id));
      state.changes.nodes.add(key);
    }
    const flip = (pair) => {
      const [src, dst] = pair.split("\u0000");
      for (const e of this.store.outgoing.get(src) ?? []) {
        if (e.dst !== dst) continue;
        const key = state.edgeOf.get(e);
        const edge = key === undefined ? undefined : view.edges.get(key);
        if (!edge || edge.aggregated) continue;
        edge.critical = cp.edges.has(pair);
        state.changes.edges.add(key);
      }
    };
    for (const pair of cp.edges) if (!old.edges.has(pair)) flip(pair);
    for (const pair of old.edges) if (!cp.edges.has(pair)) flip(pair);
  }
}
