/**
 * Colours shared by the timeline, the agent graph, the filters' legend, the compare view and the
 * attribution panel. Event and edge types use fixed colours; roles get one from a categorical
 * palette by hash; credit a ramp from red through grey to green.
 */

/** Event type -> colour (hex). */
export const EVENT_COLORS = Object.freeze({
  orchestrator_decision: "#7048e8",
  delegate: "#3b5bdb",
  spawn: "#2f9e44",
  despawn: "#868e96",
  message: "#1c7ed6",
  tool_call: "#f08c00",
  tool_result: "#c99a00",
  return: "#0ca678",
  aggregate: "#ae3ec9",
  human_intervention: "#d6336c",
  safety_event: "#e03131",
  stop: "#343a40",
});

/** Edge type -> colour (hex). */
export const EDGE_COLORS = Object.freeze({
  temporal: "#ced4da",
  causal: "#868e96",
  spawn: "#2f9e44",
  message: "#1c7ed6",
  tool_dependency: "#f08c00",
  return: "#0ca678",
  aggregate: "#ae3ec9",
  safety_flow: "#e03131",
});

/** Colours (RGB) of negative, zero and positive credit: the attribution legend's, the timeline's, the agent graph's. */
export const CREDIT_COLORS = Object.freeze({ negative: [224, 49, 49], zero: [206, 212, 218], positive: [47, 158, 68] });

/** Marks drawn over the type colours. */
export const MARK_COLORS = Object.freeze({
  mistake: "#e03131",
  critical: "#212529",
  selected: "#111111",
  unknown: "#adb5bd",
});

const ROLE_PALETTE = ["#4263eb", "#f76707", "#37b24d", "#ae3ec9", "#1098ad", "#f59f00",
  "#d6336c", "#5c940d", "#7048e8", "#495057"];

/** A stable colour for `role` (grey when there is none). */
export function roleColor(role) {
  if (!role) return MARK_COLORS.unknown;
  let h = 0;
  for (let i = 0; i < role.length; i += 1) h = (Math.imul(h, 31) + role.charCodeAt(i)) | 0;
  return ROLE_PALETTE[Math.abs(h) % ROLE_PALETTE.length];
}

/**
 * `hex` ("#rrggbb") as if drawn with opacity `strength` in [0, 1] on white, as an opaque hex
 * colour. (sigma's WebGL blending brightens translucent colours, so views use opaque ones.)
 */
export function fade(hex, strength) {
  const n = parseInt(hex.slice(1), 16);
  const mix = (c) => Math.round(255 - (255 - c) * strength).toString(16).padStart(2, "0");
  return `#${mix((n >> 16) & 255)}${mix((n >> 8) & 255)}${mix(n & 255)}`;
}

/** Colour of event type `type`. */
export function eventColor(type) {
  return EVENT_COLORS[type] ?? MARK_COLORS.unknown;
}

/** Colour of edge type `type`. */
export function edgeColor(type) {
  return EDGE_COLORS[type] ?? MARK_COLORS.unknown;
}

/** The colour of credit `c` in [-1, 1]: grey at 0, to green (positive) or red (negative). */
export function creditColor(c) {
  const v = Math.max(-1, Math.min(1, Number(c) || 0));
  const to = v >= 0 ? CREDIT_COLORS.positive : CREDIT_COLORS.negative;
  const mix = CREDIT_COLORS.zero.map((z, i) => Math.round(z + (to[i] - z) * Math.abs(v)));
  return `#${mix.map((x) => x.toString(16).padStart(2, "0")).join("")}`;
}
