/**
 * Where a trace's comments are, for the markers of the trace page (transcript rows, lanes, the
 * inspector). Pure: comments as the API and `/ws/projects/<id>/` send them
 * (webapp.review.services.comment_wire).
 */

/**
 * Event id -> number of comments on it (replies included, deleted ones not), of trace `traceId`.
 * @param {{target: {kind: string, id: string, trace: number}, deleted: boolean}[]} comments
 * @returns {Map<string, number>}
 */
export function eventCommentCounts(comments, traceId) {
  const out = new Map();
  for (const c of comments) {
    if (c.deleted || c.target?.kind !== "event" || Number(c.target.trace) !== Number(traceId)) continue;
    const id = String(c.target.id);
    out.set(id, (out.get(id) ?? 0) + 1);
  }
  return out;
}

/**
 * Agent -> number of comments on its events; `agentOf(eventId)` names the event's agent (null or
 * undefined: an event not held, e.g. outside a huge trace's window, which no lane counts).
 * @returns {Map<string, number>}
 */
export function laneCommentCounts(eventCounts, agentOf) {
  const out = new Map();
  for (const [id, n] of eventCounts) {
    const agent = agentOf(id);
    if (agent === null || agent === undefined) continue;
    out.set(agent, (out.get(agent) ?? 0) + n);
  }
  return out;
}

/** "1 comment", "3 comments". */
export const commentsText = (n) => `${n} comment${n === 1 ? "" : "s"}`;
