/**
 * The live trace list's model, without the DOM: which pushed rows (`/ws/projects/<id>/traces/`,
 * webapp/traces/list_consumer.py) a page shows, and which row of a trace is the newest.
 */

/** Whether a pushed `row` passes the page's filters (the server's ListFilters, as the page gives them). */
export function matchesFilters(row, filters) {
  const f = filters || {};
  // model, errors, time and range filters need facts the worker computes later: never guess
  if (f.server_only) return false;
  if (f.kinds?.length && !f.kinds.includes(row.kind)) return false;
  if (f.formats?.length && !f.formats.includes(row.source_format)) return false;
  if (f.systems?.length && !f.systems.includes(row.system)) return false;
  if (f.projects?.length && !f.projects.includes(row.project)) return false;
  if (f.session && row.session_id !== f.session) return false;
  if (f.derived_from && row.derived_from !== f.derived_from) return false;
  if (f.label === "yes" && !row.labels) return false;
  if (f.label === "no" && row.labels) return false;
  if (f.outcome === "success" && !(row.reward > 0)) return false;
  if (f.outcome === "failure" && !(row.reward !== null && row.reward !== undefined && row.reward <= 0)) return false;
  if (f.outcome === "none" && row.reward !== null && row.reward !== undefined) return false;
  if (f.query) {
    const q = f.query.toLowerCase();
    const text = [row.name, row.system, row.labels, row.source_format].map((s) => String(s || "").toLowerCase());
    if (!text.some((s) => s.includes(q)) && row.session_id !== f.query) return false;
  }
  return true;
}

/** Rows of traces by id, keeping each trace's newest (highest trace `seq`): a row is an upsert. */
export class ListRows {
  constructor() {
    this.seqs = new Map();
  }

  /** Note the row of trace `id` at trace seq `seq` already shown (the server-rendered rows). */
  know(id, seq) {
    this.seqs.set(Number(id), Number(seq));
  }

  known(id) {
    return this.seqs.has(Number(id));
  }

  /** Whether `row` is newer than (or as new as) what is shown of its trace; records it when so. */
  accept(row) {
    const shown = this.seqs.get(row.id);
    if (shown !== undefined && row.seq < shown) return false;
    this.seqs.set(row.id, row.seq);
    return true;
  }
}

/** A trace's duration as the list shows it. */
export function formatDuration(row) {
  return `${Number(row.duration_s || 0).toFixed(1)}${row.synthetic_time ? " steps" : " s"}`;
}

/** A reward as the list shows it. */
export function formatReward(reward) {
  return reward === null || reward === undefined ? "–" : Number(reward).toFixed(2);
}

/** `text` cut to `n` characters with an ellipsis (Django's truncatechars). */
export function truncate(text, n) {
  const s = String(text || "");
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}
