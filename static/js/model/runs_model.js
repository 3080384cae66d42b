/**
 * The pure model of a training run's page (no DOM): apply the numbered deltas of `/ws/runs/<id>/`
 * (swarmscope/protocol.py), derive chart series from iterations, and the mean curve with a 95 %
 * band of a seed group. Unit-tested with `node --test` (tests/js/runs_model.test.js).
 */

import { formatNumber } from "../lib/format.js";

/** The charts of the training section: metric key, title, series drawn, and a fixed y range (`[min, max]`, a rate's). */
export const TRAINING_CHARTS = Object.freeze([
  { key: "reward", title: "Reward", series: ["reward"] },
  { key: "success_rate", title: "Success rate", series: ["success_rate"], yRange: [0, 1] },
  { key: "critical_steps", title: "Critical steps", series: ["critical_steps"] },
  { key: "parallelism_efficiency", title: "Parallelism efficiency", series: ["parallelism_efficiency"] },
  { key: "tokens_per_episode", title: "Tokens per episode", series: ["tokens_per_episode"] },
  { key: "entropy", title: "Policy entropy", series: ["entropy"] },
  { key: "losses", title: "Losses", series: ["policy_loss", "value_loss", "stop_value_loss"] },
]);

/**
 * A new snapshot: `snapshot` with `delta` applied (the run summary replaced, iterations upserted
 * by number, kept sorted). Throws on a delta older than the snapshot.
 */
export function applyRunDelta(snapshot, delta) {
  if (delta.seq < snapshot.seq) throw new Error(`delta seq ${delta.seq} is older than snapshot seq ${snapshot.seq}`);
  const byNumber = new Map(snapshot.iterations.map((it) => [it.iteration, it]));
  for (const it of delta.iterations ?? []) byNumber.set(it.iteration, it);
  const iterations = [...byNumber.values()].sort((a, b) => a.iteration - b.iteration);
  return { ...snapshot, seq: delta.seq, run: delta.run ?? snapshot.run, iterations };
}

/**
 * Whether an incoming message changes the model given the last seq applied: a snapshot always; a
 * delta when it is newer (the server fills gaps itself: a delta after seq N holds everything
 * written after N, so one newer than N + 1 is a folded catch-up, not a gap).
 */
export function shouldApply(lastSeq, msg) {
  if (msg.type === "snapshot") return true;
  return msg.type === "delta" && lastSeq !== null && msg.seq > lastSeq;
}

const isNumber = (v) => typeof v === "number" && Number.isFinite(v);

/** uPlot data `[[env_steps...], [metric...]...]` of `metrics[keys]` over iterations (null where missing). */
export function metricSeries(iterations, keys, part = "metrics") {
  const xs = iterations.map((it) => it.env_steps);
  return [xs, ...keys.map((k) => iterations.map((it) => (isNumber(it[part]?.[k]) ? it[part][k] : null)))];
}

/**
 * `[[env_steps...], [free-rider index...], [pseudo-parallelism index...]]` of the attribution panel.
 * The free-rider index is the current one only (sub-agents whose exact removal effect is 0, on the
 * `free_rider_episodes` sampled episodes); an iteration without `free_rider_episodes` was stored
 * with the superseded credit-share index (issue 30), which is left out (null), not redrawn.
 */
export function attributionIndexes(iterations) {
  const current = (it) => isNumber(it.credit?.free_rider_episodes) && isNumber(it.credit?.free_rider_index);
  return [iterations.map((it) => it.env_steps), iterations.map((it) => (current(it) ? it.credit.free_rider_index : null)),
    iterations.map((it) => (isNumber(it.credit?.pseudo_parallelism_index) ? it.credit.pseudo_parallelism_index : null))];
}

/**
 * The stop-regret card's label for an iteration: its regret is over the stops the run's stop mode
 * offered (`regret: "offered"`), or the superseded hindsight figure of runs stored before issue 30.
 */
export function stopRegretLabel(iteration) {
  const regret = iteration?.stop?.regret;
  if (regret === "hindsight") return "Stop regret (hindsight, superseded)";
  if (regret === "not_measured") return "Stop regret (not measured with LLM workers)";
  return "Stop regret (offered stops)";
}

/** `[[step...], [p_stop...], [continue_value...]]` of one iteration's stop record. */
export function stopCurves(iteration) {
  const p = iteration?.stop?.p_stop_by_step ?? [];
  const v = iteration?.stop?.continue_value_by_step ?? [];
  const steps = [...new Set([...p.map((x) => x[0]), ...v.map((x) => x[0])])].sort((a, b) => a - b);
  const pm = new Map(p.map(([s, y]) => [s, y]));
  const vm = new Map(v.map(([s, y]) => [s, y]));
  return [steps, steps.map((s) => pm.get(s) ?? null), steps.map((s) => vm.get(s) ?? null)];
}

/**
 * Shares by name over iterations: `{names, data}` with `data = [[env_steps...], [share of name0...], ...]`
 * for `credit[part]` (`by_role` / `by_agent`), names sorted by total share, at most `limit` (the
 * rest summed as "other").
 */
export function shareSeries(iterations, part, limit = 8) {
  const totals = new Map();
  for (const it of iterations) {
    for (const [name, share] of Object.entries(it.credit?.[part] ?? {})) {
      if (isNumber(share)) totals.set(name, (totals.get(name) ?? 0) + Math.abs(share));
    }
  }
  const ranked = [...totals.keys()].sort((a, b) => totals.get(b) - totals.get(a) || a.localeCompare(b));
  const names = ranked.slice(0, limit);
  const rest = ranked.slice(limit);
  const data = [iterations.map((it) => it.env_steps)];
  for (const name of names) data.push(iterations.map((it) => (isNumber(it.credit?.[part]?.[name]) ? it.credit[part][name] : null)));
  if (rest.length) {
    names.push("other");
    data.push(iterations.map((it) => rest.reduce((s, n) => s + (isNumber(it.credit?.[part]?.[n]) ? it.credit[part][n] : 0), 0)));
  }
  return { names, data };
}

/** Two-sided 95 % Student-t quantiles t_{0.975, df} for df = 1..30 (standard tables); 1.96 beyond. */
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145,
  2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];
export function tQuantile975(df) {
  return df >= 1 && df <= 30 ? T975[df - 1] : 1.96;
}

/** y of the piecewise-linear curve `points` ([[x, y], ...], x ascending) at `x`; null outside its range. */
export function interpolate(points, x) {
  if (!points.length || x < points[0][0] || x > points[points.length - 1][0]) return null;
  let i = 0;
  while (i < points.length - 1 && points[i + 1][0] < x) i += 1;
  const [x0, y0] = points[i];
  if (x0 === x || i === points.length - 1) return y0;
  const [x1, y1] = points[i + 1];
  return y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
}

/**
 * Mean and 95 % band of a seed group's curves: `curves` is a list of `[[x, y], ...]` (one per
 * run). On the union of their x values, each curve is linearly interpolated (left out outside
 * its own range); mean ± t_{0.975, n−1} · sd / √n (sample sd); with one run the band is the curve.
 * Where fewer than all (non-empty) curves reach an x, the point is left out (null), so a group's
 * mean never silently becomes one seed's curve. Returns `[[x...], [mean...], [low...], [high...], [n...]]`.
 */
export function groupBand(curves) {
  const xs = [...new Set(curves.flatMap((c) => c.map((p) => p[0])))].sort((a, b) => a - b);
  const out = [xs, [], [], [], []];
  const present = curves.filter((c) => c.length).length;
  for (const x of xs) {
    const ys = curves.map((c) => interpolate(c, x)).filter(isNumber);
    const n = ys.length;
    if (!n || n < present) { out[1].push(null); out[2].push(null); out[3].push(null); out[4].push(n); continue; }
    const mean = ys.reduce((s, y) => s + y, 0) / n;
    const sd = n > 1 ? Math.sqrt(ys.reduce((s, y) => s + (y - mean) ** 2, 0) / (n - 1)) : 0;
    const half = n > 1 ? (tQuantile975(n - 1) * sd) / Math.sqrt(n) : 0;
    out[1].push(mean); out[2].push(mean - half); out[3].push(mean + half); out[4].push(n);
  }
  return out;
}

/** `[[env_steps, value], ...]` of one run's `metrics[key]`. */
export function curveOf(iterations, key) {
  return iterations.filter((it) => isNumber(it.metrics?.[key])).map((it) => [it.env_steps, it.metrics[key]]);
}

/**
 * A run's env steps against its budget, `unit` after the steps: "260 / 600 env steps"; past the
 * budget "1459 env steps (budget 600)" (the recipe checks the budget between iterations, so its last
 * iteration, credit re-rollouts and all, runs past it); "260 env steps" without one (budget 0).
 * Numbers grouped as the browser's locale groups thousands (lib/format.js formatNumber). The run
 * page and the runs list (templates/runs/, which the pages rewrite with this on load) say the same.
 */
export function stepsText(envSteps, budgetSteps, unit = "") {
  const steps = formatNumber(envSteps);
  if (!(budgetSteps > 0)) return `${steps}${unit}`;
  const budget = formatNumber(budgetSteps);
  return envSteps > budgetSteps ? `${steps}${unit} (budget ${budget})` : `${steps} / ${budget}${unit}`;
}

/** Seconds as "1 h 02 min", "3 min 05 s", "42 s"; "–" when unknown. */
export function formatEta(s) {
  if (!isNumber(s)) return "–";
  const t = Math.round(s);
  if (t >= 3600) return `${Math.floor(t / 3600)} h ${String(Math.floor((t % 3600) / 60)).padStart(2, "0")} min`;
  if (t >= 60) return `${Math.floor(t / 60)} min ${String(t % 60).padStart(2, "0")} s`;
  return `${t} s`;
}

/**
 * The ETA text of a run from its `eta_s` as the pages hold it: a number, or the string of an HTML
 * `data-eta` attribute (the runs list); "" / null / undefined (unknown) give "–". One formatter
 * (formatEta) for the run page and the runs list.
 */
export function etaText(raw) {
  if (raw === null || raw === undefined || (typeof raw === "string" && raw.trim() === "")) return "–";
  return formatEta(Number(raw));
}

/** Run statuses during which the run can still change (webapp.training.models.TrainingRun.ACTIVE). */
export const ACTIVE_STATUSES = new Set(["queued", "running", "cancelling"]);

/**
 * The run page's badge as [data-state, text]. While the run is active: the socket's state (Live,
 * Connecting…, Reconnecting…, and Offline for a connection closed for good). Once it ended, while
 * the socket is connecting or open: the run's end, "finished" (a success), "failed" or "cancelled";
 * a dropped socket still shows as such. templates/runs/run_detail.html renders the same first.
 */
export function runBadge(socketState, status) {
  const ended = Boolean(status) && !ACTIVE_STATUSES.has(status);
  if (ended && (socketState === "open" || socketState === "connecting")) {
    return [status, status.charAt(0).toUpperCase() + status.slice(1)];
  }
  const socket = { open: ["live", "Live"], connecting: ["connecting", "Connecting…"],
    reconnecting: ["reconnecting", "Reconnecting…"], closed: ["offline", "Offline"] };
  return socket[socketState] ?? [socketState, socketState];
}

/**
 * The number an iteration is shown by: counted from 1, as the run page's "Iterations" count (the
 * wire's `iteration` is its 0-based index: the first iteration is 0 there and "1" on the pages).
 */
export function iterationNumber(iteration) {
  return iteration.iteration + 1;
}

/** Whether a run has played its whole budget (the recipe trains while env_steps < budget_steps). */
export function budgetSpent(run) {
  return run.budget_steps > 0 && run.env_steps >= run.budget_steps;
}

/**
 * The Resume button as `{disabled, title}`: enabled for a queued (its task re-sent), cancelled or
 * failed run of the reviewer's own app whose budget is not spent; `title` says why not where it is
 * the budget (webapp.training.services.request_resume refuses it the same way).
 */
export function resumeState(run, readOnly, readOnlyHint = "") {
  if (readOnly) return { disabled: true, title: readOnlyHint };
  if (run.external || !["queued", "cancelled", "failed"].includes(run.status)) return { disabled: true, title: "" };
  if (run.status !== "queued" && budgetSpent(run)) {
    return { disabled: true, title: `its budget of ${run.budget_steps} env steps is spent: start a new run with a larger budget` };
  }
  return { disabled: false, title: "" };
}

/**
 * Why a run ended past its budget, or null: the iteration that crossed it, where it started, what
 * was left and what it played. The recipe checks the budget between iterations and plays every
 * episode of an iteration (whole GRPO groups; an episode's length is known only once it ends), so
 * it does not cut the last one short.
 */
export function overrunNote(run, iterations) {
  if (!(run.budget_steps > 0) || run.env_steps <= run.budget_steps || !iterations.length) return null;
  const k = iterations.findIndex((it) => it.env_steps >= run.budget_steps);
  if (k < 0) return null;
  const start = k > 0 ? iterations[k - 1].env_steps : 0;
  const played = iterations[k].env_steps - start;
  return `Iteration ${iterationNumber(iterations[k])} started with ${run.budget_steps - start} of the budget's `
    + `${run.budget_steps} env steps left and played ${played}: the budget is checked between iterations and an `
    + `iteration plays all its episodes, so the run ended ${run.env_steps - run.budget_steps} steps past its budget.`;
}

/**
 * Why an iteration of policy llm has no figures of its distribution over the legal actions (p(stop)
 * and entropy), as text naming `what` is missing ("p(stop)", "entropy"), or null (policy mlp, or
 * the iteration has them). A decision sampled on the vLLM server has no distribution (the server
 * returns the sampled token; scoring every legal action on the worker would cost one more forward
 * pass a decision); iterations stored before policy llm reported it have none either.
 */
export function llmGapNote(config, iteration, what) {
  if (config?.policy !== "llm" || !iteration || iteration.stop?.p_stop_by_step?.length) return null;
  if (config.llm_rollouts === "server") {
    return `No ${what} for this run: its actions were sampled on the vLLM server, which returns the sampled action, `
      + "not the distribution over the legal actions (scoring every legal action on the worker would cost one more "
      + "forward pass a decision). Runs of policy llm that play on the training worker report it.";
  }
  return `No ${what} in this iteration: it was stored before policy llm reported its distribution over the legal actions.`;
}

/**
 * The stop panel's note for policy llm, or null (policy mlp): where its p(stop) comes from, or why
 * the iteration has none (`llmGapNote`).
 */
export function llmStopNote(config, iteration) {
  if (config?.policy !== "llm") return null;
  if (iteration?.stop?.p_stop_by_step?.length) {
    return "Policy llm: p(stop) at the steps where the model chose (a step with one legal action is no decision and "
      + "has no point); the language model has no value head, so there is no value of continuing.";
  }
  return llmGapNote(config, iteration, "p(stop)");
}
