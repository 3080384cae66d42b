/**
 * The review activity feed's items, without the DOM (apart from `activityItem`): how an activity
 * of `/ws/projects/<id>/` (webapp/review/feed.py activity_wire) reads, as the review page's
 * server-rendered list says it (webapp/review/views.py VERB_TEXT: keep the two in step), and
 * where a new one goes in a feed listed newest first.
 */

import { el } from "./dom.js";

/** What each verb reads as (webapp/review/views.py VERB_TEXT). */
export const VERB_TEXT = Object.freeze({
  commented: "commented",
  edited: "edited a comment",
  deleted: "deleted a comment",
  voted: "voted",
  set_status: "set the review status",
  labelled: "labelled the mistake",
});

/** What each review status reads as (webapp/review/views.py STATUS_TEXT, the model's labels). */
export const STATUS_TEXT = Object.freeze({
  open: "Open",
  in_review: "In review",
  settled: "Settled",
});

/** The verb of `activity` as a phrase ("withdrew a vote" for a vote without a value). */
export function verbText(activity) {
  if (activity.verb === "voted" && (activity.data?.value === null || activity.data?.value === undefined)) {
    return "withdrew a vote";
  }
  return VERB_TEXT[activity.verb] ?? activity.verb;
}

/** `created_at` (ISO 8601) to the minute, as the page shows it: "2026-01-02 13:04". */
export function minuteOf(iso) {
  return String(iso || "").slice(0, 16).replace("T", " ");
}

/**
 * Where an activity with id `id` goes in a feed listing `ids` newest first: the index of the
 * first older one (`ids.length` when none is); -1 when it is listed already.
 */
export function insertionIndex(ids, id) {
  if (ids.includes(id)) return -1;
  const index = ids.findIndex((shown) => shown < id);
  return index === -1 ? ids.length : index;
}

/** The `<li>` of one activity, as the review page renders it; `projectName` prefixes it (projects page). */
export function activityItem(activity, projectName = null) {
  const li = el("li");
  li.dataset.activityId = String(activity.id);
  const time = el("time", minuteOf(activity.created_at));
  time.dateTime = activity.created_at || "";
  if (projectName) li.append(el("span", projectName, "muted"), " · ");
  const link = el("a", `${activity.target.kind} ${activity.target.id}`);
  link.href = activity.link;
  li.append(time, " · ", el("strong", activity.actor || "someone"), ` ${verbText(activity)} on `, link);
  const status = activity.data?.status;
  const detail = status === null || status === undefined ? activity.data?.value : (STATUS_TEXT[status] ?? status);
  if (detail !== null && detail !== undefined && detail !== "") li.append(`: ${detail}`);
  if (activity.mentions?.length) li.append(` · mentions ${activity.mentions.join(", ")}`);
  return li;
}
