import { test } from "node:test";
import assert from "node:assert/strict";

import { EstimatedRun, estimateTokens, pilotText } from "../../static/js/panels/estimated_run.js";

/** The few element features EstimatedRun uses, without a browser. */
function fakeElement(tag) {
  const listeners = {};
  return {
    tag, textContent: "", className: "", hidden: false, dataset: {}, attributes: {}, focused: false,
    setAttribute(name, value) { this.attributes[name] = value; },
    focus() { this.focused = true; },
    addEventListener(type, fn) { (listeners[type] ??= []).push(fn); },
    dispatch(type) { for (const fn of listeners[type] ?? []) fn(); },
  };
}

/** A fake `document` and `fetch` answering each URL with `answers[url]` ({status, body}); returns the calls. */
function fakeBrowser(answers) {
  const calls = [];
  globalThis.document = { createElement: fakeElement, cookie: "csrftoken=tok" };
  globalThis.fetch = async (url, init) => {
    calls.push({ url, body: JSON.parse(init.body), csrf: init.headers["X-CSRFToken"] });
    const { status = 200, body } = answers[url];
    return { ok: status < 400, json: async () => body };
  };
  return calls;
}

function runner(values, options = {}) {
  const started = [];
  const flow = new EstimatedRun({
    estimateUrl: "/estimate/", runUrl: "/run/",
    body: () => {
      if (values.n < 2) throw new Error("N must be at least 2");
      return { n: values.n, backend: values.backend };
    },
    describe: (answer) => `${answer.total_tokens} tokens`,
    onStarted: (job) => started.push(job),
    runClass: "button primary", runTestid: "x-run", estimateTestid: "x-estimate", ...options,
  });
  return { flow, started };
}

test("an LLM backend runs only after its estimate was shown and confirmed", async () => {
  const calls = fakeBrowser({
    "/estimate/": { body: { confirmation_required: true, backend: "llm", total_tokens: 49 } },
    "/run/": { body: { id: 7, status: "queued" } },
  });
  const values = { n: 4, backend: "llm" };
  const { flow, started } = runner(values);
  assert.equal(flow.run.textContent, "Run");
  assert.equal(flow.run.dataset.testid, "x-run");
  assert.equal(flow.estimate.attributes.role, "status");
  assert.equal(flow.error.attributes.role, "alert");
  await flow.submit();
  assert.deepEqual(calls.map((c) => c.url), ["/estimate/"]);
  assert.equal(calls[0].csrf, "tok");
  assert.equal(flow.estimate.hidden, false);
  assert.equal(flow.estimate.textContent, "Estimated cost on llm: 49 tokens. Press “Confirm and run” to start it.");
  assert.equal(flow.run.textContent, "Confirm and run");
  assert.equal(flow.run.dataset.confirm, "true");
  assert.ok(flow.run.focused);
  // A change that leaves the request as it was keeps the confirmation; another one drops it.
  const form = fakeElement("form");
  const input = fakeElement("input");
  flow.watch(form, [input]);
  form.dispatch("change");
  assert.equal(flow.run.dataset.confirm, "true");
  values.n = 5;
  input.dispatch("input");
  assert.equal(flow.run.textContent, "Run");
  assert.equal(flow.estimate.hidden, true);
  assert.equal(flow.run.dataset.confirm, undefined);
  await flow.submit();
  await flow.submit();
  assert.deepEqual(calls.map((c) => c.url), ["/estimate/", "/estimate/", "/run/"]);
  assert.deepEqual(calls[2].body, { n: 5, backend: "llm", confirmed: true });
  assert.deepEqual(started, [{ id: 7, status: "queued" }]);
  assert.equal(flow.run.textContent, "Run");
  assert.equal(flow.awaiting, null);
});

test("a backend that needs no confirmation starts at once; the pending text shows while estimating", async () => {
  const calls = fakeBrowser({
    "/estimate/": { body: { confirmation_required: false, backend: "sim" } },
    "/run/": { body: { id: 8 } },
  });
  const { flow, started } = runner({ n: 4, backend: "sim" }, { pendingText: "Estimating the cost…" });
  const submitted = flow.submit();
  assert.equal(flow.estimate.textContent, "Estimating the cost…");
  assert.equal(flow.estimate.hidden, false);
  await submitted;
  assert.deepEqual(calls.map((c) => [c.url, c.body.confirmed]), [["/estimate/", undefined], ["/run/", undefined]]);
  assert.deepEqual(started, [{ id: 8 }]);
  assert.equal(flow.estimate.hidden, true);
});

test("an invalid form or an error answer shows in the alert line", async () => {
  const calls = fakeBrowser({ "/estimate/": { status: 400, body: { error: "too many", field: "n" } } });
  const values = { n: 1, backend: "sim" };
  const { flow, started } = runner(values, { pendingText: "Estimating the cost…" });
  await flow.submit();
  assert.equal(calls.length, 0);
  assert.equal(flow.error.textContent, "N must be at least 2");
  assert.equal(flow.error.hidden, false);
  values.n = 3000;
  await flow.submit();
  assert.equal(flow.error.textContent, "n: too many");
  assert.equal(flow.estimate.hidden, true, "the pending text is gone");
  assert.deepEqual(started, []);
});

test("a confirmed run starts the job it estimated, and the next submit estimates again", async () => {
  const estimate = { confirmation_required: true, backend: "llm", total_tokens: 49, requests: 44 };
  const calls = fakeBrowser({ "/estimate/": { body: estimate }, "/run/": { body: { id: 9, status: "queued" } } });
  const seen = [];
  const { flow } = runner({ n: 4, backend: "llm" });
  flow.onStarted = (job) => seen.push(job);
  await flow.submit();
  assert.deepEqual(seen, [], "nothing started before the confirmation");
  await flow.submit();
  assert.deepEqual(seen, [{ id: 9, status: "queued" }]);
  assert.equal(flow.shown, null, "the shown estimate is dropped once it ran");
  assert.deepEqual(calls.map((c) => c.url.endsWith("/run/") && c.body.confirmed), [false, true]);
});

test("an estimate's tokens read with the range the re-generated turns' lengths leave open", () => {
  const e = { prompt_tokens: 5000, completion_tokens: 2000, total_tokens: 7000, turn_max_tokens: 512,
    recorded_length: { total_tokens: 3000 }, at_cap: { total_tokens: 9000 } };
  assert.equal(estimateTokens(e), "≈ 5,000 prompt + 2,000 completion tokens (7,000 in all; 3,000 if the re-generated "
    + "turns are as long as the recorded ones, at most ≈ 9,000 if each runs to its 512-token cap)");
  const measured = { ...e, cap_share: 0.77, cap_share_source: "measured on 2 finished jobs of smollm2 (58 turns)" };
  assert.equal(estimateTokens(measured), "≈ 5,000 prompt + 2,000 completion tokens (7,000 in all; 3,000 if the "
    + "re-generated turns are as long as the recorded ones, at most ≈ 9,000 if each runs to its 512-token cap; "
    + "turns expected to use 77 % of the room their cap leaves (measured on 2 finished jobs of smollm2 (58 turns)))");
  assert.equal(estimateTokens({ prompt_tokens: 17, completion_tokens: 32, total_tokens: 49 }),
    "≈ 17 prompt + 32 completion tokens (49 in all)");
  // Every recorded turn at its cap: one figure, no share to show.
  const capped = { ...measured, turn_max_tokens: 16, recorded_length: { total_tokens: 7000 }, at_cap: { total_tokens: 7000 } };
  assert.equal(estimateTokens(capped), "≈ 5,000 prompt + 2,000 completion tokens (7,000 in all; the recorded turns "
    + "already reach their 16-token cap, so no re-generated turn can run longer)");
});

test("while the estimate's pilot runs the shown estimate is asked for again until it is done", async () => {
  let asked = 0;
  const queued = { status: "queued", samples: 4, elapsed_s: 3 };
  const running = { status: "running", samples: 4, elapsed_s: 12.4 };
  const done = { status: "done", samples: 4, elapsed_s: 80, seconds: 75.2, turns: 16, requests: 14,
    prompt_tokens: 9000, completion_tokens: 3000 };
  const calls = fakeBrowser({});
  globalThis.fetch = async (url, init) => {
    calls.push({ url, body: JSON.parse(init.body) });
    asked += 1;
    const pilot = [queued, running, done][Math.min(asked, 3) - 1];
    return { ok: true, json: async () => ({ confirmation_required: true, backend: "openai", total_tokens: asked, pilot }) };
  };
  // The polls' timers, run by hand: each step is one ask, whatever the machine's speed.
  const timers = [];
  const [realSet, realClear] = [globalThis.setTimeout, globalThis.clearTimeout];
  globalThis.setTimeout = (fn, ms) => timers.push({ fn, ms });
  globalThis.clearTimeout = (id) => { if (id) timers[id - 1].fn = null; };
  try {
    const values = { n: 32, backend: "openai" };
    const { flow } = runner(values, { pollMs: 5000 });
    await flow.submit();
    assert.match(flow.estimate.textContent, /a pilot of 4 of the job's own samples waits for the rollout worker \(3 s so far\)/);
    assert.equal(timers.at(-1).ms, 5000);
    const realNow = Date.now;
    let now = 1_000_000;
    Date.now = () => now;
    globalThis.fetch = ((fetch) => async (url, init) => {
      now += 4000; // this ask takes 4 s: the next one waits 12 s, not 5
      return fetch(url, init);
    })(globalThis.fetch);
    try {
      await timers.at(-1).fn();
    } finally {
      Date.now = realNow;
    }
    assert.equal(timers.at(-1).ms, 12_000);
    assert.match(flow.estimate.textContent, /a pilot of 4 of the job's own samples is running \(12 s so far\); the estimate updates when it ends \(confirming now keeps the estimate above\)\. Press/);
    await timers.at(-1).fn();
    assert.equal(flow.estimate.textContent, "Estimated cost on openai: 3 tokens. The pilot, 4 of the job's own samples, "
      + "ran 16 turns in 75.2 s (12,000 tokens in 14 requests); the job takes them as its first samples if started now. "
      + "Press “Confirm and run” to start it.");
    assert.equal(flow.poll, null); // done: no more asking
    assert.equal(timers.length, 2);
    assert.equal(flow.shown.total_tokens, 3);
    assert.equal(flow.run.dataset.confirm, "true");
    assert.deepEqual(calls.map((c) => c.body), Array(3).fill({ n: 32, backend: "openai" }));
  } finally {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
  }
});

test("a form change while the pilot runs stops the asking", async () => {
  let asked = 0;
  fakeBrowser({});
  globalThis.fetch = async () => {
    asked += 1;
    return { ok: true, json: async () => ({ confirmation_required: true, backend: "openai", total_tokens: 1,
      pilot: { status: "running", samples: 4, elapsed_s: 1 } }) };
  };
  const values = { n: 32, backend: "openai" };
  const { flow } = runner(values, { pollMs: 5 });
  await flow.submit();
  values.n = 16;
  flow.changed();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(asked, 1);
  assert.equal(flow.estimate.hidden, true);
});

test("a failed pilot says why and that the prior share is used", () => {
  assert.equal(pilotText({ status: "failed", samples: 4, elapsed_s: 3, reason: "The LLM server failed: HTTP 503." }),
    "The pilot could not run: The LLM server failed: HTTP 503. The estimate uses the share it would without a pilot. ");
  assert.equal(pilotText(null), "");
});
