import { test } from "node:test";
import assert from "node:assert/strict";

import { bellLabel, bellStep, startBell } from "../../static/js/lib/notification_bell.js";

test("the bell shows the count each message carries; older deltas and errors change nothing", () => {
  assert.deepEqual(bellStep(null, { type: "snapshot", seq: 4, user: 2, unread: 1 }), { unread: 1, seq: 4 });
  assert.deepEqual(bellStep(4, { type: "delta", seq: 9, user: 2, unread: 2, notifications: [] }), { unread: 2, seq: 9 });
  assert.equal(bellStep(9, { type: "delta", seq: 4, user: 2, unread: 1, notifications: [] }), null);
  // read elsewhere: a snapshot at the same seq brings the count down
  assert.deepEqual(bellStep(9, { type: "snapshot", seq: 9, user: 2, unread: 0 }), { unread: 0, seq: 9 });
  assert.equal(bellStep(9, { type: "error", message: "no" }), null);
  assert.equal(bellStep(9, { type: "delta", seq: 12 }), null, "a delta without a count is not applied");
  assert.equal(bellLabel(0), "Notifications");
  assert.equal(bellLabel(3), "Notifications, 3 unread");
});

test("the bell connects to its reader's socket and applies messages to the link", () => {
  const attrs = {};
  const children = [];
  const doc = {
    createElement: () => ({ dataset: {}, hidden: false, textContent: "" }),
  };
  const bell = {
    dataset: { user: "7" },
    ownerDocument: doc,
    querySelector: () => children[0] ?? null,
    append: (child) => children.push(child),
    setAttribute: (name, value) => { attrs[name] = value; },
  };
  let options = null;
  let url = null;
  class FakeConnection {
    constructor(u, o) { url = u; options = o; }
    start() {}
  }
  globalThis.location ??= { protocol: "http:", host: "example.test" };
  startBell(bell, { Connection: FakeConnection });
  assert.match(url, /\/ws\/users\/7\/notifications\/$/);
  options.onMessage({ type: "snapshot", seq: 0, user: 7, unread: 0 });
  assert.equal(children.length, 0, "no badge at zero");
  assert.equal(attrs["aria-label"], "Notifications");
  options.onMessage({ type: "delta", seq: 5, user: 7, unread: 2, notifications: [] });
  assert.equal(children[0].textContent, "2");
  assert.equal(children[0].hidden, false);
  assert.equal(attrs["aria-label"], "Notifications, 2 unread");
  assert.equal(options.seq(), 5);
  options.onMessage({ type: "snapshot", seq: 5, user: 7, unread: 0 });
  assert.equal(children[0].hidden, true);
});
