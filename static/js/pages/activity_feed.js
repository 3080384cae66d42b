/**
 * A live review activity feed: every `<ol data-activity-feed>` of the page (the project's review
 * page, the projects page's recent activity) follows the `/ws/projects/<id>/` socket of each
 * project in its `data-projects` (JSON `[{"project": id, "name": "...", "seq": N|null}]`) and
 * shows new activity at the top without a reload, at most `data-limit` items. With a `seq` (the
 * newest activity id the page was rendered with) the socket sends what came since; without one
 * (the projects page, which renders none) its snapshot, the project's recent activity, fills the
 * list. A list in a `[data-feed-empty]` section shows its empty note until an item arrives.
 *
 * For browser tests: `<ol data-feed-state>` is the state of its last socket ("open" once
 * connected: the server has it in the project's group), `data-feed-seq` the highest activity id
 * shown.
 */

import { activityItem, insertionIndex } from "../lib/activity_feed.js";
import { LiveConnection, websocketUrl } from "../lib/live_connection.js";

/** At most this many project sockets per feed (one per project); further projects show on a reload. */
const MAX_SOCKETS = 20;

for (const list of document.querySelectorAll("ol[data-activity-feed]")) follow(list);

function follow(list) {
  const projects = JSON.parse(list.dataset.projects || "[]").slice(0, MAX_SOCKETS);
  const names = new Map(projects.map((p) => [p.project, p.name]));
  const limit = Number(list.dataset.limit || 50);
  const prefix = list.dataset.showProject === "true";
  let highest = Math.max(0, ...projects.map((p) => p.seq ?? 0));

  /** Put `activity` in its place (newest first; the server-rendered items carry their ids too). */
  const show = (activity) => {
    const items = [...list.querySelectorAll("li[data-activity-id]")];
    const index = insertionIndex(items.map((li) => Number(li.dataset.activityId)), activity.id);
    if (index === -1) return;
    list.insertBefore(activityItem(activity, prefix ? names.get(activity.project) : null), items[index] ?? null);
    highest = Math.max(highest, activity.id);
  };

  for (const project of projects) {
    let lastSeq = project.seq ?? null;
    const connection = new LiveConnection(websocketUrl(`/ws/projects/${project.project}/`), {
      seq: () => lastSeq,
      onMessage: (msg) => {
        if (msg.type !== "snapshot" && msg.type !== "delta") return;
        for (const activity of msg.activities || []) show(activity);
        while (list.children.length > limit) list.lastElementChild.remove();
        list.hidden = list.children.length === 0;
        const note = list.closest("[data-feed-empty]")?.querySelector("[data-feed-empty-note]");
        if (note) note.hidden = !list.hidden;
        list.dataset.feedSeq = String(highest);
        lastSeq = Math.max(lastSeq ?? 0, msg.seq);
      },
      onState: (state) => {
        list.dataset.feedState = state;
      },
    });
    connection.start();
  }
}
