import { test } from "node:test";
import assert from "node:assert/strict";

import {
  centreOn, clampScroll, clampWindow, dataExtent, fromPx, keepInView, laneHeight, MAX_LANE_PX, MIN_LANE_PX,
  minSpan, panBy, scrollRowIntoView, toPx, visibleRows, wheelFactor, zoomAbout,
} from "../../static/js/lib/camera.js";

const close = (a, b, eps = 1e-9) => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);
const closeWin = (w, [a, b]) => { close(w[0], a); close(w[1], b); };

test("the extent of an empty or one-point trace has a span, and never starts below the data", () => {
  assert.deepEqual(dataExtent(0, 10), [0, 10]);
  assert.deepEqual(dataExtent(5, 5), [5, 6]);
  assert.deepEqual(dataExtent(NaN, 1), [0, 1]);
});

test("a window is clamped into the extent: no negative time, nothing past the end", () => {
  const extent = [0, 100];
  assert.deepEqual(clampWindow([-20, 10], extent), [0, 30]);
  assert.deepEqual(clampWindow([90, 130], extent), [60, 100]);
  assert.deepEqual(clampWindow([-50, 250], extent), [0, 100]); // wider than the data: the whole extent
  assert.deepEqual(clampWindow([40, 40.001], extent, 1), [39.5005, 40.5005]); // below the minimum span
  assert.deepEqual(clampWindow([NaN, 3], extent), [0, 100]);
});

test("zooming about a point keeps that point under the cursor", () => {
  const extent = [0, 100];
  const win = zoomAbout([0, 100], 0.5, 25, extent);
  closeWin(win, [12.5, 62.5]);
  // The anchor's fraction of the window is unchanged (0.25 before and after).
  close((25 - win[0]) / (win[1] - win[0]), 0.25);
  // Zooming back out by the inverse factor returns to the start.
  closeWin(zoomAbout(win, 2, 25, extent), [0, 100]);
});

test("zooming near an end is clamped: the window shifts instead of leaving the extent", () => {
  const extent = [0, 100];
  closeWin(zoomAbout([0, 10], 3, 1, extent), [0, 30]);
  closeWin(zoomAbout([90, 100], 3, 99, extent), [70, 100]);
  // Zooming out past the data shows the whole extent.
  assert.deepEqual(zoomAbout([10, 20], 50, 15, extent), [0, 100]);
  // Zooming in stops at the minimum span.
  const tiny = zoomAbout([40, 60], 1e-9, 50, extent, 0.5);
  close(tiny[1] - tiny[0], 0.5);
});

test("panning keeps the span and stops at the ends", () => {
  const extent = [0, 100];
  assert.deepEqual(panBy([10, 30], -50, extent), [0, 20]);
  assert.deepEqual(panBy([10, 30], 500, extent), [80, 100]);
  assert.deepEqual(panBy([10, 30], 5, extent), [15, 35]);
  assert.deepEqual(centreOn([10, 30], 95, extent), [80, 100]);
});

test("keep-in-view moves the camera only when the item leaves it, and never into negative time", () => {
  const extent = [0, 100];
  // Inside (margins included): unchanged.
  assert.deepEqual(keepInView([20, 40], 30, 31, extent), [20, 40]);
  // Just past the right margin: shifted by as little as needed.
  const right = keepInView([20, 40], 39.5, 39.5, extent, 0.1);
  closeWin(right, [21.5, 41.5]);
  // Far away: centred on it.
  closeWin(keepInView([20, 40], 80, 82, extent), [71, 91]);
  // Stepping back to the first event: clamped at 0, not before it.
  const first = keepInView([20, 40], 0, 0.5, extent);
  assert.equal(first[0], 0);
  assert.ok(first[1] === 20);
  // An item longer than the window: its start shows.
  const long = keepInView([50, 60], 10, 90, extent, 0.1);
  closeWin(long, [9, 19]);
});

test("pixels and data convert both ways with the padding at each end", () => {
  const win = [10, 20];
  assert.equal(toPx(10, win, 1000, 12), 12);
  assert.equal(toPx(20, win, 1000, 12), 988);
  close(fromPx(toPx(13.7, win, 1000, 12), win, 1000, 12), 13.7);
});

test("lanes keep a readable height and scroll: many lanes never squash", () => {
  assert.equal(laneHeight(301, 450), MIN_LANE_PX);
  assert.equal(laneHeight(2, 450), MAX_LANE_PX);
  assert.equal(laneHeight(20, 450), 22);
  // 301 lanes of 18 px in 450 px: scrolls up to 301 * 18 - 450.
  assert.equal(clampScroll(1e9, 301, 18, 450), 301 * 18 - 450);
  assert.equal(clampScroll(-5, 301, 18, 450), 0);
  assert.equal(clampScroll(50, 10, 34, 450), 0); // fits: no scrolling
  assert.deepEqual(visibleRows(0, 18, 450, 301), [0, 24]);
  assert.deepEqual(visibleRows(900, 18, 450, 301), [50, 74]);
});

test("a row scrolls into view by as little as needed", () => {
  assert.equal(scrollRowIntoView(0, 3, 18, 450, 301), 0);
  assert.equal(scrollRowIntoView(0, 100, 18, 450, 301), 101 * 18 - 450);
  assert.equal(scrollRowIntoView(2000, 10, 18, 450, 301), 180);
});

test("the minimum span and the wheel factor", () => {
  assert.equal(minSpan([0, 1000], 1e-4), 1e-3);
  assert.equal(minSpan([0, 2], 4), 2);
  assert.ok(wheelFactor(-100) < 1 && wheelFactor(100) > 1);
  close(wheelFactor(100) * wheelFactor(-100), 1);
  assert.equal(wheelFactor(3, 1), wheelFactor(48));
});
