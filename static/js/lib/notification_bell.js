/**
 * The header's notification bell (templates/review/bell_link.html), live on every page: one
 * `/ws/users/<id>/notifications/` socket (webapp.review.consumers.NotificationConsumer, through
 * LiveConnection) whose snapshot and deltas carry the reader's unread @mention count; the bell
 * shows it without a reload (the count travels in each message, so a missed delta costs nothing:
 * the next message, or the snapshot of a reconnect, carries the count now).
 */

import { LiveConnection, websocketUrl } from "./live_connection.js";

/**
 * What one message of the notifications socket does to a bell that last applied `lastSeq` (null
 * before the first message): `{unread, seq}` to show, or null to ignore (an error, an older delta).
 * A snapshot always applies (it is sent after a reconnect, or after notifications were read).
 */
export function bellStep(lastSeq, msg) {
  if (msg?.type === "snapshot" && Number.isInteger(msg.unread)) return { unread: msg.unread, seq: msg.seq };
  if (msg?.type === "delta" && Number.isInteger(msg.unread)) {
    if (lastSeq !== null && msg.seq < lastSeq) return null;
    return { unread: msg.unread, seq: msg.seq };
  }
  return null;
}

/** "Notifications, 3 unread" (or "Notifications"): the bell's accessible name. */
export function bellLabel(unread) {
  return `Notifications${unread ? `, ${unread} unread` : ""}`;
}

/** Show `unread` on the bell link `bell`: its badge (added when missing, hidden at 0) and label. */
export function showUnread(bell, unread) {
  let count = bell.querySelector('[data-testid="notification-count"]');
  if (unread && !count) {
    count = bell.ownerDocument.createElement("span");
    count.className = "badge";
    count.dataset.testid = "notification-count";
    bell.append(count);
  }
  if (count) {
    count.textContent = String(unread);
    count.hidden = !unread;
  }
  bell.setAttribute("aria-label", bellLabel(unread));
  bell.dataset.unread = String(unread);
}

/** Keep `bell` (its `data-user` the reader's id) live; returns the connection. */
export function startBell(bell, { Connection = LiveConnection } = {}) {
  let seq = null;
  const connection = new Connection(websocketUrl(`/ws/users/${bell.dataset.user}/notifications/`), {
    seq: () => seq,
    onOpen: () => { bell.dataset.live = "live"; },
    onClose: () => { bell.dataset.live = "offline"; },
    onMessage: (msg) => {
      const step = bellStep(seq, msg);
      if (step === null) return;
      seq = step.seq;
      showUnread(bell, step.unread);
    },
  });
  connection.start();
  return connection;
}

const bell = typeof document === "undefined" ? null : document.querySelector('[data-testid="notification-bell"][data-user]');
if (bell) window.swarmscopeBell = startBell(bell);
