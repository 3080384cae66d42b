import { test } from "node:test";
import assert from "node:assert/strict";

import { MESSAGE_LIKE_TYPES, normaliseCapabilities, targetChoices, whatIfState } from "../../static/js/panels/counterfactual.js";
import { eventLink } from "../../static/js/panels/attribution.js";
import { alignById, alignTraces, defaultAlignment } from "../../static/js/panels/compare.js";
import { TraceModel } from "../../static/js/model/trace_model.js";

const on = { available: true, reason: "" };
const off = (reason) => ({ available: false, reason });
const caps = {
  docs: "/help/what-if/#what-if-needs-a-backend",
  what_if: { ...on, backends: ["sim"] },
  attribution: { ...on, backends: ["sim"] },
  backends: {
    sim: { available: true, reason: "", message_types: ["message"], what_if: on, attribution: on, notes: [] },
    openai: { available: false, reason: "No LLM endpoint is configured: set SWARMSCOPE_OPENAI_BASE_URL",
      message_types: [], what_if: off("x"), attribution: off("x"), notes: [] },
  },
};

test("whatIfState enables an event only where an able backend removes its type", () => {
  assert.deepEqual(whatIfState(caps, "message"), { enabled: true, backends: ["sim"], reason: "", docs: caps.docs });
  const delegate = whatIfState(caps, "delegate");
  assert.equal(delegate.enabled, false);
  assert.match(delegate.reason, /sim removes message events/);
  assert.equal(whatIfState(caps).enabled, true); // an agent: any able backend
});

test("whatIfState with no able backend gives the server's reason", () => {
  const none = { ...caps, what_if: { available: false, reason: "What-if needs a rollout backend … SWARMSCOPE_OPENAI_BASE_URL" },
    backends: { ...caps.backends, sim: { ...caps.backends.sim, available: false, reason: "not SwarmSim" } } };
  const state = whatIfState(none, "message");
  assert.equal(state.enabled, false);
  assert.match(state.reason, /SWARMSCOPE_OPENAI_BASE_URL/);
  assert.equal(state.docs, caps.docs);
});

test("without capabilities every offered backend runs every message-like event", () => {
  const plain = normaliseCapabilities(null, ["sim", "openai"]);
  assert.deepEqual(Object.keys(plain.backends), ["sim", "openai"]);
  assert.equal(whatIfState(plain, "delegate").enabled, true);
});

test("targetChoices lists the backend's message types only", () => {
  const events = [{ id: "m1", type: "message", t: 0, agent: "a" }, { id: "d1", type: "delegate", t: 1, agent: "a" }];
  assert.deepEqual(targetChoices(events, "", 10, ["message"]).matches.map((e) => e.id), ["m1"]);
  assert.deepEqual(targetChoices(events, "", 10, MESSAGE_LIKE_TYPES).matches.map((e) => e.id), ["m1", "d1"]);
});

test("eventLink opens the trace page with the event selected", () => {
  assert.equal(eventLink(7, "message:a b"), "/traces/7/?event=message%3Aa%20b");
});

const model = (events) => {
  const m = new TraceModel();
  m.applySnapshot({ type: "snapshot", seq: 1, trace: {}, agents: [], edges: [], labels: [],
    events: events.map(([id, agent, type, content], i) => ({ id, t: i, agent, type, content })) });
  return m;
};

test("by event id: shared ids pair up, the branch's new events follow the event before them", () => {
  const parent = model([["e1", "a", "message", "hi"], ["e2", "b", "message", "x"], ["e3", "a", "message", "end"]]);
  const branch = model([["e1", "a", "message", "hi"], ["n1", "a", "message", "new"], ["e3", "a", "message", "END"]]);
  const rows = alignById(parent, branch);
  assert.deepEqual(rows.map((r) => [r.status, r.left?.id ?? null, r.right?.id ?? null]), [
    ["same", "e1", "e1"], ["right-only", null, "n1"], ["left-only", "e2", null], ["changed", "e3", "e3"],
  ]);
  assert.deepEqual(alignTraces(parent, branch, "id"), rows);
  assert.equal(defaultAlignment(parent, branch), "id");
  assert.equal(defaultAlignment(parent, model([["z1", "a", "message", "hi"]])), "step");
  assert.equal(defaultAlignment(parent, branch, "agent"), "agent");
});
