/**
 * The inspector: everything about the selected event or agent. Trace content is untrusted
 * text: it is only ever put in the page with `textContent`, never as HTML.
 *
 * For an event: its content (fenced code blocks and JSON formatted), the Who&When mistake flag,
 * metadata, tokens and timing, incoming and outgoing edges (buttons that select the other
 * event), labels and free attributes. For an agent: role, parent and children, spawn times,
 * totals, system prompt, labels and its first events. Actions (e.g. "What if removed?") come
 * from the page for both.
 */

import { eventColor, roleColor } from "../lib/palette.js";
import { CONTENT_FROM_INPUT_TITLE, contentFromInput, formatSeconds, tokensEstimated } from "../lib/format.js";
import { el } from "../lib/dom.js";
import { commentsText } from "../model/comment_marks.js";

/** How many of an agent's events the inspector lists. */
const AGENT_EVENTS_LISTED = 50;

/** A token figure that is an estimate, marked as one (docs/metrics.md "Tokens"). */
/**
 * The "input" badge of an event whose content is its input (the source recorded no output:
 * `contentFromInput`), else null; the transcript, inspector and compare views show it by the content.
 */
export function inputBadge(ev) {
  if (!contentFromInput(ev)) return null;
  const badge = el("span", "input", "content-from-input");
  badge.title = CONTENT_FROM_INPUT_TITLE;
  badge.dataset.testid = "content-from-input";
  return badge;
}

function estimateNode(text) {
  const node = el("span", text, "estimate");
  node.title = "estimated from content (characters / 4): the source reported no usage here";
  return node;
}

/**
 * Split text into prose and code: fenced blocks (```lang ... ```, an unclosed fence runs to
 * the end) become code; text that is a whole JSON object or array becomes pretty JSON.
 * @param {string} text
 * @returns {{kind: "text"|"code", text: string, lang?: string}[]}
 */
export function splitCodeBlocks(text) {
  const trimmed = text.trim();
  if ((trimmed.startsWith("{") && trimmed.endsWith("}")) || (trimmed.startsWith("[") && trimmed.endsWith("]"))) {
    try {
      return [{ kind: "code", lang: "json", text: JSON.stringify(JSON.parse(trimmed), null, 2) }];
    } catch {
      // not JSON: fall through to prose
    }
  }
  const parts = [];
  const fence = /```([\w+#.-]*)[^\n]*\n([\s\S]*?)(?:\n?```|$)/g;
  let last = 0;
  for (let m = fence.exec(text); m !== null; m = fence.exec(text)) {
    if (m.index > last) parts.push({ kind: "text", text: text.slice(last, m.index) });
    parts.push({ kind: "code", lang: m[1], text: m[2] });
    last = fence.lastIndex;
  }
  if (last < text.length) parts.push({ kind: "text", text: text.slice(last) });
  return parts.filter((p) => p.kind === "code" || p.text.trim() !== "");
}

/** Prose with `inline code` spans, as DOM nodes (text only). */
function proseNodes(text) {
  const p = document.createElement("p");
  p.className = "content-text";
  const pieces = text.split(/`([^`\n]+)`/);
  pieces.forEach((piece, i) => {
    if (i % 2) {
      const code = document.createElement("code");
      code.textContent = piece;
      p.append(code);
    } else if (piece) {
      p.append(document.createTextNode(piece));
    }
  });
  return p;
}

/** Render `text` as a fragment of paragraphs and code blocks. */
export function renderContent(text) {
  const fragment = document.createDocumentFragment();
  for (const part of splitCodeBlocks(text)) {
    if (part.kind === "text") {
      fragment.append(proseNodes(part.text.replace(/^\n+|\n+$/g, "")));
      continue;
    }
    const pre = document.createElement("pre");
    pre.className = "content-code";
    const code = document.createElement("code");
    if (part.lang) code.dataset.lang = part.lang;
    code.textContent = part.text;
    pre.append(code);
    fragment.append(pre);
  }
  return fragment;
}

/** A small element with `textContent` and an optional class. */
export class Inspector {
  /**
   * @param {HTMLElement} root the `[data-testid=inspector]` element; its children are replaced
   * @param {{model: object, onSelectEvent: (id: string) => void,
   *   onSelectAgent: (name: string) => void, onClose: () => void,
   *   eventActions?: (ev: object) => Node|null, agentActions?: (name: string) => Node|null}} options
   *   `eventActions` / `agentActions` add controls under an event's / an agent's header (e.g.
   *   counterfactual.js's "What if removed?")
   */
  constructor(root, { model, onSelectEvent, onSelectAgent, onClose, eventActions = () => null,
    agentActions = () => null, onDiscuss = null }) {
    this.root = root;
    this.onDiscuss = onDiscuss;
    /** Event id -> number of comments (model/comment_marks.js), from the review panel. */
    this.commentCounts = new Map();
    this.eventActions = eventActions;
    this.agentActions = agentActions;
    this.model = model;
    this.onSelectEvent = onSelectEvent;
    this.onSelectAgent = onSelectAgent;
    this.onClose = onClose;
    /** What is shown: {kind: "event", id} | {kind: "agent", name} | null. */
    this.subject = null;
    this.close();
  }

  /** Show event `id`. */
  showEvent(id) {
    this.subject = { kind: "event", id };
    this._render();
  }

  /** Show agent `name`. */
  showAgent(name) {
    this.subject = { kind: "agent", name };
    this._render();
  }

  /** Re-render what is shown (after the model changed), keeping the scroll position. */
  refresh() {
    if (!this.subject) return;
    const { scrollTop } = this.root;
    this._render();
    this.root.scrollTop = scrollTop;
  }

  /** Comments per event changed: re-render an event shown. */
  setCommentCounts(counts) {
    this.commentCounts = counts;
    if (this.subject?.kind === "event") this.refresh();
  }

  /** Hide the inspector. */
  close() {
    this.subject = null;
    this.root.hidden = true;
    this.root.dataset.state = "closed";
    this.root.replaceChildren();
  }

  _render() {
    const body = this.subject.kind === "event"
      ? this._eventBody(this.model.events.get(this.subject.id))
      : this._agentBody(this.subject.name);
    const header = el("header", null, "inspector-header");
    const title = el("h2", this.subject.kind === "event" ? this.subject.id : this.subject.name, "inspector-title");
    title.dataset.testid = "inspector-title";
    const close = el("button", "×", "icon-button");
    close.type = "button";
    close.setAttribute("aria-label", "Close inspector (Esc)");
    close.addEventListener("click", () => this.onClose());
    header.append(el("span", this.subject.kind, "inspector-kind"), title, close);
    this.root.hidden = false;
    this.root.dataset.state = this.subject.kind;
    this.root.replaceChildren(header, ...body);
    this.root.scrollTop = 0;
  }

  _eventBody(ev) {
    if (!ev) return [el("p", "This event is not in the trace.", "muted")];
    const model = this.model;
    const out = [];
    if (model.isMistakeEvent(ev.id)) {
      const labels = model.labelsForEvent(ev.id).filter((l) => l.key === "mistake_step");
      const flag = el("div", `Who&When mistake step${labels.length ? ` (step ${labels[0].value})` : ""}`, "flag flag-mistake");
      flag.dataset.testid = "inspector-mistake";
      flag.setAttribute("role", "note");
      out.push(flag);
    }
    if (this.onDiscuss) {
      const n = this.commentCounts.get(ev.id) ?? 0;
      const comments = el("p", null, `inspector-comments${n ? " has-comments" : ""}`);
      comments.dataset.testid = "inspector-comments";
      comments.dataset.count = String(n);
      if (n) comments.append(el("span", commentsText(n), "comment-mark"), " ");
      const discuss = el("button", n ? "Read the thread" : "Comment on this event", "link-button");
      discuss.type = "button";
      discuss.dataset.testid = "inspector-discuss";
      discuss.addEventListener("click", () => this.onDiscuss(ev.id));
      comments.append(discuss);
      out.push(comments);
    }
    const type = el("span", ev.type, "type-chip");
    type.style.setProperty("--chip", eventColor(ev.type));
    const who = el("p", null, "inspector-who");
    who.append(type, " by ", this._agentLink(ev.agent));
    out.push(who);
    const actions = this.eventActions(ev);
    if (actions) out.push(actions);

    const content = el("section", null, "inspector-content");
    content.dataset.testid = "inspector-content";
    const badge = inputBadge(ev);
    if (badge) content.append(el("p", null, "content-from-input-note"));
    if (badge) content.lastChild.append(badge, ` ${CONTENT_FROM_INPUT_TITLE}`);
    if (typeof ev.content === "string" && ev.content !== "") content.append(renderContent(ev.content));
    else if (ev.content != null) content.append(renderContent(JSON.stringify(ev.content)));
    else content.append(el("p", ev.content_ref ? "Content stored by reference." : "No content.", "muted"));
    out.push(this._section("Content", content));

    const duration = Number.isFinite(ev.t_end) ? ev.t_end - ev.t : null;
    const rows = [
      ["step", model.stepOf(ev.id)],
      ["t", formatSeconds(ev.t)],
      ["t_end", Number.isFinite(ev.t_end) ? formatSeconds(ev.t_end) : model.isOpen(ev) ? "open" : null],
      ["duration", duration === null ? null : formatSeconds(duration)],
      ["role", ev.role],
      ["from", ev.from == null ? null : this._agentLink(ev.from)],
      ["to", ev.to == null ? null : this._agentLink(ev.to)],
      ["tool", ev.tool],
      ["tokens", Number.isFinite(ev.tokens) && tokensEstimated(ev) ? estimateNode(`~${ev.tokens} est.`) : ev.tokens],
      ["trusted", ev.trusted == null ? null : ev.trusted ? "yes" : "no"],
      ["content_ref", ev.content_ref],
      ["seq", ev.seq],
    ];
    out.push(this._section("Details", this._definitions(rows, "inspector-meta")));

    const { incoming, outgoing } = model.edgesOf(ev.id);
    const edges = el("div", null, "inspector-edges");
    edges.dataset.testid = "inspector-edges";
    edges.append(this._edgeList("Incoming", incoming, "src", "←"), this._edgeList("Outgoing", outgoing, "dst", "→"));
    out.push(this._section("Edges", edges));
    out.push(this._labelsSection(model.labelsForEvent(ev.id)));
    if (ev.attributes && Object.keys(ev.attributes).length) out.push(this._section("Attributes", this._json(ev.attributes)));
    return out;
  }

  _agentBody(name) {
    const model = this.model;
    const agent = model.agents.get(name);
    if (!agent) return [el("p", "This agent is not in the trace.", "muted")];
    const out = [];
    if (model.isMistakeAgent(name)) {
      const flag = el("div", "Who&When mistake agent", "flag flag-mistake");
      flag.dataset.testid = "inspector-mistake";
      flag.setAttribute("role", "note");
      out.push(flag);
    }
    const role = model.roleOf(name);
    const chip = el("span", role ?? "no role", "type-chip");
    chip.style.setProperty("--chip", roleColor(role));
    const who = el("p", null, "inspector-who");
    who.append(chip, agent.implicit ? " (named by events only)" : "");
    out.push(who);
    const actions = this.agentActions(name);
    if (actions) out.push(actions);
    const stats = model.agentStats().get(name);
    const parent = model.parentOf(name);
    const children = model.childrenOf(name);
    const kids = el("span");
    children.forEach((c, i) => kids.append(i ? ", " : "", this._agentLink(c)));
    const rows = [
      ["parent", parent ? this._agentLink(parent) : null],
      ["spawned", children.length ? kids : null],
      ["spawned_at", model.spawnedAt(name) === null ? null : formatSeconds(model.spawnedAt(name))],
      ["despawned_at", Number.isFinite(agent.despawned_at) ? formatSeconds(agent.despawned_at) : null],
      ["events", stats?.events ?? 0],
      ["tokens", stats?.tokens || null],
      ["tokens, estimated", stats?.estimatedTokens ? estimateNode(`~${stats.estimatedTokens} est.`) : null],
    ];
    const meta = this._definitions(rows, "inspector-meta");
    out.push(this._section("Details", meta));
    if (agent.system_prompt) {
      const prompt = el("section", null, "inspector-content");
      prompt.dataset.testid = "inspector-content";
      prompt.append(renderContent(agent.system_prompt));
      out.push(this._section("System prompt", prompt));
    }
    out.push(this._labelsSection(model.labelsForAgent(name)));
    const events = model.eventsOfAgent(name);
    const list = el("ul", null, "link-list");
    for (const id of events.slice(0, AGENT_EVENTS_LISTED)) {
      const li = el("li");
      li.append(this._eventLink(id));
      list.append(li);
    }
    if (events.length > AGENT_EVENTS_LISTED) list.append(el("li", `… and ${events.length - AGENT_EVENTS_LISTED} more`, "muted"));
    out.push(this._section("Events", list));
    if (agent.attributes && Object.keys(agent.attributes).length) out.push(this._section("Attributes", this._json(agent.attributes)));
    return out;
  }

  _section(title, body) {
    const section = el("section", null, "inspector-section");
    section.append(el("h3", title), body);
    return section;
  }

  /** A <dl> of [name, value] rows; null values are left out; values may be nodes. */
  _definitions(rows, testid) {
    const dl = el("dl", null, "meta");
    dl.dataset.testid = testid;
    for (const [name, value] of rows) {
      if (value === null || value === undefined || value === "") continue;
      const dd = el("dd");
      if (value instanceof Node) dd.append(value);
      else dd.textContent = String(value);
      dl.append(el("dt", name), dd);
    }
    return dl;
  }

  _edgeList(title, edges, end, arrow) {
    const wrap = el("div");
    wrap.append(el("h4", `${title} (${edges.length})`));
    if (!edges.length) return wrap;
    const list = el("ul", null, "link-list");
    for (const e of edges) {
      const li = el("li");
      li.append(el("span", `${arrow} ${e.type}`, `edge-type edge-${e.type}`), " ", this._eventLink(e[end]));
      list.append(li);
    }
    wrap.append(list);
    return wrap;
  }

  _labelsSection(labels) {
    const list = el("ul", null, "label-list");
    list.dataset.testid = "inspector-labels";
    for (const l of labels) {
      const li = el("li");
      li.append(el("span", l.key, "label-key"), " ", el("span", typeof l.value === "string" ? l.value : JSON.stringify(l.value)));
      if (l.source) li.append(" ", el("span", `(${l.source})`, "muted"));
      list.append(li);
    }
    if (!labels.length) list.append(el("li", "No labels.", "muted"));
    return this._section("Labels", list);
  }

  _json(value) {
    const pre = el("pre", JSON.stringify(value, null, 2), "content-code");
    return pre;
  }

  /** A button naming event `id` (type · agent) that selects it. */
  _eventLink(id) {
    const ev = this.model.events.get(id);
    const button = el("button", ev ? `${ev.type} · ${ev.agent} · ${id}` : `${id} (not loaded)`, "link-button");
    button.type = "button";
    button.dataset.eventId = id;
    button.disabled = !ev;
    button.addEventListener("click", () => this.onSelectEvent(id));
    return button;
  }

  /** A button naming agent `name` that selects it. */
  _agentLink(name) {
    const button = el("button", name, "link-button");
    button.type = "button";
    button.dataset.agent = name;
    button.disabled = !this.model.agents.has(name);
    button.addEventListener("click", () => this.onSelectAgent(name));
    return button;
  }
}
