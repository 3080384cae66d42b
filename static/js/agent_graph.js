/**
 * The agent graph, drawn with sigma.js: agents as nodes (sized by events or tokens, coloured
 * by role), the spawn tree as thin grey lines, and the agents' interactions as curved edges
 * aggregated per pair (width by count, colour by the most frequent edge type).
 *
 * The layout is a deterministic tree layout over the spawn tree (`treeLayout`, pure):
 * layered for small trees, radial when the tree has many leaves.
 */

import { edgeColor, MARK_COLORS, roleColor, fade } from "./palette.js";
import { createGraph, panTo, syncGraph, vendor } from "./sigma_sync.js";

/** Above this many leaves the tree is laid out radially. */
export const RADIAL_ABOVE_LEAVES = 16;
/** Above this many agents nodes are drawn smaller. */
const LARGE_GRAPH = 200;
/** Up to this many agents every node is labelled. */
const LABEL_ALL_BELOW = 12;

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
    this._layoutVersion = -1;
    this._layout = new Map();
  }

  /** Bring the drawing in line with the model. */
  render() {
    const model = this.model;
    if (this._layoutVersion !== model.version) {
      this._layout = treeLayout(model.rootAgents(), (name) => model.childrenOf(name));
      this._layoutVersion = model.version;
    }
    const stats = model.agentStats();
    let max = 1;
    for (const s of stats.values()) max = Math.max(max, s[this.sizeBy]);
    // Many agents share the same screen: draw them smaller.
    const [base, range] = this._layout.size > LARGE_GRAPH ? [1.5, 7] : [4, 14];
    const nodes = new Map();
    for (const [name, at] of this._layout) {
      if (!model.agentPasses(name)) continue;
      const value = stats.get(name)?.[this.sizeBy] ?? 0;
      const mistake = model.isMistakeAgent(name);
      const selected = name === this.selected;
      nodes.set(name, {
        x: at.x, y: at.y, label: name,
        size: (base + range * Math.sqrt(value / max)) * (selected ? 1.3 : 1),
        color: roleColor(model.roleOf(name)),
        borderColor: selected ? MARK_COLORS.selected : MARK_COLORS.mistake,
        borderSize: selected || mistake ? 0.3 : 0,
        type: selected || mistake ? "ring" : "point", // points are much cheaper to draw
        highlighted: selected, forceLabel: selected || this._layout.size <= LABEL_ALL_BELOW,
        zIndex: selected ? 2 : mistake ? 1 : 0,
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
    for (const pair of this._pairs()) {
      if (!nodes.has(pair.source) || !nodes.has(pair.target)) continue;
      const touches = pair.source === this.selected || pair.target === this.selected;
      edges.set(`pair:${pair.source}->${pair.target}`, {
        source: pair.source, target: pair.target,
        attributes: {
          type: "curve", curvature: 0.3, zIndex: touches ? 2 : 1,
          size: Math.min(8, 1 + 1.5 * Math.log2(pair.count)),
          color: fade(edgeColor(pair.type), touches ? 0.95 : 0.5),
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
      labelSize: 12,
      labelFont: "system-ui, sans-serif",
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
