/**
 * The filters panel of the trace page: text search, event types, roles, agents, time window,
 * the x axis (time or step), the critical-path highlight, and collapsing lanes. It writes to
 * `TraceModel.setFilters` and tells the page to redraw. The panel's static controls are in
 * the template (`data-filter` attributes); the lists are built here from the model.
 */

import { EVENT_TYPES } from "../model/trace_model.js";
import { eventColor, roleColor } from "../lib/palette.js";

const SEARCH_DEBOUNCE_MS = 150;

/** A labelled checkbox with a colour swatch; `onToggle(checked)` on change. */
function checkItem(text, color, checked, onToggle) {
  const label = document.createElement("label");
  label.className = "check";
  const box = document.createElement("input");
  box.type = "checkbox";
  box.checked = checked;
  box.addEventListener("change", () => onToggle(box.checked));
  const swatch = document.createElement("span");
  swatch.className = "swatch";
  swatch.style.setProperty("--swatch", color);
  const name = document.createElement("span");
  name.textContent = text;
  label.append(box, swatch, name);
  return label;
}

export class FiltersPanel {
  /**
   * @param {HTMLElement} root the `[data-testid=filters]` element
   * @param {{model: object, onChange: () => void, onMode: (mode: string) => void,
   *   onCritical: (show: boolean) => void}} options
   */
  constructor(root, { model, onChange, onMode, onCritical }) {
    this.root = root;
    this.model = model;
    this.onChange = onChange;
    this._roles = new Map(); // role -> label element
    this._agents = new Map(); // agent -> label element
    this._searchTimer = 0;
    const field = (name) => root.querySelector(`[data-filter="${name}"]`);
    this.search = field("search");
    this.searchCount = field("search-count");
    this.roleList = field("roles");
    this.agentList = field("agents");
    this.agentSearch = field("agent-search");

    const types = field("types");
    for (const type of EVENT_TYPES) {
      const item = checkItem(type, eventColor(type), true, (checked) => this._toggle("types", type, checked));
      item.dataset.type = type;
      types.append(item);
    }
    this.search.addEventListener("input", () => {
      clearTimeout(this._searchTimer);
      this._searchTimer = setTimeout(() => this._set({ text: this.search.value.trim() }), SEARCH_DEBOUNCE_MS);
    });
    const from = field("window-from");
    const to = field("window-to");
    const setWindow = () => {
      const a = from.value === "" ? -Infinity : Number(from.value);
      const b = to.value === "" ? Infinity : Number(to.value);
      this._set({ window: a === -Infinity && b === Infinity ? null : [a, b] });
    };
    from.addEventListener("change", setWindow);
    to.addEventListener("change", setWindow);
    this.agentSearch.addEventListener("input", () => {
      const q = this.agentSearch.value.trim().toLowerCase();
      for (const [name, item] of this._agents) item.hidden = q !== "" && !name.toLowerCase().includes(q);
    });
    for (const radio of root.querySelectorAll('[data-filter="x-mode"]')) {
      radio.addEventListener("change", () => radio.checked && onMode(radio.value));
    }
    field("critical").addEventListener("change", (e) => onCritical(e.target.checked));
    field("collapse-all").addEventListener("click", () => this._collapse(true));
    field("expand-all").addEventListener("click", () => this._collapse(false));
    field("clear").addEventListener("click", () => this.clear());
  }

  /** Show `mode` ("time" or "step") as the chosen x axis. */
  showMode(mode) {
    for (const radio of this.root.querySelectorAll('[data-filter="x-mode"]')) radio.checked = radio.value === mode;
  }

  /** Put the cursor in the search box. */
  focusSearch() {
    this.search.focus();
    this.search.select();
  }

  /** Add the roles and agents that appeared since the last call; show the match count. */
  sync() {
    for (const role of this.model.roles()) {
      if (this._roles.has(role)) continue;
      const item = checkItem(role, roleColor(role), !this.model.filters.roles?.has(role),
        (checked) => this._toggle("roles", role, !checked));
      item.dataset.role = role;
      this._roles.set(role, item);
      this.roleList.append(item);
    }
    for (const name of this.model.agentOrder()) {
      if (this._agents.has(name)) continue;
      const item = checkItem(name, roleColor(this.model.roleOf(name)), !this.model.filters.agents?.has(name),
        (checked) => this._toggle("agents", name, !checked));
      item.dataset.agent = name;
      this._agents.set(name, item);
      this.agentList.append(item);
    }
    const { text } = this.model.filters;
    this.searchCount.textContent = text ? `${this.model.sequence().length} matching events` : "";
  }

  /** Reset every filter and control. */
  clear() {
    this.model.clearFilters();
    this.search.value = "";
    for (const box of this.root.querySelectorAll('.check input[type="checkbox"]')) box.checked = true;
    this.root.querySelector('[data-filter="window-from"]').value = "";
    this.root.querySelector('[data-filter="window-to"]').value = "";
    this.onChange();
  }

  _set(partial) {
    this.model.setFilters(partial);
    this.onChange();
  }

  /**
   * Add or remove `value` in the set filter `name`. For "types" the set lists what is shown
   * (null = all); for "roles" and "agents" it lists what is hidden.
   */
  _toggle(name, value, add) {
    const all = name === "types" ? new Set(EVENT_TYPES) : new Set();
    const set = new Set(this.model.filters[name] ?? all);
    if (add) set.add(value);
    else set.delete(value);
    const trivial = name === "types" ? set.size === EVENT_TYPES.length : set.size === 0;
    this._set({ [name]: trivial ? null : set });
  }

  _collapse(collapsed) {
    this.model.setAllCollapsed(collapsed);
    this.onChange();
  }
}
