/**
 * The pure parts of the transcript (panels/transcript.js): which tool call each tool result
 * answers, search over the rows, snippets of hits, row height estimates and the trace header's
 * facts (question, ground truth, outcome, labels). No DOM.
 */

/** Edge type that links a tool call (or the turn whose code ran) to its result. */
export const TOOL_EDGE = "tool_dependency";

/** Folded rows show at most this many lines of content (the CSS `--tx-fold-lines` agrees). */
export const FOLD_LINES = 8;
/** Estimated layout, in CSS pixels (app.css's transcript section). */
export const ROW_LAYOUT = { header: 24, line: 18, padding: 14, pair: 20, more: 24, chars: 70 };

/**
 * Pair tool calls and results over the `tool_dependency` edges: `resultsOf` maps the calling
 * event to its results (in edge order), `callOf` a result to its call. Edges whose ends are not
 * both known (when `has` is given) are left out.
 * @param {Iterable<{src: string, dst: string, type: string}>} edges
 * @param {(id: string) => boolean} [has]
 * @returns {{resultsOf: Map<string, string[]>, callOf: Map<string, string>}}
 */
export function pairToolCalls(edges, has = () => true) {
  const resultsOf = new Map();
  const callOf = new Map();
  for (const e of edges) {
    if (e.type !== TOOL_EDGE || e.src === e.dst || !has(e.src) || !has(e.dst)) continue;
    if (callOf.has(e.dst)) continue; // one call per result: the first edge wins
    callOf.set(e.dst, e.src);
    const list = resultsOf.get(e.src);
    if (list) list.push(e.dst);
    else resultsOf.set(e.src, [e.dst]);
  }
  return { resultsOf, callOf };
}

/** Event content as text: strings as they are, anything else as JSON ("" for none). */
export function contentText(ev) {
  if (ev == null || ev.content == null) return "";
  if (typeof ev.content === "string") return ev.content;
  try {
    return JSON.stringify(ev.content, null, 2);
  } catch {
    return String(ev.content);
  }
}

/** Normalise a search query: trimmed, lower case ("" matches nothing). */
export function normaliseQuery(query) {
  return String(query ?? "").trim().toLowerCase();
}

/** `text` with the characters that mean something in a RegExp escaped. */
const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The pattern (global, case-insensitive) that marks the transcript search's `query` in a row. */
export function queryPattern(query) {
  const q = normaliseQuery(query);
  return q ? new RegExp(escapeRegExp(q), "giu") : null;
}

/**
 * The pattern (global, case-insensitive) that marks in an event the words the trace list's
 * content search found it by (webapp/traces/search.py: letters and digits, whole words; a word
 * ending in `*` is a prefix): `"Paris capit*"` marks "Paris" and "capital", not "comparison".
 * null when `text` has no words.
 */
export function wordsPattern(text) {
  const words = [...String(text ?? "").matchAll(/([\p{L}\p{N}]+)(\*?)/gu)]
    .map(([, word, star]) => escapeRegExp(word) + (star ? "[\\p{L}\\p{N}]*" : ""));
  if (!words.length) return null;
  return new RegExp(`(?<![\\p{L}\\p{N}])(?:${words.join("|")})(?![\\p{L}\\p{N}])`, "giu");
}

/**
 * The rows whose text contains `query` (case-insensitive), in row order.
 * @param {string[]} ids row event ids, in order
 * @param {(id: string) => string} textOf lower-case searchable text of a row
 * @param {string} query
 * @returns {number[]} row indexes
 */
export function searchRows(ids, textOf, query) {
  const q = normaliseQuery(query);
  if (!q) return [];
  const hits = [];
  for (let i = 0; i < ids.length; i += 1) if (textOf(ids[i]).includes(q)) hits.push(i);
  return hits;
}

/**
 * The hit after (dir = 1) or before (-1) row `current` among `hits` (sorted), wrapping around;
 * from no current row, the first (or last). -1 when there are no hits.
 */
export function nextHit(hits, current, dir = 1) {
  if (!hits.length) return -1;
  if (current == null || current < 0) return dir > 0 ? hits[0] : hits[hits.length - 1];
  let lo = 0;
  let hi = hits.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (hits[mid] < current) lo = mid + 1;
    else hi = mid;
  }
  if (dir > 0) {
    const at = hits[lo] === current ? lo + 1 : lo;
    return hits[at % hits.length];
  }
  const at = lo - 1;
  return hits[(at + hits.length) % hits.length];
}

/**
 * A one-line snippet of `text` around the first match of `query`: `{before, match, after}`,
 * with "…" where cut. Whitespace runs become one space. Without a match, the start of the text.
 */
export function snippet(text, query, radius = 40) {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  const q = normaliseQuery(query);
  const at = q ? flat.toLowerCase().indexOf(q) : -1;
  if (at < 0) {
    const cut = flat.length > radius * 2;
    return { before: "", match: "", after: cut ? `${flat.slice(0, radius * 2)}…` : flat };
  }
  const from = Math.max(0, at - radius);
  const to = Math.min(flat.length, at + q.length + radius);
  return {
    before: (from > 0 ? "…" : "") + flat.slice(from, at),
    match: flat.slice(at, at + q.length),
    after: flat.slice(at + q.length, to) + (to < flat.length ? "…" : ""),
  };
}

/** Number of display lines of `text` at about `chars` characters a line. */
export function lineCount(text, chars = ROW_LAYOUT.chars) {
  if (!text) return 0;
  let lines = 0;
  for (const line of text.split("\n")) lines += Math.max(1, Math.ceil(line.length / chars));
  return lines;
}

/**
 * Estimated height of a row before it is measured: header, content (at most FOLD_LINES lines
 * unless `expanded`), "show more" when folded content is longer, and one line per paired event.
 */
export function estimateRowHeight(text, { expanded = false, paired = 0, chars = ROW_LAYOUT.chars } = {}) {
  const L = ROW_LAYOUT;
  const lines = lineCount(text, chars);
  const shown = expanded ? lines : Math.min(lines, FOLD_LINES);
  const more = lines > FOLD_LINES ? L.more : 0;
  return L.header + L.padding + shown * L.line + more + paired * L.pair;
}

function truthy(value) {
  if (typeof value === "boolean") return value;
  if (typeof value === "number") return value !== 0;
  const s = String(value ?? "").trim().toLowerCase();
  if (["true", "yes", "1", "correct", "success", "succeeded", "pass", "passed"].includes(s)) return true;
  if (["false", "no", "0", "incorrect", "failure", "failed", "fail", "error"].includes(s)) return false;
  return null;
}

function asText(value) {
  if (value == null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Fields of a task object that hold its text, first found first. */
const TASK_TEXT_FIELDS = ["question", "text", "content", "prompt", "description"];

/**
 * The task as the header reads it: a string as it is; an object by its text field
 * (TASK_TEXT_FIELDS), a SwarmSim task (`{id, level, subtasks}`, trainer/sim/tasks.py, no text of
 * its own) as "pivot-12/0: 12 subtasks (level pivot-12)"; anything else as JSON.
 */
function taskText(value) {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const field = TASK_TEXT_FIELDS.find((key) => typeof value[key] === "string" && value[key].trim());
    if (field) return value[field];
    if (Array.isArray(value.subtasks)) {
      const n = value.subtasks.length;
      return `${value.id ?? "task"}: ${n} subtask${n === 1 ? "" : "s"}${value.level ? ` (level ${value.level})` : ""}`;
    }
  }
  return asText(value);
}

/**
 * What the trace header shows about the task: question, ground truth, outcome and labels.
 * Who&When stores `question`, `ground_truth`, `is_correct` (Algorithm-Generated) or
 * `is_corrected` (Hand-Crafted) and `level` as trace attributes; `mistake_agent`, `mistake_step`
 * (with its event), `mistake_reason` as labels. SwarmSim stores its `task` as an object (taskText).
 * @param {object|null} trace the snapshot's trace object
 * @param {object[]} labels every label of the trace
 * @returns {{question: string, groundTruth: string, outcome: string, outcomeOk: boolean|null,
 *   mistake: {agent: string, step: string, eventId: string|null, reason: string}|null,
 *   labels: {key: string, value: string, eventId: string|null, agent: string|null}[]}}
 */
export function traceFacts(trace, labels) {
  const attributes = trace?.attributes ?? {};
  const question = taskText(attributes.question ?? attributes.task ?? attributes.input ?? "").trim();
  const groundTruth = asText(attributes.ground_truth ?? attributes.expected_answer ?? attributes.answer ?? "").trim();
  const outcomes = [];
  let outcomeOk = null;
  for (const key of ["is_correct", "is_corrected", "success", "outcome"]) {
    if (!(key in attributes)) continue;
    const ok = truthy(attributes[key]);
    if (ok !== null && outcomeOk === null) outcomeOk = ok;
    outcomes.push(ok === null ? `${key}: ${asText(attributes[key])}` : `${ok ? "correct" : "incorrect"} (${key}: ${asText(attributes[key])})`);
  }
  if (trace && Number.isFinite(trace.reward)) outcomes.push(`reward ${Number(trace.reward.toPrecision(4))}`);
  const byKey = (key) => labels.find((l) => l.key === key);
  const step = byKey("mistake_step");
  const agent = byKey("mistake_agent");
  const reason = byKey("mistake_reason");
  const mistake = step || agent || reason ? {
    agent: agent ? asText(agent.agent ?? agent.value) : "",
    step: step ? asText(step.value) : "",
    eventId: step?.event_id ?? null,
    reason: reason ? asText(reason.value) : "",
  } : null;
  return {
    question,
    groundTruth,
    outcome: outcomes.join(" · "),
    outcomeOk,
    mistake,
    labels: labels.map((l) => ({ key: l.key, value: asText(l.value), eventId: l.event_id ?? null, agent: l.agent ?? null })),
  };
}

/** The event id of the first `mistake_step` label that names one, or null. */
export function mistakeEventId(labels) {
  return labels.find((l) => l.key === "mistake_step" && l.event_id != null)?.event_id ?? null;
}
