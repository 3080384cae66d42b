/**
 * The transcript: every event the timeline shows (the model's filtered `sequence()`), in time
 * order, with its step, time, agent, type and full content rendered as safe Markdown
 * (lib/markdown.js). Long content is folded ("Show more"); a tool call and its results
 * (`tool_dependency` edges) link to each other, with a preview.
 *
 * Virtualised (lib/windowing.js): only the rows in and near the viewport are in the DOM, at
 * measured heights (estimated until rendered; a ResizeObserver re-measures on expansion and
 * width changes) with the first visible row kept in place while heights above it change.
 *
 * In sync with the page's selection: `select(id)` (called by the page on every selection)
 * highlights the row and scrolls it into view; clicking a row, or j/k / ↓/↑ in the transcript,
 * calls `onSelectEvent`. Enter (or o) folds / unfolds the selected row. While scrolled to the
 * end, new events (live deltas) keep it at the end.
 *
 * Search: the rows whose content, tool, id or agent contain the text, listed with a snippet;
 * Enter goes to the next hit, Shift+Enter to the previous; hits are marked in the rows.
 * "Go to labelled mistake" selects the Who&When `mistake_step` event and unfolds it.
 *
 * A huge trace (`setServer`, webapp/traces/lod.py): the rows are the loaded window's events, under
 * a note saying so, and Enter searches the whole trace on the server and goes to the next hit in
 * time (the page loads its window), Shift+Enter to the previous one.
 */

import { eventColor, roleColor } from "../lib/palette.js";
import { estimateRowHeight, contentText, FOLD_LINES, mistakeEventId, nextHit, normaliseQuery,
  pairToolCalls, queryPattern, searchRows, snippet, wordsPattern } from "../lib/transcript_data.js";
import { el } from "../lib/dom.js";
import { commentsText } from "../model/comment_marks.js";
import { formatNumber, formatSeconds, tokensEstimated } from "../lib/format.js";
import { renderMarkdownInto } from "../lib/markdown.js";
import { inputBadge } from "./inspector.js";
import { RowHeights } from "../lib/windowing.js";

/** Pixels of rows rendered above and below the viewport. */
const OVERSCAN_PX = 800;
/** At most this many search hits are listed (all are counted and stepped through). */
const RESULTS_LISTED = 200;
/** Rendered Markdown kept for this many events. */
const HTML_CACHE = 600;
/** Characters of a paired event shown as its preview. */
const PREVIEW_CHARS = 90;

/** A thinking (reasoning) block, not a message: Claude Code's `thinking` parts (`attributes.part`). */
export const isThinking = (ev) => ev?.attributes?.part === "thinking";

export class Transcript {
  /**
   * @param {HTMLElement} root the `[data-testid=transcript-panel]` section
   * @param {{model: object, onSelectEvent: (id: string) => void, onSelectAgent?: (name: string) => void}} options
   */
  constructor(root, { model, onSelectEvent, onSelectAgent = () => {} }) {
    this.root = root;
    this.model = model;
    this.onSelectEvent = onSelectEvent;
    this.onSelectAgent = onSelectAgent;
    const part = (testid) => root.querySelector(`[data-testid="${testid}"]`);
    this.scroller = part("transcript-scroll");
    this.sizer = part("transcript-rows");
    this.countNode = part("transcript-count");
    this.searchInput = part("transcript-search");
    this.searchCount = part("transcript-search-count");
    this.resultsList = part("transcript-results");
    this.mistakeButton = part("transcript-mistake");
    this.statusNode = part("transcript-status");

    /** Row event ids, in order, and their indexes. */
    this.ids = [];
    this.indexOf = new Map();
    this.heights = new RowHeights();
    /** id -> measured height (at the current width). */
    this.measured = new Map();
    /** id -> {content, expanded, paired, chars, h} estimate cache. */
    this._estimates = new Map();
    this.expanded = new Set();
    /** id -> rendered row element. */
    this.rendered = new Map();
    this._html = new Map();
    this._searchText = new Map();
    this.pairs = { resultsOf: new Map(), callOf: new Map() };
    this._pairsStamp = -1;
    this._rowsStamp = null;
    this.selectedId = null;
    this.query = "";
    this.hits = [];
    this.hitSet = new Set();
    /** The event opened from a content search and the pattern of its words (`showFound`), or null. */
    this.found = null;
    this._width = 0;
    this._frame = 0;
    this._target = null; // {id, align}: a row to keep in view until its height settles
    this._stickToEnd = true;
    this._searchTimer = 0;
    /** A huge trace's server search (`setServer`), its query and hits, and the hit shown. */
    this.server = null;
    this.serverHits = { q: null, hits: [], truncated: false, at: -1 };
    /** Figures for tests and benchmarks: rows rendered by the last layout, layouts, their time. */
    this.stats = { rendered: 0, layouts: 0, created: 0, lastLayoutMs: 0, maxLayoutMs: 0, lastRebuildMs: 0 };

    this._observer = typeof ResizeObserver === "function" ? new ResizeObserver((entries) => this._onRowsResized(entries)) : null;
    this._scrollerObserver = typeof ResizeObserver === "function" ? new ResizeObserver(() => this._onScrollerResized()) : null;
    this._scrollerObserver?.observe(this.scroller);
    this.scroller.addEventListener("scroll", () => {
      if (!this._programmatic) this._target = null;
      this._programmatic = false;
      this._stickToEnd = this._atEnd();
      this._schedule();
    }, { passive: true });
    this.scroller.addEventListener("keydown", (e) => this._onKey(e));
    this.sizer.addEventListener("click", (e) => this._onClick(e));
    this.searchInput?.addEventListener("input", () => {
      clearTimeout(this._searchTimer);
      this._searchTimer = setTimeout(() => this.setQuery(this.searchInput.value), 120);
    });
    this.searchInput?.addEventListener("keydown", (e) => {
      if (e.key !== "Enter") return;
      e.preventDefault();
      clearTimeout(this._searchTimer);
      if (normaliseQuery(this.searchInput.value) !== this.query) this.setQuery(this.searchInput.value);
      if (this.server) this.stepServerHit(e.shiftKey ? -1 : 1);
      else this.stepHit(e.shiftKey ? -1 : 1);
    });
    this.resultsList?.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-event-id]");
      if (button) this._goToHit(button.dataset.eventId);
    });
    this.mistakeButton?.addEventListener("click", () => this.goToMistake());
  }

  // ---------------------------------------------------------------- data

  /** Bring the rows up to date with the model (cheap when nothing changed); then lay out. */
  render() {
    const model = this.model;
    if (model.seq === null) return;
    const stamp = `${model.version}:${model.viewVersion}`;
    if (stamp !== this._rowsStamp) {
      this._rowsStamp = stamp;
      const t0 = performance.now();
      this._rebuildRows();
      this.stats.lastRebuildMs = performance.now() - t0;
    }
    this._layout();
  }

  _rebuildRows() {
    const model = this.model;
    const wasAtEnd = this._stickToEnd && this.ids.length > 0;
    if (this._pairsStamp !== model.version) {
      this._pairsStamp = model.version;
      this.pairs = pairToolCalls(model.edges, (id) => model.events.has(id));
    }
    const previous = this.ids;
    this.ids = model.sequence();
    const appended = previous.length > 0 && this.ids.length >= previous.length
      && this.ids[0] === previous[0] && this.ids[previous.length - 1] === previous[previous.length - 1];
    if (!appended) {
      this.indexOf = new Map();
      this.ids.forEach((id, i) => this.indexOf.set(id, i));
    } else {
      for (let i = previous.length; i < this.ids.length; i += 1) this.indexOf.set(this.ids[i], i);
    }
    // An append (live deltas) keeps the rows' heights and only estimates the new ones.
    this.heights.resize(this.ids.length, (i) => this._heightOf(this.ids[i]), appended ? previous.length : 0);
    // Rows whose event changed (a live rewrite) or that left the rows are drawn again.
    for (const [id, node] of this.rendered) {
      if (!this.indexOf.has(id) || node._ev !== model.events.get(id) || node._pairs !== this._pairKey(id)) this._dropRow(id);
    }
    this.countNode.textContent = this.ids.length === model.eventCount
      ? `${formatNumber(this.ids.length)} events`
      : `${formatNumber(this.ids.length)} of ${formatNumber(model.eventCount)} events (filtered)`;
    const mistake = mistakeEventId(model.labels);
    this.mistakeButton.hidden = mistake === null;
    if (mistake !== null) {
      const label = model.labels.find((l) => l.key === "mistake_step" && l.event_id === mistake);
      this.mistakeButton.textContent = `Go to labelled mistake (step ${label?.value ?? model.stepOf(mistake)})`;
    }
    if (this.query) this._runSearch();
    if (wasAtEnd && this.ids.length > previous.length) this._target = { id: this.ids[this.ids.length - 1], align: "end" };
  }

  _pairKey(id) {
    const results = this.pairs.resultsOf.get(id);
    return `${this.pairs.callOf.get(id) ?? ""}|${results ? results.join(",") : ""}`;
  }

  _chars() {
    return Math.max(24, Math.floor(((this._width || this.scroller.clientWidth || 480) - 40) / 7.4));
  }

  _heightOf(id) {
    const measured = this.measured.get(id);
    if (measured !== undefined) return measured;
    const ev = this.model.events.get(id);
    const content = ev?.content;
    const expanded = this.expanded.has(id);
    const paired = (this.pairs.resultsOf.get(id)?.length ?? 0) + (this.pairs.callOf.has(id) ? 1 : 0);
    const chars = this._chars();
    const hit = this._estimates.get(id);
    if (hit && hit.content === content && hit.expanded === expanded && hit.paired === paired && hit.chars === chars) return hit.h;
    const h = estimateRowHeight(contentText(ev), { expanded, paired, chars });
    this._estimates.set(id, { content, expanded, paired, chars, h });
    return h;
  }

  // ---------------------------------------------------------------- selection and navigation

  /**
   * Highlight event `id` (null: none) and, with `scroll`, bring its row into view ("center"
   * when it was out of view; "start" with `expand`, which also unfolds it).
   */
  select(id, { scroll = true, expand = false } = {}) {
    if (this.selectedId !== null) this.rendered.get(this.selectedId)?.classList.remove("selected");
    this.rendered.get(this.selectedId)?.removeAttribute("aria-current");
    this.selectedId = id ?? null;
    this._updateHitCount();
    if (id == null) return;
    if (expand && !this.expanded.has(id)) this._setExpanded(id, true);
    const node = this.rendered.get(id);
    node?.classList.add("selected");
    node?.setAttribute("aria-current", "true");
    if (!this.indexOf.has(id)) {
      this._status(this.model.events.has(id) ? "The selected event is hidden by the filters." : "");
      return;
    }
    this._status("");
    if (scroll) this.scrollTo(id, expand ? "start" : null);
  }

  /** Scroll event `id`'s row into view: `align` "start", "center" or null (nearest; center when far). */
  scrollTo(id, align = null) {
    const i = this.indexOf.get(id);
    if (i === undefined) return;
    const top = this.heights.offset(i);
    const view = this.scroller.clientHeight;
    const current = this.scroller.scrollTop;
    const visible = top + this.heights.get(i) > current && top < current + view;
    this._target = { id, align: align ?? (visible ? "nearest" : "center") };
    this._stickToEnd = false;
    this._layout();
  }

  /** Select and unfold the labelled mistake step (Who&When `mistake_step`). */
  goToMistake() {
    const id = mistakeEventId(this.model.labels);
    if (id === null) return;
    this._setExpanded(id, true);
    this.onSelectEvent(id);
    if (this.selectedId === id) this.scrollTo(id, "start");
    else if (!this.indexOf.has(id)) this._status("The labelled mistake step is hidden by the filters: clear them to see it.");
  }

  _onKey(e) {
    // From the list or a row a click focused (rows take focus), not from a control inside a row.
    const onRow = e.target instanceof Element && e.target.classList.contains("tx-row");
    if ((e.target !== this.scroller && !onRow) || e.altKey || e.ctrlKey || e.metaKey) return;
    const dir = e.key === "j" || e.key === "ArrowDown" ? 1 : e.key === "k" || e.key === "ArrowUp" ? -1 : 0;
    if (dir) {
      e.preventDefault();
      this.step(dir);
    } else if ((e.key === "Enter" || e.key === "o") && this.selectedId !== null) {
      e.preventDefault();
      this._setExpanded(this.selectedId, !this.expanded.has(this.selectedId));
      this.scrollTo(this.selectedId, "nearest");
    } else if (e.key === "Home" || e.key === "End") {
      e.preventDefault();
      if (this.ids.length) this.onSelectEvent(this.ids[e.key === "Home" ? 0 : this.ids.length - 1]);
    }
  }

  /** Select the row after (1) or before (-1) the selected one; from none, the first row in view. */
  step(dir) {
    if (!this.ids.length) return;
    let i = this.selectedId === null ? -1 : (this.indexOf.get(this.selectedId) ?? -1);
    if (i < 0) i = this.heights.indexAt(this.scroller.scrollTop) - (dir > 0 ? 1 : 0);
    const next = Math.max(0, Math.min(this.ids.length - 1, i + dir));
    this.onSelectEvent(this.ids[next]);
  }

  _onClick(e) {
    const row = e.target.closest(".tx-row");
    if (!row) return;
    const id = row.dataset.eventId;
    const more = e.target.closest(".tx-more");
    if (more) {
      this._setExpanded(id, !this.expanded.has(id));
      return;
    }
    const goto = e.target.closest("button[data-goto]");
    if (goto) {
      this.onSelectEvent(goto.dataset.goto);
      return;
    }
    const agent = e.target.closest("button[data-agent]");
    if (agent) {
      this.onSelectAgent(agent.dataset.agent);
      return;
    }
    if (e.target.closest("a, button, summary")) return;
    const selection = globalThis.getSelection?.();
    if (selection && !selection.isCollapsed && row.contains(selection.anchorNode)) return; // selecting text
    this.onSelectEvent(id);
  }

  _setExpanded(id, expanded) {
    if (expanded) this.expanded.add(id);
    else this.expanded.delete(id);
    const node = this.rendered.get(id);
    if (node) this._applyFold(node, id);
    this.measured.delete(id);
    const i = this.indexOf.get(id);
    if (i !== undefined) this.heights.set(i, this._heightOf(id));
    this._schedule();
  }

  // ---------------------------------------------------------------- search

  /** Search the rows for `query` (case-insensitive); lists the hits. */
  setQuery(query) {
    this.query = normaliseQuery(query);
    this._runSearch();
    for (const [id, node] of this.rendered) this._highlight(node, id);
  }

  _textOf(id) {
    const ev = this.model.events.get(id);
    const hit = this._searchText.get(id);
    if (hit && hit.ev === ev) return hit.text;
    const text = `${this.model.store.searchText(ev)}\n${String(ev.agent ?? "").toLowerCase()}\n${ev.type}`;
    this._searchText.set(id, { ev, text });
    return text;
  }

  _runSearch() {
    const q = this.query;
    this.hits = q ? searchRows(this.ids, (id) => this._textOf(id), q) : [];
    this.hitSet = new Set(this.hits);
    this.resultsList.replaceChildren();
    this.resultsList.hidden = !q;
    if (!q) {
      this.searchCount.textContent = "";
      return;
    }
    this._updateHitCount();
    for (const i of this.hits.slice(0, RESULTS_LISTED)) {
      const id = this.ids[i];
      const ev = this.model.events.get(id);
      const parts = snippet(contentText(ev), q);
      const button = el("button", null, "tx-result");
      button.type = "button";
      button.dataset.eventId = id;
      button.append(el("span", `#${this.model.stepOf(id)}`, "tx-step"), el("span", ev.agent, "tx-result-agent"), " ");
      const text = el("span", null, "tx-result-text");
      text.append(parts.before);
      if (parts.match) text.append(el("mark", parts.match));
      text.append(parts.after);
      button.append(text);
      const li = el("li");
      li.append(button);
      this.resultsList.append(li);
    }
    if (this.hits.length > RESULTS_LISTED) {
      this.resultsList.append(el("li", `… ${this.hits.length - RESULTS_LISTED} more: Enter steps through all`, "muted"));
    }
    if (!this.hits.length) this.resultsList.append(el("li", "No matches in the transcript.", "muted"));
  }

  _updateHitCount() {
    if (!this.query) return;
    if (this.server && this.serverHits.q === this.query && this.serverHits.at >= 0) {
      const { at, hits, truncated } = this.serverHits;
      this.searchCount.textContent = `${at + 1} of ${hits.length}${truncated ? "+" : ""} in the trace`;
      return;
    }
    const at = this.selectedId === null ? -1 : this.hits.indexOf(this.indexOf.get(this.selectedId));
    this.searchCount.textContent = this.hits.length
      ? `${at >= 0 ? `${at + 1} of ` : ""}${this.hits.length} ${this.hits.length === 1 ? "match" : "matches"}`
      : "no matches";
    for (const li of this.resultsList.children) {
      li.firstElementChild?.classList.toggle("current", li.firstElementChild.dataset.eventId === this.selectedId);
    }
  }

  /**
   * A huge trace: `note` is shown above the rows; `search(q)` resolves to the server's
   * `{hits: [{id, t}], truncated}` and `goTo(hit)` shows a hit anywhere in the trace.
   */
  setServer({ note, search, goTo }) {
    this.server = { search, goTo };
    let node = this.root.querySelector('[data-testid="transcript-window-note"]');
    if (!node) {
      node = el("p", null, "muted tx-window-note");
      node.dataset.testid = "transcript-window-note";
      this.scroller.before(node);
    }
    node.textContent = note;
  }

  /** The next (1) or previous (-1) server hit of the query, in time order; the page shows it. */
  async stepServerHit(dir) {
    const q = this.query;
    if (!q) return;
    const state = this.serverHits;
    if (state.q !== q) {
      try {
        const answer = await this.server.search(q);
        Object.assign(state, { q, hits: answer.hits, truncated: answer.truncated, at: -1 });
      } catch (err) {
        this.searchCount.textContent = `search failed (${err.message})`;
        return;
      }
    }
    if (!state.hits.length) {
      this.searchCount.textContent = "no matches in the trace";
      return;
    }
    state.at = (state.at + dir + state.hits.length) % state.hits.length;
    this._updateHitCount();
    await this.server.goTo(state.hits[state.at]);
  }

  /** Select the next (1) or previous (-1) search hit after the selected row. */
  stepHit(dir) {
    const current = this.selectedId === null ? null : this.indexOf.get(this.selectedId);
    const i = nextHit(this.hits, current ?? (dir > 0 ? -1 : null), dir);
    if (i >= 0) this._goToHit(this.ids[i]);
    this._updateHitCount();
  }

  /** Select a hit, unfolded so that the match is in sight wherever it is in the content. */
  _goToHit(id) {
    this._setExpanded(id, true);
    this.onSelectEvent(id);
    this._scrollToMark(id);
  }

  /**
   * Mark in event `id` the words (`text`) the trace list's content search found it by (a word
   * ending in `*` a prefix: lib/transcript_data.js wordsPattern), unfold it and bring the first
   * one into view; the transcript search's own marks take precedence while it has a query.
   */
  showFound(id, text) {
    const pattern = wordsPattern(text);
    this.found = pattern ? { id, pattern } : null;
    const node = this.rendered.get(id);
    if (node) this._highlight(node, id);
    if (!pattern || !this.indexOf.has(id)) return;
    this.select(id, { expand: true });
    this._layout();
    this._scrollToMark(id);
  }

  /** When event `id`'s first mark is below its row's first screen, scroll so that it is in sight. */
  _scrollToMark(id) {
    const node = this.rendered.get(id);
    const mark = node?.querySelector("mark.tx-hit");
    if (mark && this.selectedId === id) {
      // The first match, when it is below the row's first screen.
      const offset = mark.getBoundingClientRect().top - node.getBoundingClientRect().top;
      if (offset > this.scroller.clientHeight * 0.6) {
        this._target = null;
        this._setScrollTop(this.heights.offset(this.indexOf.get(id)) + offset - this.scroller.clientHeight / 3);
      }
    }
  }

  // ---------------------------------------------------------------- layout

  _schedule() {
    if (this._frame) return;
    this._frame = requestAnimationFrame(() => {
      this._frame = 0;
      this._layout();
    });
  }

  _atEnd() {
    const s = this.scroller;
    return s.scrollTop + s.clientHeight >= s.scrollHeight - 4;
  }

  _setScrollTop(top) {
    if (Math.abs(this.scroller.scrollTop - top) < 0.5) return;
    this._programmatic = true;
    this.scroller.scrollTop = top;
  }

  /** The scrollTop that shows the target row as asked. */
  _targetTop(target, view) {
    const i = this.indexOf.get(target.id);
    if (i === undefined) return null;
    if (target.align === "end") return Math.max(0, this.heights.total - view);
    return this.heights.scrollTopFor(i, view, target.align, this.scroller.scrollTop);
  }

  /**
   * Render the rows in view, measure them, and repeat while measured heights move things
   * (at most 4 passes): the target row (or else the first visible row) stays where it was.
   */
  _layout() {
    const t0 = performance.now();
    const s = this.scroller;
    const view = s.clientHeight;
    let created = 0;
    for (let pass = 0; pass < 4; pass += 1) {
      this.sizer.style.height = `${this.heights.total}px`;
      if (this._target) {
        const top = this._targetTop(this._target, view);
        if (top !== null) this._setScrollTop(top);
      }
      const scrollTop = s.scrollTop;
      const anchor = this.heights.indexAt(scrollTop);
      const anchorDelta = anchor < 0 ? 0 : scrollTop - this.heights.offset(anchor);
      const { start, end } = this.heights.range(scrollTop, view, OVERSCAN_PX);
      for (const [id, node] of this.rendered) {
        const i = this.indexOf.get(id);
        if (i === undefined || i < start || i >= end) this._dropRow(id, node);
      }
      const fresh = [];
      for (let i = start; i < end; i += 1) {
        const id = this.ids[i];
        let node = this.rendered.get(id);
        if (!node) {
          node = this._row(id, i);
          this.rendered.set(id, node);
          this.sizer.append(node);
          fresh.push(node);
          created += 1;
        }
        node.style.transform = `translateY(${this.heights.offset(i)}px)`;
        node.setAttribute("aria-posinset", String(i + 1));
        node.setAttribute("aria-setsize", String(this.ids.length));
      }
      const changed = this._settle(fresh);
      for (const node of fresh) this._observer?.observe(node);
      if (!changed) break;
      // Keep the first visible row where it was (unless a target row is being brought in).
      if (!this._target && anchor >= 0) this._setScrollTop(this.heights.offset(anchor) + anchorDelta);
      this._reposition();
    }
    this.sizer.style.height = `${this.heights.total}px`;
    if (this._target) {
      const top = this._targetTop(this._target, view);
      if (top !== null) this._setScrollTop(top);
      // Once the row is drawn at its measured height, the view is left to the user (and the
      // first visible row is what stays in place from then on).
      if (top === null || this.measured.has(this._target.id)) this._target = null;
    }
    const ms = performance.now() - t0;
    this.stats.rendered = this.rendered.size;
    this.stats.layouts += 1;
    this.stats.created += created;
    this.stats.lastLayoutMs = ms;
    this.stats.maxLayoutMs = Math.max(this.stats.maxLayoutMs, ms);
  }

  _reposition() {
    for (const [id, node] of this.rendered) {
      const i = this.indexOf.get(id);
      if (i !== undefined) node.style.transform = `translateY(${this.heights.offset(i)}px)`;
    }
  }

  _measure(node) {
    const id = node.dataset.eventId;
    const h = node.offsetHeight;
    if (!h) return false;
    this.measured.set(id, h);
    const i = this.indexOf.get(id);
    return i !== undefined && this.heights.set(i, h);
  }

  /**
   * Fold state, then heights, of `nodes`: all reads, then all writes, then all reads again, so
   * the browser lays out twice for the lot rather than twice per row. True when a height changed.
   */
  _settle(nodes) {
    if (!nodes.length) return false;
    const states = nodes.map((node) => this._foldState(node));
    nodes.forEach((node, k) => this._applyFoldState(node, states[k]));
    let changed = false;
    for (const node of nodes) changed = this._measure(node) || changed;
    return changed;
  }

  _onRowsResized(entries) {
    const scrollTop = this.scroller.scrollTop;
    const anchor = this.heights.indexAt(scrollTop);
    const anchorDelta = anchor < 0 ? 0 : scrollTop - this.heights.offset(anchor);
    const resized = [];
    for (const entry of entries) {
      const node = entry.target;
      if (!node.isConnected) continue;
      const h = entry.borderBoxSize?.[0]?.blockSize;
      const known = this.measured.get(node.dataset.eventId);
      if (h !== undefined && known !== undefined && Math.abs(h - known) < 1) continue; // as measured
      resized.push(node);
    }
    if (!this._settle(resized)) return;
    this.sizer.style.height = `${this.heights.total}px`;
    if (!this._target && anchor >= 0) this._setScrollTop(this.heights.offset(anchor) + anchorDelta);
    this._reposition();
    this._schedule();
  }

  _onScrollerResized() {
    const width = this.scroller.clientWidth;
    if (width === this._width) {
      this._schedule();
      return;
    }
    this._width = width;
    // Heights measured at another width are estimates again (rendered rows re-measure).
    this.measured.clear();
    if (this.ids.length) this.heights.reset(this.ids.length, (i) => this._heightOf(this.ids[i]));
    this._settle([...this.rendered.values()]);
    this._schedule();
  }

  _dropRow(id, node = this.rendered.get(id)) {
    if (!node) return;
    this._observer?.unobserve(node);
    node.remove();
    this.rendered.delete(id);
  }

  _status(text) {
    this.statusNode.hidden = !text;
    this.statusNode.textContent = text;
  }

  // ---------------------------------------------------------------- rows

  /** Comments per event (model/comment_marks.js): a marker on each row with comments. */
  setCommentCounts(counts) {
    this.commentCounts = counts;
    for (const node of this.rendered.values()) this._markRow(node);
  }

  _markRow(row) {
    const n = this.commentCounts?.get(row.dataset.eventId) ?? 0;
    const head = row.querySelector(":scope > .tx-meta");
    let mark = head?.querySelector(":scope > .comment-mark") ?? null;
    if (!n) {
      mark?.remove();
      return;
    }
    if (!mark) {
      mark = el("span", null, "comment-mark");
      mark.dataset.testid = "comment-mark";
      head?.append(mark);
    }
    mark.textContent = commentsText(n);
    mark.title = `${commentsText(n)} on this event: select it, then Read the thread in the inspector`;
  }

  _row(id, index) {
    const model = this.model;
    const ev = model.events.get(id);
    const row = el("article", null, "tx-row");
    row.dataset.eventId = id;
    row.dataset.testid = "transcript-row";
    row.dataset.type = ev.type;
    row.tabIndex = -1;
    row._ev = ev;
    row._pairs = this._pairKey(id);
    const mistake = model.isMistakeEvent(id);
    if (mistake) row.classList.add("mistake");
    const thinking = isThinking(ev);
    if (thinking) row.classList.add("thinking");
    if (id === this.selectedId) {
      row.classList.add("selected");
      row.setAttribute("aria-current", "true");
    }
    const head = el("header", null, "tx-meta");
    head.append(el("span", `#${model.stepOf(id) ?? index}`, "tx-step"));
    if (!model.trace?.attributes?.synthetic_time && Number.isFinite(ev.t)) {
      const t0 = model.timeRange()[0];
      const time = el("span", `+${formatSeconds(ev.t - t0) || "0 s"}`, "tx-time");
      time.title = `t = ${ev.t}`;
      head.append(time);
    }
    const agent = el("button", ev.agent, "tx-agent link-button");
    agent.type = "button";
    agent.dataset.agent = ev.agent;
    agent.style.setProperty("--chip", roleColor(model.roleOf(ev.agent)));
    agent.title = `Select agent ${ev.agent}`;
    head.append(agent);
    if (ev.to != null && ev.to !== "") head.append(el("span", `→ ${ev.to}`, "tx-to"));
    const type = el("span", ev.type, "type-chip");
    type.style.setProperty("--chip", eventColor(ev.type));
    head.append(type);
    if (thinking) {
      const chip = el("span", "thinking", "thinking-chip");
      chip.dataset.testid = "thinking-chip";
      chip.title = "The model's reasoning before it answered (a thinking block), not a message to anyone";
      head.append(chip);
    }
    if (ev.tool) head.append(el("code", ev.tool, "tx-tool"));
    const badge = inputBadge(ev);
    if (badge) head.append(badge);
    if (Number.isFinite(ev.tokens) && ev.tokens > 0) {
      if (tokensEstimated(ev)) {
        const tok = el("span", `~${formatNumber(ev.tokens)} tok est.`, "tx-tokens estimate");
        tok.title = "estimated from content (characters / 4): the source reported no usage here";
        head.append(tok);
      } else {
        head.append(el("span", `${formatNumber(ev.tokens)} tok`, "tx-tokens"));
      }
    }
    if (mistake) {
      const flag = el("span", "Labelled mistake", "flag flag-mistake");
      flag.dataset.testid = "transcript-mistake-flag";
      head.append(flag);
    }
    row.append(head);
    this._markRow(row);
    if (mistake) {
      const reason = model.labels.find((l) => l.key === "mistake_reason");
      if (reason) row.append(el("p", `Mistake reason: ${typeof reason.value === "string" ? reason.value : JSON.stringify(reason.value)}`, "tx-reason"));
    }
    const body = el("div", null, "tx-body");
    body.dataset.testid = "transcript-content";
    const text = contentText(ev);
    if (text) this._fillBody(body, id, text);
    else body.append(el("p", ev.content_ref ? "Content stored by reference." : "No content.", "muted"));
    row.append(body);
    const more = el("button", "Show more", "tx-more link-button");
    more.type = "button";
    more.hidden = true;
    row.append(more);
    const call = this.pairs.callOf.get(id);
    if (call !== undefined) row.append(this._pairLine("↳ result of", call));
    for (const result of this.pairs.resultsOf.get(id) ?? []) row.append(this._pairLine("→ result", result));
    this._applyFold(row, id);
    this._highlight(row, id);
    return row;
  }

  _fillBody(body, id, text) {
    const cached = this._html.get(id);
    if (cached && cached.text === text) {
      body.innerHTML = cached.html; // already sanitised (markdown.js)
      if (cached.plain) body.classList.add("plain");
      return;
    }
    renderMarkdownInto(body, text);
    const plain = body.classList.contains("plain");
    this._html.set(id, { text, html: plain ? escapeText(text) : body.innerHTML, plain });
    if (this._html.size > HTML_CACHE) this._html.delete(this._html.keys().next().value);
  }

  _pairLine(label, otherId) {
    const other = this.model.events.get(otherId);
    const line = el("div", null, "tx-pair");
    line.dataset.testid = "transcript-pair";
    line.append(el("span", label, "tx-pair-label"), " ");
    const button = el("button", `#${this.model.stepOf(otherId)} ${other.type} · ${other.agent}`, "link-button");
    button.type = "button";
    button.dataset.goto = otherId;
    line.append(button);
    const preview = snippet(contentText(other), "", PREVIEW_CHARS / 2).after;
    if (preview) line.append(" ", el("span", preview, "tx-pair-preview"));
    return line;
  }

  _applyFold(row, id) {
    const expanded = this.expanded.has(id);
    row.classList.toggle("expanded", expanded);
    const body = row.querySelector(".tx-body");
    body.classList.toggle("folded", !expanded);
    this._checkFold(row);
  }

  /** Show "Show more" only when folded content overflows (and "Show less" when unfolded). */
  _checkFold(row) {
    this._applyFoldState(row, this._foldState(row));
  }

  /** Whether the row's fold button shows (reads layout only). */
  _foldState(row) {
    const body = row.querySelector(".tx-body");
    if (!body || !row.isConnected) return null;
    const expanded = this.expanded.has(row.dataset.eventId);
    const overflows = expanded ? body.scrollHeight > foldHeight(body) + 2 : body.scrollHeight > body.clientHeight + 2;
    return { expanded, overflows };
  }

  _applyFoldState(row, state) {
    const more = row.querySelector(".tx-more");
    if (!state || !more) return;
    more.hidden = !state.overflows;
    more.textContent = state.expanded ? "Show less" : "Show more";
    more.setAttribute("aria-expanded", String(state.expanded));
  }

  _highlight(row, id) {
    const body = row.querySelector(".tx-body");
    if (!body) return;
    for (const mark of body.querySelectorAll("mark.tx-hit")) mark.replaceWith(document.createTextNode(mark.textContent));
    body.normalize();
    row.classList.toggle("hit", this.query !== "" && this.hitSet.has(this.indexOf.get(id)));
    if (this.query && row.classList.contains("hit")) markText(body, queryPattern(this.query), "tx-hit");
    else if (this.found?.id === id) markText(body, this.found.pattern, "tx-hit tx-found");
  }
}

/** Wrap each match of `pattern` (a global RegExp) in `root`'s text in <mark class=`className`>. */
function markText(root, pattern, className) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    pattern.lastIndex = 0;
    if (pattern.test(n.nodeValue)) nodes.push(n);
  }
  for (const node of nodes.slice(0, 200)) {
    const text = node.nodeValue;
    const fragment = document.createDocumentFragment();
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      if (!match[0]) continue;
      fragment.append(text.slice(last, match.index));
      const mark = document.createElement("mark");
      mark.className = className;
      mark.textContent = match[0];
      fragment.append(mark);
      last = match.index + match[0].length;
    }
    fragment.append(text.slice(last));
    node.replaceWith(fragment);
  }
}

/** The folded height of a content box (FOLD_LINES lines), from its line height. */
function foldHeight(body) {
  const lineHeight = parseFloat(getComputedStyle(body).lineHeight) || 18;
  return lineHeight * FOLD_LINES;
}

function escapeText(text) {
  const div = document.createElement("div");
  div.textContent = text;
  return div.innerHTML;
}
