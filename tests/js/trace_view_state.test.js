import { test } from "node:test";
import assert from "node:assert/strict";

import {
  criticalPathNote, decodeView, idleTime, encodeView, LAYOUT_DEFAULTS, layoutKey, readLayout, spanText, togglePanel,
} from "../../static/js/model/trace_view_state.js";

test("a stored layout overrides the defaults; a damaged one gives them; full screen is never restored", () => {
  assert.deepEqual(readLayout(null), LAYOUT_DEFAULTS);
  assert.deepEqual(readLayout("{not json"), LAYOUT_DEFAULTS);
  assert.deepEqual(readLayout(JSON.stringify({ filters: true, side: "yes", full: true, extra: 1 })),
    { ...LAYOUT_DEFAULTS, filters: true });
  assert.equal(layoutKey("ada"), "swarmscope.trace-layout.ada");
  assert.notEqual(layoutKey("ada"), layoutKey("bob"));
});

test("toggling a panel flips it and names an unknown one", () => {
  const layout = togglePanel(LAYOUT_DEFAULTS, "side");
  assert.equal(layout.side, false);
  assert.equal(LAYOUT_DEFAULTS.side, true); // not changed in place
  assert.equal(togglePanel(layout, "side", true).side, true);
  assert.throws(() => togglePanel(layout, "sidebar"), /unknown panel "sidebar"/);
});

test("the address carries event, window, axis and panels, keeps other parameters, and reads back", () => {
  const search = encodeView("?job=7&event=old", {
    event: "ev:3", agent: "main", window: [1.234567, 250], mode: "time",
    layout: { filters: true, side: false, full: false, facts: false, notice: true },
  });
  const params = new URLSearchParams(search);
  assert.equal(params.get("job"), "7");
  assert.equal(params.get("event"), "ev:3");
  assert.equal(params.get("agent"), null); // an event's selection says the event only
  assert.equal(params.get("t"), "1.2346,250");
  assert.equal(params.get("panels"), "filters");
  assert.deepEqual(decodeView(search), {
    event: "ev:3", agent: null, window: [1.2346, 250], mode: "time", panels: { filters: true, side: false, full: false },
    graph: "agents", problems: [],
  });
  const agentOnly = decodeView(encodeView("", { agent: "Explore:a2", layout: { filters: false, side: false, full: true } }));
  assert.equal(agentOnly.agent, "Explore:a2");
  assert.deepEqual(agentOnly.panels, { filters: false, side: false, full: true });
  assert.equal(new URLSearchParams(encodeView("", { layout: { filters: false, side: false, full: false } })).get("panels"), "none");
  assert.equal(encodeView("?event=x", {}), "");
});

test("the graph panel's span waterfall is in the address; the agent graph, the default, is not", () => {
  const spans = encodeView("?event=e1&job=2", { event: "e1", graph: "spans" });
  assert.equal(new URLSearchParams(spans).get("graph"), "spans");
  assert.equal(decodeView(spans).graph, "spans");
  const agents = encodeView(spans, { event: "e1", graph: "agents" });
  assert.equal(new URLSearchParams(agents).get("graph"), null);
  assert.equal(new URLSearchParams(agents).get("job"), "2");
  assert.equal(decodeView(agents).graph, "agents");
  assert.equal(decodeView("?graph=sankey").graph, "agents"); // an unknown view is the default, not guessed
});

test("a malformed window or axis in the address is not applied, not guessed, and named", () => {
  for (const t of ["5", "a,b", "9,3", "1,2,3", "1,Infinity", ""]) {
    const view = decodeView(`?t=${t}`);
    assert.equal(view.window, null, t);
    assert.deepEqual(view.problems, [`t=${JSON.stringify(t)} is not a window x0,x1 of two numbers, x0 < x1`], t);
  }
  assert.equal(decodeView("?x=log").mode, null);
  assert.deepEqual(decodeView("?x=log&graph=sankey&panels=side,sidebar").problems, [
    'x="log" is not an axis, time or step',
    'graph="sankey" is not a view, agents or spans',
    'panels="side,sidebar" is not a list of panels (filters, side, full or none)',
  ]);
  assert.equal(decodeView("").panels, null);
  assert.deepEqual(decodeView("?t=0,5&x=step&graph=spans&panels=none&event=e1&job=3").problems, []);
});

test("a critical path holding nearly every event is not highlighted and says why", () => {
  const serial = criticalPathNote(510, 511);
  assert.equal(serial.highlight, false);
  assert.match(serial.text, /510 of 511 events \(99\.8 %\).*serial/);
  const parallel = criticalPathNote(40, 120);
  assert.equal(parallel.highlight, true);
  assert.match(parallel.text, /40 of 120 events \(33\.3 %\)/);
  assert.deepEqual(criticalPathNote(0, 0), { highlight: false, share: 0, text: "" });
  assert.equal(criticalPathNote(2, 2).highlight, true); // two events: nothing to compare with
});

test("a window's length reads in hours, minutes, seconds or steps", () => {
  assert.equal(spanText(4400, "time"), "1 h 13 min");
  assert.equal(spanText(250, "time"), "4 min 10 s");
  assert.equal(spanText(12.54, "time"), "12.5 s");
  assert.equal(spanText(36.6, "step"), "37 steps");
});

test("idle time counts only the long gaps between events", () => {
  // Two bursts 1 h apart: the hour is idle, the seconds inside the bursts are not.
  const at = (...ts) => ts.map((t) => ({ t }));
  const idle = idleTime(at(0, 1, 2, 3, 3600, 3601, 3603));
  assert.equal(idle.gaps, 1);
  assert.equal(idle.idle, 3597);
  assert.ok(idle.share > 0.99);
  assert.equal(idleTime(at(5, 1, 2, 3, 4)).gaps, 0); // evenly spread: nothing idle
  assert.deepEqual(idleTime(at(7)), { span: 0, idle: 0, share: 0, gaps: 0 });
  assert.equal(idleTime(at(1, NaN, 1)).share, 0);
  // Time inside an event's span is busy, not idle: three agents running one after another.
  const busy = idleTime([{ t: 0 }, { t: 0, t_end: 7.3 }, { t: 7.5, t_end: 15.5 }, { t: 15.6, t_end: 16.9 }]);
  assert.equal(busy.gaps, 0);
});
