/**
 * The timeline's camera maths. Pure module: no DOM.
 *
 * The camera is a window `[x0, x1]` on the x axis (seconds or steps) and a vertical scroll
 * offset in pixels; zoom and pan move only the window, and the window never leaves the data's
 * extent (no negative time, nothing past the end). Lanes have a height of their own (between
 * `MIN_LANE_PX` and `MAX_LANE_PX`): many lanes scroll, they never squash the time axis.
 */

/** Lanes are at least this tall: below it names are unreadable (many lanes scroll instead). */
export const MIN_LANE_PX = 18;
/** Lanes are at most this tall (few lanes do not fill a tall view). */
export const MAX_LANE_PX = 34;

const clamp = (v, lo, hi) => Math.min(Math.max(v, lo), hi);

/**
 * The x extent to clamp to: `[x0, x1]` of the data, widened to a span of 1 when it is empty or
 * a single point (never below `x0`: a trace that starts at 0 shows no negative time).
 * @returns {[number, number]}
 */
export function dataExtent(x0, x1) {
  if (!Number.isFinite(x0) || !Number.isFinite(x1)) return [0, 1];
  return x1 > x0 ? [x0, x1] : [x0, x0 + 1];
}

/**
 * The smallest span the window may zoom to: a millionth of the extent, and at least `floor`
 * (a few steps in step mode, a tenth of a millisecond in time mode).
 */
export function minSpan(extent, floor) {
  const full = extent[1] - extent[0];
  return Math.min(full, Math.max(full * 1e-6, floor));
}

/**
 * `win` made valid: its span between `min` and the extent's, then shifted (not resized) to lie
 * inside `extent`. A span that changes keeps the window's centre.
 * @param {[number, number]} win
 * @param {[number, number]} extent
 * @returns {[number, number]}
 */
export function clampWindow(win, extent, min = 0) {
  const [e0, e1] = extent;
  const full = e1 - e0;
  let [a, b] = win;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return [e0, e1];
  const span = clamp(b - a, Math.min(min, full), full);
  if (!(span > 0) || span >= full) return [e0, e1];
  a = (a + b) / 2 - span / 2;
  a = clamp(a, e0, e1 - span);
  return [a, a + span];
}

/**
 * Zoom by `factor` (< 1 in, > 1 out) about `anchor` (a data x: it stays under the same pixel
 * unless the clamp to the extent moves the window).
 */
export function zoomAbout(win, factor, anchor, extent, min = 0) {
  const [a, b] = win;
  const span = b - a;
  const full = extent[1] - extent[0];
  const next = clamp(span * factor, Math.min(min, full), full);
  const f = span > 0 ? clamp((anchor - a) / span, 0, 1) : 0.5;
  if (!(next > 0) || next >= full) return [extent[0], extent[1]];
  const start = clamp(anchor - f * next, extent[0], extent[1] - next);
  return [start, start + next];
}

/** Pan by `dx` data units, clamped (the span is kept). */
export function panBy(win, dx, extent) {
  const span = win[1] - win[0];
  const full = extent[1] - extent[0];
  if (span >= full) return [extent[0], extent[1]];
  const a = clamp(win[0] + dx, extent[0], extent[1] - span);
  return [a, a + span];
}

/** The window centred on `x`, span kept, clamped. */
export function centreOn(win, x, extent) {
  return panBy(win, x - (win[0] + win[1]) / 2, extent);
}

/**
 * The window that shows `[lo, hi]` (an event: its start and end), moved as little as needed:
 * unchanged when the item is inside the window less `margin` (a fraction of the span) on each
 * side; centred on it when it is entirely outside; otherwise shifted until it is in. An item
 * longer than the window shows its start.
 */
export function keepInView(win, lo, hi, extent, margin = 0.08) {
  const [a, b] = win;
  const span = b - a;
  const m = span * margin;
  if (lo >= a + m && hi <= b - m) return [a, b];
  if (hi - lo > span - 2 * m) return panBy(win, lo - m - a, extent);
  if (hi < a || lo > b) return centreOn(win, (lo + hi) / 2, extent);
  const dx = lo < a + m ? lo - (a + m) : hi - (b - m);
  return panBy(win, dx, extent);
}

/**
 * Pixel x of data `x` in a `width`-pixel view of window `win`, `pad` pixels kept free at each
 * end (so that events at the extent's ends are not cut in half).
 */
export function toPx(x, win, width, pad = 0) {
  const span = win[1] - win[0];
  return pad + ((x - win[0]) / (span || 1)) * Math.max(1, width - 2 * pad);
}

/** Data x at pixel `px` (inverse of `toPx`). */
export function fromPx(px, win, width, pad = 0) {
  const span = win[1] - win[0];
  return win[0] + ((px - pad) / Math.max(1, width - 2 * pad)) * (span || 1);
}

/** Lane height for `rows` lanes in a `height`-pixel view: fills it, within [min, max]. */
export function laneHeight(rows, height, min = MIN_LANE_PX, max = MAX_LANE_PX) {
  return clamp(Math.floor(height / Math.max(1, rows)), min, max);
}

/** The vertical scroll offset clamped to the lanes' height. */
export function clampScroll(top, rows, laneH, height) {
  return clamp(Number.isFinite(top) ? top : 0, 0, Math.max(0, rows * laneH - height));
}

/** The scroll offset that shows row `row` (0 = top), moved as little as needed. */
export function scrollRowIntoView(top, row, laneH, height, rows = row + 1) {
  const y0 = row * laneH;
  const y1 = y0 + laneH;
  let next = top;
  if (y0 < top) next = y0;
  else if (y1 > top + height) next = y1 - height;
  return clampScroll(next, rows, laneH, height);
}

/** The rows `[first, last]` (inclusive) at least partly inside a view scrolled to `top`. */
export function visibleRows(top, laneH, height, rows) {
  if (rows <= 0) return [0, -1];
  return [clamp(Math.floor(top / laneH), 0, rows - 1), clamp(Math.ceil((top + height) / laneH) - 1, 0, rows - 1)];
}

/** Wheel delta (pixels) -> zoom factor: 100 px of wheel zooms in or out by about 1.25x. */
export function wheelFactor(deltaY, deltaMode = 0) {
  const px = deltaMode === 1 ? deltaY * 16 : deltaMode === 2 ? deltaY * 400 : deltaY;
  return Math.exp(clamp(px, -600, 600) * 0.00223);
}
