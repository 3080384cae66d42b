/**
 * The agent graph, drawn with sigma.js: agents as nodes (sized by events or tokens, coloured
 * by role), the spawn tree as thin grey lines, and the agents' interactions as curved edges
 * aggregated per pair (width by count, colour by the most frequent edge type).
 *
 * The layout (`labelledLayout`, pure) is dagre's layered layout (static/vendor/dagre.min.js, the
 * maintained @dagrejs/dagre) of each spawn tree, left to right, each agent a box as wide as its
 * circle and its label, so labels never print over each other or over circles; a fan-out's
 * childless children are packed in a grid of columns when they are many (more than CLUSTER_ABOVE)
 * or when their column would not fit the panel, and separate trees (a group chat's agents are
 * trees of one) are packed in rows as wide as the panel, as text wraps. The layout is in screen
 * pixels and sigma scales it, keeping its proportions, to fill the panel while circles and labels
 * keep their size: so both choices first look for an arrangement that fits the panel unshrunk,
 * else for the one shrunk least. A panel that changes size is laid out again. Where a layout is
 * shrunk, its circles shrink with it and, up to LABEL_ALL_BELOW agents, a label that would cover
 * another label or a circle or run out of the panel is left out (`_labelled`; hovering its node
 * shows it); above, sigma's label grid (labelDensity) chooses. Without dagre (its script missing)
 * the older `treeLayout` is used.
 *
 * With credit (`setCredit`, from attribution.js's `graphCredit`), nodes are coloured by their
 * agent's credit and sender→receiver edges drawn with width by |credit| and colour by its sign
 * (`creditEdgeStyle`, pure), with a legend under the graph; edges without credit stay thin.
 *
 * Keyboard: the graph is one tab stop; while it has the focus the arrow keys move a cursor to the
 * nearest agent on screen in that direction (`nearestInDirection`, pure), Home to the first root,
 * Enter (or Space) selects the cursor's agent. The cursor is drawn with an orange ring and its
 * label, and announced in a polite live region.
 */

import { el } from "../lib/dom.js";
import { formatNumber as formatCredit } from "../lib/format.js";
import { creditColor, edgeColor, MARK_COLORS, roleColor, fade } from "../lib/palette.js";
import { createGraph, panTo, syncGraph, vendor } from "./sigma_sync.js";

/** Above this many leaves the tree is laid out radially. */
export const RADIAL_ABOVE_LEAVES = 16;
/** Above this many agents nodes are drawn smaller. */
const LARGE_GRAPH = 200;
/** Up to this many agents every node is labelled. */
const LABEL_ALL_BELOW = 12;
/** Sigma's label font (the layout measures labels with it). */
const LABEL_SIZE = 12;
const LABEL_FONT = "system-ui, sans-serif";
const LABEL_WEIGHT = "normal";
/** Between a circle and its label (sigma draws the label `size + 3` px right of the centre). */
const LABEL_GAP = 4;
/**
 * The largest circle radius drawn (`render`'s base + range), px: an agent's box is this high. A
 * selected or cursor circle (times 1.3) reaches into the gaps around its box, but not into
 * another circle (rows of boxes are 2 radii and NODE_SEP apart).
 */
const MAX_RADIUS = { normal: 18, large: 8.5 };
/**
 * Sigma's margin around the layout (px). The layout's frame (`_bbox`) holds every circle and
 * label whole, so a small one does; sigma takes it from the panel's smaller side and shrinks the
 * other side in proportion.
 */
const STAGE_PADDING = 12;
/** A panel whose width or height changes by more than this factor is laid out again. */
const RELAYOUT_CHANGE = 1.1;
/** The keyboard cursor's ring. */
export const CURSOR_COLOR = "#f08c00";
/** Arrow keys and their screen directions (y grows downwards). */
const ARROWS = Object.freeze({ ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] });

/**
 * The point nearest to `from` in direction `dir` ([dx, dy], a unit axis, screen pixels with y
 * down): among the points within 45° of the direction, the one with the smallest distance along
 * it plus twice the sideways offset; when none is in that cone, the same over the half-plane
 * ahead. `points`: Map name -> {x, y}. Returns a name, or null when nothing lies that way.
 * @param {Map<string, {x: number, y: number}>} points
 * @param {string} from
 * @param {[number, number]} dir
 * @returns {string|null}
 */
export function nearestInDirection(points, from, dir) {
  const origin = points.get(from);
  if (!origin) return null;
  let best = null;
  let bestScore = Infinity;
  let bestInCone = false;
  for (const [name, p] of points) {
    if (name === from) continue;
    const dx = p.x - origin.x;
    const dy = p.y - origin.y;
    const along = dx * dir[0] + dy * dir[1];
    const side = Math.abs(dx * dir[1] - dy * dir[0]);
    if (!(along > 0)) continue;
    const inCone = side <= along;
    const score = along + 2 * side;
    if ((inCone && !bestInCone) || (inCone === bestInCone && score < bestScore)) {
      best = name;
      bestScore = score;
      bestInCone = inCone;
    }
  }
  return best;
}

/**
 * Positions for a forest: leaves take consecutive slots in depth-first order, a parent sits
 * between its first and last child. Layered: x = slot, y = -depth (times a gap that keeps the
 * tree about twice as wide as tall). Radial: the slot is an
 * angle, the depth a radius (one root in the centre; several around a virtual centre).
 * @param {string[]} roots
 * @param {(name: string) => string[]} childrenOf
 * @param {{radialAbove?: number}} [options]
 * @returns {Map<string, {x: number, y: number}>}
 */
export function treeLayout(roots, childrenOf, { radialAbove = RADIAL_ABOVE_LEAVES } = {}) {
  const slot = new Map();
  const depth = new Map();
  let leaves = 0;
  const place = (name, d) => {
    depth.set(name, d);
    const children = childrenOf(name);
    if (children.length === 0) {
      slot.set(name, leaves);
      leaves += 1;
      return;
    }
    for (const c of children) place(c, d + 1);
    slot.set(name, (slot.get(children[0]) + slot.get(children[children.length - 1])) / 2);
  };
  for (const r of roots) place(r, 0);
  const out = new Map();
  if (leaves <= radialAbove) {
    // Levels spaced so that the tree is about twice as wide as tall.
    const levels = Math.max(1, ...depth.values());
    const gap = Math.max(1, (leaves - 1) / levels / 2);
    for (const [name, s] of slot) out.set(name, { x: s, y: 0 - depth.get(name) * gap });
    return out;
  }
  const offset = roots.length === 1 ? 0 : 1;
  for (const [name, s] of slot) {
    const angle = (2 * Math.PI * s) / leaves;
    const radius = (depth.get(name) + offset) * Math.max(1, leaves / (2 * Math.PI * 6));
    out.set(name, { x: radius * Math.cos(angle) + 0, y: radius * Math.sin(angle) + 0 });
  }
  return out;
}

/** A parent with more than this many childless children always gets them packed in a grid (one box). */
export const CLUSTER_ABOVE = 8;
/** Space between boxes in a rank, between ranks, and between the grid cells of a cluster (px). */
const NODE_SEP = 6;
const RANK_SEP = 36;
const CELL_GAP = 10;
/** Space between separate spawn trees packed in rows: beside each other, and between rows (px). */
const COMPONENT_GAP = { x: 24, y: 12 };
/** The space (px) the layout aims to fit when it is not given the panel's. */
export const DEFAULT_PANEL = Object.freeze({ width: 640, height: 320 });

/**
 * The scale at which a `w`×`h` layout fits, whole, in `panel` ({width, height}, px). Sigma frames
 * the layout in the panel keeping its proportions, and draws circles and labels at a fixed size:
 * below 1 they crowd each other, so of two layouts that do not fit the one of the larger scale
 * is drawn the least crowded.
 */
export function fitScale(w, h, panel) {
  return Math.min(panel.width / Math.max(w, 1), panel.height / Math.max(h, 1));
}

/**
 * Of `candidates` ({width, height}) in order of preference, the first that fits `panel` at scale
 * 1, else the one that fits at the largest scale (`fitScale`).
 */
function pick(candidates, panel) {
  let best = null;
  let bestScore = -Infinity;
  for (const c of candidates) {
    const score = fitScale(c.width, c.height, panel);
    if (score >= 1) return c;
    if (score > bestScore) {
      best = c;
      bestScore = score;
    }
  }
  return best;
}

/**
 * The grid for `n` cells of `cellW`×`cellH` beside their parent's box (`parent`: {width, height}):
 * {cols, rows}, the fewest columns that fit `panel` (px) at scale 1 (one is dagre's column), else
 * the grid that fits it at the largest scale. Only the narrowest grid of each row count is a
 * candidate (more columns for the same rows only widen it).
 */
export function gridShape(n, cellW, cellH, parent, panel) {
  const candidates = [];
  for (let rows = n; rows >= 1; rows -= 1) {
    const cols = Math.ceil(n / rows);
    if (Math.ceil(n / cols) !== rows) continue; // the same grid as a smaller row count
    candidates.push({
      cols, rows,
      width: parent.width + RANK_SEP + cols * cellW - CELL_GAP,
      height: Math.max(parent.height, rows * cellH - NODE_SEP),
    });
  }
  const { cols, rows } = pick(candidates, panel);
  return { cols, rows };
}

/**
 * Boxes (`sizes`: [{width, height}], in order) packed in rows left to right as text wraps, a
 * row's boxes centred on its middle line: rows as wide as `panel` (px) allows when they then fit
 * it at scale 1 (the fewest rows), else the row width at which the whole fits it at the largest
 * scale. Returns {at: [{x, y}] (each box's top left), width, height}.
 */
export function packRows(sizes, panel, gap = COMPONENT_GAP) {
  const pack = (limit) => {
    const at = [];
    let x = 0;
    let y = 0;
    let rowHeight = 0;
    let width = 0;
    let row = [];
    const endRow = () => {
      for (const i of row) at[i].y = y + (rowHeight - sizes[i].height) / 2;
      y += rowHeight + gap.y;
      row = [];
      x = 0;
      rowHeight = 0;
    };
    sizes.forEach((s, i) => {
      if (row.length && x + s.width > limit) endRow();
      at[i] = { x, y: 0 };
      row.push(i);
      width = Math.max(width, x + s.width);
      rowHeight = Math.max(rowHeight, s.height);
      x += s.width + gap.x;
    });
    if (row.length) endRow();
    return { at, width, height: Math.max(0, y - gap.y) };
  };
  // The row widths at which the rows break differently: every run of consecutive boxes for a few
  // boxes, steps of 5 % between the widest box and all in one row for many; widest first.
  const widths = sizes.map((s) => s.width);
  const limits = new Set([Math.max(0, ...widths)]);
  if (sizes.length <= 40) {
    for (let i = 0; i < sizes.length; i += 1) {
      let run = -gap.x;
      for (let j = i; j < sizes.length; j += 1) {
        run += widths[j] + gap.x;
        limits.add(run);
      }
    }
  } else {
    const total = widths.reduce((a, b) => a + b + gap.x, -gap.x);
    for (let limit = Math.max(...widths); limit < total; limit *= 1.05) limits.add(limit);
    limits.add(total);
  }
  return pick([...limits].sort((a, b) => b - a).map(pack), panel);
}

/**
 * Positions (screen px, y down) for a forest. `boxOf(name)` gives {width, height, r}: the agent's
 * box (circle and label) and its circle's radius; the agent's circle centre is placed `r` from
 * its box's left edge (sigma draws the label to its right).
 *
 * Each spawn tree is laid out by dagre left to right, a parent's childless children packed in a
 * grid (one box) when there are more than `clusterAbove` of them or when their column would not
 * fit the panel (`gridShape`). The trees (an agent without parent or children is a tree of one,
 * as every member of a group chat is) are then packed in rows as wide as the panel (`packRows`).
 * `panel` ({width, height}, px) is the space sigma draws the layout in: sigma shrinks a layout
 * that does not fit while its circles and labels keep their size, so both choices first look
 * for a layout that fits at scale 1, then for the one that fits at the largest scale. `dagre` is
 * the library (the browser global, or the npm module in tests).
 * @returns {Map<string, {x: number, y: number}>}
 */
export function labelledLayout(dagre, roots, childrenOf, boxOf, { clusterAbove = CLUSTER_ABOVE, panel = DEFAULT_PANEL } = {}) {
  const seen = new Set();
  const trees = [];
  for (const root of roots) {
    if (seen.has(root)) continue;
    trees.push(childrenOf(root).length ? layoutTree(dagre, root, childrenOf, boxOf, clusterAbove, panel, seen) : single(root, boxOf, seen));
  }
  const packed = packRows(trees.map((t) => ({ width: t.width, height: t.height })), panel);
  const out = new Map();
  trees.forEach((tree, i) => {
    const { x, y } = packed.at[i];
    for (const [name, p] of tree.at) out.set(name, { x: x + p.x, y: y + p.y });
  });
  return out;
}

/** A tree of one agent: its box, the circle's centre `r` from the left, at mid-height. */
function single(name, boxOf, seen) {
  seen.add(name);
  const box = boxOf(name);
  return { at: new Map([[name, { x: box.r, y: box.height / 2 }]]), width: box.width, height: box.height };
}

/** One spawn tree by dagre (see `labelledLayout`): {at (box's top left at 0, 0), width, height}. */
function layoutTree(dagre, root, childrenOf, boxOf, clusterAbove, panel, seen) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: NODE_SEP, ranksep: RANK_SEP, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  const clusters = new Map(); // box id -> {names, boxes, cols, cellW, cellH}
  const add = (name) => {
    if (seen.has(name)) return;
    seen.add(name);
    const box = boxOf(name);
    g.setNode(name, { width: box.width, height: box.height });
    const children = childrenOf(name);
    const leaves = children.filter((c) => !seen.has(c) && childrenOf(c).length === 0);
    let packed = new Set();
    if (leaves.length > 1) {
      const boxes = leaves.map(boxOf);
      const cellW = Math.max(...boxes.map((b) => b.width)) + CELL_GAP;
      const cellH = Math.max(...boxes.map((b) => b.height)) + NODE_SEP;
      const { cols, rows } = gridShape(leaves.length, cellW, cellH, box, panel);
      if (leaves.length > clusterAbove || cols > 1) {
        packed = new Set(leaves);
        const id = `\u0000cluster:${name}`;
        clusters.set(id, { names: leaves, boxes, cols, cellW, cellH });
        g.setNode(id, { width: cols * cellW - CELL_GAP, height: rows * cellH - NODE_SEP });
        g.setEdge(name, id);
        for (const c of leaves) seen.add(c);
      }
    }
    for (const c of children) {
      if (packed.has(c) || seen.has(c)) continue;
      add(c);
      g.setEdge(name, c);
    }
  };
  add(root);
  dagre.layout(g);
  const at = new Map();
  const place = (name, x, y) => {
    const box = boxOf(name);
    at.set(name, { x, y, left: x - box.r, right: x - box.r + box.width, top: y - box.height / 2, bottom: y + box.height / 2 });
  };
  for (const id of g.nodes()) {
    const n = g.node(id);
    const cluster = clusters.get(id);
    if (!cluster) {
      place(id, n.x - n.width / 2 + boxOf(id).r, n.y);
      continue;
    }
    const left = n.x - n.width / 2;
    const top = n.y - n.height / 2;
    cluster.names.forEach((name, i) => {
      const col = i % cluster.cols;
      const row = Math.floor(i / cluster.cols);
      place(name, left + col * cluster.cellW + cluster.boxes[i].r, top + row * cluster.cellH + (cluster.cellH - NODE_SEP) / 2);
    });
  }
  const x0 = Math.min(...[...at.values()].map((p) => p.left));
  const y0 = Math.min(...[...at.values()].map((p) => p.top));
  const out = new Map();
  let width = 0;
  let height = 0;
  for (const [name, p] of at) {
    out.set(name, { x: p.x - x0, y: p.y - y0 });
    width = Math.max(width, p.right - x0);
    height = Math.max(height, p.bottom - y0);
  }
  return { at: out, width, height };
}

/** Widest credit edge, in sigma size units (an edge of credit c is 1 + (MAX - 1)·|c| wide). */
export const CREDIT_EDGE_MAX = 9;

/**
 * Width and colour of an edge of credit `c` in [-1, 1] (clamped; not a number counts as 0).
 * @returns {{size: number, color: string}}
 */
export function creditEdgeStyle(c) {
  const v = Math.max(-1, Math.min(1, Number(c) || 0));
  return { size: 1 + (CREDIT_EDGE_MAX - 1) * Math.abs(v), color: creditColor(v) };
}

export class AgentGraph {
  /**
   * @param {{container: HTMLElement, model: object, onSelectAgent: (name: string) => void}} options
   */
  constructor({ container, model, onSelectAgent }) {
    this.container = container;
    this.model = model;
    this.onSelectAgent = onSelectAgent;
    /** "events" or "tokens". */
    this.sizeBy = "events";
    this.selected = null;
    this.graph = createGraph();
    this.sigma = null;
    /** {nodes: Map, edges: Map, largest} of attribution.js's `graphCredit`, or null. */
    this.credit = null;
    this.legend = null;
    this._layoutVersion = -1;
    /** The space ({width, height}, px) the layout was made to fit (`_fitSpace`). */
    this._layoutSpace = null;
    /** The panel's size as the resize observer last saw it ({width, height}, px), or null. */
    this._panelSize = null;
    this._layout = new Map();
    /** The layout's extent with the labels ({x: [min, max], y: [min, max]}, sigma's units), or null. */
    this._bbox = null;
    this._framed = undefined;
    /** The keyboard cursor: the agent the arrow keys are on (drawn while the graph has the focus). */
    this.cursor = null;
    this.focused = false;
    this.announcer = el("p", null, "visually-hidden");
    this.announcer.dataset.testid = "agent-graph-cursor";
    this.announcer.setAttribute("aria-live", "polite");
    container.after(this.announcer);
    if (!container.hasAttribute("tabindex")) container.tabIndex = 0;
    container.addEventListener("keydown", (e) => this._key(e));
    container.addEventListener("focus", () => {
      this.focused = true;
      if (this.cursor === null || !this._nodeShown(this.cursor)) this._moveCursor(this._firstShown(this.selected));
      else this.render();
    });
    container.addEventListener("blur", () => {
      this.focused = false;
      this.render();
    });
  }

  /** Bring the drawing in line with the model. */
  render() {
    const model = this.model;
    if (this._layoutVersion !== model.version || this._layoutSpace !== this._fitSpace()) {
      this._layout = this._computeLayout();
      this._layoutVersion = model.version;
    }
    const stats = model.agentStats();
    // By tokens: the measured ones; a trace without any sizes by the importers' estimates instead.
    let key = this.sizeBy;
    if (key === "tokens" && ![...stats.values()].some((s) => s.tokens > 0)) key = "estimatedTokens";
    let max = 1;
    for (const s of stats.values()) max = Math.max(max, s[key]);
    // Many agents share the same screen: draw them smaller.
    const [base, range] = this._layout.size > LARGE_GRAPH ? [1.5, 7] : [4, 14];
    // A layout that does not fit the panel is drawn smaller: its circles shrink with it (not below
    // 2 px), so that they stay inside their boxes; which labels still fit is `_labelled`'s choice.
    const scale = this._drawScale();
    const shrink = (size) => (scale < 1 ? Math.max(size * scale, Math.min(size, 2)) : size);
    const nodes = new Map();
    for (const [name, at] of this._layout) {
      if (!model.agentPasses(name)) continue;
      const value = stats.get(name)?.[key] ?? 0;
      const mistake = model.isMistakeAgent(name);
      const selected = name === this.selected;
      const cursor = this.focused && name === this.cursor;
      nodes.set(name, {
        x: at.x, y: at.y, label: name,
        size: shrink((base + range * Math.sqrt(value / max)) * (selected || cursor ? 1.3 : 1)),
        color: this.credit?.nodes.size ? creditColor(this.credit.nodes.get(name) ?? 0) : roleColor(model.roleOf(name)),
        borderColor: cursor ? CURSOR_COLOR : selected ? MARK_COLORS.selected : MARK_COLORS.mistake,
        borderSize: cursor ? 0.45 : selected || mistake ? 0.3 : 0,
        type: selected || mistake || cursor ? "ring" : "point", // points are much cheaper to draw
        highlighted: selected || cursor, forceLabel: selected || cursor,
        zIndex: cursor ? 3 : selected ? 2 : mistake ? 1 : 0,
      });
    }
    if (this._layout.size <= LABEL_ALL_BELOW) {
      const labelled = this._labelled(nodes, scale);
      for (const [name, node] of nodes) {
        if (labelled.has(name)) node.forceLabel = true;
        else node.hideLabel = true; // it would cover another label or a circle (hovering shows it)
      }
    }
    const edges = new Map();
    for (const [name] of nodes) {
      const parent = model.parentOf(name);
      if (parent && nodes.has(parent)) {
        edges.set(`spawn:${parent}->${name}`, {
          source: parent, target: name,
          attributes: { type: "line", size: 1, color: fade(MARK_COLORS.unknown, 0.8), zIndex: 0 },
        });
      }
    }
    const creditEdges = this.credit?.edges ?? new Map();
    for (const [key, c] of creditEdges) {
      const [source, target] = key.split("\u0000");
      if (!nodes.has(source) || !nodes.has(target)) continue;
      const touches = source === this.selected || target === this.selected;
      edges.set(`pair:${source}->${target}`, {
        source, target,
        attributes: { type: "curve", curvature: 0.3, zIndex: touches ? 3 : 2, ...creditEdgeStyle(c), label: `credit ${formatCredit(c)}` },
      });
    }
    for (const pair of this._pairs()) {
      if (!nodes.has(pair.source) || !nodes.has(pair.target)) continue;
      if (creditEdges.has(`${pair.source}\u0000${pair.target}`)) continue;
      const touches = pair.source === this.selected || pair.target === this.selected;
      edges.set(`pair:${pair.source}->${pair.target}`, {
        source: pair.source, target: pair.target,
        attributes: {
          type: "curve", curvature: 0.3, zIndex: touches ? 2 : 1,
          size: creditEdges.size ? 1 : Math.min(8, 1 + 1.5 * Math.log2(pair.count)),
          color: fade(edgeColor(pair.type), creditEdges.size ? 0.25 : touches ? 0.95 : 0.5),
          label: `${pair.count} ${pair.type}`,
        },
      });
    }
    const { graph } = syncGraph(this.graph, nodes, edges);
    if (graph !== this.graph) {
      this.graph = graph;
      this.sigma?.setGraph(graph);
    }
    if (!this.sigma) this._mount();
    if (this._framed !== this._bbox) {
      this._framed = this._bbox;
      this.sigma.setCustomBBox(this._bbox);
    }
  }

  /**
   * The scale sigma draws the layout at in the panel at its first framing (below 1: shrunk): it
   * keeps the layout's proportions and leaves STAGE_PADDING from the panel's smaller side, the
   * other in proportion (sigma's matrixFromCamera); 1 when the panel or the layout has no size yet.
   */
  _drawScale() {
    const panel = this._panelSize ?? this.container.getBoundingClientRect();
    const bbox = this._bbox;
    if (!bbox || !(panel.width > 0 && panel.height > 0)) return 1;
    const k = Math.max(0.1, 1 - (2 * STAGE_PADDING) / Math.min(panel.width, panel.height));
    const w = Math.max(1, bbox.x[1] - bbox.x[0]);
    const h = Math.max(1, bbox.y[1] - bbox.y[0]);
    return Math.min((k * panel.width) / w, (k * panel.height) / h);
  }

  /**
   * The agents whose labels are drawn (a set of names) when every agent may be labelled: the
   * keyboard cursor's and the selected agent's, then, biggest circle first, each whose label (as
   * sigma places it, at the layout's `scale`, the layout's frame centred in the panel) stays in
   * the panel and covers neither a label already chosen nor a circle. At scale 1 that is every
   * agent (the layout gives each label its own box inside the frame).
   */
  _labelled(nodes, scale) {
    const panel = this._panelSize ?? this.container.getBoundingClientRect();
    const bbox = this._bbox;
    const cx = bbox ? (bbox.x[0] + bbox.x[1]) / 2 : 0;
    const cy = bbox ? (bbox.y[0] + bbox.y[1]) / 2 : 0;
    const inside = (r) => !(panel.width > 0) || (r.x0 >= 0 && r.x1 <= panel.width && r.y0 >= 0 && r.y1 <= panel.height);
    const rects = new Map();
    for (const [name, node] of nodes) {
      // Viewport px (y down, as the layout's y is up).
      const x = panel.width / 2 + (node.x - cx) * scale;
      const y = panel.height / 2 - (node.y - cy) * scale;
      rects.set(name, {
        circle: { x0: x - node.size, x1: x + node.size, y0: y - node.size, y1: y + node.size },
        label: { x0: x + node.size + 3, x1: x + node.size + 3 + this._labelWidth(name), y0: y - LABEL_SIZE / 2, y1: y + LABEL_SIZE / 2 },
      });
    }
    const hit = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
    const order = [...nodes.keys()].sort((a, b) => {
      const first = (name) => (name === this.cursor && this.focused ? 2 : name === this.selected ? 1 : 0);
      return first(b) - first(a) || nodes.get(b).size - nodes.get(a).size;
    });
    const chosen = new Set();
    for (const name of order) {
      const { label } = rects.get(name);
      const free = nodes.get(name).forceLabel || (
        inside(label) && ![...chosen].some((other) => hit(label, rects.get(other).label))
        && ![...rects].some(([other, r]) => other !== name && hit(label, r.circle)));
      if (free) chosen.add(name);
    }
    return chosen;
  }

  /** Agent edges merged per ordered pair over every type but spawn; `type` the most frequent. */
  _pairs() {
    const pairs = new Map();
    for (const e of this.model.agentEdges()) {
      if (e.type === "spawn") continue;
      const key = `${e.source}\u0000${e.target}`;
      const pair = pairs.get(key) ?? { source: e.source, target: e.target, count: 0, type: e.type, top: 0 };
      pair.count += e.count;
      if (e.count > pair.top) {
        pair.top = e.count;
        pair.type = e.type;
      }
      pairs.set(key, pair);
    }
    return pairs.values();
  }

  /**
   * Paint credit (`graphCredit`'s {nodes, edges, largest}; null clears it) and show its legend.
   * @param {{nodes: Map<string, number>, edges: Map<string, number>, largest: {nodes: number, edges: number}}|null} credit
   */
  setCredit(credit) {
    this.credit = credit && (credit.nodes.size || credit.edges.size) ? credit : null;
    this._renderLegend();
    this.render();
  }

  _renderLegend() {
    if (!this.legend) {
      this.legend = el("p", null, "credit-legend graph-credit-legend");
      this.legend.dataset.testid = "graph-credit-legend";
      this.container.after(this.legend);
    }
    const credit = this.credit;
    this.legend.hidden = !credit;
    if (!credit) {
      this.legend.replaceChildren();
      return;
    }
    const parts = [el("span", "negative"), el("span", null, "credit-ramp"), el("span", "positive credit")];
    parts.push(el("span", ` · node colour: agent credit (largest |Σ Δ| ${formatCredit(credit.largest.nodes)})`, "muted"));
    if (credit.edges.size) {
      parts.push(el("span", ` · edge width: message credit summed per sender→receiver (largest |Σ Δ| `
        + `${formatCredit(credit.largest.edges)})`, "muted"));
    }
    this.legend.replaceChildren(...parts);
  }

  /** Size nodes by "events" or "tokens". */
  setSizeBy(sizeBy) {
    this.sizeBy = sizeBy;
    this.render();
  }

  /** Select agent `name` (null to clear) and pan to it; nothing to do when it already is. */
  select(name) {
    if (name === this.selected) return;
    this.selected = name;
    this.render();
    if (name !== null && this.sigma && this.graph.hasNode(name)) panTo(this.sigma, name);
  }

  // ---------------------------------------------------------------- keyboard

  _nodeShown(name) {
    return this._layout.has(name) && this.model.agentPasses(name);
  }

  /** `preferred` when it is drawn, else the first drawn root (or agent), else null. */
  _firstShown(preferred) {
    if (preferred !== null && this._nodeShown(preferred)) return preferred;
    for (const name of [...this.model.rootAgents(), ...this._layout.keys()]) if (this._nodeShown(name)) return name;
    return null;
  }

  /** Where the drawn agents are on screen (px, y down): from sigma once mounted, else the layout. */
  _screenPoints() {
    const points = new Map();
    for (const [name, at] of this._layout) {
      if (!this._nodeShown(name)) continue;
      const data = this.sigma?.getNodeDisplayData(name);
      points.set(name, data ? this.sigma.framedGraphToViewport(data) : { x: at.x, y: -at.y });
    }
    return points;
  }

  _moveCursor(name) {
    if (name === null) return;
    this.cursor = name;
    this.container.dataset.cursor = name;
    const stats = this.model.agentStats().get(name);
    const role = this.model.roleOf(name);
    this.announcer.textContent = `${name}${role ? `, ${role}` : ""}${stats ? `, ${stats.events} events` : ""}`
      + `${name === this.selected ? ", selected" : ""}. Enter selects.`;
    this.render();
    if (this.sigma && this.graph.hasNode(name)) panTo(this.sigma, name);
  }

  _key(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const dir = ARROWS[e.key];
    if (dir) {
      const from = this._firstShown(this.cursor);
      const next = from === this.cursor ? nearestInDirection(this._screenPoints(), from, dir) : from;
      if (next !== null) this._moveCursor(next);
    } else if (e.key === "Home") {
      this._moveCursor(this._firstShown(null));
    } else if (e.key === "Enter" || e.key === " ") {
      if (this.cursor !== null && this._nodeShown(this.cursor)) this.onSelectAgent(this.cursor);
    } else {
      return;
    }
    // The page's own arrow keys (stepping through events) do not act while the graph has the focus.
    e.preventDefault();
    e.stopPropagation();
  }

  /**
   * The space sigma draws the layout in ({width, height}, px): the panel less sigma's padding
   * (`_drawScale`). The one the current layout was made for while the panel keeps about its size
   * (or has no size, hidden), else the panel's own.
   */
  _fitSpace() {
    // The size the resize observer last saw (measured only before it has seen one).
    const { width, height } = this._panelSize ?? this.container.getBoundingClientRect();
    const kept = this._layoutSpace;
    if (!(width > 0 && height > 0)) return kept ?? DEFAULT_PANEL;
    const k = Math.max(0.1, 1 - (2 * STAGE_PADDING) / Math.min(width, height));
    const space = { width: k * width, height: k * height };
    const near = (a, b) => Math.max(a / b, b / a) <= RELAYOUT_CHANGE;
    return kept !== null && near(space.width, kept.width) && near(space.height, kept.height) ? kept : space;
  }

  /** The spawn tree's layout: dagre with label-sized boxes (y up, as sigma's), else the tree layout. */
  _computeLayout() {
    const model = this.model;
    const panel = this._fitSpace();
    this._layoutSpace = panel;
    const dagre = globalThis.dagre;
    const childrenOf = (name) => model.childrenOf(name);
    if (!dagre?.layout) return treeLayout(model.rootAgents(), childrenOf);
    const large = model.agents.size > LARGE_GRAPH;
    const r = large ? MAX_RADIUS.large : MAX_RADIUS.normal;
    const boxOf = (name) => ({ width: 2 * r + LABEL_GAP + this._labelWidth(name), height: Math.max(2 * r, LABEL_SIZE + 4), r });
    const at = labelledLayout(dagre, model.rootAgents(), childrenOf, boxOf, { panel });
    const out = new Map();
    const bbox = { x: [Infinity, -Infinity], y: [Infinity, -Infinity] };
    for (const [name, p] of at) {
      out.set(name, { x: p.x, y: -p.y });
      const box = boxOf(name);
      bbox.x = [Math.min(bbox.x[0], p.x - r), Math.max(bbox.x[1], p.x - r + box.width)];
      bbox.y = [Math.min(bbox.y[0], -p.y - box.height / 2), Math.max(bbox.y[1], -p.y + box.height / 2)];
    }
    // Sigma frames the boxes, labels included, not only the circles' centres.
    this._bbox = out.size ? bbox : null;
    return out;
  }

  /** The width (px) sigma gives `name`'s label (its font and size). */
  _labelWidth(name) {
    this._measure ??= document.createElement("canvas").getContext("2d");
    this._measure.font = `${LABEL_WEIGHT} ${LABEL_SIZE}px ${LABEL_FONT}`;
    return Math.ceil(this._measure.measureText(name).width);
  }

  /**
   * The labels and circles sigma draws (viewport px: {name, label: {x, y, width, height}, node:
   * {x, y, r}}), as sigma's default label renderer places them: `size + 3` right of the centre,
   * vertically centred on it. For tests and the page's checks: a labelled agent is one sigma
   * labels (`forceLabel`, or a node big enough to pass its threshold).
   */
  labelBoxes() {
    if (!this.sigma) return [];
    const out = [];
    for (const name of this.graph.nodes()) {
      const data = this.sigma.getNodeDisplayData(name);
      if (!data || data.hidden) continue;
      const p = this.sigma.framedGraphToViewport(data);
      const size = this.sigma.scaleSize(data.size);
      const width = this._labelWidth(name);
      out.push({
        name, labelled: Boolean(data.forceLabel) && !data.hideLabel,
        node: { x: p.x, y: p.y, r: size },
        label: { x: p.x + size + 3, y: p.y - LABEL_SIZE / 2, width, height: LABEL_SIZE },
      });
    }
    return out;
  }

  /** Show the whole graph. */
  fit() {
    this.sigma?.getCamera().animatedReset({ duration: 250 });
  }

  _mount() {
    const { Sigma } = vendor();
    const { createNodeBorderProgram, drawDiscNodeLabel, EdgeCurveProgram, NodePointProgram } = Sigma.rendering;
    this.sigma = new Sigma(this.graph, this.container, {
      allowInvalidContainer: true,
      renderEdgeLabels: false,
      hideEdgesOnMove: true,
      zIndex: true,
      stagePadding: STAGE_PADDING,
      labelRenderedSizeThreshold: 9,
      labelDensity: 0.5,
      labelGridCellSize: 120,
      labelSize: LABEL_SIZE,
      // Not the labels `_labelled` leaves out (hovering a node draws its label still).
      defaultDrawNodeLabel: (context, data, settings) => {
        if (!data.hideLabel) drawDiscNodeLabel(context, data, settings);
      },
      labelFont: LABEL_FONT,
      labelWeight: LABEL_WEIGHT,
      // The page's text colour (static/css/dark.css under prefers-color-scheme: dark).
      labelColor: { color: getComputedStyle(this.container).getPropertyValue("--text").trim() || "#000" },
      defaultNodeType: "point",
      nodeProgramClasses: {
        point: NodePointProgram,
        ring: createNodeBorderProgram({
          borders: [
            { size: { attribute: "borderSize", defaultValue: 0 }, color: { attribute: "borderColor" } },
            { size: { fill: true }, color: { attribute: "color" } },
          ],
        }),
      },
      edgeProgramClasses: { curve: EdgeCurveProgram },
    });
    new ResizeObserver(([entry]) => {
      this._panelSize = { width: entry.contentRect.width, height: entry.contentRect.height };
      this.sigma.resize();
      this.render(); // a new scale (circles, which labels fit), and a new layout for a new shape
      this.sigma.refresh();
    }).observe(this.container);
    this.sigma.on("clickNode", ({ node }) => this.onSelectAgent(node));
    this.sigma.on("enterNode", () => { this.container.style.cursor = "pointer"; });
    this.sigma.on("leaveNode", () => { this.container.style.cursor = ""; });
  }
}
