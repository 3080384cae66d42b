/**
 * Deterministic synthetic orchestration traces in the wire format of `/ws/traces/<id>/`,
 * for unit tests and for the browser performance check (bench/): an orchestrator spawns
 * workers, which spawn sub-workers; agents delegate, call tools, message and return.
 */

const TYPES_BY_ROLE = {
  orchestrator: ["orchestrator_decision", "delegate", "aggregate", "message"],
  worker: ["tool_call", "tool_result", "message", "return"],
};

/** A small deterministic PRNG (mulberry32) so traces are reproducible. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A snapshot message with `agents` agents and about `events` events.
 * @param {{agents?: number, events?: number, seed?: number, live?: boolean}} [options]
 * @returns {object} `{"type":"snapshot","seq":1,"trace":{...},"agents":[...],...}`
 */
export function syntheticSnapshot({ agents = 20, events = 200, seed = 1, live = false } = {}) {
  const rand = prng(seed);
  const agentList = [{ name: "orchestrator", role: "orchestrator", parent: null, spawned_at: 0, seq: 1 }];
  const eventList = [];
  const edges = [];
  let t = 0;
  const add = (ev) => {
    eventList.push({ seq: 1, ...ev });
    return ev.id;
  };
  const spawnIds = new Map();
  for (let i = 1; i < agents; i += 1) {
    const parent = i <= Math.min(10, agents - 1) ? "orchestrator" : agentList[1 + Math.floor(rand() * Math.min(10, i - 1))].name;
    t += 0.01;
    const name = `worker_${i}`;
    const id = add({ id: `s${i}`, t, t_end: t + 0.005, type: "spawn", agent: parent, to: name, tokens: 5 });
    spawnIds.set(name, id);
    agentList.push({ name, role: i % 3 ? "worker" : "researcher", parent, spawned_at: t, seq: 1 });
  }
  const last = new Map();
  for (let n = eventList.length; n < events; n += 1) {
    const agent = agentList[Math.floor(rand() * agentList.length)];
    const types = agent.name === "orchestrator" ? TYPES_BY_ROLE.orchestrator : TYPES_BY_ROLE.worker;
    const type = types[Math.floor(rand() * types.length)];
    t += 0.05 + rand() * 0.1;
    const id = `e${n}`;
    const other = agentList[Math.floor(rand() * agentList.length)].name;
    add({
      id, t, t_end: t + rand() * 0.5, type, agent: agent.name, role: agent.role,
      content: `${type} by ${agent.name}: step ${n}`, tokens: 10 + Math.floor(rand() * 90),
      ...(type === "message" || type === "delegate" ? { from: agent.name, to: other } : {}),
    });
    const prev = last.get(agent.name) ?? spawnIds.get(agent.name);
    if (prev) edges.push({ src: prev, dst: id, type: "temporal", seq: 1 });
    if (type === "message" || type === "return" || type === "delegate") {
      const target = last.get(other);
      if (target && other !== agent.name) edges.push({ src: target, dst: id, type: type === "return" ? "return" : "message", seq: 1 });
    }
    last.set(agent.name, id);
  }
  for (const [name, id] of spawnIds) {
    const first = eventList.find((e) => e.agent === name);
    if (first) edges.push({ src: id, dst: first.id, type: "spawn", seq: 1 });
  }
  return {
    type: "snapshot", seq: 1,
    trace: {
      id: "synthetic", name: `synthetic ${agents}x${events}`, system: "synthetic", source_format: "native",
      attributes: {}, rewards: { team: 1 }, costs: {}, metrics: {}, live,
      computed_metrics: {
        critical_steps: 10, parallelism_efficiency: 1.5, protocol_overhead: 0.2, message_redundancy: 0,
        fan_out_max: 10, spawn_depth: 2, agents_alive: [[0, 1], [t / 2, agents], [t, agents]], flags: {},
      },
    },
    agents: agentList, events: eventList, edges,
    labels: [{ key: "mistake_step", value: "12", event_id: "e12", seq: 1 },
      { key: "mistake_agent", value: "worker_3", agent: "worker_3", seq: 1 }],
  };
}
