import { test } from "node:test";
import assert from "node:assert/strict";

import { compactCount, formatUsage, formatWall, hasServerUsage, liveWall, usageTitle, wholePercent }
  from "../../static/js/panels/job_usage.js";

const USAGE = {
  requests: 44, prompt_tokens: 631_204, cached_tokens: 606_000, completion_tokens: 2_113,
  cache_hit_rate: 606_000 / 631_204, truncated: 0, retries: 0, wall_s: 12.4,
};
const NONE = {
  requests: null, prompt_tokens: null, cached_tokens: null, completion_tokens: null,
  cache_hit_rate: null, truncated: null, retries: null, wall_s: 3.27,
};

test("token counts are compact from 10,000 on", () => {
  assert.deepEqual([0, 950, 9876, 12_345, 631_204, 1_234_567, 2.5e9].map(compactCount),
    ["0", "950", "9,876", "12.3k", "631k", "1.23M", "2.5G"]);
  assert.equal(compactCount(null), "—");
});

test("cache hit rates round down to whole percent; wall times to tenths, then seconds", () => {
  assert.deepEqual([0.96, 0.9601, 0.999, 1, 0, 0.5].map(wholePercent), ["96 %", "96 %", "99 %", "100 %", "0 %", "50 %"]);
  assert.equal(wholePercent(null), "—");
  assert.deepEqual([0.34, 2.44, 12.4, 95.6, 185].map(formatWall), ["300 ms", "2.4 s", "12 s", "96 s", "3:05"]);
  assert.equal(formatWall(null), "");
});

test("the usage line: requests beside the estimate, prompt tokens, cache share, wall time", () => {
  assert.equal(formatUsage(USAGE, 44), "requests 44 of 44 estimated · 631k prompt tokens, 96 % from cache · 12 s");
  assert.equal(formatUsage(USAGE), "requests 44 · 631k prompt tokens, 96 % from cache · 12 s");
  assert.equal(formatUsage({ ...USAGE, truncated: 3, retries: 1 }, 44),
    "requests 44 of 44 estimated · 631k prompt tokens, 96 % from cache · 3 cut at max_tokens · 1 retry · 12 s");
  assert.equal(formatUsage({ ...USAGE, retries: 2 }), "requests 44 · 631k prompt tokens, 96 % from cache · 2 retries · 12 s");
  // Queued: no request answered yet, no prompt tokens (no cache share), not started (no wall time).
  assert.equal(formatUsage({ ...USAGE, requests: 0, prompt_tokens: 0, cached_tokens: 0, cache_hit_rate: null, wall_s: null }, 44),
    "requests 0 of 44 estimated · 0 prompt tokens");
  assert.equal(formatUsage(USAGE, 44, 20.2), "requests 44 of 44 estimated · 631k prompt tokens, 96 % from cache · 20 s");
  // The estimate the job keeps: its tokens beside those sent.
  assert.equal(formatUsage(USAGE, { requests: 44, prompt_tokens: 600_000, completion_tokens: 1_900 }),
    "requests 44 of 44 estimated · 631k of ≈ 600k prompt tokens, 96 % from cache · 2,113 of ≈ 1,900 completion tokens · 12 s");
});

test("a backend without server usage (SwarmSim) gets the empty state; no usage gives nothing", () => {
  assert.equal(hasServerUsage(NONE), false);
  assert.equal(hasServerUsage(USAGE), true);
  assert.equal(formatUsage(NONE, 0), "no LLM requests: this backend runs no model server · 3.3 s");
  assert.equal(formatUsage({ ...NONE, wall_s: null }), "no LLM requests: this backend runs no model server");
  assert.equal(formatUsage(undefined), "");
  assert.equal(formatUsage(null, 4), "");
  assert.equal(usageTitle(NONE), "");
  assert.equal(usageTitle(USAGE), "44 requests, 631,204 prompt tokens (606,000 from the prefix cache), "
    + "2,113 completion tokens, 0 completions cut at max_tokens, 0 retries");
});

test("the wall time runs on while a job is active, and stops once it is finished", () => {
  assert.equal(liveWall({ status: "running", usage: USAGE }, 2.5), 14.9);
  assert.equal(liveWall({ status: "queued", usage: USAGE }, -1), 12.4);
  assert.equal(liveWall({ status: "done", usage: USAGE }, 30), 12.4);
  assert.equal(liveWall({ status: "queued", usage: { ...USAGE, wall_s: null } }, 5), null);
  assert.equal(liveWall({ status: "running" }, 5), null);
});
