/**
 * Trace list page: pick two traces to compare side by side, `/` focuses the search box, and the
 * list is live: rows of the project's traces pushed over `/ws/projects/<id>/traces/` update their
 * counts, new traces that pass the filters appear at the top (page 1, newest first; elsewhere a
 * notice offers them), and a live badge clears once its trace has had no events for 30 s. Counts
 * and tokens read in the browser's number format (lib/format.js formatNumber), the server's too.
 */

import { el } from "../lib/dom.js";
import { LiveConnection, websocketUrl } from "../lib/live_connection.js";
import { formatNumber, localizeNumbers, tokenFigure } from "../lib/format.js";
import { formatDuration, formatReward, ListRows, matchesFilters, truncate } from "../lib/trace_list_live.js";

const PAGE_SIZE = 50;

const form = document.querySelector("[data-testid=compare-form]");
const boxes = () => [...document.querySelectorAll("input[name=compare]")];
const updateCompare = () => {
  if (!form) return;
  const button = form.querySelector("button");
  const picked = boxes().filter((b) => b.checked);
  button.disabled = picked.length !== 2;
  button.textContent = picked.length === 2 ? "Compare the 2 selected" : `Select 2 traces to compare (${picked.length})`;
};
if (form) {
  document.addEventListener("change", (event) => {
    if (event.target.name === "compare") updateCompare();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const [left, right] = boxes().filter((b) => b.checked).map((b) => b.value);
    if (left && right) window.location.assign(`${form.action}?left=${left}&right=${right}`);
  });
  updateCompare();
}

document.addEventListener("keydown", (event) => {
  const search = document.querySelector("input[type=search]");
  if (event.key === "/" && search && document.activeElement !== search) {
    event.preventDefault();
    search.focus();
  }
});

// --- live --------------------------------------------------------------------------------------

const configNode = document.getElementById("trace-list-live");
const config = configNode ? JSON.parse(configNode.textContent) : null;
const tbody = document.querySelector("[data-testid=trace-table] tbody");
const rows = new ListRows();
const deadlines = new Map(); // badge element -> time (ms) it stops being live
let added = 0;
let waiting = 0; // new matching traces not shown (another page or sort)
let applied = 0;

// Counts and tokens as the server rendered them, grouped as the browser's locale groups thousands.
localizeNumbers(document);
for (const figure of document.querySelectorAll("[data-col=total_tokens] [data-tokens=figure]")) {
  const cell = figure.parentElement;
  const tokens = tokenFigure(cell.dataset.measured === "" ? null : Number(cell.dataset.measured), Number(cell.dataset.estimated));
  figure.textContent = tokens.text;
  cell.title = tokens.title;
}

for (const tr of document.querySelectorAll("tr[data-trace-id]")) rows.know(tr.dataset.traceId, tr.dataset.seq);
for (const badge of document.querySelectorAll("[data-testid=row-live]")) {
  deadlines.set(badge, Date.now() + Number(badge.dataset.liveForS || 0) * 1000);
}

function setLive(cell, row) {
  let badge = cell.querySelector("[data-testid=row-live]");
  if (!row.live) {
    badge?.remove();
    return;
  }
  if (!badge) {
    badge = el("span", "live", "badge live");
    badge.dataset.testid = "row-live";
    badge.title = "events arrived in the last 30 s";
    cell.querySelector("a[data-col=name]").after(" ", badge);
  }
  deadlines.set(badge, Date.now() + row.live_for_s * 1000);
}

function setText(tr, column, text) {
  for (const node of tr.querySelectorAll(`[data-col=${column}]`)) node.textContent = text;
}

/** A count cell: its figure grouped as the browser's locale groups thousands, its value in `data-number`. */
function setCount(tr, column, n) {
  for (const node of tr.querySelectorAll(`[data-col=${column}]`)) {
    node.dataset.number = String(n);
    node.textContent = formatNumber(n);
  }
}

/** The tokens cell as `_trace_row.html` renders it: measured, or an estimate marked as one (its cost kept). */
function setTokens(tr, row) {
  const figure = tokenFigure(row.total_tokens, row.estimated_tokens);
  for (const td of tr.querySelectorAll("[data-col=total_tokens]")) {
    let text = td.querySelector("[data-tokens=figure]");
    if (!text) {
      text = el("span");
      text.dataset.tokens = "figure";
      td.prepend(text);
    }
    text.textContent = figure.text;
    td.title = figure.title;
    td.classList.toggle("estimate", figure.estimated);
    td.dataset.measured = Number.isFinite(row.total_tokens) ? String(row.total_tokens) : "";
    td.dataset.estimated = String(row.estimated_tokens ?? 0);
  }
}

function fill(tr, row) {
  tr.dataset.seq = row.seq;
  setText(tr, "name", truncate(row.name, 90));
  setText(tr, "system", row.system);
  setCount(tr, "agent_count", row.agent_count);
  setCount(tr, "event_count", row.event_count);
  setTokens(tr, row);
  setText(tr, "duration_s", formatDuration(row));
  setText(tr, "reward", formatReward(row.reward));
  setText(tr, "labels", truncate(row.labels, 60));
  setLive(tr.querySelector(".col-name"), row);
}

function newRow(row) {
  const tr = document.createElement("tr");
  tr.dataset.traceId = row.id;
  tr.dataset.kind = row.kind;
  tr.className = "just-added";
  const pick = el("td", null, "col-pick");
  const box = el("input");
  Object.assign(box, { type: "checkbox", name: "compare", value: String(row.id) });
  box.setAttribute("aria-label", `Select ${truncate(row.name, 40)} to compare`);
  pick.append(box);
  const name = el("td", null, "col-name");
  const link = el("a");
  Object.assign(link, { href: `/traces/${row.id}/` });
  link.dataset.col = "name";
  name.append(link);
  const format = el("td", null, "secondary");
  format.append(el("code", row.source_format));
  const cell = (column, className) => {
    const td = el("td", null, className);
    td.dataset.col = column;
    return td;
  };
  const created = el("td", "just now", "col-created");
  created.title = row.created_at || "";
  tr.append(
    pick,
    name,
    cell("system", "secondary"),
    format,
    cell("agent_count", "num"),
    cell("event_count", "num"),
    cell("total_tokens", "num secondary"),
    cell("duration_s", "num"),
    cell("reward", "num"),
    cell("labels", "labels secondary"),
    created,
  );
  fill(tr, row);
  return tr;
}

function showNotice() {
  const notice = document.querySelector("[data-testid=live-notice]");
  if (!notice || !waiting) return;
  notice.querySelector("[data-live-notice-text]").textContent =
    `${waiting} new trace${waiting === 1 ? "" : "s"} since this page loaded.`;
  notice.querySelector("a").href = window.location.pathname + window.location.search;
  notice.hidden = false;
}

function apply(row) {
  applied += 1;
  const tr = document.querySelector(`tr[data-trace-id="${row.id}"]`);
  if (tr) {
    if (rows.accept(row)) fill(tr, row);
    return;
  }
  if (rows.known(row.id) || !rows.accept(row) || !matchesFilters(row, config.filters)) return;
  if (!tbody) {
    window.location.reload(); // the empty state: the first trace brings the table
    return;
  }
  if (!config.insertable) {
    waiting += 1;
    showNotice();
    return;
  }
  tbody.prepend(newRow(row));
  added += 1;
  while (tbody.rows.length > PAGE_SIZE) tbody.lastElementChild.remove();
  const count = document.querySelector("[data-testid=trace-count]");
  if (count) {
    const n = Number(count.dataset.number) + 1;
    count.dataset.number = String(n);
    count.textContent = formatNumber(n);
    document.querySelector("[data-trace-count-noun]").textContent = n === 1 ? "trace" : "traces";
  }
}

const lastSeqs = new Map();
if (config) {
  for (const socket of config.sockets) {
    lastSeqs.set(socket.project, socket.seq);
    const connection = new LiveConnection(() => websocketUrl(socket.url), {
      seq: () => lastSeqs.get(socket.project),
      onMessage: (msg) => {
        if (msg.type !== "snapshot" && msg.type !== "delta") return;
        for (const row of msg.traces || []) apply(row);
        lastSeqs.set(socket.project, Math.max(lastSeqs.get(socket.project) ?? 0, msg.seq));
        document.body.dataset.listSeq = String(msg.seq);
        document.body.dataset.listApplied = String(applied);
      },
      onState: (state) => {
        document.body.dataset.listSocket = state;
      },
    });
    connection.start();
  }
  setInterval(() => {
    const now = Date.now();
    for (const [badge, until] of deadlines) {
      if (until <= now) {
        badge.remove();
        deadlines.delete(badge);
      }
    }
  }, 1000);
}

window.swarmscopeList = { added: () => added, waiting: () => waiting, applied: () => applied };
