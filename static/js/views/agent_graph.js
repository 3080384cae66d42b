/**
 * The agent graph, drawn with sigma.js: agents as nodes (sized by events or tokens, coloured
 * by role), the spawn tree as thin grey lines, and the agents' interactions as curved edges
 * aggregated per pair (width by count, colour by the most frequent edge type).
 *
 * The layout (`labelledLayout`, pure) is dagre's layered layout (static/vendor/dagre.min.js, the
 * maintained @dagrejs/dagre) of the spawn tree, left to right, each agent a box as wide as its
 * circle and its label, so labels never print over each other or over circles; a wide fan-out
 * (more than CLUSTER_ABOVE children without children of their own) is one box, its agents packed
 * in a grid of columns. Without dagre (its script missing) the older `treeLayout` is used. The
 * layout is in screen pixels: sigma scales it up to fill the panel and down only when it does not
 * fit, where its label grid (labelDensity) leaves out labels rather than overlapping them.
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
/** The largest circle radius drawn (base + range, times 1.3 when selected), px. */
const MAX_RADIUS = { normal: 24, large: 11 };
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

/** A parent with more than this many childless children gets them packed in a grid (one box). */
export const CLUSTER_ABOVE = 8;
/** Space between boxes in a rank, between ranks, and between the grid cells of a cluster (px). */
const NODE_SEP = 6;
const RANK_SEP = 36;
const CELL_GAP = 10;

/**
 * Positions (screen px, y down) for a forest laid out by dagre left to right. `boxOf(name)` gives
 * {width, height, r}: the agent's box (circle and label) and its circle's radius; the agent's
 * circle centre is placed `r` from its box's left edge (sigma draws the label to its right).
 * Children beyond CLUSTER_ABOVE that have no children are packed into one grid box per parent,
 * about as wide as tall. `dagre` is the library (the browser global, or the npm module in tests).
 * @returns {Map<string, {x: number, y: number}>}
 */
export function labelledLayout(dagre, roots, childrenOf, boxOf, { clusterAbove = CLUSTER_ABOVE } = {}) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: NODE_SEP, ranksep: RANK_SEP, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  const clusters = new Map(); // box id -> {names, cols, cellW, cellH}
  const seen = new Set();
  const add = (name) => {
    if (seen.has(name)) return;
    seen.add(name);
    const box = boxOf(name);
    g.setNode(name, { width: box.width, height: box.height });
    const children = childrenOf(name);
    const leaves = children.filter((c) => childrenOf(c).length === 0);
    const packed = leaves.length > clusterAbove ? new Set(leaves) : new Set();
    if (packed.size) {
      const names = [...packed];
      const boxes = names.map(boxOf);
      const cellW = Math.max(...boxes.map((b) => b.width)) + CELL_GAP;
      const cellH = Math.max(...boxes.map((b) => b.height)) + NODE_SEP;
      // Columns so that the grid is about as wide as tall.
      const cols = Math.max(1, Math.round(Math.sqrt((names.length * cellH) / cellW)));
      const id = `\u0000cluster:${name}`;
      clusters.set(id, { names, boxes, cols, cellW, cellH });
      g.setNode(id, { width: cols * cellW, height: Math.ceil(names.length / cols) * cellH });
      g.setEdge(name, id);
      for (const c of names) seen.add(c);
    }
    for (const c of children) {
      if (packed.has(c)) continue;
      add(c);
      g.setEdge(name, c);
    }
  };
  for (const r of roots) add(r);
  dagre.layout(g);
  const out = new Map();
  for (const id of g.nodes()) {
    const n = g.node(id);
    const cluster = clusters.get(id);
    if (!cluster) {
      const { width, r } = boxOf(id);
      out.set(id, { x: n.x - width / 2 + r, y: n.y });
      continue;
    }
    const left = n.x - n.width / 2;
    const top = n.y - n.height / 2;
    cluster.names.forEach((name, i) => {
      const col = i % cluster.cols;
      const row = Math.floor(i / cluster.cols);
      out.set(name, { x: left + col * cluster.cellW + cluster.boxes[i].r, y: top + row * cluster.cellH + cluster.cellH / 2 });
    });
  }
  return out;
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
    if (this._layoutVersion !== model.version) {
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
    const nodes = new Map();
    for (const [name, at] of this._layout) {
      if (!model.agentPasses(name)) continue;
      const value = stats.get(name)?.[key] ?? 0;
      const mistake = model.isMistakeAgent(name);
      const selected = name === this.selected;
      const cursor = this.focused && name === this.cursor;
      nodes.set(name, {
        x: at.x, y: at.y, label: name,
        size: (base + range * Math.sqrt(value / max)) * (selected || cursor ? 1.3 : 1),
        color: this.credit?.nodes.size ? creditColor(this.credit.nodes.get(name) ?? 0) : roleColor(model.roleOf(name)),
        borderColor: cursor ? CURSOR_COLOR : selected ? MARK_COLORS.selected : MARK_COLORS.mistake,
        borderSize: cursor ? 0.45 : selected || mistake ? 0.3 : 0,
        type: selected || mistake || cursor ? "ring" : "point", // points are much cheaper to draw
        highlighted: selected || cursor, forceLabel: selected || cursor || this._layout.size <= LABEL_ALL_BELOW,
        zIndex: cursor ? 3 : selected ? 2 : mistake ? 1 : 0,
      });
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

  /** The spawn tree's layout: dagre with label-sized boxes (y up, as sigma's), else the tree layout. */
  _computeLayout() {
    const model = this.model;
    const dagre = globalThis.dagre;
    const childrenOf = (name) => model.childrenOf(name);
    if (!dagre?.layout) return treeLayout(model.rootAgents(), childrenOf);
    const large = model.agents.size > LARGE_GRAPH;
    const r = large ? MAX_RADIUS.large : MAX_RADIUS.normal;
    const boxOf = (name) => ({ width: 2 * r + LABEL_GAP + this._labelWidth(name), height: Math.max(2 * r, LABEL_SIZE + 4), r });
    const at = labelledLayout(dagre, model.rootAgents(), childrenOf, boxOf);
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
        name, labelled: Boolean(data.forceLabel),
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
    const { createNodeBorderProgram, EdgeCurveProgram, NodePointProgram } = Sigma.rendering;
    this.sigma = new Sigma(this.graph, this.container, {
      allowInvalidContainer: true,
      renderEdgeLabels: false,
      hideEdgesOnMove: true,
      zIndex: true,
      stagePadding: 40,
      labelRenderedSizeThreshold: 9,
      labelDensity: 0.5,
      labelGridCellSize: 120,
      labelSize: LABEL_SIZE,
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
    new ResizeObserver(() => {
      this.sigma.resize();
      this.sigma.refresh();
    }).observe(this.container);
    this.sigma.on("clickNode", ({ node }) => this.onSelectAgent(node));
    this.sigma.on("enterNode", () => { this.container.style.cursor = "pointer"; });
    this.sigma.on("leaveNode", () => { this.container.style.cursor = ""; });
  }
}
