/**
 * The browser's state of one orchestration trace (docs/architecture.md, "Domain", "Live protocol").
 *
 * Pure module: no DOM, no sigma. `TraceModel` applies the snapshot and the numbered deltas of
 * `/ws/traces/<id>/` and derives what the views draw: swimlanes (one per agent, nested under
 * the spawning agent, collapsible), event positions by time or by step, aggregated agent-pair
 * edges, the critical path, filters, the time-ordered event sequence for stepping, and a
 * level of detail for large traces (collapsed lanes show bins, edges to bins are aggregated).
 * It is a facade over delta_store.js (records and indexes), lanes.js (lane tree and collapse),
 * trace_filters.js, level_of_detail.js (views and binning) and critical_path.js.
 *
 * Incremental: a new event gets a position at insertion and existing positions never move;
 * a new agent's lane is appended at the end of its parent's group.
 */

import { CriticalPath } from "./critical_path.js";
import { DeltaStore, finite, isDependency } from "./delta_store.js";
import { LaneTree } from "./lanes.js";
import { BIN_COUNT, DEFAULT_LOD_THRESHOLD, DEFAULT_MAX_LANES, DEFAULT_NODE_BUDGET, TraceViews }
  from "./level_of_detail.js";
import { agentPasses, EMPTY_FILTERS, eventPasses } from "./trace_filters.js";

export { EVENT_TYPES } from "./delta_store.js";
export { BIN_COUNT, DEFAULT_LOD_THRESHOLD, DEFAULT_MAX_LANES, DEFAULT_NODE_BUDGET } from "./level_of_detail.js";

export class TraceModel {
  /**
   * @param {{lodThreshold?: number, maxLanes?: number, binCount?: number, nodeBudget?: number}} [options]
   *   see DEFAULT_LOD_THRESHOLD, DEFAULT_MAX_LANES, BIN_COUNT and DEFAULT_NODE_BUDGET
   */
  constructor({ lodThreshold = DEFAULT_LOD_THRESHOLD, maxLanes = DEFAULT_MAX_LANES,
    binCount = BIN_COUNT, nodeBudget = DEFAULT_NODE_BUDGET } = {}) {
    this.lodThreshold = lodThreshold;
    this.nodeBudget = nodeBudget;
    this.maxLanes = maxLanes;
    this.binCount = binCount;
    this.reset();
  }

  /** Forget everything (a fresh, empty trace with no seq). */
  /**
   * Whether snapshot `msg` rebuilds the trace this model holds: the trace was emptied and re-sent
   * (a live restart, webapp.traces.datacare.do_reset_trace; `trace.reset_seq`, the rebuild's seq)
   * after the seq held, so events held may be gone: the snapshot replaces the model, it is not
   * merged into it (a reconnect's snapshot, of a trace that only grew, is merged).
   */
  isRebuild(msg) {
    return this.seq !== null && Number.isFinite(msg?.trace?.reset_seq) && msg.trace.reset_seq > this.seq;
  }

  reset() {
    this._lanes = new LaneTree();
    /** The records and their indexes (delta_store.js); read-only outside the model. */
    this.store = new DeltaStore(this._lanes, { binCount: this.binCount });
    this._lodCollapsed = false;
    this.filters = { ...EMPTY_FILTERS };
    /** Bumped on every filter or collapse change; derived views are memoised on it. */
    this.viewVersion = 0;
    this._memo = new Map();
    this._critical = new CriticalPath(this.store);
    this._views = new TraceViews(this);
  }

  /** Last applied seq: everything up to it is here. null before the first snapshot. */
  get seq() {
    return this.store.seq;
  }

  /** The snapshot's `trace` object (metadata, metrics, `live`). */
  get trace() {
    return this.store.trace;
  }

  /** @returns {Map<string, object>} agent name -> wire record (`implicit: true` if inferred). */
  get agents() {
    return this.store.agents;
  }

  /** @returns {Map<string, object>} event id -> wire record. */
  get events() {
    return this.store.events;
  }

  /** @returns {object[]} every edge, in arrival order. */
  get edges() {
    return this.store.edges;
  }

  /** @returns {object[]} every label, in arrival order. */
  get labels() {
    return this.store.labels;
  }

  /** True after a gap was reported, until the resume answer is applied. */
  get resumePending() {
    return this.store.resumePending;
  }

  /** Bumped on every data change; derived views are memoised on it. */
  get version() {
    return this.store.version;
  }

  /** Names of the collapsed lanes (a Set). */
  get collapsed() {
    return this._lanes.collapsed;
  }

  // ---------------------------------------------------------------- protocol

  /**
   * Apply a snapshot message. On an empty model it loads the trace; on a loaded one it merges
   * (upserts every record), so positions stay put after a reconnect. Older snapshots are stale.
   * @param {object} msg `{"type":"snapshot","seq":N,"trace":{...},"agents":[...],...}`
   * @returns {import("./delta_store.js").ApplyResult}
   */
  applySnapshot(msg) {
    return this._levelOfDetail(this.store.applySnapshot(msg));
  }

  /**
   * Apply a delta message. Normally `seq` is the previous + 1; a jump is a gap unless a resume
   * was requested (the resume answer folds several batches into one delta). A resume answer
   * may say which seq it answers in `resumed_from`; without it, the first jump after a gap is
   * taken as the answer.
   * @param {object} msg `{"type":"delta","seq":N,"agents":[...],"events":[...],...}`
   * @returns {import("./delta_store.js").ApplyResult}
   */
  applyDelta(msg) {
    return this._levelOfDetail(this.store.applyDelta(msg));
  }

  /** The first time the events outnumber `lodThreshold`, collapse lanes down to `maxLanes`. */
  _levelOfDetail(result) {
    if (result.status === "applied" && !this._lodCollapsed && this.store.events.size > this.lodThreshold) {
      this._lodCollapsed = true;
      this._lanes.autoCollapse(this.maxLanes);
      this.viewVersion += 1;
      result.changes.lanes = true;
    }
    return result;
  }

  // ---------------------------------------------------------------- lookups

  /** Number of events. */
  get eventCount() {
    return this.store.events.size;
  }

  /** True when the level of detail is on (more events than `lodThreshold`). */
  get lod() {
    return this.store.events.size > this.lodThreshold;
  }

  /** Index of event `id` in time order (its step), or undefined. */
  stepOf(id) {
    return this.store.stepOf(id);
  }

  /** Event ids in time order (ties by arrival). Do not mutate. */
  get timeOrder() {
    return this.store.timeOrder;
  }

  /**
   * An event is open when it has no `t_end` in a trace that has durations or is live
   * (a trace of point events has nothing open).
   */
  isOpen(ev) {
    return this.store.isOpen(ev);
  }

  /** True when event `id` is labelled as the mistake step (Who&When `mistake_step`). */
  isMistakeEvent(id) {
    return this.store.mistakeEvents.has(id);
  }

  /** True when agent `name` is labelled as the mistake agent (Who&When `mistake_agent`). */
  isMistakeAgent(name) {
    return this.store.mistakeAgents.has(name);
  }

  /** @returns {{incoming: object[], outgoing: object[]}} edges of event `id`. */
  edgesOf(id) {
    return { incoming: this.store.incoming.get(id) ?? [], outgoing: this.store.outgoing.get(id) ?? [] };
  }

  /** Labels about event `id`. */
  labelsForEvent(id) {
    return this.labels.filter((l) => l.event_id === id);
  }

  /** Labels about agent `name` (not about one of its events). */
  labelsForAgent(name) {
    return this.labels.filter((l) => l.agent === name && l.event_id == null);
  }

  /** Labels about the whole trace. */
  traceLabels() {
    return this.labels.filter((l) => l.agent == null && l.event_id == null);
  }

  /** Event ids of agent `name` in arrival order. */
  eventsOfAgent(name) {
    return this._lanes.eventsOf(name);
  }

  /** Agents without a (known) parent: the roots of the spawn tree, in lane order. */
  rootAgents() {
    return this._lanes.roots;
  }

  /** The agent whose group agent `name`'s lane is in (its parent in the spawn tree), or null. */
  parentOf(name) {
    return this._lanes.parentOf(name);
  }

  /** Names of the agents that agent `name` spawned (its lane's children). */
  childrenOf(name) {
    return this._lanes.childrenOf(name);
  }

  /** Agent names in lane order (depth-first over the spawn tree), ignoring collapse. */
  agentOrder() {
    return this._lanes.order();
  }

  /** [first t, last t or t_end] over all events; [0, 0] when empty. */
  timeRange() {
    return this._memoise("timeRange", () => {
      const { events, timeOrder } = this.store;
      if (timeOrder.length === 0) return [0, 0];
      if (this.store.rewrites === 0) return [events.get(timeOrder[0]).t, this.store.tEnd];
      let end = -Infinity;
      for (const ev of events.values()) end = Math.max(end, finite(ev.t_end) ? ev.t_end : ev.t);
      return [events.get(timeOrder[0]).t, end];
    });
  }

  /** Distinct roles of the agents (and events), sorted. */
  roles() {
    return this._memoise("roles", () => {
      const roles = new Set();
      for (const a of this.agents.values()) if (a.role) roles.add(a.role);
      return [...roles].sort();
    });
  }

  /** When agent `name` was spawned: its record's `spawned_at`, else its spawn event's `t`. */
  spawnedAt(name) {
    return this.store.spawnedAt(name);
  }

  /** The role of agent `name`, falling back to the role on its first event. */
  roleOf(name) {
    const agent = this.agents.get(name);
    if (agent?.role) return agent.role;
    const first = this._lanes.get(name)?.events[0];
    return (first && this.events.get(first)?.role) || null;
  }

  // ---------------------------------------------------------------- filters and lanes

  /** Merge `partial` into the filters (see trace_filters.js's EMPTY_FILTERS for the fields). */
  setFilters(partial) {
    this.filters = { ...this.filters, ...partial };
    this.viewVersion += 1;
  }

  /** Reset all filters. */
  clearFilters() {
    this.setFilters(EMPTY_FILTERS);
  }

  /** True when event `ev` passes the filters. */
  passes(ev) {
    return eventPasses(this.filters, ev, (name) => this.roleOf(name), (e) => this.store.searchText(e));
  }

  /** True when agent `name`'s lane passes the agent and role filters. */
  agentPasses(name) {
    return agentPasses(this.filters, name, (n) => this.roleOf(n));
  }

  /** Collapse (or expand) agent `name`'s lane: its descendants' events show as bins in it. */
  setCollapsed(name, collapsed) {
    this._lanes.setCollapsed(name, collapsed);
    this.viewVersion += 1;
  }

  toggleCollapsed(name) {
    this.setCollapsed(name, !this.collapsed.has(name));
  }

  /** Collapse every lane that has children (`true`), or expand them all (`false`). */
  setAllCollapsed(collapsed) {
    this._lanes.setAllCollapsed(collapsed);
    this.viewVersion += 1;
  }

  /**
   * Visible lanes in order, with `row` (0 = top), `depth`, whether they are collapsed and how
   * many lanes are folded into them.
   * @returns {{name: string, row: number, depth: number, role: string|null,
   *   collapsed: boolean, hasChildren: boolean, hidden: number, events: number}[]}
   */
  lanes() {
    return this._memoise("lanes", () => this._lanes.visibleLanes((n) => this.agentPasses(n), (n) => this.roleOf(n)));
  }

  /**
   * Where each agent's events are drawn: `{lane, binned}`; `binned` when folded into a
   * collapsed ancestor's lane. Agents whose lane is filtered out are absent.
   * @returns {Map<string, {lane: string, binned: boolean}>}
   */
  displayLanes() {
    return this._memoise("displayLanes", () => this._lanes.displayLanes((n) => this.agentPasses(n)));
  }

  // ---------------------------------------------------------------- derived views

  /**
   * What the timeline draws, in natural units: `x` in seconds (`mode` "time") or steps
   * ("step"), `row` the lane's row. Event nodes are keyed by event id; bins by
   * `bin:<lane>:<index>` (`bin:<lane>:L<level>:<index>` for bins of unfolded lanes, see
   * DEFAULT_NODE_BUDGET). Edges of every type but `temporal` are drawn; an edge touching a bin
   * is aggregated per (source node, target node, type) with `count`. `nodeOf` maps each drawn
   * event id to the node that shows it.
   *
   * Maintained incrementally: while only new events and edges arrive (appended, in known
   * lanes, no filter or collapse change), they are added to the previous view (same object)
   * and the keys they touched are reported by `takeViewChanges(mode)`.
   * @param {"time"|"step"} mode
   * @returns {{nodes: Map<string, object>, edges: Map<string, object>, lanes: object[],
   *   nodeOf: Map<string, string>, budgeted: boolean, level: number}}
   */
  view(mode = "time") {
    return this._views.view(mode);
  }

  /**
   * What changed in `view(mode)` since the last call: `{full, nodes, edges}`; `full` when the
   * view was rebuilt (every key may have changed), else the sets of node and edge keys added,
   * changed or removed (a key absent from the view was removed).
   */
  takeViewChanges(mode = "time") {
    return this._views.takeChanges(mode);
  }

  /**
   * The view state of `mode` built from scratch (its `view` is what `view(mode)` returns);
   * `exactLevel` bins at that level. For tests that compare an incremental view with a rebuild.
   */
  _buildView(mode, stamp, minLevel, exactLevel = undefined) {
    return this._views.build(mode, stamp, minLevel, exactLevel);
  }

  /**
   * Event ids in time order that pass the filters, for stepping with the arrow keys.
   * @returns {string[]}
   */
  sequence() {
    return this._memoise("sequence", () => {
      const display = this.displayLanes();
      return this.timeOrder.filter((id) => {
        const ev = this.events.get(id);
        return display.has(ev.agent) && this.passes(ev);
      });
    });
  }

  /**
   * The event after (`dir` = 1) or before (-1) event `id` in `sequence()`; from nothing, the
   * first (or last). Returns null at the ends.
   */
  stepFrom(id, dir) {
    const seq = this.sequence();
    if (seq.length === 0) return null;
    if (id == null || !this.events.has(id)) return dir > 0 ? seq[0] : seq[seq.length - 1];
    const step = this.stepOf(id);
    let lo = 0;
    let hi = seq.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.stepOf(seq[mid]) < step) lo = mid + 1;
      else hi = mid;
    }
    const at = seq[lo] === id ? lo + dir : dir > 0 ? lo : lo - 1;
    return at >= 0 && at < seq.length ? seq[at] : null;
  }

  /**
   * The critical path (critical_path.js): the longest path through the dependency edges and
   * each agent's own order, by duration or by event count.
   * @returns {{events: Set<string>, edges: Set<string>, ids: string[], length: number,
   *   unit: "s"|"events"}} `edges` holds `src + "\u0000" + dst` keys of the path's steps.
   */
  criticalPath() {
    return this._memoise("critical", () => this._critical.compute(), "data");
  }

  /**
   * Edges between agents, aggregated per (source agent, target agent, type) over every edge
   * but `temporal` whose events belong to different agents.
   * @returns {{source: string, target: string, type: string, count: number}[]}
   */
  agentEdges() {
    return this._memoise("agentEdges", () => {
      const pairs = new Map();
      for (const e of this.edges) {
        if (!isDependency(e)) continue;
        const a = this.events.get(e.src)?.agent;
        const b = this.events.get(e.dst)?.agent;
        if (a === undefined || b === undefined || a === b) continue;
        const key = `${a}\u0000${b}\u0000${e.type}`;
        const pair = pairs.get(key);
        if (pair) pair.count += 1;
        else pairs.set(key, { source: a, target: b, type: e.type, count: 1 });
      }
      return [...pairs.values()];
    }, "data");
  }

  /**
   * Per-agent totals: event count, measured tokens, the tokens importers estimated (events flagged
   * `tokens_estimated`, kept apart: docs/metrics.md "Tokens"), first `t` and last `t` / `t_end` (seconds).
   * @returns {Map<string, {events: number, tokens: number, estimatedTokens: number, first: number, last: number}>}
   */
  agentStats() {
    return this._memoise("agentStats", () => {
      const stats = new Map();
      for (const name of this._lanes.lanes.keys()) {
        stats.set(name, { events: 0, tokens: 0, estimatedTokens: 0, first: Infinity, last: -Infinity });
      }
      for (const ev of this.events.values()) {
        const s = stats.get(ev.agent);
        s.events += 1;
        if (finite(ev.tokens)) {
          if (ev.attributes?.tokens_estimated) s.estimatedTokens += ev.tokens;
          else s.tokens += ev.tokens;
        }
        s.first = Math.min(s.first, ev.t);
        s.last = Math.max(s.last, finite(ev.t_end) ? ev.t_end : ev.t);
      }
      return stats;
    }, "data");
  }

  /**
   * Memoise `compute` under `key` until the data changes (`deps` "data") or until the data,
   * filters or collapsed lanes change (default).
   */
  _memoise(key, compute, deps = "view") {
    const stamp = deps === "data" ? `${this.version}` : `${this.version}:${this.viewVersion}`;
    const hit = this._memo.get(key);
    if (hit && hit.stamp === stamp) return hit.value;
    const value = compute();
    this._memo.set(key, { stamp, value });
    return value;
  }
}
