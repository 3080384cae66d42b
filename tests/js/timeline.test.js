import { test } from "node:test";
import assert from "node:assert/strict";

import { clickModifiers, niceTicks } from "../../static/js/views/timeline.js";

test("ticks are 1, 2 or 5 times a power of ten, inside the range", () => {
  assert.deepEqual(niceTicks(0, 10, 5), [0, 2, 4, 6, 8, 10]);
  assert.deepEqual(niceTicks(0.13, 0.61, 4), [0.2, 0.4, 0.6]);
  assert.deepEqual(niceTicks(5, 5), [5]);
});

test("shift, ctrl or meta on a click toggle the event in the multi-selection", () => {
  assert.deepEqual(clickModifiers({ shiftKey: true }), { toggle: true });
  assert.deepEqual(clickModifiers({ ctrlKey: true, shiftKey: false }), { toggle: true });
  assert.deepEqual(clickModifiers({ metaKey: true }), { toggle: true });
  assert.deepEqual(clickModifiers({ shiftKey: false, ctrlKey: false, metaKey: false, altKey: true }), { toggle: false });
  assert.deepEqual(clickModifiers(undefined), { toggle: false });
});
