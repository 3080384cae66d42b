/**
 * Review panel of the trace page (templates/review/panel.html): comments on the trace, the
 * selected event or an attribution, with replies, edit and delete of one's own; agree/disagree
 * votes on attributions; the trace's review status. Live over `/ws/projects/<id>/` (the live
 * protocol, swarmscope/protocol.py, through LiveConnection): activity of other reviewers appears
 * without a reload; a reconnect asks for the activity after the last seq applied (`?seq=N`), and
 * when the server answers with a fresh snapshot or a `snapshot_too_large` referral instead, the
 * panel re-reads the comments over HTTP.
 *
 * Shareable links: `?attribution=<id>` opens the panel on that attribution, `?event=<id>` selects
 * the event on the page (through `window.swarmscope`) and the panel follows the selection.
 * Comment HTML comes from the server rendered and sanitised (Markdown → nh3); everything else is
 * set as text.
 */

import { csrfToken, el } from "../lib/dom.js";
import { LiveConnection, NO_ACCESS_CODES, websocketUrl } from "../lib/live_connection.js";

/** The key of a review target: "trace", "event:<id>" or "attribution:<id>". */
export function targetKey(target) {
  return target.kind === "trace" ? "trace" : `${target.kind}:${target.id}`;
}

/** "2 agree · 1 disagree" (or "No votes yet"). */
export function tallyText(votes) {
  if (!votes || (votes.agree === 0 && votes.disagree === 0)) return "No votes yet";
  return `${votes.agree} agree · ${votes.disagree} disagree`;
}

/** Comments of one target in thread order: each top-level comment followed by its replies. */
export function threadOrder(comments, key) {
  const mine = comments.filter((c) => targetKey(c.target) === key);
  const children = new Map();
  for (const c of mine) {
    if (c.parent !== null) children.set(c.parent, [...(children.get(c.parent) || []), c]);
  }
  const out = [];
  const walk = (c, depth) => {
    out.push({ comment: c, depth });
    for (const r of children.get(c.id) || []) walk(r, depth + 1);
  };
  const ids = new Set(mine.map((c) => c.id));
  for (const c of mine) if (c.parent === null || !ids.has(c.parent)) walk(c, 0);
  return out;
}

/**
 * What one message of `/ws/projects/<id>/` does to a panel that last applied `lastSeq` (null
 * before the first snapshot): `{action, seq, activities}` with action "apply" (a newer delta: apply
 * its activities, oldest first), "load" (the first snapshot: the panel loaded its state over HTTP
 * just before), "reload" (a later snapshot: activity may have been missed, re-read over HTTP),
 * "refer" (`snapshot_too_large`: re-read over HTTP, then reconnect from `seq`) or "ignore".
 * The server fills gaps itself (a delta holds everything after the seq it last sent), so a jump
 * in seq is not a gap: a project's seqs are Activity ids, shared with other projects.
 */
export function feedStep(lastSeq, msg) {
  const keep = { action: "ignore", seq: lastSeq, activities: [] };
  if (msg?.type === "snapshot") return { action: lastSeq === null ? "load" : "reload", seq: msg.seq, activities: [] };
  if (msg?.type === "delta") {
    if (lastSeq !== null && msg.seq <= lastSeq) return keep;
    return { action: "apply", seq: msg.seq, activities: msg.activities ?? [] };
  }
  if (msg?.type === "error" && msg.code === "snapshot_too_large") return { action: "refer", seq: msg.seq, activities: [] };
  return keep;
}

class ReviewPanel {
  constructor(root) {
    this.root = root;
    this.traceId = Number(root.dataset.traceId);
    this.projectId = Number(root.dataset.projectId);
    this.field = (name) => root.querySelector(`[data-field="${name}"]`);
    this.comments = [];
    this.attributions = [];
    this.votes = new Map(); // attribution id -> tally
    this.user = "";
    this.canReview = false;
    this.replyTo = null;
    this.selectedEvent = null;
    this.seq = null; // last seq of /ws/projects/<id>/ applied
    this.connection = null;
    const params = new URLSearchParams(window.location.search);
    this.key = params.get("attribution") ? `attribution:${params.get("attribution")}` : "trace";
    this.wantEvent = params.get("event");
    this.bind();
  }

  bind() {
    // Failed requests show their error in the panel (request()); nothing else to do with them here.
    const quietly = (promise) => promise.catch(() => {});
    this.field("target").addEventListener("change", (e) => quietly(this.show(e.target.value)));
    this.field("form").addEventListener("submit", (e) => { e.preventDefault(); quietly(this.submit()); });
    this.field("cancel-reply").addEventListener("click", () => this.setReply(null));
    this.field("status").addEventListener("change", (e) =>
      quietly(this.request("PUT", `/api/review/traces/${this.traceId}/status/`, { status: e.target.value })));
    this.field("mistake-save").addEventListener("click", () => quietly(this.saveMistake()));
    this.field("toggle").addEventListener("click", () => this.setOpen(this.field("body").hidden));
    for (const button of this.root.querySelectorAll("[data-vote]")) {
      button.addEventListener("click", () => quietly(this.vote(button.dataset.vote)));
    }
    // The page mirrors its selection in <body data-selected>: an event id, or "agent:<name>".
    new MutationObserver(() => this.followSelection()).observe(document.body,
      { attributes: true, attributeFilter: ["data-selected"] });
  }

  /** Open or close the panel's body (closed, the panel is one header line beside the inspector). */
  setOpen(open) {
    this.field("body").hidden = !open;
    const toggle = this.field("toggle");
    toggle.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? "Close" : "Open";
  }

  async start() {
    // A shared link to an attribution or an event opens the panel on it.
    if (this.key !== "trace" || this.wantEvent) this.setOpen(true);
    await Promise.all([this.loadComments(), this.loadAttributions(), this.loadStatus(), this.loadMistakes()]);
    if (window.swarmscope) {
      await window.swarmscope.ready;
      const agents = this.field("mistake-agent");
      agents.replaceChildren(...window.swarmscope.model.agentOrder().map((name) => new Option(name, name)));
      if (this.wantEvent) window.swarmscope.selectEvent(this.wantEvent);
    }
    this.field("mistake-form").hidden = !this.canReview;
    this.followSelection();
    this.renderTargets();
    this.show(this.key);
    this.connect();
  }

  async request(method, url, body) {
    const headers = { Accept: "application/json" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      headers["X-CSRFToken"] = csrfToken();
    }
    const response = await fetch(url, { method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body) });
    const doc = await response.json().catch(() => ({}));
    const error = this.field("error");
    if (!response.ok) {
      error.textContent = doc.error || `${response.status} ${response.statusText}`;
      error.hidden = false;
      throw new Error(error.textContent);
    }
    error.hidden = true;
    return doc;
  }

  async loadComments() {
    const doc = await this.request("GET", `/api/review/comments/?trace=${this.traceId}`);
    this.comments = doc.results;
    this.user = doc.user;
    this.canReview = doc.can_review;
    this.field("form").hidden = !this.canReview;
    this.field("readonly").hidden = this.canReview;
    this.field("status").disabled = !this.canReview;
    for (const b of this.root.querySelectorAll("[data-vote]")) b.disabled = !this.canReview;
  }

  async loadAttributions() {
    const doc = await this.request("GET", this.root.dataset.attributionsUrl);
    this.attributions = doc.results;
  }

  async loadStatus() {
    this.field("status").value = (await this.request("GET", `/api/review/traces/${this.traceId}/status/`)).status;
  }

  async loadMistakes() {
    const labels = (await this.request("GET", `/api/review/traces/${this.traceId}/mistake-labels/`)).results;
    this.field("mistake-count").textContent = labels.length ? `(${labels.length})` : "(none yet)";
    this.field("mistake-labels").replaceChildren(...labels.map((lb) =>
      el("li", `${lb.reviewer}: ${lb.agent} at step ${lb.event_id}${lb.reason ? ` — ${lb.reason}` : ""}`)));
  }

  async saveMistake() {
    if (!this.selectedEvent) return;
    await this.request("PUT", `/api/review/traces/${this.traceId}/mistake-labels/`,
      { agent: this.field("mistake-agent").value, event_id: this.selectedEvent });
    await this.loadMistakes();
  }

  followSelection() {
    const selected = document.body.dataset.selected;
    const event = selected && !selected.startsWith("agent:") ? selected : null;
    if (event === this.selectedEvent) return;
    this.selectedEvent = event;
    this.field("mistake-step").textContent = event ? `step: event ${event}` : "Select an event";
    this.field("mistake-save").disabled = !event;
    const acting = event && window.swarmscope?.model.events.get(event)?.agent;
    if (acting) this.field("mistake-agent").value = acting;
    this.renderTargets();
    if (event) this.show(`event:${event}`).catch(() => {});
    else if (this.key.startsWith("event:")) this.show("trace").catch(() => {});
  }

  renderTargets() {
    const select = this.field("target");
    select.replaceChildren(new Option("This trace", "trace"));
    if (this.selectedEvent) select.append(new Option(`Selected event ${this.selectedEvent}`, `event:${this.selectedEvent}`));
    for (const a of this.attributions) {
      const estimate = Number(a.estimate).toFixed(3);
      select.append(new Option(`Attribution #${a.id}: ${a.target} (Δ ${estimate}, ${a.method})`, `attribution:${a.id}`));
    }
    if ([...select.options].some((o) => o.value === this.key)) select.value = this.key;
  }

  async show(key) {
    this.key = key;
    this.field("target").value = key;
    this.setReply(null);
    const share = new URL(window.location.pathname, window.location.origin);
    if (key.startsWith("event:")) share.searchParams.set("event", key.slice(6));
    if (key.startsWith("attribution:")) share.searchParams.set("attribution", key.slice(12));
    this.field("share").href = share.pathname + share.search;
    const votes = this.field("votes");
    votes.hidden = !key.startsWith("attribution:");
    if (!votes.hidden) {
      const id = Number(key.slice(12));
      if (!this.votes.has(id)) this.votes.set(id, await this.request("GET", `/api/review/attributions/${id}/votes/`));
    }
    this.render();
  }

  target() {
    if (this.key === "trace") return { kind: "trace", id: this.traceId };
    const [kind, ...rest] = this.key.split(":");
    const id = rest.join(":");
    return kind === "event" ? { kind, id, trace: this.traceId } : { kind, id: Number(id) };
  }

  render() {
    const list = this.field("comments");
    const rows = threadOrder(this.comments, this.key);
    list.replaceChildren(...rows.map(({ comment, depth }) => this.renderComment(comment, depth)));
    this.field("empty").hidden = rows.length > 0;
    if (this.key.startsWith("attribution:")) {
      const votes = this.votes.get(Number(this.key.slice(12)));
      const tally = this.field("tally");
      tally.textContent = tallyText(votes);
      tally.title = (votes?.votes || []).map((v) => `${v.user}: ${v.value}${v.reason ? ` (${v.reason})` : ""}`).join("\n");
      const mine = (votes?.votes || []).find((v) => v.user === this.user);
      for (const b of this.root.querySelectorAll("[data-vote]")) b.setAttribute("aria-pressed", String(mine?.value === b.dataset.vote));
    }
  }

  renderComment(c, depth) {
    const item = el("li", null, "review-comment");
    item.dataset.commentId = c.id;
    item.style.marginLeft = `${Math.min(depth, 4) * 1.25}rem`;
    const head = el("p", null, "meta");
    head.append(el("strong", c.author), ` · ${new Date(c.created_at).toLocaleString()}`);
    if (c.edited_at) head.append(" · edited");
    item.append(head);
    const body = el("div", null, "review-body");
    if (c.deleted) body.append(el("em", "(deleted)", "muted"));
    else body.innerHTML = c.body_html; // rendered and sanitised by the server (nh3)
    item.append(body);
    if (!c.deleted && this.canReview) {
      const actions = el("div", null, "button-row");
      const reply = el("button", "Reply", "link-button");
      reply.type = "button";
      reply.addEventListener("click", () => this.setReply(c));
      actions.append(reply);
      if (c.author === this.user) {
        const edit = el("button", "Edit", "link-button");
        edit.type = "button";
        edit.addEventListener("click", () => this.edit(c).catch(() => {}));
        const remove = el("button", "Delete", "link-button");
        remove.type = "button";
        remove.addEventListener("click", () => this.remove(c).catch(() => {}));
        actions.append(edit, remove);
      }
      item.append(actions);
    }
    return item;
  }

  setReply(comment) {
    this.replyTo = comment;
    const note = this.field("replying");
    note.hidden = !comment;
    note.textContent = comment ? `Replying to ${comment.author}` : "";
    this.field("cancel-reply").hidden = !comment;
    if (comment) this.field("form").querySelector("textarea").focus();
  }

  upsert(comment) {
    const index = this.comments.findIndex((c) => c.id === comment.id);
    if (index >= 0) this.comments[index] = comment;
    else this.comments.push(comment);
  }

  async submit() {
    const textarea = this.field("form").querySelector("textarea");
    const body = textarea.value.trim();
    if (!body) return;
    const doc = { ...this.target(), body };
    if (this.replyTo) doc.parent = this.replyTo.id;
    this.upsert(await this.request("POST", "/api/review/comments/", doc));
    textarea.value = "";
    this.setReply(null);
    this.render();
  }

  async edit(comment) {
    const text = window.prompt("Edit your comment (Markdown)", comment.body);
    if (text === null || !text.trim()) return;
    this.upsert(await this.request("PATCH", `/api/review/comments/${comment.id}/`, { body: text }));
    this.render();
  }

  async remove(comment) {
    if (!window.confirm("Delete this comment?")) return;
    this.upsert(await this.request("DELETE", `/api/review/comments/${comment.id}/`));
    this.render();
  }

  async vote(value) {
    const id = Number(this.key.slice(12));
    const reason = this.field("reason").value.trim();
    this.votes.set(id, await this.request("PUT", `/api/review/attributions/${id}/votes/`, { value, reason }));
    this.render();
  }

  connect() {
    const badge = this.field("live");
    this.connection = new LiveConnection(websocketUrl(`/ws/projects/${this.projectId}/`), {
      seq: () => this.seq,
      onOpen: () => {
        badge.dataset.state = "live";
        badge.textContent = "Live";
      },
      onClose: (code) => {
        badge.dataset.state = "offline";
        badge.textContent = NO_ACCESS_CODES.includes(code) ? "No access" : "Reconnecting…";
      },
      onMessage: (msg) => this.receive(msg),
    });
    this.connection.start();
  }

  /** Handle one message of the project's socket (feedStep). */
  receive(msg) {
    const step = feedStep(this.seq, msg);
    if (step.action === "ignore") return;
    this.seq = step.seq;
    if (step.action === "apply") for (const activity of step.activities) this.apply(activity);
    if (step.action === "reload" || step.action === "refer") {
      this.loadComments().then(() => this.render()).catch(() => {});
    }
    // Reconnects with ?seq=N: the server sends only what came after the referral's seq.
    if (step.action === "refer") this.connection.socket?.close();
  }

  /** Apply one activity of the project (webapp.review.feed.activity_wire) if it is on this trace. */
  apply(activity) {
    if (activity.target.trace !== this.traceId) return;
    if (activity.data.comment) this.upsert(activity.data.comment);
    if (activity.verb === "voted") this.votes.set(Number(activity.target.id), activity.data.votes);
    if (activity.verb === "set_status") this.field("status").value = activity.data.status;
    if (activity.verb === "labelled") this.loadMistakes().catch(() => {});
    this.render();
  }
}

const root = typeof document === "undefined" ? null : document.querySelector('[data-testid="review-panel"]');
if (root) {
  const panel = new ReviewPanel(root);
  window.swarmscopeReview = panel;
  panel.start().catch((error) => console.warn("review panel:", error.message));
}
