import { test } from "node:test";
import assert from "node:assert/strict";

import { backoffDelay, LiveConnection, websocketUrl } from "../../static/js/lib/live_connection.js";

class FakeSocket {
  static all = [];

  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    FakeSocket.all.push(this);
  }

  open() {
    this.readyState = 1;
    this.onopen();
  }

  send(data) {
    this.sent.push(JSON.parse(data));
  }

  close(code) {
    this.readyState = 3;
    this.onclose?.(code === undefined ? undefined : { code });
  }
}

test("backoff doubles up to the cap, with jitter in [0.5, 1)", () => {
  const fixed = { random: () => 0.999999 };
  assert.ok(Math.abs(backoffDelay(0, fixed) - 500) < 1);
  assert.ok(Math.abs(backoffDelay(3, fixed) - 4000) < 1);
  assert.ok(Math.abs(backoffDelay(20, fixed) - 30000) < 1);
  assert.equal(backoffDelay(0, { random: () => 0 }), 250);
});

test("relative websocket URLs follow the page's scheme and host", () => {
  assert.equal(websocketUrl("/ws/traces/3/", { protocol: "https:", host: "x.org" }), "wss://x.org/ws/traces/3/");
  assert.equal(websocketUrl("ws://h/ws/", { protocol: "https:", host: "x.org" }), "ws://h/ws/");
});

test("messages are parsed, the socket reconnects after a close, and open resets the backoff", () => {
  FakeSocket.all = [];
  const timers = [];
  const states = [];
  const received = [];
  let opens = 0;
  const conn = new LiveConnection("ws://test/", {
    WebSocketImpl: FakeSocket, onMessage: (m) => received.push(m), onOpen: () => { opens += 1; },
    onState: (s) => states.push(s), setTimer: (fn, ms) => timers.push({ fn, ms }), backoff: { random: () => 0 },
  });
  conn.start();
  assert.equal(conn.send({ type: "resume", seq: 1 }), false, "not open yet");
  FakeSocket.all[0].open();
  FakeSocket.all[0].onmessage({ data: '{"type":"delta","seq":2}' });
  FakeSocket.all[0].onmessage({ data: "not json" });
  assert.deepEqual(received, [{ type: "delta", seq: 2 }]);
  assert.equal(conn.send({ type: "resume", seq: 2 }), true);
  assert.deepEqual(FakeSocket.all[0].sent, [{ type: "resume", seq: 2 }]);
  FakeSocket.all[0].close();
  assert.equal(timers.length, 1);
  assert.equal(timers[0].ms, 250);
  timers[0].fn();
  FakeSocket.all[1].close();
  assert.equal(timers[1].ms, 500, "the second try waits twice as long");
  timers[1].fn();
  FakeSocket.all[2].open();
  assert.equal(opens, 2);
  assert.equal(conn.attempt, 0);
  assert.deepEqual(states, ["connecting", "open", "reconnecting", "open"]);
  conn.close();
  assert.equal(timers.length, 2, "no reconnect after close()");
});

test("with seq, each reconnect asks for what came after the last seq applied", () => {
  FakeSocket.all = [];
  const timers = [];
  let seq = null;
  const conn = new LiveConnection(() => "ws://test/ws/projects/1/", {
    WebSocketImpl: FakeSocket, onMessage: () => {}, seq: () => seq, setTimer: (fn, ms) => timers.push({ fn, ms }),
  });
  conn.start();
  assert.equal(FakeSocket.all[0].url, "ws://test/ws/projects/1/", "no seq before the first snapshot");
  FakeSocket.all[0].open();
  seq = 42;
  assert.equal(conn.resume(41), true);
  assert.deepEqual(FakeSocket.all[0].sent, [{ type: "resume", seq: 41 }]);
  FakeSocket.all[0].close(1006);
  timers[0].fn();
  assert.equal(FakeSocket.all[1].url, "ws://test/ws/projects/1/?seq=42");
  conn.close();
});

test("a close with a final code (no access) stops reconnecting and reports the code", () => {
  FakeSocket.all = [];
  const timers = [];
  const codes = [];
  const states = [];
  const conn = new LiveConnection("ws://test/", {
    WebSocketImpl: FakeSocket, onMessage: () => {}, finalCodes: [4404], onClose: (c) => codes.push(c),
    onState: (s) => states.push(s), setTimer: (fn, ms) => timers.push({ fn, ms }),
  });
  conn.start();
  FakeSocket.all[0].open();
  FakeSocket.all[0].close(1006);
  assert.equal(timers.length, 1, "an ordinary drop reconnects");
  timers[0].fn();
  FakeSocket.all[1].close(4404);
  assert.deepEqual(codes, [1006, 4404]);
  assert.equal(timers.length, 1, "no reconnect after 4404");
  assert.equal(conn.state, "closed");
  assert.deepEqual(states, ["connecting", "open", "reconnecting", "closed"]);
});

test("by default a revoked token or ended session (4401) stops reconnecting, like no access (4404)", () => {
  for (const code of [4401, 4404]) {
    FakeSocket.all = [];
    const timers = [];
    const conn = new LiveConnection("ws://test/", {
      WebSocketImpl: FakeSocket, onMessage: () => {}, setTimer: (fn, ms) => timers.push({ fn, ms }),
    });
    conn.start();
    FakeSocket.all[0].open();
    FakeSocket.all[0].close(code);
    assert.equal(timers.length, 0, `no reconnect after ${code}`);
    assert.equal(conn.state, "closed");
  }
});
