/**
 * A job's server usage as the job panels show it (counterfactual.js, attribution.js): one line
 * beside the estimate, "requests 44 of 44 estimated · 631k of ≈ 600k prompt tokens, 96 % from cache ·
 * 2,113 of ≈ 1,900 completion tokens · 12 s",
 * from the job's `usage` (webapp.counterfactuals.wire.usage_wire: counts, `cache_hit_rate`,
 * `wall_s`; the counts are null for a backend that reports no usage, SwarmSim). While a job is
 * active its wall time keeps counting on the page between messages (`liveWall`). Pure functions,
 * plus `usageElement`, which builds the line with `textContent` only.
 */

import { formatNumber, formatSeconds } from "../lib/format.js";
import { el } from "../lib/dom.js";

/** How often the wall time of active jobs is redrawn between messages, in ms. */
export const WALL_TICK_MS = 1000;

const UNITS = [[1e9, "G"], [1e6, "M"], [1e3, "k"]];

/** A token count in a few characters: "950", "9,876", "12.3k", "631k", "1.23M" (3 significant digits from 10,000). */
export function compactCount(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return "—";
  if (Math.abs(n) < 10_000) return formatNumber(Math.round(n));
  const [size, unit] = UNITS.find(([s]) => Math.abs(n) >= s);
  return `${Number((n / size).toPrecision(3))}${unit}`;
}

/** A share in [0, 1] as a whole percentage, rounded down ("96 %"; 0.999 is "99 %", not "100 %"). */
export function wholePercent(x) {
  if (typeof x !== "number" || !Number.isFinite(x)) return "—";
  return `${Math.floor(x * 100 + 1e-9)} %`;
}

/** Wall time: tenths under 10 s ("2.4 s"), whole seconds under 2 min ("12 s"), then m:ss. */
export function formatWall(s) {
  if (typeof s !== "number" || !Number.isFinite(s)) return "";
  return formatSeconds(s >= 10 ? Math.round(s) : Math.round(s * 10) / 10);
}

/** The wall time of a job `elapsed` seconds after its message said `wall_s`: it runs on while active. */
export function liveWall(job, elapsed) {
  const wall = job?.usage?.wall_s;
  if (typeof wall !== "number") return null;
  return job.status === "queued" || job.status === "running" ? wall + Math.max(0, elapsed) : wall;
}

/** Whether `usage` has the server's counts (an LLM backend), not the nulls of a backend without a server. */
export function hasServerUsage(usage) {
  return Number.isInteger(usage?.requests);
}

/**
 * The usage line of a job.
 * @param {{requests: number|null, prompt_tokens: number|null, cached_tokens: number|null,
 *   completion_tokens: number|null, cache_hit_rate: number|null, truncated: number|null,
 *   retries: number|null, wall_s: number|null}|null|undefined} usage
 * @param {number|{requests?: number, prompt_tokens?: number, completion_tokens?: number}|null} estimate
 *   the estimate confirmed for the job (the job's `estimate`), or only its requests, when known:
 *   each count it has is shown beside the one sent, "2,113 of ≈ 1,900 completion tokens"
 * @param {number|null} wall the wall time to show (default `usage.wall_s`)
 * @returns {string} "" without usage; for a backend without server usage, what it says instead
 */
export function formatUsage(usage, estimate = null, wall = usage?.wall_s ?? null) {
  if (!usage) return "";
  const time = formatWall(wall);
  if (!hasServerUsage(usage)) return ["no LLM requests: this backend runs no model server", time].filter(Boolean).join(" · ");
  const est = Number.isInteger(estimate) ? { requests: estimate } : estimate ?? {};
  const of = (key) => (Number.isInteger(est[key]) ? ` of ≈ ${compactCount(est[key])}` : "");
  const requests = `requests ${formatNumber(usage.requests)}`
    + (Number.isInteger(est.requests) ? ` of ${formatNumber(est.requests)} estimated` : "");
  const cache = typeof usage.cache_hit_rate === "number" ? `, ${wholePercent(usage.cache_hit_rate)} from cache` : "";
  const parts = [requests, `${compactCount(usage.prompt_tokens)}${of("prompt_tokens")} prompt tokens${cache}`];
  if (Number.isInteger(est.completion_tokens)) {
    parts.push(`${compactCount(usage.completion_tokens)}${of("completion_tokens")} completion tokens`);
  }
  if (usage.truncated) parts.push(`${formatNumber(usage.truncated)} cut at max_tokens`);
  if (usage.retries) parts.push(`${formatNumber(usage.retries)} ${usage.retries === 1 ? "retry" : "retries"}`);
  if (time) parts.push(time);
  return parts.join(" · ");
}

/** The exact counts behind the line (its tooltip); "" without server usage. */
export function usageTitle(usage) {
  if (!hasServerUsage(usage)) return "";
  const n = (x) => formatNumber(x ?? 0);
  return `${n(usage.requests)} requests, ${n(usage.prompt_tokens)} prompt tokens (${n(usage.cached_tokens)} from the `
    + `prefix cache), ${n(usage.completion_tokens)} completion tokens, ${n(usage.truncated)} completions cut at `
    + `max_tokens, ${n(usage.retries)} retries`;
}

/**
 * The `[data-testid=<testid>]` line of a job's usage, beside the estimate the job was confirmed
 * with (`job.estimate`, where it has one), or null when the job has no usage. Its `data-requests`
 * and `data-cache-hit-rate` carry the raw figures ("" when absent).
 */
export function usageElement(job, testid, wall = job?.usage?.wall_s ?? null) {
  const text = formatUsage(job?.usage, job?.estimate, wall);
  if (!text) return null;
  const line = el("p", text, hasServerUsage(job.usage) ? "job-usage muted" : "job-usage muted empty");
  line.dataset.testid = testid;
  line.dataset.requests = hasServerUsage(job.usage) ? String(job.usage.requests) : "";
  line.dataset.cacheHitRate = typeof job.usage.cache_hit_rate === "number" ? String(job.usage.cache_hit_rate) : "";
  line.title = usageTitle(job.usage);
  return line;
}
