/**
 * The critical path of a trace: the longest path through the dependency edges (every type but
 * `temporal`) plus each agent's own order, weighted by event duration (`t_end - t`), or by event
 * count when the trace has no durations (as swarmscope.metrics.critical_path, the denominator of the
 * parallelism efficiency; survey §9). Edges that go back in time are ignored, so the graph is acyclic.
 *
 * Pure module: no DOM. Incremental: while events only append to the time order and no known
 * event or edge target changed, the longest-path table is extended with the new events.
 */

import { finite, isDependency } from "./delta_store.js";

/**
 * @typedef {{events: Set<string>, edges: Set<string>, ids: string[], length: number,
 *   unit: "s"|"events"}} Path `edges` holds `src + "\u0000" + dst` keys of the path's steps;
 *   `length` is in seconds (`unit` "s") or events
 */

export class CriticalPath {
  /** @param {import("./delta_store.js").DeltaStore} store */
  constructor(store) {
    this.store = store;
    this._state = null;
  }

  /**
   * The critical path of the store's current data (callers memoise it on the data version).
   * @returns {Path}
   */
  compute() {
    const store = this.store;
    let cp = this._state;
    if (cp && (cp.rewrites !== store.rewrites || cp.orderRewrites !== store.orderRewrites
      || cp.byDuration !== store.hasDurations)) cp = null;
    if (cp) {
      for (let i = cp.edgeCursor; i < store.edges.length; i += 1) {
        if (cp.dist.has(store.edges[i].dst)) { cp = null; break; }
      }
    }
    if (!cp) {
      cp = {
        dist: new Map(), prev: new Map(), lastOfAgent: new Map(), best: null, done: 0,
        edgeCursor: 0, byDuration: store.hasDurations,
      };
    }
    cp.rewrites = store.rewrites;
    cp.orderRewrites = store.orderRewrites;
    cp.edgeCursor = store.edges.length;
    this._state = cp;
    const order = store.timeOrder;
    const byDuration = cp.byDuration;
    const weight = (ev) => (byDuration ? Math.max(0, finite(ev.t_end) ? ev.t_end - ev.t : 0) : 1);
    const { dist, prev, lastOfAgent } = cp;
    store.refreshSteps();
    const step = store.step;
    for (; cp.done < order.length; cp.done += 1) {
      const id = order[cp.done];
      const ev = store.events.get(id);
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
      for (const e of store.incoming.get(id) ?? []) {
        if (isDependency(e) && store.events.has(e.src) && step.get(e.src) < step.get(id)) consider(e.src);
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
  }
}
