/**
 * What the timeline draws where, in data units: one item per node of `TraceModel.view()` with
 * its row and its x span (`x0`..`x1`: an event's `t`..`t_end` in time mode, so spans with a
 * duration are bars; its step in step mode), bins spanning their events. Pure module: no DOM.
 *
 * Zoomed in, the budget bins of unfolded lanes (level_of_detail.js's DEFAULT_NODE_BUDGET) that
 * are on screen are drawn as their events when few enough of them are (`visible`): the level
 * of detail follows the camera, so zooming into a dense region shows its events. Bins of
 * collapsed lanes (`folded`) stay bins until their lane is unfolded.
 */

import { finite, isDependency } from "../model/delta_store.js";

/** At most this many events are drawn one by one in place of the budget bins on screen. */
export const DETAIL_BUDGET = 6000;

/** `[x0, x1]` of event `ev`: its start and end (`t_end`, when later) or its step twice. */
export function eventSpan(ev, model, mode) {
  if (mode === "step") {
    const s = model.stepOf(ev.id);
    return [s, s];
  }
  return [ev.t, finite(ev.t_end) && ev.t_end > ev.t ? ev.t_end : ev.t];
}

export class TimelineLayout {
  /** @param {import("../model/trace_model.js").TraceModel} model */
  constructor(model) {
    this.model = model;
    this.mode = "time";
    /** node key -> {key, node, row, x0, x1} */
    this.items = new Map();
    this._details = new Map(); // budget bin key -> its events as items
  }

  /** Rebuild every item of `view` (a new view, a mode change). */
  syncAll(view, mode) {
    this.mode = mode;
    this.items.clear();
    this._details.clear();
    for (const node of view.nodes.values()) this.items.set(node.key, this._item(node));
  }

  /** Update the items of the node keys in `keys` (absent from the view: dropped). */
  syncChanged(view, keys) {
    for (const key of keys) {
      this._details.delete(key);
      const node = view.nodes.get(key);
      if (node === undefined) this.items.delete(key);
      else this.items.set(key, this._item(node));
    }
  }

  _item(node) {
    let x0 = Infinity;
    let x1 = -Infinity;
    const ids = node.kind === "event" ? [node.eventId] : node.eventIds;
    for (const id of ids) {
      const ev = this.model.events.get(id);
      if (!ev) continue;
      const [a, b] = eventSpan(ev, this.model, this.mode);
      if (a < x0) x0 = a;
      if (b > x1) x1 = b;
    }
    if (!(x1 >= x0)) x0 = x1 = node.x;
    return { key: node.key, node, row: node.row, x0, x1 };
  }

  /** The events of budget bin `bin` as items of their own (cached until the bin changes). */
  detailOf(bin) {
    let out = this._details.get(bin.key);
    if (out) return out;
    const critical = this.model.criticalPath().events;
    out = bin.node.eventIds.map((id) => {
      const ev = this.model.events.get(id);
      const [x0, x1] = eventSpan(ev, this.model, this.mode);
      const node = {
        key: id, kind: "event", eventId: id, lane: bin.node.lane, row: bin.row, x: x0, type: ev.type,
        open: this.model.isOpen(ev), mistake: this.model.isMistakeEvent(id), critical: critical.has(id),
      };
      return { key: id, node, row: bin.row, x0, x1, detailOf: bin.key };
    });
    this._details.set(bin.key, out);
    return out;
  }

  /**
   * The items to draw in rows `[r0, r1]` over window `win`: events and bins overlapping it; the
   * budget bins among them replaced by their events when these number at most `budget`.
   * @returns {{items: object[], expanded: Set<string>, byEvent: Map<string, object>}} `expanded`:
   *   the bins drawn as their events; `byEvent`: event id -> its item, for the expanded bins' events.
   */
  visible(win, [r0, r1], budget = DETAIL_BUDGET) {
    const items = [];
    const bins = [];
    let count = 0;
    for (const it of this.items.values()) {
      if (it.row < r0 || it.row > r1 || it.x1 < win[0] || it.x0 > win[1]) continue;
      if (it.node.kind === "bin" && !it.node.folded) {
        bins.push(it);
        count += it.node.count;
      } else items.push(it);
    }
    const expanded = new Set();
    const byEvent = new Map();
    if (count <= budget) {
      for (const bin of bins) {
        expanded.add(bin.key);
        for (const d of this.detailOf(bin)) {
          byEvent.set(d.key, d);
          if (d.x1 >= win[0] && d.x0 <= win[1]) items.push(d);
        }
      }
    } else items.push(...bins);
    return { items, expanded, byEvent };
  }

  /**
   * The segments to draw for the edges: `[source item, target item, edge]`, where `edge` is a
   * view edge (`aggregated` when it counts several) or a model edge between events of expanded
   * bins. `nodeOf` is the view's event id -> node key.
   */
  edges(view, { expanded, byEvent }) {
    const out = [];
    for (const e of view.edges.values()) {
      if (expanded.has(e.source) || expanded.has(e.target)) continue;
      const a = this.items.get(e.source);
      const b = this.items.get(e.target);
      if (a && b) out.push([a, b, e]);
    }
    if (expanded.size === 0) return out;
    const at = (id) => {
      const key = view.nodeOf.get(id);
      if (key === undefined) return undefined;
      if (expanded.has(key)) return byEvent.get(id);
      return this.items.get(key);
    };
    const { outgoing, incoming } = this.model.store;
    for (const [id, item] of byEvent) {
      for (const e of outgoing.get(id) ?? []) {
        if (!isDependency(e)) continue;
        const b = at(e.dst);
        if (b && b !== item) out.push([item, b, e]);
      }
      for (const e of incoming.get(id) ?? []) {
        if (!isDependency(e) || byEvent.has(e.src)) continue; // drawn from its source above
        const a = at(e.src);
        if (a && a !== item) out.push([a, item, e]);
      }
    }
    return out;
  }
}

/**
 * The drawn item under pixel `(x, y)`: among `drawn` (`{item, x0, x1, y0, y1}` in pixels), the
 * ones within `tolerance` px; events before bins, then the nearest, then the narrowest.
 */
export function hitTest(drawn, x, y, tolerance = 3) {
  let best = null;
  let bestScore = Infinity;
  for (const d of drawn) {
    if (y < d.y0 - tolerance || y > d.y1 + tolerance) continue;
    const dx = x < d.x0 ? d.x0 - x : x > d.x1 ? x - d.x1 : 0;
    if (dx > tolerance) continue;
    const score = (d.item.node.kind === "bin" ? 1e6 : 0) + dx * 1000 + (d.x1 - d.x0);
    if (score < bestScore) {
      best = d;
      bestScore = score;
    }
  }
  return best;
}
