/**
 * The trace page's view state, without a DOM: which panels are open (remembered per user in
 * localStorage: the app has no per-user settings store), what the address says (event, agent,
 * time window, x axis, panels), and whether the critical path is worth highlighting.
 *
 * Address parameters (`?…` of /traces/<id>/): `event=<id>` the selected event, `agent=<name>` the
 * selected agent (when no event is), `t=<x0>,<x1>` the timeline's window in data units (seconds
 * from the trace start, or steps), `x=time|step` the axis, `panels=<name>,…` the open panels
 * (PANELS; "none" when none is), `graph=spans` the graph panel's span waterfall (the agent
 * graph, the default, is not written). Other parameters (`job`) are kept as they are.
 */

/** The panels a user opens and closes: side columns, the full-screen timeline, the notices. */
export const PANELS = ["filters", "side", "full", "facts", "notice"];
/** Open by default: the inspector column and the notices; the filter column starts folded. */
export const LAYOUT_DEFAULTS = Object.freeze({ filters: false, side: true, full: false, facts: true, notice: true });
/** The panels the address carries (the notices are a reader's own business). */
const ADDRESS_PANELS = ["filters", "side", "full"];
/** The critical path is not highlighted when it holds at least this share of the events. */
export const SERIAL_SHARE = 0.9;

/** The localStorage key of `user`'s layout. */
export const layoutKey = (user) => `swarmscope.trace-layout.${user || "anonymous"}`;

/**
 * A stored layout (JSON text or null) over the defaults: unknown keys and non-boolean values are
 * dropped, so a damaged entry gives the defaults. Returns a new {filters, side, full, facts, notice}.
 */
export function readLayout(text) {
  const layout = { ...LAYOUT_DEFAULTS };
  let stored = null;
  try {
    stored = text ? JSON.parse(text) : null;
  } catch {
    stored = null;
  }
  if (stored && typeof stored === "object") {
    for (const key of PANELS) if (typeof stored[key] === "boolean") layout[key] = stored[key];
  }
  layout.full = false; // full screen is a moment, not a preference (the address can still ask for it)
  return layout;
}

/** `layout` with panel `key` flipped (or set to `open`). Throws on an unknown panel name. */
export function togglePanel(layout, key, open = !layout[key]) {
  if (!PANELS.includes(key)) throw new Error(`unknown panel ${JSON.stringify(key)}`);
  return { ...layout, [key]: Boolean(open) };
}

/** A number for the address: at most 4 decimals, no trailing zeros. */
const short = (x) => String(Math.round(x * 1e4) / 1e4);

/**
 * The address parameters of a view: `search` the current query string (its other parameters are
 * kept), `view` = {event, agent, window: [x0, x1] | null, mode, layout, graph}. Returns the new
 * query string with a leading "?" ("" when empty).
 */
export function encodeView(search, { event = null, agent = null, window: win = null, mode = null, layout = null, graph = null }) {
  const params = new URLSearchParams(search);
  for (const key of ["event", "agent", "t", "x", "panels", "graph"]) params.delete(key);
  if (event !== null && event !== undefined) params.set("event", event);
  else if (agent !== null && agent !== undefined) params.set("agent", agent);
  if (win && Number.isFinite(win[0]) && Number.isFinite(win[1]) && win[1] > win[0]) {
    params.set("t", `${short(win[0])},${short(win[1])}`);
  }
  if (mode === "time" || mode === "step") params.set("x", mode);
  if (layout) {
    const open = ADDRESS_PANELS.filter((p) => layout[p]);
    params.set("panels", open.length ? open.join(",") : "none");
  }
  if (graph === "spans") params.set("graph", graph);
  const text = params.toString();
  return text ? `?${text}` : "";
}

/**
 * The view an address asks for: {event, agent, window, mode, panels, graph, problems}; each null
 * when absent or malformed (a window needs two finite numbers, x0 < x1; panels are a subset of the
 * address panels, given as {name: open}), except `graph`, which is "agents" unless the address
 * says spans. `problems` names each malformed parameter, its value and what it should be (the page
 * says so instead of ignoring it silently).
 */
export function decodeView(search) {
  const params = new URLSearchParams(search);
  const view = {
    event: params.get("event"), agent: params.get("agent"), window: null, mode: null, panels: null,
    graph: params.get("graph") === "spans" ? "spans" : "agents", problems: [],
  };
  const bad = (name, expected) => view.problems.push(`${name}=${JSON.stringify(params.get(name))} is not ${expected}`);
  const t = params.get("t");
  if (t !== null) {
    const [a, b] = t.split(",").map(Number);
    if (t.split(",").length === 2 && Number.isFinite(a) && Number.isFinite(b) && b > a) view.window = [a, b];
    else bad("t", "a window x0,x1 of two numbers, x0 < x1");
  }
  const x = params.get("x");
  if (x === "time" || x === "step") view.mode = x;
  else if (x !== null) bad("x", "an axis, time or step");
  const graph = params.get("graph");
  if (graph !== null && graph !== "spans" && graph !== "agents") bad("graph", "a view, agents or spans");
  const panels = params.get("panels");
  if (panels !== null) {
    const open = new Set(panels.split(",").map((p) => p.trim()));
    view.panels = Object.fromEntries(ADDRESS_PANELS.map((p) => [p, open.has(p)]));
    const unknown = [...open].filter((p) => p !== "none" && !ADDRESS_PANELS.includes(p));
    if (unknown.length) bad("panels", `a list of panels (${ADDRESS_PANELS.join(", ")} or none)`);
  }
  return view;
}

/**
 * Whether highlighting a critical path of `pathEvents` events out of `eventCount` tells anything:
 * {highlight, share, text}. When the path holds SERIAL_SHARE of the events or more the work is
 * serial, every event would be marked, and `text` says so instead; otherwise `text` gives the
 * path's size. An empty trace highlights nothing and says nothing.
 */
export function criticalPathNote(pathEvents, eventCount) {
  if (!eventCount || !pathEvents) return { highlight: false, share: 0, text: "" };
  const share = pathEvents / eventCount;
  const pct = `${Math.round(share * 1000) / 10} %`;
  if (share >= SERIAL_SHARE && eventCount > 2) {
    return {
      highlight: false,
      share,
      text: `Critical path: ${pathEvents} of ${eventCount} events (${pct}): the work is serial, so it is not highlighted.`,
    };
  }
  return { highlight: true, share, text: `Critical path: ${pathEvents} of ${eventCount} events (${pct}).` };
}

/** "1 h 13 min", "4 min 10 s", "12.5 s" or "37 steps": the length of window `span` in `mode`. */
export function spanText(span, mode) {
  if (mode === "step") return `${Math.round(span)} steps`;
  if (span >= 3600) return `${Math.floor(span / 3600)} h ${Math.round((span % 3600) / 60)} min`;
  if (span >= 60) return `${Math.floor(span / 60)} min ${Math.round(span % 60)} s`;
  return `${Math.round(span * 10) / 10} s`;
}

/**
 * How much of a time axis is idle: `events` are {t, t_end?} (seconds, any order); an event covers
 * [t, t_end] (a point without t_end). A stretch covered by no event counts as idle when it is
 * longer than `minGap` of the whole span and than ten times the median stretch (evenly spread
 * events have no idle time). Returns {span, idle, share, gaps} (seconds; share in [0, 1]; gaps:
 * how many), zeros for fewer than 2 events.
 */
export function idleTime(events, minGap = 0.05) {
  const spans = events.filter((e) => Number.isFinite(e?.t))
    .map((e) => [e.t, Number.isFinite(e.t_end) ? Math.max(e.t, e.t_end) : e.t])
    .sort((a, b) => a[0] - b[0]);
  if (spans.length < 2) return { span: 0, idle: 0, share: 0, gaps: 0 };
  const span = Math.max(...spans.map((s) => s[1])) - spans[0][0];
  const diffs = [];
  let reach = spans[0][1];
  for (const [a, b] of spans.slice(1)) {
    diffs.push(Math.max(0, a - reach)); // uncovered time before this event
    reach = Math.max(reach, b);
  }
  const median = [...diffs].sort((a, b) => a - b)[Math.floor(diffs.length / 2)];
  const threshold = Math.max(minGap * span, 10 * median);
  let idle = 0;
  let gaps = 0;
  for (const gap of diffs) {
    if (span > 0 && gap > threshold) {
      idle += gap;
      gaps += 1;
    }
  }
  return { span, idle, share: span > 0 ? idle / span : 0, gaps };
}
