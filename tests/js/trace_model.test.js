import { test } from "node:test";
import assert from "node:assert/strict";

import { TraceModel } from "../../static/js/model/trace_model.js";
import { syntheticSnapshot } from "./synthetic.js";

/**
 * orch spawns a (t=1) and b (t=2); a spawns c. Agents are listed out of spawn order.
 * Durations: o1 1, o2 .5, o3 .5, a1 2, c1 .5, b1 .5, o4 1.
 */
function smallSnapshot({ durations = true } = {}) {
  const ev = (id, t, dt, type, agent, extra = {}) => ({
    id, t, ...(durations ? { t_end: t + dt } : {}), type, agent, seq: 1, ...extra,
  });
  return {
    type: "snapshot", seq: 1,
    trace: { id: "t1", name: "small", system: "test", source_format: "native", live: false },
    agents: [
      { name: "b", role: "critic", parent: "orch", spawned_at: 2, seq: 1 },
      { name: "c", role: "worker", parent: "a", spawned_at: 3, seq: 1 },
      { name: "orch", role: "orchestrator", parent: null, spawned_at: 0, seq: 1 },
      { name: "a", role: "worker", parent: "orch", spawned_at: 1, seq: 1 },
    ],
    events: [
      ev("o1", 0, 1, "orchestrator_decision", "orch"),
      ev("o2", 1, 0.5, "spawn", "orch", { to: "a" }),
      ev("o3", 2, 0.5, "spawn", "orch", { to: "b" }),
      ev("a1", 3, 2, "tool_call", "a", { tool: "search", content: "Find the ```capital```" }),
      ev("c1", 3.5, 0.5, "message", "c", { content: "hello from c" }),
      ev("b1", 4, 0.5, "message", "b", { content: "critique" }),
      ev("o4", 6, 1, "aggregate", "orch"),
    ],
    edges: [
      { src: "o1", dst: "o2", type: "temporal", seq: 1 },
      { src: "o2", dst: "a1", type: "spawn", seq: 1 },
      { src: "a1", dst: "c1", type: "message", seq: 1 },
      { src: "a1", dst: "o4", type: "return", seq: 1 },
      { src: "b1", dst: "o4", type: "return", seq: 1 },
    ],
    labels: [
      { key: "mistake_step", value: "4", event_id: "c1", seq: 1 },
      { key: "mistake_agent", value: "c", agent: "c", seq: 1 },
    ],
  };
}

const loaded = (options) => {
  const model = new TraceModel(options);
  model.applySnapshot(smallSnapshot());
  return model;
};

test("snapshot builds lanes nested under the spawning agent, ordered by spawn time", () => {
  const model = loaded();
  assert.deepEqual(model.lanes().map((l) => [l.name, l.depth, l.row]),
    [["orch", 0, 0], ["a", 1, 1], ["c", 2, 2], ["b", 1, 3]]);
  assert.equal(model.seq, 1);
  assert.equal(model.eventCount, 7);
  assert.deepEqual(model.timeOrder, ["o1", "o2", "o3", "a1", "c1", "b1", "o4"]);
});

test("agents named only by events get an implicit lane; spawn events give the parent", () => {
  const model = new TraceModel();
  model.applySnapshot({
    type: "snapshot", seq: 3, trace: {}, agents: [], edges: [], labels: [],
    events: [
      { id: "1", t: 0, type: "spawn", agent: "boss", to: "helper", role: "lead" },
      { id: "2", t: 1, type: "tool_call", agent: "helper" },
    ],
  });
  assert.deepEqual(model.lanes().map((l) => [l.name, l.depth, l.role]), [["boss", 0, "lead"], ["helper", 1, null]]);
  assert.ok(model.agents.get("helper").implicit);
});

test("a consecutive delta upserts events by id: t_end closes an open event", () => {
  const model = new TraceModel();
  const snap = smallSnapshot();
  snap.trace.live = true;
  model.applySnapshot(snap);
  const before = model.view("time").nodes.get("o4");
  const r = model.applyDelta({
    type: "delta", seq: 2, agents: [], edges: [], labels: [],
    events: [{ id: "o5", t: 8, type: "stop", agent: "orch", seq: 2 }],
  });
  assert.equal(r.status, "applied");
  assert.deepEqual(r.changes.events, ["o5"]);
  assert.equal(model.view("time").nodes.get("o5").open, true);
  model.applyDelta({
    type: "delta", seq: 3, events: [{ id: "o5", t: 8, t_end: 9, type: "stop", agent: "orch", seq: 3 }],
  });
  assert.equal(model.events.get("o5").t_end, 9);
  assert.equal(model.view("time").nodes.get("o5").open, false);
  assert.equal(model.eventCount, 8);
  const after = model.view("time").nodes.get("o4");
  assert.deepEqual([after.x, after.row], [before.x, before.row], "existing positions stay fixed");
});

test("stale deltas are ignored, a jump is a gap, and the resume answer is applied", () => {
  const model = loaded();
  const delta = (seq, extra = {}) => ({
    type: "delta", seq, events: [{ id: `x${seq}`, t: 10 + seq, type: "message", agent: "b" }], ...extra,
  });
  assert.equal(model.applyDelta(delta(2)).status, "applied");
  assert.equal(model.applyDelta(delta(2)).status, "stale");
  assert.equal(model.applyDelta(delta(1)).status, "stale");
  assert.deepEqual(model.applyDelta(delta(5)), { status: "gap", seq: 2, resumeFrom: 2 });
  assert.equal(model.events.has("x5"), false);
  assert.equal(model.resumePending, true);
  const answer = model.applyDelta({ type: "delta", seq: 5, events: [delta(3).events[0], delta(5).events[0]] });
  assert.equal(answer.status, "applied");
  assert.equal(model.seq, 5);
  assert.equal(model.resumePending, false);
  assert.ok(model.events.has("x3") && model.events.has("x5"));
});

test("a resume answer that names an older resume point than ours is still a gap", () => {
  const model = loaded();
  model.applyDelta({ type: "delta", seq: 4 });
  assert.equal(model.applyDelta({ type: "delta", seq: 6, resumed_from: 3 }).status, "gap");
  assert.equal(model.applyDelta({ type: "delta", seq: 6, resumed_from: 1 }).status, "applied");
});

test("a delta before any snapshot is a gap with no seq", () => {
  assert.deepEqual(new TraceModel().applyDelta({ type: "delta", seq: 1 }), { status: "gap", seq: null, resumeFrom: 0 });
});

test("edges and labels are appended once; mistake labels flag the event and the agent", () => {
  const model = loaded();
  model.applyDelta({ type: "delta", seq: 2, edges: [{ src: "b1", dst: "o4", type: "return", seq: 2 }],
    labels: [{ key: "mistake_step", value: "4", event_id: "c1", seq: 2 }] });
  assert.equal(model.edges.length, 5);
  assert.equal(model.labels.length, 2);
  assert.ok(model.isMistakeEvent("c1"));
  assert.ok(model.isMistakeAgent("c"));
  assert.equal(model.view().nodes.get("c1").mistake, true);
  assert.deepEqual(model.edgesOf("o4").incoming.map((e) => e.src), ["a1", "b1"]);
  assert.deepEqual(model.labelsForEvent("c1").map((l) => l.key), ["mistake_step"]);
  assert.deepEqual(model.labelsForAgent("c").map((l) => l.key), ["mistake_agent"]);
});

test("snapshot then deltas equals the later snapshot", () => {
  const full = smallSnapshot();
  const early = { ...full, seq: 1, events: full.events.slice(0, 4), edges: full.edges.slice(0, 2), labels: [] };
  const model = new TraceModel();
  model.applySnapshot(early);
  model.applyDelta({ type: "delta", seq: 2, events: full.events.slice(4), edges: full.edges.slice(2), labels: full.labels });
  const fresh = new TraceModel();
  fresh.applySnapshot({ ...full, seq: 2 });
  assert.deepEqual(model.lanes(), fresh.lanes());
  assert.deepEqual(model.timeOrder, fresh.timeOrder);
  assert.deepEqual([...model.view("step").nodes.values()], [...fresh.view("step").nodes.values()]);
  assert.deepEqual(model.criticalPath().ids, fresh.criticalPath().ids);
});

test("a later snapshot merges without moving lanes; an older one is stale", () => {
  const model = loaded();
  const snap = smallSnapshot();
  snap.seq = 4;
  snap.agents.push({ name: "d", role: "worker", parent: "a", spawned_at: 0.5, seq: 4 });
  assert.equal(model.applySnapshot(snap).status, "applied");
  assert.deepEqual(model.lanes().map((l) => l.name), ["orch", "a", "c", "d", "b"],
    "a new lane goes at the end of its parent's group");
  assert.equal(model.applySnapshot({ ...snap, seq: 3 }).status, "stale");
});

test("step mode: x is the index in time order; appends do not move existing events", () => {
  const model = loaded();
  assert.equal(model.view("step").nodes.get("b1").x, 5);
  model.applyDelta({ type: "delta", seq: 2, events: [{ id: "late", t: 20, type: "stop", agent: "orch" }] });
  assert.equal(model.view("step").nodes.get("b1").x, 5);
  assert.equal(model.view("step").nodes.get("late").x, 7);
  model.applyDelta({ type: "delta", seq: 3, events: [{ id: "early", t: 0.5, type: "message", agent: "orch" }] });
  assert.equal(model.stepOf("early"), 1);
  assert.equal(model.stepOf("late"), 8, "an out-of-order event shifts the steps after it");
});

test("critical path: longest path through dependency edges and agent order, by duration", () => {
  const cp = loaded().criticalPath();
  assert.deepEqual(cp.ids, ["o1", "o2", "a1", "o4"]);
  assert.equal(cp.length, 4.5);
  assert.equal(cp.unit, "s");
  assert.ok(cp.edges.has("a1\u0000o4"));
});

test("critical path without durations counts events", () => {
  const model = new TraceModel();
  model.applySnapshot(smallSnapshot({ durations: false }));
  const cp = model.criticalPath();
  assert.deepEqual(cp.ids, ["o1", "o2", "a1", "c1"]);
  assert.equal(cp.length, 4);
  assert.equal(cp.unit, "events");
  assert.equal(model.view().nodes.get("a1").critical, true);
  assert.equal(model.view().edges.get("a1\u0000c1\u0000message").critical, true);
});

test("the timeline view draws every edge type but temporal", () => {
  const view = loaded().view("time");
  assert.deepEqual([...view.edges.values()].map((e) => e.type).sort(), ["message", "return", "return", "spawn"]);
  assert.equal(view.nodes.size, 7);
});

test("filters: event types, agents, roles, time window, text", () => {
  const model = loaded();
  const visible = () => [...model.view().nodes.keys()].sort();
  model.setFilters({ types: new Set(["message"]) });
  assert.deepEqual(visible(), ["b1", "c1"]);
  model.setFilters({ types: null, agents: new Set(["orch"]) });
  assert.deepEqual(visible(), ["a1", "b1", "c1"]);
  assert.deepEqual(model.lanes().map((l) => l.name), ["a", "c", "b"]);
  model.setFilters({ agents: null, roles: new Set(["worker"]) });
  assert.deepEqual(visible(), ["b1", "o1", "o2", "o3", "o4"]);
  model.setFilters({ roles: null, window: [3.2, 4.2] });
  assert.deepEqual(visible(), ["a1", "b1", "c1"], "a1 spans 3..5 and overlaps the window");
  model.setFilters({ window: null, text: "HELLO" });
  assert.deepEqual(visible(), ["c1"]);
  model.setFilters({ text: "search" });
  assert.deepEqual(visible(), ["a1"], "the tool name is searched too");
  model.clearFilters();
  assert.equal(model.view().nodes.size, 7);
});

test("stepping goes through visible events in time order", () => {
  const model = loaded();
  assert.equal(model.stepFrom(null, 1), "o1");
  assert.equal(model.stepFrom(null, -1), "o4");
  assert.equal(model.stepFrom("a1", 1), "c1");
  assert.equal(model.stepFrom("a1", -1), "o3");
  assert.equal(model.stepFrom("o4", 1), null);
  model.setFilters({ types: new Set(["message", "aggregate"]) });
  assert.deepEqual(model.sequence(), ["c1", "b1", "o4"]);
  assert.equal(model.stepFrom("a1", 1), "c1", "from a hidden event, the next visible one");
  assert.equal(model.stepFrom("a1", -1), null);
});

test("a collapsed lane shows its descendants' events as bins, and aggregates their edges", () => {
  const model = loaded({ binCount: 7 }); // bins of 1 s over the 7 s trace
  model.setCollapsed("a", true);
  const view = model.view("time");
  assert.deepEqual(view.lanes.map((l) => [l.name, l.collapsed, l.hidden]),
    [["orch", false, 0], ["a", true, 1], ["b", false, 0]]);
  const bin = view.nodes.get("bin:a:3");
  assert.deepEqual([bin.kind, bin.count, bin.type, bin.row, bin.x, bin.mistake], ["bin", 1, "message", 1, 3.5, true]);
  assert.equal(view.nodes.get("a1").kind, "event", "the collapsed agent's own events stay");
  const agg = view.edges.get("agg:message:a1->bin:a:3");
  assert.deepEqual([agg.count, agg.aggregated], [1, true]);
});

test("level of detail: past the threshold, lanes collapse until at most maxLanes show", () => {
  const model = new TraceModel({ lodThreshold: 1000, maxLanes: 12 });
  model.applySnapshot(syntheticSnapshot({ agents: 60, events: 2000 }));
  assert.equal(model.lod, true);
  const view = model.view("time");
  assert.ok(view.lanes.length <= 12, `${view.lanes.length} lanes`);
  assert.ok([...view.nodes.values()].some((n) => n.kind === "bin"));
  const drawn = [...view.nodes.values()].reduce((n, node) => n + (node.count ?? 1), 0);
  assert.equal(drawn, 2000, "every event is drawn, alone or in a bin");
  assert.ok([...view.edges.values()].some((e) => e.aggregated && e.count >= 1));
});

test("agent edges are aggregated per pair and type", () => {
  const model = loaded();
  model.applyDelta({ type: "delta", seq: 2,
    events: [{ id: "a2", t: 6.5, type: "return", agent: "a" }],
    edges: [{ src: "a2", dst: "o4", type: "return" }] });
  const pairs = model.agentEdges().map((p) => [p.source, p.target, p.type, p.count]).sort();
  assert.deepEqual(pairs, [["a", "c", "message", 1], ["a", "orch", "return", 2],
    ["b", "orch", "return", 1], ["orch", "a", "spawn", 1]]);
  const stats = model.agentStats();
  assert.equal(stats.get("orch").events, 4);
  assert.equal(stats.get("a").last, 6.5);
});

test("an agent's measured tokens and the importers' estimates are summed apart", () => {
  const model = loaded();
  model.applyDelta({ type: "delta", seq: 2, events: [
    { id: "m1", t: 7, type: "message", agent: "b", tokens: 40 },
    { id: "m2", t: 8, type: "message", agent: "b", tokens: 9, attributes: { tokens_estimated: true } },
  ] });
  const b = model.agentStats().get("b");
  const before = loaded().agentStats().get("b");
  assert.equal(b.tokens - before.tokens, 40);
  assert.equal(b.estimatedTokens - before.estimatedTokens, 9);
});

test("20,000 events load and derive a view quickly", () => {
  const snap = syntheticSnapshot({ agents: 1000, events: 20000 });
  const started = performance.now();
  const model = new TraceModel();
  model.applySnapshot(snap);
  const view = model.view("time");
  model.criticalPath();
  const ms = performance.now() - started;
  assert.equal(model.eventCount, 20000);
  assert.ok(view.lanes.length <= model.maxLanes);
  assert.ok(ms < 3000, `took ${ms.toFixed(0)} ms`);
});

test("agent records without a parent are nested under the agent whose spawn event names them", () => {
  const model = new TraceModel();
  const agent = (name) => ({ name, role: null, parent: null, spawned_at: null, seq: 1 });
  model.applySnapshot({
    type: "snapshot", seq: 1, trace: {}, edges: [], labels: [],
    agents: [agent("w2"), agent("orch"), agent("w1")],
    events: [
      { id: "1", t: 0, type: "orchestrator_decision", agent: "orch" },
      { id: "2", t: 1, type: "spawn", agent: "orch", to: "w1" },
      { id: "3", t: 2, type: "tool_call", agent: "w1" },
      { id: "4", t: 3, type: "tool_call", agent: "w2" },
    ],
  });
  assert.deepEqual(model.lanes().map((l) => [l.name, l.depth]), [["orch", 0], ["w1", 1], ["w2", 0]]);
  assert.equal(model.spawnedAt("w1"), 1);
  model.applyDelta({ type: "delta", seq: 2, events: [{ id: "5", t: 2.5, type: "spawn", agent: "w1", to: "w2" }] });
  assert.deepEqual(model.lanes().map((l) => [l.name, l.depth]), [["orch", 0], ["w1", 1], ["w2", 2]],
    "a later spawn event moves the parentless lane under its spawner");
  assert.equal(model.parentOf("w2"), "w1");
});

/** A live stream in the shape of bench/bench_live.py: `n` events from `first`, over `agents` agents. */
function liveDelta(seq, first, n, { agents = 20, rate = 1000 } = {}) {
  const events = [];
  const edges = [];
  for (let k = first; k < first + n; k += 1) {
    const [group, kind] = [Math.floor(k / 4), k % 4];
    const agent = `worker-${(group + Math.max(0, kind - 1)) % agents}`;
    const type = kind === 0 ? "tool_call" : kind === 1 ? "tool_result" : "message";
    events.push({ id: `e${k}`, t: k / rate, agent, type });
    if (kind === 1 && k - 1 >= first) edges.push({ src: `e${k - 1}`, dst: `e${k}`, type: "tool_dependency" });
    if (kind === 2) edges.push({ src: `e${k - 2}`, dst: `e${k}`, type: "message" });
  }
  return { type: "delta", seq, events, edges };
}

/** Plain copies of a view's nodes and edges, for deep comparison. */
const plain = (view) => ({
  nodes: [...view.nodes.values()].map((n) => ({ ...n, eventIds: n.eventIds && [...n.eventIds].sort() }))
    .sort((a, b) => (a.key < b.key ? -1 : 1)),
  edges: [...view.edges.values()].map((e) => ({ ...e })).sort((a, b) => (a.key < b.key ? -1 : 1)),
});

test("node budget: a flat trace past the budget draws events of unfolded lanes in time bins", () => {
  const model = new TraceModel({ nodeBudget: 400 });
  model.applySnapshot({ type: "snapshot", seq: 0, trace: { live: true }, agents: [], events: [], edges: [], labels: [] });
  model.applyDelta(liveDelta(1, 0, 50));
  const small = model.view("time");
  assert.equal(small.budgeted, false);
  assert.equal(small.nodes.size, 50, "under the budget every event is a node");
  for (let i = 1; i < 40; i += 1) model.applyDelta(liveDelta(i + 1, i * 50, 50));
  const view = model.view("time");
  assert.equal(view.budgeted, true);
  assert.ok(view.nodes.size <= 400, `${view.nodes.size} nodes`);
  assert.equal(view.lanes.length, 20, "no lane is folded");
  const drawn = [...view.nodes.values()].reduce((n, node) => n + (node.count ?? 1), 0);
  assert.equal(drawn, 2000, "every event is drawn, alone or in a bin");
  for (const [id, key] of view.nodeOf) {
    const node = view.nodes.get(key);
    assert.ok(node.kind === "event" ? node.eventId === id : node.eventIds.includes(id));
  }
  // Selection and stepping are unaffected; an event inside a bin maps to its bin.
  assert.equal(model.stepFrom("e10", 1), "e11");
  assert.ok(view.nodeOf.get("e10").startsWith("bin:"));
});

test("node budget: single events stay events where they fit", () => {
  const model = new TraceModel({ nodeBudget: 20 });
  const events = [];
  for (let i = 0; i < 30; i += 1) events.push({ id: `x${i}`, t: i < 25 ? i / 100 : (i - 24) * 1000, agent: "a", type: "message" });
  model.applySnapshot({ type: "snapshot", seq: 1, trace: {}, agents: [], events, edges: [], labels: [] });
  const view = model.view("time");
  assert.equal(view.budgeted, true);
  assert.equal(view.nodes.get("x29").kind, "event", "a lone late event is drawn as itself");
  assert.equal(view.nodes.get(view.nodeOf.get("x0")).count, 25);
});

test("incremental view: deltas update the same view object and report only what changed", () => {
  const model = new TraceModel({ nodeBudget: 600 });
  model.applySnapshot({ type: "snapshot", seq: 0, trace: { live: true }, agents: [], events: [], edges: [], labels: [] });
  model.applyDelta(liveDelta(1, 0, 50));
  for (const mode of ["time", "step"]) {
    model.view(mode);
    assert.equal(model.takeViewChanges(mode).full, true);
  }
  let seq = 1;
  let rebuilds = 0;
  for (let first = 50; first < 4000; first += 50) {
    seq += 1;
    const before = model.view("time");
    const beforeLevel = before.level;
    model.applyDelta(liveDelta(seq, first, 50));
    const view = model.view("time");
    model.view("step");
    const changes = model.takeViewChanges("time");
    model.takeViewChanges("step");
    if (view === before) {
      assert.equal(changes.full, false);
      assert.ok(changes.nodes.size <= 60, `${changes.nodes.size} nodes changed by a delta of 50 events`);
    } else {
      assert.equal(changes.full, true, "a rebuild is reported as full");
      assert.ok(view.level >= beforeLevel, "bins never get finer while streaming");
      rebuilds += 1;
    }
    assert.ok(view.nodes.size <= 600);
  }
  assert.ok(rebuilds <= 6, `${rebuilds} rebuilds over 79 deltas`);
  for (const mode of ["time", "step"]) {
    const view = model.view(mode);
    const rebuilt = model._buildView(mode, "", 0, view.level).view;
    assert.deepEqual(plain(view), plain(rebuilt), `${mode}: incremental = rebuilt`);
  }
  // The critical path maintained incrementally equals one computed from scratch.
  const fresh = new TraceModel({ nodeBudget: 600 });
  fresh.applySnapshot({ type: "snapshot", seq: 0, trace: { live: true }, agents: [], events: [...model.events.values()],
    edges: model.edges, labels: [] });
  assert.deepEqual(model.criticalPath().ids, fresh.criticalPath().ids);
  assert.deepEqual(model.timeRange(), fresh.timeRange());
});

test("incremental view: an edge that arrives before its event, and a mistake label", () => {
  const model = new TraceModel();
  model.applySnapshot(smallSnapshot());
  model.view("time");
  model.takeViewChanges("time");
  model.applyDelta({ type: "delta", seq: 2, events: [], edges: [{ src: "o4", dst: "late", type: "causal" }] });
  model.view("time");
  model.applyDelta({ type: "delta", seq: 3, events: [{ id: "late", t: 8, t_end: 9, type: "return", agent: "b" }] });
  const view = model.view("time");
  const changes = model.takeViewChanges("time");
  assert.equal(changes.full, false);
  assert.ok(changes.nodes.has("late"));
  assert.ok(view.edges.has("o4\u0000late\u0000causal"));
  assert.ok(changes.edges.has("o4\u0000late\u0000causal"));
  model.applyDelta({ type: "delta", seq: 4, labels: [{ key: "mistake_step", event_id: "late", value: "8" }] });
  assert.equal(model.view("time").nodes.get("late").mistake, true);
  assert.equal(model.takeViewChanges("time").full, true);
});

test("a snapshot after a restart replaces the model; a reconnect's snapshot merges", () => {
  const model = new TraceModel();
  const ev = (id, t) => ({ id, t, type: "message", agent: "a", seq: 1 });
  model.applySnapshot({ type: "snapshot", seq: 5, trace: { id: 1, seq: 5, reset_seq: 0 },
    agents: [], events: [ev("e1", 0), ev("e2", 1)], edges: [], labels: [] });
  const reconnect = { type: "snapshot", seq: 7, trace: { id: 1, seq: 7, reset_seq: 0 }, agents: [], events: [ev("e3", 2)] };
  assert.equal(model.isRebuild(reconnect), false);
  const restart = { type: "snapshot", seq: 9, trace: { id: 1, seq: 9, reset_seq: 8 }, agents: [], events: [ev("n1", 0)] };
  assert.equal(model.isRebuild(restart), true);
  assert.equal(model.isRebuild({ ...restart, trace: { ...restart.trace, reset_seq: 5 } }), false, "rebuilt before what is held");
  assert.equal(model.isRebuild({ type: "snapshot", seq: 9, trace: { id: 1 } }), false, "no reset_seq: a merge");
  assert.equal(new TraceModel().isRebuild(restart), false, "an empty model loads");
});
