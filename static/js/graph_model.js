/**
 * The browser's state of one orchestration trace (DESIGN.md "Domain", "Live protocol").
 *
 * Pure module: no DOM, no sigma. It applies the snapshot and the numbered deltas of
 * `/ws/traces/<id>/` and derives what the views draw: swimlanes (one per agent, nested under
 * the spawning agent, collapsible), event positions by time or by step, aggregated agent-pair
 * edges, the critical path, filters, the time-ordered event sequence for stepping, and a
 * level of detail for large traces (collapsed lanes show bins, edges to bins are aggregated).
 *
 * Incremental: a new event gets a position at insertion and existing positions never move;
 * a new agent's lane is appended at the end of its parent's group.
 */

/** The survey schema's ten event types plus `delegate` (O2) and `stop` (O5). */
export const EVENT_TYPES = Object.freeze([
  "orchestrator_decision", "spawn", "despawn", "message", "tool_call", "tool_result",
  "return", "aggregate", "human_intervention", "safety_event", "delegate", "stop",
]);

/**
 * Edges of every type but `temporal` (causal, spawn, message, tool_dependency, return,
 * aggregate, safety_flow) carry a dependency; temporal edges only repeat an agent's own order,
 * which its lane already shows.
 */
const isDependency = (edge) => edge.type !== "temporal";

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
 * a live trace is re-binned at the next level only when it outgrows the budget). A bin that holds one event draws it.
 */
export const DEFAULT_NODE_BUDGET = 3000;

const EMPTY_FILTERS = Object.freeze({
  types: null, // Set of event types to show; null = all
  agents: null, // Set of agent names to hide; null = none
  roles: null, // Set of roles to hide; null = none
  window: null, // [t0, t1] seconds; null = whole trace
  text: "", // case-insensitive substring of content, tool or id
});

const edgeKey = (e) => `${e.src}\u0000${e.dst}\u0000${e.type}`;
const labelKey = (l) =>
  `${l.key}\u0000${l.event_id ?? ""}\u0000${l.agent ?? ""}\u0000${JSON.stringify(l.value ?? null)}`;
const finite = (x) => typeof x === "number" && Number.isFinite(x);

/**
 * Result of applying a message. `status`: "applied", "stale" (seq already seen: ignored),
 * or "gap" (not applied; send `{"type":"resume","seq":resumeFrom}`). `changes` lists what
 * changed, for renderers that update incrementally.
 * @typedef {{status: "applied"|"stale"|"gap", seq: number|null, resumeFrom?: number,
 *   changes?: Changes}} ApplyResult
 * @typedef {{events: string[], agents: string[], edges: object[], labels: object[],
 *   lanes: boolean, trace: boolean}} Changes
 */

export class TraceModel {
  /**
   * @param {{lodThreshold?: number, maxLanes?: number, binCount?: number}} [options]
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
  reset() {
    /** Last applied seq: everything up to it is here. null before the first snapshot. */
    this.seq = null;
    /** The snapshot's `trace` object (metadata, metrics, `live`). */
    this.trace = null;
    /** @type {Map<string, object>} agent name -> wire record (`implicit: true` if inferred). */
    this.agents = new Map();
    /** @type {Map<string, object>} event id -> wire record. */
    this.events = new Map();
    /** @type {object[]} */
    this.edges = [];
    /** @type {object[]} */
    this.labels = [];
    /** True after a gap was reported, until the resume answer is applied. */
    this.resumePending = false;
    /** Bumped on every data change; derived views are memoised on it. */
    this.version = 0;
    this._edgeKeys = new Set();
    this._labelKeys = new Set();
    this._lanes = new Map(); // name -> {name, parent, children: [], events: []}
    this._roots = [];
    this._timeOrder = []; // event ids by (t, arrival)
    this._arrival = new Map(); // event id -> arrival number
    this._step = new Map(); // event id -> index in _timeOrder, valid below _stepValidTo
    this._stepValidTo = 0;
    this._out = new Map(); // event id -> edges leaving it
    this._in = new Map(); // event id -> edges entering it
    this._mistakeEvents = new Set();
    this._mistakeAgents = new Set();
    this._spawnedBy = new Map(); // agent -> {parent, t} from the first spawn event naming it
    this._hasDurations = false;
    this._bins = null; // {time, step}: bin widths, fixed with the first data
    this._lodCollapsed = false;
    this._searchCache = new Map(); // event id -> lower-cased searchable text
    this.collapsed = new Set();
    this.filters = { ...EMPTY_FILTERS };
    this._viewVersion = 0;
    this._memo = new Map();
    // Incremental derived state (see view() and criticalPath()).
    this._arrivalOrder = []; // event ids in arrival order
    this._rewrites = 0; // bumped when a known event changes (not a pure append)
    this._orderRewrites = 0; // bumped when the time order changes other than by appending
    this._structure = 0; // bumped by changes that invalidate the incremental view (lanes, labels, trace.live)
    this._tEnd = -Infinity; // max t / t_end over events (exact while there are no rewrites)
    this._views = new Map(); // mode -> incremental view state
    this._cp = null; // incremental critical path state
  }

  // ---------------------------------------------------------------- protocol

  /**
   * Apply a snapshot message. On an empty model it loads the trace; on a loaded one it merges
   * (upserts every record), so positions stay put after a reconnect. Older snapshots are stale.
   * @param {object} msg `{"type":"snapshot","seq":N,"trace":{...},"agents":[...],...}`
   * @returns {ApplyResult}
   */
  applySnapshot(msg) {
    if (this.seq !== null && msg.seq < this.seq) return { status: "stale", seq: this.seq };
    const changes = this._merge(msg);
    if (msg.trace) this._setTrace(msg.trace, changes);
    this.seq = msg.seq;
    this.resumePending = false;
    return { status: "applied", seq: this.seq, changes };
  }

  /**
   * Apply a delta message. Normally `seq` is the previous + 1; a jump is a gap unless a resume
   * was requested (the resume answer folds several batches into one delta). A resume answer
   * may say which seq it answers in `resumed_from`; without it, the first jump after a gap is
   * taken as the answer.
   * @param {object} msg `{"type":"delta","seq":N,"agents":[...],"events":[...],...}`
   * @returns {ApplyResult}
   */
  applyDelta(msg) {
    if (this.seq === null) return { status: "gap", seq: null, resumeFrom: 0 };
    if (msg.seq <= this.seq) return { status: "stale", seq: this.seq };
    const answersResume = this.resumePending
      && (msg.resumed_from === undefined || msg.resumed_from <= this.seq);
    if (msg.seq !== this.seq + 1 && !answersResume) {
      this.resumePending = true;
      return { status: "gap", seq: this.seq, resumeFrom: this.seq };
    }
    const changes = this._merge(msg);
    if (msg.trace) this._setTrace({ ...this.trace, ...msg.trace }, changes);
    this.seq = msg.seq;
    this.resumePending = false;
    return { status: "applied", seq: this.seq, changes };
  }

  _setTrace(trace, changes) {
    if (JSON.stringify(trace) === JSON.stringify(this.trace)) return;
    if (Boolean(trace?.live) !== Boolean(this.trace?.live)) this._structure += 1;
    this.trace = trace;
    changes.trace = true;
    this.version += 1;
  }

  /** Upsert agents and events, append new edges and labels; returns what changed. */
  _merge(msg) {
    /** @type {Changes} */
    const changes = { events: [], agents: [], edges: [], labels: [], lanes: false, trace: false };
    const events = (msg.events ?? []).filter((e) => this._eventChanged(e));
    const agents = (msg.agents ?? []).filter((a) => this._agentChanged(a));
    this._fixBins(events);
    const lanesBefore = this._lanes.size;
    this._upsertAgents(agents, events, changes);
    const byTime = [...events].sort((a, b) => a.t - b.t);
    for (const ev of byTime) this._upsertEvent(ev, changes);
    for (const edge of msg.edges ?? []) {
      const key = edgeKey(edge);
      if (this._edgeKeys.has(key)) continue;
      this._edgeKeys.add(key);
      this.edges.push(edge);
      pushTo(this._out, edge.src, edge);
      pushTo(this._in, edge.dst, edge);
      changes.edges.push(edge);
    }
    for (const label of msg.labels ?? []) {
      const key = labelKey(label);
      if (this._labelKeys.has(key)) continue;
      this._labelKeys.add(key);
      this.labels.push(label);
      if (label.key === "mistake_step" && label.event_id != null) this._mistakeEvents.add(label.event_id);
      if (label.key === "mistake_agent") this._mistakeAgents.add(label.agent ?? String(label.value));
      changes.labels.push(label);
      this._structure += 1;
    }
    if (this._lanes.size !== lanesBefore) changes.lanes = true;
    if (changes.lanes || changes.agents.length) this._structure += 1;
    if (!this._lodCollapsed && this.events.size > this.lodThreshold) {
      this._lodCollapsed = true;
      this._autoCollapse();
      changes.lanes = true;
    }
    if (changes.events.length || changes.agents.length || changes.edges.length
      || changes.labels.length || changes.lanes) this.version += 1;
    return changes;
  }

  _eventChanged(ev) {
    const old = this.events.get(ev.id);
    return old === undefined || JSON.stringify(old) !== JSON.stringify(ev);
  }

  _agentChanged(agent) {
    const old = this.agents.get(agent.name);
    return old === undefined || old.implicit || JSON.stringify(old) !== JSON.stringify(agent);
  }

  /** Bin widths are fixed by the first data seen, so bins never move afterwards. */
  _fixBins(events) {
    if (this._bins !== null || events.length === 0) return;
    let end = 0;
    for (const ev of events) end = Math.max(end, ev.t, finite(ev.t_end) ? ev.t_end : ev.t);
    this._bins = {
      time: end > 0 ? end / this.binCount : 1,
      step: Math.max(1, Math.ceil(events.length / this.binCount)),
    };
  }

  /**
   * Insert new agents (records, and implicit ones for agents named only by events) into the
   * lane tree, by spawn time within a batch, and update known ones. An agent's parent is its
   * record's `parent`, else the agent whose `spawn` event names it (`to`); a spawn event that
   * arrives later moves a parentless lane under its spawner.
   */
  _upsertAgents(records, events, changes) {
    const firstT = new Map();
    const newSpawns = [];
    for (const ev of events) {
      if (!firstT.has(ev.agent) || ev.t < firstT.get(ev.agent)) firstT.set(ev.agent, ev.t);
      if (ev.type === "spawn" && ev.to && ev.to !== ev.agent && !this._spawnedBy.has(ev.to)) {
        this._spawnedBy.set(ev.to, { parent: ev.agent, t: ev.t });
        newSpawns.push(ev.to);
      }
    }
    const incoming = new Map(records.map((rec) => [rec.name, rec]));
    for (const ev of events) {
      if (!this.agents.has(ev.agent) && !incoming.has(ev.agent)) {
        incoming.set(ev.agent, { name: ev.agent, role: ev.role ?? null, implicit: true });
      }
    }
    const parentOf = (rec) => rec.parent ?? this._spawnedBy.get(rec.name)?.parent ?? null;
    const spawnKey = (rec) => (finite(rec.spawned_at) ? rec.spawned_at
      : this._spawnedBy.get(rec.name)?.t ?? firstT.get(rec.name) ?? Infinity);
    const order = [...incoming.values()].sort((a, b) => spawnKey(a) - spawnKey(b));
    const visiting = new Set(); // guards against parent cycles in bad data
    const ensure = (name) => {
      if (visiting.has(name) || (this._lanes.has(name) && !incoming.has(name))) return;
      visiting.add(name);
      const rec = incoming.get(name) ?? { name, implicit: true };
      incoming.delete(name);
      const parent = parentOf(rec);
      if (parent) ensure(parent);
      this.agents.set(name, rec);
      this._placeLane(name, parent);
      changes.agents.push(name);
    };
    for (const rec of order) if (incoming.has(rec.name)) ensure(rec.name);
    for (const child of newSpawns) {
      const lane = this._lanes.get(child);
      if (lane && lane.parent === null && !this.agents.get(child).parent) {
        this._placeLane(child, this._spawnedBy.get(child).parent);
        changes.agents.push(child);
      }
    }
  }

  /** Put lane `name` under `parent` (at the end of its group); move it when the parent changed. */
  _placeLane(name, parent) {
    let lane = this._lanes.get(name);
    const validParent = parent && parent !== name && this._lanes.has(parent)
      && !this._isAncestor(name, parent) ? parent : null;
    if (lane && lane.parent === validParent) return;
    if (lane) {
      const siblings = lane.parent ? this._lanes.get(lane.parent).children : this._roots;
      siblings.splice(siblings.indexOf(name), 1);
      lane.parent = validParent;
    } else {
      lane = { name, parent: validParent, children: [], events: [] };
      this._lanes.set(name, lane);
    }
    (validParent ? this._lanes.get(validParent).children : this._roots).push(name);
  }

  _isAncestor(ancestor, name) {
    for (let cur = this._lanes.get(name)?.parent; cur; cur = this._lanes.get(cur)?.parent) {
      if (cur === ancestor) return true;
    }
    return false;
  }

  _upsertEvent(ev, changes) {
    const old = this.events.get(ev.id);
    this.events.set(ev.id, ev);
    this._searchCache.delete(ev.id);
    if (finite(ev.t_end) && !this._hasDurations) {
      this._hasDurations = true;
      this._structure += 1;
    }
    this._tEnd = Math.max(this._tEnd, ev.t, finite(ev.t_end) ? ev.t_end : ev.t);
    changes.events.push(ev.id);
    if (old === undefined) {
      this._arrival.set(ev.id, this._arrival.size);
      this._arrivalOrder.push(ev.id);
      this._lanes.get(ev.agent).events.push(ev.id);
      this._insertInTime(ev);
      return;
    }
    this._rewrites += 1;
    if (old.agent !== ev.agent) {
      const list = this._lanes.get(old.agent).events;
      list.splice(list.indexOf(ev.id), 1);
      this._lanes.get(ev.agent).events.push(ev.id);
    }
    if (old.t !== ev.t) {
      this._orderRewrites += 1;
      const at = this._timeOrder.indexOf(ev.id);
      this._timeOrder.splice(at, 1);
      this._stepValidTo = Math.min(this._stepValidTo, at);
      this._insertInTime(ev);
    }
  }

  /** Binary-insert into the time order; appending (the live case) is O(1). */
  _insertInTime(ev) {
    const order = this._timeOrder;
    const before = (id) => {
      const other = this.events.get(id);
      return other.t < ev.t || (other.t === ev.t && this._arrival.get(id) < this._arrival.get(ev.id));
    };
    let lo = 0;
    let hi = order.length;
    if (hi === 0 || before(order[hi - 1])) lo = hi;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (before(order[mid])) lo = mid + 1;
      else hi = mid;
    }
    if (lo < order.length) this._orderRewrites += 1;
    order.splice(lo, 0, ev.id);
    this._stepValidTo = Math.min(this._stepValidTo, lo);
  }

  // ---------------------------------------------------------------- lookups

  /** Number of events. */
  get eventCount() {
    return this.events.size;
  }

  /** True when the level of detail is on (more events than `lodThreshold`). */
  get lod() {
    return this.events.size > this.lodThreshold;
  }

  /** Index of event `id` in time order (its step), or undefined. */
  stepOf(id) {
    this._refreshSteps();
    return this._step.get(id);
  }

  /** Re-number the steps from the first insertion that was not an append. */
  _refreshSteps() {
    const order = this._timeOrder;
    for (let i = this._stepValidTo; i < order.length; i += 1) this._step.set(order[i], i);
    this._stepValidTo = order.length;
  }

  /** Event ids in time order (ties by arrival). Do not mutate. */
  get timeOrder() {
    return this._timeOrder;
  }

  /**
   * An event is open when it has no `t_end` in a trace that has durations or is live
   * (a trace of point events has nothing open).
   */
  isOpen(ev) {
    return !finite(ev.t_end) && (this._hasDurations || Boolean(this.trace?.live));
  }

  /** True when event `id` is labelled as the mistake step (Who&When `mistake_step`). */
  isMistakeEvent(id) {
    return this._mistakeEvents.has(id);
  }

  /** True when agent `name` is labelled as the mistake agent (Who&When `mistake_agent`). */
  isMistakeAgent(name) {
    return this._mistakeAgents.has(name);
  }

  /** @returns {{incoming: object[], outgoing: object[]}} edges of event `id`. */
  edgesOf(id) {
    return { incoming: this._in.get(id) ?? [], outgoing: this._out.get(id) ?? [] };
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
    return this._lanes.get(name)?.events ?? [];
  }

  /** Agents without a (known) parent: the roots of the spawn tree, in lane order. */
  rootAgents() {
    return this._roots;
  }

  /** The agent whose group agent `name`'s lane is in (its parent in the spawn tree), or null. */
  parentOf(name) {
    return this._lanes.get(name)?.parent ?? null;
  }

  /** Names of the agents that agent `name` spawned (its lane's children). */
  childrenOf(name) {
    return this._lanes.get(name)?.children ?? [];
  }

  /** Agent names in lane order (depth-first over the spawn tree), ignoring collapse. */
  agentOrder() {
    const out = [];
    const walk = (name) => {
      out.push(name);
      for (const c of this._lanes.get(name).children) walk(c);
    };
    for (const r of this._roots) walk(r);
    return out;
  }

  /** [first t, last t or t_end] over all events; [0, 0] when empty. */
  timeRange() {
    return this._memoise("timeRange", () => {
      if (this._timeOrder.length === 0) return [0, 0];
      if (this._rewrites === 0) return [this.events.get(this._timeOrder[0]).t, this._tEnd];
      let end = -Infinity;
      for (const ev of this.events.values()) end = Math.max(end, finite(ev.t_end) ? ev.t_end : ev.t);
      return [this.events.get(this._timeOrder[0]).t, end];
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
    const spawnedAt = this.agents.get(name)?.spawned_at;
    return finite(spawnedAt) ? spawnedAt : this._spawnedBy.get(name)?.t ?? null;
  }

  /** The role of agent `name`, falling back to the role on its first event. */
  roleOf(name) {
    const agent = this.agents.get(name);
    if (agent?.role) return agent.role;
    const first = this._lanes.get(name)?.events[0];
    return (first && this.events.get(first)?.role) || null;
  }

  // ---------------------------------------------------------------- filters and lanes

  /** Merge `partial` into the filters (see EMPTY_FILTERS for the fields). */
  setFilters(partial) {
    this.filters = { ...this.filters, ...partial };
    this._viewVersion += 1;
  }

  /** Reset all filters. */
  clearFilters() {
    this.setFilters(EMPTY_FILTERS);
  }

  /** True when event `ev` passes the filters. */
  passes(ev) {
    const f = this.filters;
    if (f.types && !f.types.has(ev.type)) return false;
    if (f.agents && f.agents.has(ev.agent)) return false;
    if (f.roles) {
      const role = ev.role ?? this.roleOf(ev.agent);
      if (role && f.roles.has(role)) return false;
    }
    if (f.window) {
      const end = finite(ev.t_end) ? ev.t_end : ev.t;
      if (end < f.window[0] || ev.t > f.window[1]) return false;
    }
    if (f.text) {
      let text = this._searchCache.get(ev.id);
      if (text === undefined) {
        text = `${ev.content ?? ""}\n${ev.tool ?? ""}\n${ev.id}`.toLowerCase();
        this._searchCache.set(ev.id, text);
      }
      if (!text.includes(f.text.toLowerCase())) return false;
    }
    return true;
  }

  /** True when agent `name`'s lane passes the agent and role filters. */
  agentPasses(name) {
    const f = this.filters;
    if (f.agents && f.agents.has(name)) return false;
    const role = this.roleOf(name);
    return !(f.roles && role && f.roles.has(role));
  }

  /** Collapse (or expand) agent `name`'s lane: its descendants' events show as bins in it. */
  setCollapsed(name, collapsed) {
    if (collapsed) this.collapsed.add(name);
    else this.collapsed.delete(name);
    this._viewVersion += 1;
  }

  toggleCollapsed(name) {
    this.setCollapsed(name, !this.collapsed.has(name));
  }

  /** Collapse every lane that has children (`true`), or expand them all (`false`). */
  setAllCollapsed(collapsed) {
    this.collapsed.clear();
    if (collapsed) for (const lane of this._lanes.values()) if (lane.children.length) this.collapsed.add(lane.name);
    this._viewVersion += 1;
  }

  /** Collapse the spawn tree level by level until at most `maxLanes` lanes are visible. */
  _autoCollapse() {
    let level = [...this._roots];
    let visible = level.length;
    while (level.length) {
      const next = level.flatMap((n) => this._lanes.get(n).children);
      if (visible + next.length > this.maxLanes) {
        for (const n of level) if (this._lanes.get(n).children.length) this.collapsed.add(n);
        break;
      }
      visible += next.length;
      level = next;
    }
    this._viewVersion += 1;
  }

  /**
   * Visible lanes in order, with `row` (0 = top), `depth`, whether they are collapsed and how
   * many lanes are folded into them.
   * @returns {{name: string, row: number, depth: number, role: string|null,
   *   collapsed: boolean, hasChildren: boolean, hidden: number, events: number}[]}
   */
  lanes() {
    return this._memoise("lanes", () => {
      const out = [];
      const countBelow = (name) => this._lanes.get(name).children
        .reduce((n, c) => n + 1 + countBelow(c), 0);
      const walk = (name, depth) => {
        const lane = this._lanes.get(name);
        const collapsed = this.collapsed.has(name) && lane.children.length > 0;
        if (this.agentPasses(name)) {
          out.push({
            name, row: out.length, depth, role: this.roleOf(name), collapsed,
            hasChildren: lane.children.length > 0, hidden: collapsed ? countBelow(name) : 0,
            events: lane.events.length,
          });
        }
        if (!collapsed) for (const c of lane.children) walk(c, depth + 1);
      };
      for (const r of this._roots) walk(r, 0);
      return out;
    });
  }

  /**
   * Where each agent's events are drawn: `{lane, binned}`; `binned` when folded into a
   * collapsed ancestor's lane. Agents whose lane is filtered out are absent.
   * @returns {Map<string, {lane: string, binned: boolean}>}
   */
  displayLanes() {
    return this._memoise("displayLanes", () => {
      const out = new Map();
      const walk = (name, into) => {
        const lane = this._lanes.get(name);
        if (into) out.set(name, { lane: into, binned: true });
        else if (this.agentPasses(name)) out.set(name, { lane: name, binned: false });
        const fold = into ?? (this.collapsed.has(name) && this.agentPasses(name) ? name : null);
        for (const c of lane.children) walk(c, fold);
      };
      for (const r of this._roots) walk(r, null);
      return out;
    });
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
    let state = this._views.get(mode);
    const stamp = `${this._viewVersion}:${this._structure}:${this._rewrites}`
      + `:${mode === "step" ? this._orderRewrites : 0}`;
    if (!state || state.stamp !== stamp || !this._extendView(state)) {
      state = this._buildView(mode, stamp, state ? Math.max(0, state.level) : 0);
      this._views.set(mode, state);
    }
    if (state.version !== this.version) {
      state.version = this.version;
      state.view.lanes = this.lanes();
    }
    return state.view;
  }

  /**
   * What changed in `view(mode)` since the last call: `{full, nodes, edges}`; `full` when the
   * view was rebuilt (every key may have changed), else the sets of node and edge keys added,
   * changed or removed (a key absent from the view was removed).
   */
  takeViewChanges(mode = "time") {
    const state = this._views.get(mode);
    if (!state) return { full: true, nodes: new Set(), edges: new Set() };
    const changes = state.changes;
    state.changes = { full: false, nodes: new Set(), edges: new Set() };
    return changes;
  }

  /**
   * Build the view of `mode` from scratch; `minLevel` keeps a live trace's bins from shrinking.
   * `exactLevel` (tests) bins at that level.
   */
  _buildView(mode, stamp, minLevel, exactLevel = undefined) {
    const lanes = this.lanes();
    const display = this.displayLanes();
    const rowOf = new Map(lanes.map((l) => [l.name, l.row]));
    const baseWidth = mode === "time" ? this._bins?.time ?? 1 : this._bins?.step ?? 1;
    // Nodes at the lanes' own level of detail: unbinned events plus collapsed lanes' bins.
    let single = 0;
    const binKeys = new Set();
    for (const ev of this.events.values()) {
      const where = display.get(ev.agent);
      if (!where || !this.passes(ev)) continue;
      if (!where.binned) single += 1;
      else binKeys.add(`${where.lane}:${Math.floor(this._x(mode, ev) / baseWidth)}`);
    }
    let level = -1; // -1: no budget binning
    if (single + binKeys.size > this.nodeBudget) {
      level = minLevel;
      // A live trace keeps half the budget as room to grow (fewer re-binnings).
      const target = this.trace?.live ? this.nodeBudget / 2 : this.nodeBudget;
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
    state.critical = this.criticalPath();
    this._extendView(state, true);
    state.changes = { full: true, nodes: new Set(), edges: new Set() };
    return state;
  }

  _x(mode, ev) {
    return mode === "time" ? ev.t : this.stepOf(ev.id);
  }

  /** Upper bound of the bins of width `width` that `rows` lanes need over the whole extent. */
  _binEstimate(mode, rows, width) {
    const [x0, x1] = mode === "time" ? this.timeRange() : [0, Math.max(0, this.eventCount - 1)];
    return rows * (Math.floor(x1 / width) - Math.floor(x0 / width) + 1);
  }

  /**
   * Add the events and edges that arrived since `state` was last brought up to date, and the
   * critical path's changes. Returns false when the view must be rebuilt instead (it outgrew
   * the node budget).
   */
  _extendView(state, building = false) {
    const { view } = state;
    const touchedEvents = [];
    const order = this._arrivalOrder;
    for (; state.eventCursor < order.length; state.eventCursor += 1) {
      const id = order[state.eventCursor];
      if (this._placeEvent(state, this.events.get(id))) touchedEvents.push(id);
    }
    // Outgrew the budget: rebuild (at a coarser bin level when already binning).
    if (!building && view.nodes.size > this.nodeBudget) return false;
    const edges = this.edges;
    for (; state.edgeCursor < edges.length; state.edgeCursor += 1) {
      const e = edges[state.edgeCursor];
      if (!state.edgeOf.has(e)) this._placeEdge(state, e);
    }
    // Edges that reached an event before it arrived.
    for (const id of touchedEvents) {
      for (const e of this._in.get(id) ?? []) if (!state.edgeOf.has(e)) this._placeEdge(state, e);
      for (const e of this._out.get(id) ?? []) if (!state.edgeOf.has(e)) this._placeEdge(state, e);
    }
    this._updateCritical(state);
    return true;
  }

  /** Put event `ev` into the view (its own node, or a bin). Returns true when it is drawn. */
  _placeEvent(state, ev) {
    const where = state.display.get(ev.agent);
    if (!where || !this.passes(ev)) return false;
    const { view } = state;
    const x = this._x(state.mode, ev);
    const row = state.rowOf.get(where.lane);
    const critical = state.critical?.events.has(ev.id) ?? false;
    const mistake = this._mistakeEvents.has(ev.id);
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
      open: this.isOpen(ev), mistake: this._mistakeEvents.has(ev.id), critical,
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
    const edges = [...(this._in.get(id) ?? []), ...(this._out.get(id) ?? [])].filter((e) => state.edgeOf.has(e));
    for (const e of edges) this._unplaceEdge(state, e);
    for (const e of edges) this._placeEdge(state, e);
  }

  /** Bring the nodes' and edges' `critical` flags in line with the current critical path. */
  _updateCritical(state) {
    const cp = this.criticalPath();
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
      node.critical = node.kind === "event" ? cp.events.has(node.eventId) : node.eventIds.some((id) => cp.events.has(id));
      state.changes.nodes.add(key);
    }
    const flip = (pair) => {
      const [src, dst] = pair.split("\u0000");
      for (const e of this._out.get(src) ?? []) {
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

  /**
   * Event ids in time order that pass the filters, for stepping with the arrow keys.
   * @returns {string[]}
   */
  sequence() {
    return this._memoise("sequence", () => {
      const display = this.displayLanes();
      return this._timeOrder.filter((id) => {
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
   * The critical path: the longest path through the dependency edges (every type but
   * `temporal`) plus each agent's own order, weighted by event duration (`t_end - t`), or by
   * event count when the trace has no durations (DESIGN.md "parallelism efficiency";
   * survey §9). Edges that go back in time are ignored, so the graph is acyclic.
   * @returns {{events: Set<string>, edges: Set<string>, ids: string[], length: number,
   *   unit: "s"|"events"}} `edges` holds `src + "\u0000" + dst` keys of the path's steps.
   */
  criticalPath() {
    return this._memoise("critical", () => {
      // Incremental while events only append to the time order and no known event or edge
      // target changed: extend the longest-path table with the new events.
      let cp = this._cp;
      if (cp && (cp.rewrites !== this._rewrites || cp.orderRewrites !== this._orderRewrites
        || cp.byDuration !== this._hasDurations)) cp = null;
      if (cp) {
        for (let i = cp.edgeCursor; i < this.edges.length; i += 1) {
          if (cp.dist.has(this.edges[i].dst)) { cp = null; break; }
        }
      }
      if (!cp) {
        cp = {
          dist: new Map(), prev: new Map(), lastOfAgent: new Map(), best: null, done: 0,
          edgeCursor: 0, byDuration: this._hasDurations,
        };
      }
      cp.rewrites = this._rewrites;
      cp.orderRewrites = this._orderRewrites;
      cp.edgeCursor = this.edges.length;
      this._cp = cp;
      const order = this._timeOrder;
      const byDuration = cp.byDuration;
      const weight = (ev) => (byDuration ? Math.max(0, finite(ev.t_end) ? ev.t_end - ev.t : 0) : 1);
      const { dist, prev, lastOfAgent } = cp;
      this._refreshSteps();
      for (; cp.done < order.length; cp.done += 1) {
        const id = order[cp.done];
        const ev = this.events.get(id);
        let bestPred = null;
        let bestDist = 0;
        const consider = (pred) => {
          const d = dist.get(pred);
          if (d !== undefined && (bestPred === null || d > bestDist)) {
            bestPred = pred;
            bestDist = d;
          }
        };
        if (lastOfAgent.has(ev.agent)) consider(lastOfAgent.get(ev.agent));
        for (const e of this._in.get(id) ?? []) {
          if (isDependency(e) && this.events.has(e.src)
            && this._step.get(e.src) < this._step.get(id)) consider(e.src);
        }
        dist.set(id, bestDist + weight(ev));
        prev.set(id, bestPred);
        lastOfAgent.set(ev.agent, id);
        if (cp.best === null || dist.get(id) > dist.get(cp.best)) cp.best = id;
      }
      const best = cp.best;
      const ids = [];
      for (let cur = best; cur !== null; cur = prev.get(cur)) ids.push(cur);
      ids.reverse();
      const edges = new Set();
      for (let i = 1; i < ids.length; i += 1) edges.add(`${ids[i - 1]}\u0000${ids[i]}`);
      return {
        events: new Set(ids), edges, ids, length: best === null ? 0 : dist.get(best),
        unit: byDuration ? "s" : "events",
      };
    }, "data");
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
   * Per-agent totals.
   * @returns {Map<string, {events: number, tokens: number, first: number, last: number}>}
   */
  agentStats() {
    return this._memoise("agentStats", () => {
      const stats = new Map();
      for (const name of this._lanes.keys()) stats.set(name, { events: 0, tokens: 0, first: Infinity, last: -Infinity });
      for (const ev of this.events.values()) {
        const s = stats.get(ev.agent);
        s.events += 1;
        s.tokens += finite(ev.tokens) ? ev.tokens : 0;
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
    const stamp = deps === "data" ? `${this.version}` : `${this.version}:${this._viewVersion}`;
    const hit = this._memo.get(key);
    if (hit && hit.stamp === stamp) return hit.value;
    const value = compute();
    this._memo.set(key, { stamp, value });
    return value;
  }
}

function pushTo(map, key, value) {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
