/**
 * The compare view (templates/traces/compare.html, started by pages/compare_page.js): two
 * orchestration traces side by side, aligned by event id (the default where they share most ids:
 * a branch trace and its parent; `alignById`), by step (the whole trace in time order) or by agent
 * (each agent's events in time order; `?align=id|step|agent` chooses), with the differences marked: events present in one trace
 * only, and events at the same place whose content differs. Typical use: a trace and its
 * counterfactual re-rollout.
 *
 * Alignment is a diff of event sequences: equal prefix and suffix are matched directly, the
 * middle by longest common subsequence (or position, when it is too large), and adjacent
 * removals and insertions of the same agent and type are paired as "changed".
 */

import { TraceModel } from "../model/trace_model.js";
import { inputBadge, renderContent } from "./inspector.js";
import { eventColor } from "../lib/palette.js";
import { el } from "../lib/dom.js";
import { CONTENT_FROM_INPUT_TITLE, contentLabel } from "../lib/format.js";

/** Above this many cells the middle of a diff is aligned by position instead of LCS. */
const LCS_MAX_CELLS = 4_000_000;
/** Rows rendered before "Show all". */
const ROW_LIMIT = 1500;

/**
 * What makes two events "the same" across traces: agent, type, tool and content (a content that is
 * the event's input, `contentFromInput`, is not the same as that text said as output).
 */
export function eventSignature(ev) {
  const content = typeof ev.content === "string" ? ev.content.trim().replace(/\s+/g, " ") : JSON.stringify(ev.content ?? ev.content_ref ?? null);
  return `${ev.agent}\u0000${ev.type}\u0000${ev.tool ?? ""}\u0000${contentLabel(ev, content)}`;
}

/**
 * Edit script between sequences `a` and `b` under `key`.
 * @returns {{op: "equal"|"delete"|"insert", a?: number, b?: number}[]} indexes into a / b,
 *   in order
 */
export function diffSequences(a, b, key) {
  const ka = a.map(key);
  const kb = b.map(key);
  let start = 0;
  while (start < ka.length && start < kb.length && ka[start] === kb[start]) start += 1;
  let endA = ka.length;
  let endB = kb.length;
  while (endA > start && endB > start && ka[endA - 1] === kb[endB - 1]) {
    endA -= 1;
    endB -= 1;
  }
  const ops = [];
  for (let i = 0; i < start; i += 1) ops.push({ op: "equal", a: i, b: i });
  const n = endA - start;
  const m = endB - start;
  if (n * m <= LCS_MAX_CELLS) {
    // lcs[i][j] = LCS length of ka[start+i..endA) and kb[start+j..endB), row-major
    const width = m + 1;
    const lcs = new Uint32Array((n + 1) * width);
    for (let i = n - 1; i >= 0; i -= 1) {
      for (let j = m - 1; j >= 0; j -= 1) {
        lcs[i * width + j] = ka[start + i] === kb[start + j]
          ? lcs[(i + 1) * width + j + 1] + 1
          : Math.max(lcs[(i + 1) * width + j], lcs[i * width + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && ka[start + i] === kb[start + j]) {
        ops.push({ op: "equal", a: start + i, b: start + j });
        i += 1;
        j += 1;
      } else if (j >= m || (i < n && lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])) {
        ops.push({ op: "delete", a: start + i });
        i += 1;
      } else {
        ops.push({ op: "insert", b: start + j });
        j += 1;
      }
    }
  } else {
    for (let k = 0; k < Math.max(n, m); k += 1) {
      if (k < n) ops.push({ op: "delete", a: start + k });
      if (k < m) ops.push({ op: "insert", b: start + k });
    }
  }
  for (let k = 0; k < ka.length - endA; k += 1) ops.push({ op: "equal", a: endA + k, b: endB + k });
  return ops;
}

/**
 * Rows of aligned events from an edit script: equal pairs are "same"; within a run of
 * removals and insertions, a removal and an insertion of the same agent and type pair up as
 * "changed", the rest are "left-only" / "right-only".
 */
function rowsFromOps(ops, left, right) {
  const rows = [];
  let deleted = [];
  let inserted = [];
  const flush = () => {
    const used = new Set();
    for (const ev of deleted) {
      const k = inserted.findIndex((other, idx) => !used.has(idx) && other.agent === ev.agent && other.type === ev.type);
      if (k >= 0) {
        used.add(k);
        rows.push({ status: "changed", left: ev, right: inserted[k] });
      } else rows.push({ status: "left-only", left: ev, right: null });
    }
    inserted.forEach((ev, idx) => used.has(idx) || rows.push({ status: "right-only", left: null, right: ev }));
    deleted = [];
    inserted = [];
  };
  for (const op of ops) {
    if (op.op === "equal") {
      flush();
      rows.push({ status: "same", left: left[op.a], right: right[op.b] });
    } else if (op.op === "delete") deleted.push(left[op.a]);
    else inserted.push(right[op.b]);
  }
  flush();
  return rows;
}

/**
 * Align two traces.
 * @param {TraceModel} left
 * @param {TraceModel} right
 * @param {"step"|"agent"|"id"} mode
 * @returns {{agent: string, status: "same"|"changed"|"left-only"|"right-only",
 *   left: object|null, right: object|null}[]} in step order, or grouped by agent (agents in
 *   the left trace's lane order, then the right's new ones), or by event id (`alignById`)
 */
export function alignTraces(left, right, mode = "step") {
  if (mode === "id") return alignById(left, right);
  const inOrder = (model, ids) => ids.map((id) => model.events.get(id));
  const withAgent = (rows) => rows.map((r) => ({ agent: (r.left ?? r.right).agent, ...r }));
  if (mode === "step") {
    const a = inOrder(left, left.timeOrder);
    const b = inOrder(right, right.timeOrder);
    return withAgent(rowsFromOps(diffSequences(a, b, eventSignature), a, b));
  }
  const agents = [...left.agentOrder()];
  for (const name of right.agentOrder()) if (!left.agents.has(name)) agents.push(name);
  const ordered = (model, name) => {
    const ids = model.eventsOfAgent(name).slice().sort((x, y) => model.stepOf(x) - model.stepOf(y));
    return inOrder(model, ids);
  };
  return agents.flatMap((name) => {
    const a = ordered(left, name);
    const b = ordered(right, name);
    return withAgent(rowsFromOps(diffSequences(a, b, eventSignature), a, b));
  });
}

/**
 * Align two traces by event id: an event of both traces (same id) is one row, "same" where its
 * agent, type, tool and content agree, else "changed"; the left trace's events in its time order,
 * each right-only event after the row of the shared event that precedes it in the right trace
 * (a branch trace keeps its parent's ids up to the fork and re-generates after it).
 * @returns {{agent: string, status: string, left: object|null, right: object|null}[]}
 */
export function alignById(left, right) {
  const after = new Map(); // shared id (or "" before every shared one) -> right-only events after it
  let anchor = "";
  for (const id of right.timeOrder) {
    if (left.events.has(id)) anchor = id;
    else {
      if (!after.has(anchor)) after.set(anchor, []);
      after.get(anchor).push(right.events.get(id));
    }
  }
  const rows = [];
  const rightOnly = (ev) => rows.push({ agent: ev.agent, status: "right-only", left: null, right: ev });
  (after.get("") ?? []).forEach(rightOnly);
  for (const id of left.timeOrder) {
    const a = left.events.get(id);
    const b = right.events.get(id);
    if (!b) rows.push({ agent: a.agent, status: "left-only", left: a, right: null });
    else {
      rows.push({ agent: a.agent, status: eventSignature(a) === eventSignature(b) ? "same" : "changed", left: a, right: b });
      (after.get(id) ?? []).forEach(rightOnly);
    }
  }
  return rows;
}

/**
 * The alignment a compare page opens with: `requested` ("step" | "agent" | "id", from `?align=`)
 * when given, else "id" where the traces share at least half the events of the smaller one (a
 * branch trace and its parent), else "step".
 */
export function defaultAlignment(left, right, requested = null) {
  if (["step", "agent", "id"].includes(requested)) return requested;
  const smaller = Math.min(left.events.size, right.events.size);
  if (!smaller) return "step";
  let shared = 0;
  for (const id of left.events.keys()) if (right.events.has(id)) shared += 1;
  return shared * 2 >= smaller ? "id" : "step";
}

/** Count rows per status. */
export function summarise(rows) {
  const counts = { same: 0, changed: 0, "left-only": 0, "right-only": 0 };
  for (const r of rows) counts[r.status] += 1;
  return counts;
}

// ------------------------------------------------------------------ page

const STATUS_TEXT = { same: "=", changed: "≠", "left-only": "−", "right-only": "+" };
const STATUS_TITLE = {
  same: "same in both traces", changed: "content differs", "left-only": "only in the left trace",
  "right-only": "only in the right trace",
};

function excerpt(ev) {
  if (!ev) return el("span", "—", "muted");
  const text = typeof ev.content === "string" ? ev.content : ev.content_ref ?? "";
  const cell = el("span", null, "compare-event");
  const chip = el("span", ev.type, "type-chip");
  chip.style.setProperty("--chip", eventColor(ev.type));
  cell.append(chip, " ");
  const badge = inputBadge(ev);
  if (badge) cell.append(badge, " ");
  cell.append(el("span", text.length > 160 ? `${text.slice(0, 160)}…` : text, "compare-excerpt"));
  return cell;
}

/** The compare page's view of its `#compare-app` element: loads both traces, aligns and renders the rows. */
export class ComparePage {
  constructor(app) {
    this.app = app;
    this.left = new TraceModel();
    this.right = new TraceModel();
    this.mode = "step";
    this.onlyDiffs = false;
    this.showAll = false;
    const part = (testid) => app.querySelector(`[data-testid="${testid}"]`);
    this.rowsHost = part("compare-rows");
    this.summary = part("compare-summary");
    this.notice = part("notice");
    for (const radio of app.querySelectorAll('[data-control="align"]')) {
      radio.addEventListener("change", () => radio.checked && this.update({ mode: radio.value }));
    }
    app.querySelector('[data-control="only-diffs"]')?.addEventListener("change", (e) => this.update({ onlyDiffs: e.target.checked }));
    this.ready = this.load();
  }

  async load() {
    const get = async (url) => {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
      return response.json();
    };
    try {
      const [a, b] = await Promise.all([get(this.app.dataset.leftSnapshotUrl), get(this.app.dataset.rightSnapshotUrl)]);
      this.left.applySnapshot({ type: "snapshot", ...a });
      this.right.applySnapshot({ type: "snapshot", ...b });
    } catch (err) {
      this.notice.hidden = false;
      this.notice.textContent = `Could not load the traces (${err.message}).`;
      return;
    }
    const mode = defaultAlignment(this.left, this.right, new URLSearchParams(globalThis.location?.search ?? "").get("align"));
    for (const radio of this.app.querySelectorAll('[data-control="align"]')) radio.checked = radio.value === mode;
    this.update({ mode });
  }

  update({ mode = this.mode, onlyDiffs = this.onlyDiffs, showAll = this.showAll }) {
    this.mode = mode;
    this.onlyDiffs = onlyDiffs;
    this.showAll = showAll;
    const rows = alignTraces(this.left, this.right, mode);
    const counts = summarise(rows);
    this.summary.replaceChildren(...Object.entries(counts).map(([status, n]) => {
      const item = el("span", `${STATUS_TEXT[status]} ${n} ${STATUS_TITLE[status]}`, `diff-count diff-${status}`);
      item.dataset.status = status;
      item.dataset.count = String(n);
      return item;
    }));
    const shown = onlyDiffs ? rows.filter((r) => r.status !== "same") : rows;
    const body = document.createElement("tbody");
    let lastAgent = null;
    for (const [i, row] of shown.entries()) {
      if (!showAll && i >= ROW_LIMIT) break;
      if (mode === "agent" && row.agent !== lastAgent) {
        lastAgent = row.agent;
        const head = el("tr", null, "compare-group");
        const cell = el("th", row.agent);
        cell.colSpan = 4;
        cell.scope = "rowgroup";
        head.append(cell);
        body.append(head);
      }
      body.append(this._row(row));
    }
    const table = el("table", null, "table compare-table");
    const thead = el("thead");
    const tr = el("tr");
    for (const h of ["", "agent", "left", "right"]) tr.append(el("th", h));
    thead.append(tr);
    table.append(thead, body);
    const parts = [table];
    if (!showAll && shown.length > ROW_LIMIT) {
      const more = el("button", `Show all ${shown.length} rows`, "button");
      more.type = "button";
      more.addEventListener("click", () => this.update({ showAll: true }));
      parts.push(more);
    }
    if (!rows.length) parts.splice(0, 1, el("p", "Both traces are empty.", "empty-state"));
    this.rowsHost.replaceChildren(...parts);
    document.body.dataset.compareRows = String(rows.length);
  }

  _row(row) {
    const tr = el("tr", null, `compare-row diff-${row.status}`);
    tr.dataset.testid = "compare-row";
    tr.dataset.status = row.status;
    tr.tabIndex = 0;
    const mark = el("td", STATUS_TEXT[row.status], "diff-mark");
    mark.title = STATUS_TITLE[row.status];
    tr.append(mark, el("td", row.agent), el("td", null), el("td", null));
    tr.children[2].append(excerpt(row.left));
    tr.children[3].append(excerpt(row.right));
    const toggle = () => this._toggleDetail(tr, row);
    tr.addEventListener("click", toggle);
    tr.addEventListener("keydown", (e) => (e.key === "Enter" || e.key === " ") && (e.preventDefault(), toggle()));
    return tr;
  }

  /** Show (or hide) both events' full content under the row. */
  _toggleDetail(tr, row) {
    if (tr.nextElementSibling?.classList.contains("compare-detail")) {
      tr.nextElementSibling.remove();
      return;
    }
    const detail = el("tr", null, "compare-detail");
    detail.append(el("td"), el("td"));
    for (const ev of [row.left, row.right]) {
      const cell = el("td");
      if (ev) {
        cell.append(el("p", `${ev.id} · t = ${ev.t}`, "muted"));
        const badge = inputBadge(ev);
        if (badge) cell.append(el("p", null, "content-from-input-note"));
        if (badge) cell.lastChild.append(badge, ` ${CONTENT_FROM_INPUT_TITLE}`);
        cell.append(renderContent(typeof ev.content === "string" ? ev.content : JSON.stringify(ev.content ?? ev.content_ref ?? "")));
      }
      detail.append(cell);
    }
    tr.after(detail);
  }
}
