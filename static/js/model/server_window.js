/**
 * The browser's side of the server-side level of detail (webapp/traces/lod.py) of a huge trace.
 *
 * Pure module: no DOM. A huge trace's snapshot has no events; its `trace.lod.overview` holds
 * per-lane time bins (`{t0, t1, bins, width, grouped_by, lanes: [{name, agents, count,
 * cells: [[bin, count, errors, {type: n}]]}]}`). `ServerWindow` keeps that overview, adds live
 * deltas' events to its counts (on the snapshot's bin grid, extended past t1 as needed), says
 * how many events a time window holds (`estimate`) and whether it is small enough to fetch
 * (`wantsDetail`), and remembers the window whose events the model holds (`loaded`).
 *
 * The invariant: the model's store holds exactly the events fetched for the loaded window, plus
 * the deltas' events inside it; deltas' other events only change the overview's counts.
 */

/** A window is fetched in detail when the overview says it holds at most this many events. */
export const DETAIL_LIMIT = 4000;

export class ServerWindow {
  /** @param {object} overview the `trace.lod.overview` of an overview snapshot */
  constructor(overview) {
    this.t0 = overview.t0;
    this.t1 = overview.t1;
    this.width = overview.width > 0 ? overview.width : 1;
    this.groupedBy = overview.grouped_by;
    /** lane name -> Map(bin -> [bin, count, errors, types]) */
    this.cells = new Map();
    /** agent name -> lane name */
    this.laneOf = new Map();
    this.lanes = [];
    for (const lane of overview.lanes) {
      this.lanes.push(lane.name);
      this.cells.set(lane.name, new Map(lane.cells.map((c) => [c[0], [c[0], c[1], c[2], { ...c[3] }]])));
      for (const agent of lane.agents) this.laneOf.set(agent, lane.name);
    }
    this.eventCount = overview.event_count;
    /** The largest count of one cell (for shading). */
    this.maxCount = 1;
    for (const cells of this.cells.values()) for (const c of cells.values()) this.maxCount = Math.max(this.maxCount, c[1]);
    /** The window `[t0, t1]` whose events the model holds, or null; `truncated` when capped. */
    this.loaded = null;
  }

  /** The overview lane of `agent` (an agent not in the overview is its own lane). */
  lane(agent) {
    return this.laneOf.get(agent) ?? (this.groupedBy === "role" ? "(no role)" : agent);
  }

  /** The bin of time `t` on the overview's grid (may be past the last bin for later events). */
  binOf(t) {
    return Math.max(0, Math.floor((t - this.t0) / this.width));
  }

  /**
   * Count live events (wire records of a delta) into the overview; returns how many were new
   * to it. `known(id)` says whether an event was counted already (a rewrite of a known event).
   */
  addEvents(events, known = () => false) {
    let added = 0;
    for (const ev of events) {
      if (known(ev.id)) continue;
      const lane = this.lane(ev.agent);
      if (!this.cells.has(lane)) {
        this.cells.set(lane, new Map());
        this.lanes.push(lane);
      }
      const bin = this.binOf(ev.t);
      const cells = this.cells.get(lane);
      const cell = cells.get(bin) ?? [bin, 0, 0, {}];
      cell[1] += 1;
      if (ev.attributes?.status === "error") cell[2] += 1;
      cell[3][ev.type] = (cell[3][ev.type] ?? 0) + 1;
      cells.set(bin, cell);
      this.maxCount = Math.max(this.maxCount, cell[1]);
      this.t0 = Math.min(this.t0, ev.t);
      this.t1 = Math.max(this.t1, ev.t);
      this.eventCount += 1;
      added += 1;
    }
    return added;
  }

  /** The x extent of the trace: `[t0, t1]` of the overview and its deltas. */
  extent() {
    return [this.t0, this.t1];
  }

  /**
   * About how many events `[a, b]` holds: whole bins inside, the overlapped part of the bins at
   * its ends (events taken as spread evenly over a bin).
   */
  estimate(a, b) {
    let n = 0;
    for (const cells of this.cells.values()) {
      for (const [bin, count] of cells.values()) {
        const x0 = this.t0 + bin * this.width;
        const x1 = x0 + this.width;
        const overlap = Math.min(b, x1) - Math.max(a, x0);
        if (overlap > 0) n += count * Math.min(1, overlap / this.width);
        else if (this.width === 0 || (a === b && a >= x0 && a <= x1)) n += count;
      }
    }
    return n;
  }

  /** Whether window `[a, b]` is small enough to fetch its events (`estimate` <= `limit`). */
  wantsDetail(a, b, limit = DETAIL_LIMIT) {
    return this.estimate(a, b) <= limit;
  }

  /** Whether the loaded window already covers `[a, b]` in full. */
  covers(a, b) {
    return this.loaded !== null && !this.loaded.truncated && this.loaded.t0 <= a && b <= this.loaded.t1;
  }

  /** Whether a live event belongs in the store (inside the loaded window). */
  inLoaded(ev) {
    return this.loaded !== null && ev.t >= this.loaded.t0 && ev.t <= this.loaded.t1;
  }

  /**
   * The window to fetch for a view of `[a, b]`: the view widened by half its span on each side
   * (panning a little needs no new fetch), clamped to the extent.
   */
  fetchRange(a, b) {
    const pad = (b - a) / 2;
    return [Math.max(this.t0, a - pad), Math.min(this.t1, b + pad)];
  }

  /** The cells of `lane` intersecting `[a, b]`, as `{x0, x1, count, errors, types}` in data units. */
  cellsIn(lane, a, b) {
    const out = [];
    for (const [bin, count, errors, types] of this.cells.get(lane)?.values() ?? []) {
      const x0 = this.t0 + bin * this.width;
      const x1 = x0 + this.width;
      if (x1 >= a && x0 <= b) out.push({ x0, x1, count, errors, types });
    }
    return out;
  }
}

/**
 * The URL of a window's events: `base` is the trace's API root (`/api/traces/<id>/`).
 * @returns {string}
 */
export function windowUrl(base, t0, t1, limit) {
  return `${base}window/?t0=${encodeURIComponent(t0)}&t1=${encodeURIComponent(t1)}&limit=${limit}`;
}

/**
 * The events of a window answer the store may take at `seq` (the seq the model is at: newer
 * ones arrive as deltas), and the edges between them.
 * @returns {{events: object[], edges: object[]}}
 */
export function windowRecords(answer, seq) {
  const events = answer.events.filter((e) => e.seq <= seq);
  const ids = new Set(events.map((e) => e.id));
  const edges = answer.edges.filter((e) => e.seq <= seq && ids.has(e.src) && ids.has(e.dst));
  return { events, edges };
}
