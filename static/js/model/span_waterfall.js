/**
 * The span waterfall of a trace that came from spans (OpenTelemetry and the formats decoded into
 * it, swarmscope/importers/otel): the spans its events were made from, as the events' attributes
 * record them (`span_id`, `parent_span_id`, `span_name`), each with its start, end and events,
 * ordered as a tree (children under their parent, by start time). Spans that made no event are
 * not in the trace and not shown; a span whose parent is not among them is a root. Pure: no DOM.
 */

/**
 * @param {Iterable<{id: string, t: number, t_end?: number|null, agent: string,
 *   attributes?: object}>} events
 * @returns {{rows: {span: string, name: string, parent: string|null, depth: number, t0: number,
 *   t1: number, agent: string, events: string[]}[], t0: number, t1: number}} times in seconds;
 *   no rows when no event has a `span_id`
 */
export function spanWaterfall(events) {
  const spans = new Map();
  for (const ev of events) {
    const a = ev.attributes;
    const sid = a?.span_id;
    if (sid === undefined || sid === null || sid === "" || !Number.isFinite(ev.t)) continue;
    const key = String(sid);
    const end = Number.isFinite(ev.t_end) ? Math.max(ev.t_end, ev.t) : ev.t;
    let span = spans.get(key);
    if (!span) {
      span = {
        span: key, name: String(a.span_name ?? ev.type ?? key),
        parent: a.parent_span_id === undefined || a.parent_span_id === null ? null : String(a.parent_span_id),
        depth: 0, t0: ev.t, t1: end, agent: ev.agent, events: [],
      };
      spans.set(key, span);
    }
    span.t0 = Math.min(span.t0, ev.t);
    span.t1 = Math.max(span.t1, end);
    span.events.push(ev.id);
  }
  const children = new Map();
  const roots = [];
  for (const span of spans.values()) {
    if (span.parent !== null && spans.has(span.parent) && span.parent !== span.span) {
      if (!children.has(span.parent)) children.set(span.parent, []);
      children.get(span.parent).push(span);
    } else {
      roots.push(span);
    }
  }
  const byStart = (a, b) => a.t0 - b.t0 || a.span.localeCompare(b.span);
  const rows = [];
  const seen = new Set();
  const walk = (span, depth) => {
    if (seen.has(span.span)) return; // a cycle in broken data
    seen.add(span.span);
    span.depth = depth;
    rows.push(span);
    for (const c of (children.get(span.span) ?? []).sort(byStart)) walk(c, depth + 1);
  };
  for (const r of roots.sort(byStart)) walk(r, 0);
  for (const span of spans.values()) if (!seen.has(span.span)) walk(span, 0); // parents in a cycle
  const t0 = rows.length ? Math.min(...rows.map((r) => r.t0)) : 0;
  const t1 = rows.length ? Math.max(...rows.map((r) => r.t1)) : 0;
  return { rows, t0, t1 };
}
