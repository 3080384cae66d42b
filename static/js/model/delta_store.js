/**
 * The records of one trace as the browser holds them, and how the snapshot and the numbered deltas
 * of `/ws/traces/<id>/` change them (docs/architecture.md, "Live protocol").
 *
 * Pure module: no DOM. `DeltaStore` keeps the wire records (agents, events, edges, labels) and the
 * indexes the other model modules read: the time order (ties by arrival), step numbers, edges by
 * event, mistake labels, spawn parents and the counters that tell the incremental views whether
 * they may extend (`rewrites`, `orderRewrites`, `structure`). Agents go into a `LaneTree`
 * (lanes.js) as they arrive. The fields are read-only outside this module.
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
export const isDependency = (edge) => edge.type !== "temporal";

/** The identity of an edge: source, target and type. */
export const edgeKey = (e) => `${e.src}\u0000${e.dst}\u0000${e.type}`;
const labelKey = (l) =>
  `${l.key}\u0000${l.event_id ?? ""}\u0000${l.agent ?? ""}\u0000${JSON.stringify(l.value ?? null)}`;
/** True for a finite number (absent and null times are not). */
export const finite = (x) => typeof x === "number" && Number.isFinite(x);

/**
 * Result of applying a message. `status`: "applied", "stale" (seq already seen: ignored),
 * or "gap" (not applied; send `{"type":"resume","seq":resumeFrom}`). `changes` lists what
 * changed, for renderers that update incrementally.
 * @typedef {{status: "applied"|"stale"|"gap", seq: number|null, resumeFrom?: number,
 *   changes?: Changes}} ApplyResult
 * @typedef {{events: string[], agents: string[], edges: object[], labels: object[],
 *   lanes: boolean, trace: boolean}} Changes
 */

export class DeltaStore {
  /**
   * @param {import("./lanes.js").LaneTree} lanes the lane tree new agents and events go into
   * @param {{binCount: number}} options `binCount`: bins over the extent of the first data
   */
  constructor(lanes, { binCount }) {
    this.lanes = lanes;
    this.binCount = binCount;
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
    this.timeOrder = []; // event ids by (t, arrival)
    this.arrival = new Map(); // event id -> arrival number
    this.arrivalOrder = []; // event ids in arrival order
    this.step = new Map(); // event id -> index in timeOrder, valid below _stepValidTo
    this._stepValidTo = 0;
    this.outgoing = new Map(); // event id -> edges leaving it
    this.incoming = new Map(); // event id -> edges entering it
    this.mistakeEvents = new Set();
    this.mistakeAgents = new Set();
    this.spawnedBy = new Map(); // agent -> {parent, t} from the first spawn event naming it
    this.hasDurations = false;
    this.bins = null; // {time, step}: bin widths, fixed with the first data
    this._searchCache = new Map(); // event id -> lower-cased searchable text
    this.rewrites = 0; // bumped when a known event changes (not a pure append)
    this.orderRewrites = 0; // bumped when the time order changes other than by appending
    this.structure = 0; // bumped by changes that invalidate the incremental view (lanes, labels, trace.live)
    this.tEnd = -Infinity; // max t / t_end over events (exact while there are no rewrites)
  }

  /**
   * Apply a snapshot message. On an empty store it loads the trace; on a loaded one it merges
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
    if (Boolean(trace?.live) !== Boolean(this.trace?.live)) this.structure += 1;
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
    const lanesBefore = this.lanes.size;
    this._upsertAgents(agents, events, changes);
    const byTime = [...events].sort((a, b) => a.t - b.t);
    for (const ev of byTime) this._upsertEvent(ev, changes);
    for (const edge of msg.edges ?? []) {
      const key = edgeKey(edge);
      if (this._edgeKeys.has(key)) continue;
      this._edgeKeys.add(key);
      this.edges.push(edge);
      pushTo(this.outgoing, edge.src, edge);
      pushTo(this.incoming, edge.dst, edge);
      changes.edges.push(edge);
    }
    for (const label of msg.labels ?? []) {
      const key = labelKey(label);
      if (this._labelKeys.has(key)) continue;
      this._labelKeys.add(key);
      this.labels.push(label);
      if (label.key === "mistake_step" && label.event_id != null) this.mistakeEvents.add(label.event_id);
      if (label.key === "mistake_agent") this.mistakeAgents.add(label.agent ?? String(label.value));
      changes.labels.push(label);
      this.structure += 1;
    }
    if (this.lanes.size !== lanesBefore) changes.lanes = true;
    if (changes.lanes || changes.agents.length) this.structure += 1;
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
    if (this.bins !== null || events.length === 0) return;
    let end = 0;
    for (const ev of events) end = Math.max(end, ev.t, finite(ev.t_end) ? ev.t_end : ev.t);
    this.bins = {
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
      if (ev.type === "spawn" && ev.to && ev.to !== ev.agent && !this.spawnedBy.has(ev.to)) {
        this.spawnedBy.set(ev.to, { parent: ev.agent, t: ev.t });
        newSpawns.push(ev.to);
      }
    }
    const incoming = new Map(records.map((rec) => [rec.name, rec]));
    for (const ev of events) {
      if (!this.agents.has(ev.agent) && !incoming.has(ev.agent)) {
        incoming.set(ev.agent, { name: ev.agent, role: ev.role ?? null, implicit: true });
      }
    }
    const parentOf = (rec) => rec.parent ?? this.spawnedBy.get(rec.name)?.parent ?? null;
    const spawnKey = (rec) => (finite(rec.spawned_at) ? rec.spawned_at
      : this.spawnedBy.get(rec.name)?.t ?? firstT.get(rec.name) ?? Infinity);
    const order = [...incoming.values()].sort((a, b) => spawnKey(a) - spawnKey(b));
    const visiting = new Set(); // guards against parent cycles in bad data
    const ensure = (name) => {
      if (visiting.has(name) || (this.lanes.has(name) && !incoming.has(name))) return;
      visiting.add(name);
      const rec = incoming.get(name) ?? { name, implicit: true };
      incoming.delete(name);
      const parent = parentOf(rec);
      if (parent) ensure(parent);
      this.agents.set(name, rec);
      this.lanes.place(name, parent);
      changes.agents.push(name);
    };
    for (const rec of order) if (incoming.has(rec.name)) ensure(rec.name);
    for (const child of newSpawns) {
      const lane = this.lanes.get(child);
      if (lane && lane.parent === null && !this.agents.get(child).parent) {
        this.lanes.place(child, this.spawnedBy.get(child).parent);
        changes.agents.push(child);
      }
    }
  }

  _upsertEvent(ev, changes) {
    const old = this.events.get(ev.id);
    this.events.set(ev.id, ev);
    this._searchCache.delete(ev.id);
    if (finite(ev.t_end) && !this.hasDurations) {
      this.hasDurations = true;
      this.structure += 1;
    }
    this.tEnd = Math.max(this.tEnd, ev.t, finite(ev.t_end) ? ev.t_end : ev.t);
    changes.events.push(ev.id);
    if (old === undefined) {
      this.arrival.set(ev.id, this.arrival.size);
      this.arrivalOrder.push(ev.id);
      this.lanes.addEvent(ev.agent, ev.id);
      this._insertInTime(ev);
      return;
    }
    this.rewrites += 1;
    if (old.agent !== ev.agent) this.lanes.moveEvent(ev.id, old.agent, ev.agent);
    if (old.t !== ev.t) {
      this.orderRewrites += 1;
      const at = this.timeOrder.indexOf(ev.id);
      this.timeOrder.splice(at, 1);
      this._stepValidTo = Math.min(this._stepValidTo, at);
      this._insertInTime(ev);
    }
  }

  /** Binary-insert into the time order; appending (the live case) is O(1). */
  _insertInTime(ev) {
    const order = this.timeOrder;
    const before = (id) => {
      const other = this.events.get(id);
      return other.t < ev.t || (other.t === ev.t && this.arrival.get(id) < this.arrival.get(ev.id));
    };
    let lo = 0;
    let hi = order.length;
    if (hi === 0 || before(order[hi - 1])) lo = hi;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (before(order[mid])) lo = mid + 1;
      else hi = mid;
    }
    if (lo < order.length) this.orderRewrites += 1;
    order.splice(lo, 0, ev.id);
    this._stepValidTo = Math.min(this._stepValidTo, lo);
  }

  /** Index of event `id` in time order (its step), or undefined. */
  stepOf(id) {
    this.refreshSteps();
    return this.step.get(id);
  }

  /** Re-number the steps (`step`) from the first insertion that was not an append. */
  refreshSteps() {
    const order = this.timeOrder;
    for (let i = this._stepValidTo; i < order.length; i += 1) this.step.set(order[i], i);
    this._stepValidTo = order.length;
  }

  /** Event `ev`'s content, tool and id, lower-cased, for the text filter (cached until it changes). */
  searchText(ev) {
    let text = this._searchCache.get(ev.id);
    if (text === undefined) {
      text = `${ev.content ?? ""}\n${ev.tool ?? ""}\n${ev.id}`.toLowerCase();
      this._searchCache.set(ev.id, text);
    }
    return text;
  }

  /**
   * An event is open when it has no `t_end` in a trace that has durations or is live
   * (a trace of point events has nothing open).
   */
  isOpen(ev) {
    return !finite(ev.t_end) && (this.hasDurations || Boolean(this.trace?.live));
  }

  /** When agent `name` was spawned: its record's `spawned_at`, else its spawn event's `t`. */
  spawnedAt(name) {
    const spawnedAt = this.agents.get(name)?.spawned_at;
    return finite(spawnedAt) ? spawnedAt : this.spawnedBy.get(name)?.t ?? null;
  }
}

function pushTo(map, key, value) {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
