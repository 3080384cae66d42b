/**
 * Swimlanes: one per agent, nested under the spawning agent, collapsible (docs/architecture.md).
 *
 * Pure module: no DOM. `LaneTree` is the spawn tree as lanes (a new agent's lane is appended at
 * the end of its parent's group; a lane moves when its parent becomes known), each with its
 * agent's event ids in arrival order, and the set of collapsed lanes. `visibleLanes` and
 * `displayLanes` derive the rows the timeline draws and where each agent's events go.
 */

export class LaneTree {
  constructor() {
    /** @type {Map<string, {name: string, parent: string|null, children: string[], events: string[]}>} */
    this.lanes = new Map();
    /** Agents without a (known) parent, in lane order. */
    this.roots = [];
    /** Names of the collapsed lanes. */
    this.collapsed = new Set();
  }

  /** Number of lanes (one per agent). */
  get size() {
    return this.lanes.size;
  }

  has(name) {
    return this.lanes.has(name);
  }

  /** Lane `name`'s record, or undefined. Do not mutate. */
  get(name) {
    return this.lanes.get(name);
  }

  /** Put lane `name` under `parent` (at the end of its group); move it when the parent changed. */
  place(name, parent) {
    let lane = this.lanes.get(name);
    const validParent = parent && parent !== name && this.lanes.has(parent)
      && !this._isAncestor(name, parent) ? parent : null;
    if (lane && lane.parent === validParent) return;
    if (lane) {
      const siblings = lane.parent ? this.lanes.get(lane.parent).children : this.roots;
      siblings.splice(siblings.indexOf(name), 1);
      lane.parent = validParent;
    } else {
      lane = { name, parent: validParent, children: [], events: [] };
      this.lanes.set(name, lane);
    }
    (validParent ? this.lanes.get(validParent).children : this.roots).push(name);
  }

  _isAncestor(ancestor, name) {
    for (let cur = this.lanes.get(name)?.parent; cur; cur = this.lanes.get(cur)?.parent) {
      if (cur === ancestor) return true;
    }
    return false;
  }

  /** Append event `id` to agent `agent`'s lane (which must exist). */
  addEvent(agent, id) {
    this.lanes.get(agent).events.push(id);
  }

  /** Move event `id` from agent `from`'s lane to the end of agent `to`'s. */
  moveEvent(id, from, to) {
    const list = this.lanes.get(from).events;
    list.splice(list.indexOf(id), 1);
    this.lanes.get(to).events.push(id);
  }

  /** Event ids of agent `name` in arrival order. */
  eventsOf(name) {
    return this.lanes.get(name)?.events ?? [];
  }

  /** The agent whose group agent `name`'s lane is in, or null. */
  parentOf(name) {
    return this.lanes.get(name)?.parent ?? null;
  }

  /** Names of the agents in lane `name`'s group (its children). */
  childrenOf(name) {
    return this.lanes.get(name)?.children ?? [];
  }

  /** Agent names in lane order (depth-first over the spawn tree), ignoring collapse. */
  order() {
    const out = [];
    const walk = (name) => {
      out.push(name);
      for (const c of this.lanes.get(name).children) walk(c);
    };
    for (const r of this.roots) walk(r);
    return out;
  }

  /** Collapse (or expand) lane `name`. */
  setCollapsed(name, collapsed) {
    if (collapsed) this.collapsed.add(name);
    else this.collapsed.delete(name);
  }

  /** Collapse every lane that has children (`true`), or expand them all (`false`). */
  setAllCollapsed(collapsed) {
    this.collapsed.clear();
    if (collapsed) for (const lane of this.lanes.values()) if (lane.children.length) this.collapsed.add(lane.name);
  }

  /** Collapse the spawn tree level by level until at most `maxLanes` lanes are visible. */
  autoCollapse(maxLanes) {
    let level = [...this.roots];
    let visible = level.length;
    while (level.length) {
      const next = level.flatMap((n) => this.lanes.get(n).children);
      if (visible + next.length > maxLanes) {
        for (const n of level) if (this.lanes.get(n).children.length) this.collapsed.add(n);
        break;
      }
      visible += next.length;
      level = next;
    }
  }

  /**
   * Visible lanes in order, with `row` (0 = top), `depth`, whether they are collapsed and how
   * many lanes are folded into them. A lane is visible when `agentPasses(name)` and no
   * ancestor is collapsed.
   * @param {(name: string) => boolean} agentPasses
   * @param {(name: string) => string|null} roleOf
   * @returns {{name: string, row: number, depth: number, role: string|null,
   *   collapsed: boolean, hasChildren: boolean, hidden: number, events: number}[]}
   */
  visibleLanes(agentPasses, roleOf) {
    const out = [];
    const countBelow = (name) => this.lanes.get(name).children
      .reduce((n, c) => n + 1 + countBelow(c), 0);
    const walk = (name, depth) => {
      const lane = this.lanes.get(name);
      const collapsed = this.collapsed.has(name) && lane.children.length > 0;
      if (agentPasses(name)) {
        out.push({
          name, row: out.length, depth, role: roleOf(name), collapsed,
          hasChildren: lane.children.length > 0, hidden: collapsed ? countBelow(name) : 0,
          events: lane.events.length,
        });
      }
      if (!collapsed) for (const c of lane.children) walk(c, depth + 1);
    };
    for (const r of this.roots) walk(r, 0);
    return out;
  }

  /**
   * Where each agent's events are drawn: `{lane, binned}`; `binned` when folded into a
   * collapsed ancestor's lane. Agents whose lane is filtered out (`agentPasses`) are absent.
   * @param {(name: string) => boolean} agentPasses
   * @returns {Map<string, {lane: string, binned: boolean}>}
   */
  displayLanes(agentPasses) {
    const out = new Map();
    const walk = (name, into) => {
      const lane = this.lanes.get(name);
      if (into) out.set(name, { lane: into, binned: true });
      else if (agentPasses(name)) out.set(name, { lane: name, binned: false });
      const fold = into ?? (this.collapsed.has(name) && agentPasses(name) ? name : null);
      for (const c of lane.children) walk(c, fold);
    };
    for (const r of this.roots) walk(r, null);
    return out;
  }
}
