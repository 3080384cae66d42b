/**
 * Review panel of the trace page (templates/review/panel.html): comments on the trace, the
 * selected event or an attribution, with replies, edit and delete of one's own; agree/disagree
 * buttons on every attribution row, the rows grouped by the job and estimator that computed them
 * (`/api/review/traces/<id>/attribution-votes/`): a vote goes to the row it is on, one's own shows
 * pressed and can be changed or withdrawn (DELETE); the trace's review status. Live over `/ws/projects/<id>/` (the live
 * protocol, swarmscope/protocol.py, through LiveConnection): activity of other reviewers appears
 * without a reload; a reconnect asks for the activity after the last seq applied (`?seq=N`), and
 * when the server answers with a fresh snapshot or a `snapshot_too_large` referral instead, the
 * panel re-reads the comments over HTTP.
 *
 * Shareable links: `?attribution=<id>` opens the panel on that attribution, `?event=<id>` selects
 * the event on the page (through `window.swarmscope`) and the panel follows the selection.
 * Markers: every change of the comments dispatches `swarmscope:comments` on document (detail
 * {events: Map event id -> count}), which the trace page draws on transcript rows, lanes and the
 * inspector; `swarmscope:discuss` (detail {event}) opens the panel on that event's thread. The
 * header's bell is live on its own socket (lib/notification_bell.js). Typing @ in the comment box
 * offers the project's members (panels/mention_picker.js).
 * Comment HTML comes from the server rendered and sanitised (Markdown → nh3); everything else is
 * set as text.
 */

import { csrfToken, el } from "../lib/dom.js";
import { LiveConnection, NO_ACCESS_CODES, websocketUrl } from "../lib/live_connection.js";
import { eventCommentCounts } from "../model/comment_marks.js";
import { MentionPicker } from "./mention_picker.js";

/** The key of a review target: "trace", "event:<id>" or "attribution:<id>". */
export function targetKey(target) {
  return target.kind === "trace" ? "trace" : `${target.kind}:${target.id}`;
}

/** "2 agree · 1 disagree" (or "No votes yet"). */
export function tallyText(votes) {
  if (!votes || (votes.agree === 0 && votes.disagree === 0)) return "No votes yet";
  return `${votes.agree} agree · ${votes.disagree} disagree`;
}

/** The caller's vote in a tally ("agree" | "disagree"), or null. */
export function myVote(tally, user) {
  return (tally?.votes || []).find((v) => v.user === user)?.value ?? null;
}

/** A vote-row group's heading: "Job #12 · loo · 3 attributions" ("Stored without a job" for none). */
export function groupHeading(group) {
  const n = group.rows.length;
  const job = group.job === null ? "Stored without a job" : `Job #${group.job}`;
  return `${job} · ${group.method} · ${n} attribution${n === 1 ? "" : "s"}`;
}

/** What an attribution's target names, for a row: "event e5", "agent planner", or the target as stored. */
export function targetText(target) {
  if (!target.includes(", ")) {
    if (target.startsWith("event:")) return `event ${target.slice(6)}`;
    if (target.startsWith("agent:")) return `agent ${target.slice(6)}`;
  }
  return target;
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
    this.groups = []; // attribution rows grouped by job and estimator (services.list_attribution_votes)
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
    new MentionPicker(this.field("form").querySelector("textarea"), {
      loadMembers: async () => (await this.request("GET", `/api/review/projects/${this.projectId}/members/`)).members,
    });
    this.field("status").addEventListener("change", (e) =>
      quietly(this.request("PUT", `/api/review/traces/${this.traceId}/status/`, { status: e.target.value })));
    this.field("mistake-save").addEventListener("click", () => quietly(this.saveMistake()));
    this.field("toggle").addEventListener("click", () => this.setOpen(this.field("body").hidden));
    // The page mirrors its selection in <body data-selected>: an event id, or "agent:<name>".
    new MutationObserver(() => this.followSelection()).observe(document.body,
      { attributes: true, attributeFilter: ["data-selected"] });
    document.addEventListener("swarmscope:discuss", (e) => {
      this.setOpen(true);
      quietly(this.show(`event:${e.detail.event}`));
      this.field("form").querySelector("textarea")?.focus();
    });
  }

  /** Tell the page where the comments are (markers). */
  publish() {
    document.dispatchEvent(new CustomEvent("swarmscope:comments", {
      detail: { events: eventCommentCounts(this.comments, this.traceId) },
    }));
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
    await Promise.all([this.loadComments(), this.loadVoteRows(), this.loadStatus(), this.loadMistakes()]);
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
    if (method !== "GET") headers["X-CSRFToken"] = csrfToken(); // a DELETE has no body but needs it too
    if (body !== undefined) headers["Content-Type"] = "application/json";
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
    this.publish();
    this.user = doc.user;
    this.canReview = doc.can_review;
    this.field("form").hidden = !this.canReview;
    this.field("readonly").hidden = this.canReview;
    this.field("status").disabled = !this.canReview;
  }

  /** Every attribution of the trace with its tally, grouped by job and estimator. */
  async loadVoteRows() {
    const doc = await this.request("GET", `/api/review/traces/${this.traceId}/attribution-votes/`);
    this.groups = doc.groups;
    for (const group of doc.groups) for (const row of group.rows) this.votes.set(row.attribution.id, row);
    this.renderVoteRows();
  }

  /** The attribution rows: per group a table, each row its target, Δ and interval, tally, and
   * Agree / Disagree (pressed: one's own vote; pressing it again withdraws it) and Discuss. */
  renderVoteRows() {
    const box = this.field("vote-rows");
    box.hidden = this.groups.length === 0;
    // A re-render (a live vote, one's own included) keeps the keyboard on the same row's button.
    const focused = box.contains(document.activeElement) ? document.activeElement : null;
    const focusRow = focused?.closest("tr[data-attribution]")?.dataset.attribution;
    const focusTestid = focused?.dataset.testid;
    const wasOpen = new Set([...box.querySelectorAll("details[open]")].map((d) => d.dataset.group));
    const parts = this.groups.map((group, index) => {
      const key = `${group.job}:${group.method}`;
      const details = el("details", null, "vote-group");
      details.dataset.group = key;
      details.dataset.testid = "vote-group";
      // the newest group opens first; a group the reader opened stays open across re-renders
      details.open = wasOpen.size ? wasOpen.has(key) : index === 0;
      if (group.rows.some((r) => `attribution:${r.attribution.id}` === this.key)) details.open = true;
      details.append(el("summary", groupHeading(group)));
      const table = el("table", null, "vote-table");
      const head = el("tr");
      for (const h of ["Target", "Δ [95 % interval]", "Votes", "Your vote"]) head.append(el("th", h));
      table.append(el("thead"), el("tbody"));
      table.tHead.append(head);
      for (const row of group.rows) table.tBodies[0].append(this.renderVoteRow(row.attribution));
      details.append(table);
      return details;
    });
    this.field("vote-groups").replaceChildren(...parts);
    this.field("vote-reason").disabled = !this.canReview;
    if (focusRow && focusTestid) {
      box.querySelector(`tr[data-attribution="${focusRow}"] [data-testid="${focusTestid}"]`)?.focus();
    }
  }

  renderVoteRow(a) {
    const tally = this.votes.get(a.id);
    const mine = myVote(tally, this.user);
    const tr = el("tr");
    tr.dataset.testid = "vote-row";
    tr.dataset.attribution = a.id;
    tr.dataset.target = a.target;
    if (this.key === `attribution:${a.id}`) tr.setAttribute("aria-current", "true");
    const fmt = (x) => Number(x).toFixed(3);
    const count = el("td", tallyText(tally));
    count.dataset.testid = "vote-tally";
    count.title = (tally?.votes || []).map((v) => `${v.user}: ${v.value}${v.reason ? ` (${v.reason})` : ""}`).join("\n");
    const actions = el("td", null, "vote-actions");
    const label = `${targetText(a.target)} (attribution #${a.id})`;
    for (const value of ["agree", "disagree"]) {
      const b = el("button", value === "agree" ? "Agree" : "Disagree", "button small");
      b.type = "button";
      b.dataset.vote = value;
      b.dataset.testid = `vote-${value}`;
      b.setAttribute("aria-pressed", String(mine === value));
      b.setAttribute("aria-label", mine === value ? `Withdraw your ${value} vote on ${label}` : `${value} with ${label}`);
      b.disabled = !this.canReview;
      b.addEventListener("click", () => this.vote(a.id, mine === value ? null : value, value).catch(() => {}));
      actions.append(b);
    }
    const discuss = el("button", "Discuss", "link-button");
    discuss.type = "button";
    discuss.dataset.testid = "vote-discuss";
    discuss.setAttribute("aria-label", `Discuss ${label}`);
    discuss.addEventListener("click", () => this.show(`attribution:${a.id}`).catch(() => {}));
    actions.append(discuss);
    tr.append(el("td", targetText(a.target)), el("td", `${fmt(a.estimate)} [${fmt(a.ci_low)}, ${fmt(a.ci_high)}]`),
      count, actions);
    tr.title = `attribution #${a.id}, ${a.method}, ${a.n_rollouts} rollouts`;
    return tr;
  }

  /** The attribution (from the vote rows) with this id, or undefined. */
  attribution(id) {
    for (const group of this.groups) for (const row of group.rows) if (row.attribution.id === id) return row.attribution;
    return undefined;
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
    // Only the attribution under discussion (its row's Discuss, or a shared link): votes are on the rows.
    if (this.key.startsWith("attribution:")) {
      const a = this.attribution(Number(this.key.slice(12)));
      if (a) select.append(new Option(`Attribution #${a.id}: ${targetText(a.target)} (${a.method})`, this.key));
    }
    if ([...select.options].some((o) => o.value === this.key)) select.value = this.key;
  }

  async show(key) {
    this.key = key;
    this.renderTargets();
    this.field("target").value = key;
    this.setReply(null);
    const share = new URL(window.location.pathname, window.location.origin);
    if (key.startsWith("event:")) share.searchParams.set("event", key.slice(6));
    if (key.startsWith("attribution:")) share.searchParams.set("attribution", key.slice(12));
    this.field("share").href = share.pathname + share.search;
    this.render();
    this.renderVoteRows();
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
    this.publish();
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

  /** Vote `value` on attribution `id` (the row's), or withdraw one's vote (`value` null); focus
   * stays on the row's `pressed` button. */
  async vote(id, value, pressed = value) {
    const url = `/api/review/attributions/${id}/votes/`;
    const reasonField = this.field("vote-reason");
    const tally = value === null ? await this.request("DELETE", url)
      : await this.request("PUT", url, { value, reason: reasonField.value.trim() });
    if (value !== null) reasonField.value = "";
    this.votes.set(id, tally);
    this.renderVoteRows();
    // keep the keyboard where it was: on the same row's button (a click may have moved it)
    this.field("vote-groups").querySelector(`tr[data-attribution="${id}"] [data-vote="${pressed}"]`)?.focus();
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
      this.loadVoteRows().catch(() => {});
    }
    // Reconnects with ?seq=N: the server sends only what came after the referral's seq.
    if (step.action === "refer") this.connection.socket?.close();
  }

  /** Apply one activity of the project (webapp.review.feed.activity_wire) if it is on this trace. */
  apply(activity) {
    if (activity.target.trace !== this.traceId) return;
    if (activity.data.comment) this.upsert(activity.data.comment);
    if (activity.verb === "voted") {
      const id = Number(activity.target.id);
      this.votes.set(id, activity.data.votes);
      // a vote on an attribution this panel has not listed yet (a job finished since): re-read the rows
      if (!this.attribution(id)) this.loadVoteRows().catch(() => {});
      else this.renderVoteRows();
    }
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
