/**
 * Windowing for long lists of rows of different heights (the transcript): only the rows in
 * (and near) the viewport are in the DOM. Each row has an estimated height until it has been
 * rendered and measured; offsets are prefix sums, recomputed lazily (O(n), a few hundred
 * microseconds at 30,000 rows) after heights change. Pure: no DOM.
 */

export class RowHeights {
  /** @param {number} [defaultHeight] the estimate for rows not given one */
  constructor(defaultHeight = 48) {
    this.defaultHeight = defaultHeight;
    this.heights = new Float64Array(0);
    this._offsets = new Float64Array(1);
    this._dirty = false;
  }

  /** Number of rows. */
  get length() {
    return this.heights.length;
  }

  /**
   * Set the rows: `heightOf(i)` gives row i's height (measured or estimated).
   * @param {number} count
   * @param {(i: number) => number} [heightOf]
   */
  reset(count, heightOf = () => this.defaultHeight) {
    this.heights = new Float64Array(count);
    for (let i = 0; i < count; i += 1) this.heights[i] = Math.max(0, heightOf(i));
    this._dirty = true;
  }

  /**
   * Resize to `count` rows, keeping the heights of the first `keep` rows (an append: only the
   * new rows are asked for, O(new rows) plus a copy).
   */
  resize(count, heightOf = () => this.defaultHeight, keep = 0) {
    const kept = Math.min(keep, count, this.heights.length);
    const heights = new Float64Array(count);
    heights.set(this.heights.subarray(0, kept));
    for (let i = kept; i < count; i += 1) heights[i] = Math.max(0, heightOf(i));
    this.heights = heights;
    this._dirty = true;
  }

  /** Set row `i`'s height; returns true when it changed. */
  set(i, height) {
    if (i < 0 || i >= this.heights.length || this.heights[i] === height) return false;
    this.heights[i] = height;
    this._dirty = true;
    return true;
  }

  /** Row `i`'s height. */
  get(i) {
    return this.heights[i];
  }

  _offsetsNow() {
    if (this._dirty || this._offsets.length !== this.heights.length + 1) {
      const n = this.heights.length;
      const offsets = new Float64Array(n + 1);
      for (let i = 0; i < n; i += 1) offsets[i + 1] = offsets[i] + this.heights[i];
      this._offsets = offsets;
      this._dirty = false;
    }
    return this._offsets;
  }

  /** Top of row `i` (i = length gives the total height). */
  offset(i) {
    const offsets = this._offsetsNow();
    return offsets[Math.max(0, Math.min(i, offsets.length - 1))];
  }

  /** Sum of all heights. */
  get total() {
    return this.offset(this.heights.length);
  }

  /** The row at vertical position `y` (clamped to the rows; -1 when there are none). */
  indexAt(y) {
    const n = this.heights.length;
    if (n === 0) return -1;
    const offsets = this._offsetsNow();
    if (y <= 0) return 0;
    if (y >= offsets[n]) return n - 1;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (offsets[mid] <= y) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * The rows to render for a viewport at `scrollTop` of `height` pixels: [start, end), with
   * `overscan` pixels of rows kept above and below.
   * @returns {{start: number, end: number}}
   */
  range(scrollTop, height, overscan = 0) {
    const n = this.heights.length;
    if (n === 0) return { start: 0, end: 0 };
    const start = this.indexAt(scrollTop - overscan);
    const last = this.indexAt(scrollTop + height + overscan);
    return { start, end: Math.min(n, last + 1) };
  }

  /**
   * The scrollTop that shows row `i` in a viewport of `height` pixels: "center" puts it in the
   * middle, "nearest" moves the least from `current` (0 when already fully in view), "start"
   * puts it at the top. Clamped to the scrollable range.
   */
  scrollTopFor(i, height, align = "nearest", current = 0) {
    const top = this.offset(i);
    const h = this.heights[i] ?? 0;
    const max = Math.max(0, this.total - height);
    let target;
    if (align === "start" || h >= height) target = top;
    else if (align === "center") target = top - (height - h) / 2;
    else if (top < current) target = top;
    else if (top + h > current + height) target = top + h - height;
    else target = current;
    return Math.max(0, Math.min(max, target));
  }
}
