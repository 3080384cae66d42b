/**
 * The trace page's filters as predicates over events and agents. Pure module: no DOM.
 */

/** No filter: every event and agent passes. */
export const EMPTY_FILTERS = Object.freeze({
  types: null, // Set of event types to show; null = all
  agents: null, // Set of agent names to hide; null = none
  roles: null, // Set of roles to hide; null = none
  window: null, // [t0, t1] seconds; null = whole trace
  text: "", // case-insensitive substring of content, tool or id
});

const finite = (x) => typeof x === "number" && Number.isFinite(x);

/**
 * True when event `ev` passes `filters` (see EMPTY_FILTERS): its type is shown, its agent and
 * role are not hidden, it overlaps the time window, and its searchable text holds `text`.
 * @param {object} filters
 * @param {object} ev a wire event
 * @param {(name: string) => string|null} roleOf an agent's role
 * @param {(ev: object) => string} searchText the event's lower-cased content, tool and id
 */
export function eventPasses(filters, ev, roleOf, searchText) {
  const f = filters;
  if (f.types && !f.types.has(ev.type)) return false;
  if (f.agents && f.agents.has(ev.agent)) return false;
  if (f.roles) {
    const role = ev.role ?? roleOf(ev.agent);
    if (role && f.roles.has(role)) return false;
  }
  if (f.window) {
    const end = finite(ev.t_end) ? ev.t_end : ev.t;
    if (end < f.window[0] || ev.t > f.window[1]) return false;
  }
  if (f.text && !searchText(ev).includes(f.text.toLowerCase())) return false;
  return true;
}

/** True when agent `name` passes the agent and role filters of `filters`. */
export function agentPasses(filters, name, roleOf) {
  const f = filters;
  if (f.agents && f.agents.has(name)) return false;
  const role = roleOf(name);
  return !(f.roles && role && f.roles.has(role));
}
