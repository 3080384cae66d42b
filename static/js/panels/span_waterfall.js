/**
 * The span waterfall beside the agent graph (model/span_waterfall.js): for a trace that came from
 * spans, the spans its events were made from, one row each, indented under their parent, with a
 * bar from start to end on the trace's time. The fallback when the agent modelling reads a trace
 * wrongly: what the source recorded, as a tracing UI shows it. Clicking a row selects the span's
 * first event everywhere; the selected event's span is marked. At most MAX_ROWS rows are drawn
 * (the note says how many there are).
 */

import { el } from "../lib/dom.js";
import { formatSeconds } from "../lib/format.js";
import { roleColor } from "../lib/palette.js";
import { spanWaterfall } from "../model/span_waterfall.js";

export const MAX_ROWS = 1500;

export class SpanWaterfall {
  /**
   * @param {HTMLElement} root the `[data-testid=span-waterfall]` element
   * @param {{model: object, onSelectEvent: (id: string) => void}} options
   */
  constructor(root, { model, onSelectEvent }) {
    this.root = root;
    this.model = model;
    this.onSelectEvent = onSelectEvent;
    this._version = -1;
    this.data = { rows: [], t0: 0, t1: 0 };
    this.selected = null;
  }

  /** Whether the trace has spans at all (the page offers the view only then). */
  hasSpans() {
    this._compute();
    return this.data.rows.length > 0;
  }

  _compute() {
    if (this._version === this.model.version) return;
    this._version = this.model.version;
    this.data = spanWaterfall(this.model.events.values());
    this._drawn = -1;
  }

  /** Draw the rows (when shown and the model changed). */
  render() {
    if (this.root.hidden) return;
    this._compute();
    if (this._drawn === this._version) return;
    this._drawn = this._version;
    const { rows, t0, t1 } = this.data;
    const span = Math.max(t1 - t0, 1e-9);
    const shown = rows.slice(0, MAX_ROWS);
    const list = el("ol", null, "wf-rows");
    for (const row of shown) {
      const item = el("li", null, "wf-row");
      item.dataset.testid = "span-row";
      item.dataset.span = row.span;
      item.style.setProperty("--depth", String(row.depth));
      const name = el("button", row.name, "wf-name link-button");
      name.type = "button";
      const duration = row.t1 - row.t0;
      name.title = `${row.name} · ${row.agent} · ${formatSeconds(duration) || "0 s"} · ${row.events.length} event${row.events.length === 1 ? "" : "s"} · span ${row.span}`;
      name.addEventListener("click", () => this.onSelectEvent(row.events[0]));
      const track = el("span", null, "wf-track");
      const bar = el("span", null, "wf-bar");
      bar.dataset.testid = "span-bar";
      bar.style.left = `${((row.t0 - t0) / span) * 100}%`;
      bar.style.width = `${(duration / span) * 100}%`;
      bar.style.setProperty("--chip", roleColor(this.model.roleOf(row.agent)));
      track.append(bar);
      item.append(name, track, el("span", formatSeconds(duration) || "0 s", "wf-time"));
      list.append(item);
    }
    const note = el("p", `${rows.length} span${rows.length === 1 ? "" : "s"} from the source, as its events record them`
      + `${rows.length > shown.length ? `; the first ${shown.length} drawn` : ""}.`, "hint wf-note");
    note.dataset.testid = "span-note";
    this.root.replaceChildren(note, list);
    this._mark();
  }

  /** Mark the span of event `id` (null: none). */
  select(id) {
    this.selected = id;
    this._mark();
  }

  _mark() {
    const sid = this.selected === null ? null : this.model.events.get(this.selected)?.attributes?.span_id;
    for (const item of this.root.querySelectorAll(".wf-row.selected")) item.classList.remove("selected");
    if (sid === null || sid === undefined) return;
    const item = this.root.querySelector(`.wf-row[data-span="${CSS.escape(String(sid))}"]`);
    item?.classList.add("selected");
    item?.scrollIntoView({ block: "nearest" });
  }
}
