/**
 * The timeline's overview strip: the event density over the whole x extent, and the camera's
 * window as a box on it. Drag the box (or press anywhere: the box centres there and follows
 * the pointer) to move the timeline; the wheel zooms about the pointer.
 */

/** The window box: the page's accent colour (--accent). */
const ACCENT = "#4263eb";

/** Density bars are this many pixels wide. */
const BUCKET_PX = 2;

export class TimelineOverview {
  /**
   * @param {HTMLElement} root the strip's element (a canvas is created in it)
   * @param {{onCentre: (x: number) => void, onZoom: (factor: number, x: number) => void}} handlers
   *   `x` in data units
   */
  constructor(root, { onCentre, onZoom }) {
    this.root = root;
    this.canvas = document.createElement("canvas");
    this.canvas.setAttribute("aria-hidden", "true");
    root.append(this.canvas);
    this.onCentre = onCentre;
    this.onZoom = onZoom;
    this.extent = [0, 1];
    this.window = [0, 1];
    this._counts = null;
    this._signature = "";
    this._grab = null; // offset (data units) of the pointer from the window's centre while dragging
    root.addEventListener("pointerdown", (e) => this._down(e));
    root.addEventListener("pointermove", (e) => this._move(e));
    const up = (e) => {
      this._grab = null;
      root.releasePointerCapture?.(e.pointerId);
    };
    root.addEventListener("pointerup", up);
    root.addEventListener("pointercancel", up);
    root.addEventListener("wheel", (e) => {
      e.preventDefault();
      this.onZoom(Math.exp(Math.max(-600, Math.min(600, e.deltaY)) * 0.00223), this._dataX(e));
    }, { passive: false });
  }

  _dataX(e) {
    const box = this.root.getBoundingClientRect();
    const f = Math.min(1, Math.max(0, (e.clientX - box.left) / Math.max(1, box.width)));
    return this.extent[0] + f * (this.extent[1] - this.extent[0]);
  }

  _down(e) {
    if (e.button !== 0) return;
    e.preventDefault();
    this.root.setPointerCapture?.(e.pointerId);
    const x = this._dataX(e);
    const [a, b] = this.window;
    const centre = (a + b) / 2;
    this._grab = x >= a && x <= b ? x - centre : 0;
    this.onCentre(x - this._grab);
  }

  _move(e) {
    if (this._grab === null) return;
    this.onCentre(this._dataX(e) - this._grab);
  }

  /**
   * The density of `xs` (data x of every drawn event) over `extent`; recomputed only when
   * `signature` changed.
   */
  setData(extent, signature, xs) {
    this.extent = extent;
    if (signature === this._signature) return;
    this._signature = signature;
    const buckets = Math.max(1, Math.floor((this.root.clientWidth || 600) / BUCKET_PX));
    const counts = new Float64Array(buckets);
    const span = extent[1] - extent[0] || 1;
    for (const x of xs()) {
      const i = Math.min(buckets - 1, Math.max(0, Math.floor(((x - extent[0]) / span) * buckets)));
      counts[i] += 1;
    }
    this._counts = counts;
  }

  /** Draw the density and the window `win`. */
  draw(win) {
    this.window = win;
    const width = this.root.clientWidth;
    const height = this.root.clientHeight;
    if (!width || !height) return;
    const dpr = window.devicePixelRatio || 1;
    if (this.canvas.width !== Math.round(width * dpr) || this.canvas.height !== Math.round(height * dpr)) {
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${height}px`;
    }
    const ctx = this.canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = getComputedStyle(this.canvas).getPropertyValue("--stripe").trim() || "#f8f9fa"; // static/css/dark.css
    ctx.fillRect(0, 0, width, height);
    const counts = this._counts;
    if (counts) {
      let max = 0;
      for (const c of counts) max = Math.max(max, c);
      const w = width / counts.length;
      ctx.fillStyle = "#adb5bd";
      ctx.beginPath();
      for (let i = 0; i < counts.length; i += 1) {
        if (!counts[i]) continue;
        const h = Math.max(1, (Math.sqrt(counts[i]) / Math.sqrt(max || 1)) * (height - 4));
        ctx.rect(i * w, height - h, Math.max(1, w - 0.5), h);
      }
      ctx.fill();
    }
    const [e0, e1] = this.extent;
    const span = e1 - e0 || 1;
    const x0 = ((win[0] - e0) / span) * width;
    const x1 = ((win[1] - e0) / span) * width;
    ctx.fillStyle = "rgba(33, 37, 41, 0.12)";
    ctx.fillRect(0, 0, Math.max(0, x0), height);
    ctx.fillRect(x1, 0, Math.max(0, width - x1), height);
    ctx.strokeStyle = ACCENT;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(Math.max(0.75, x0), 0.75, Math.max(3, x1 - x0 - 1.5), height - 1.5);
  }
}
