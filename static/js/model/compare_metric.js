/**
 * The compare page's metric choices (pure, no DOM): the run page's chart series plus the metrics
 * a sweep is judged on (the training episodes' closed-form E[R], the task reward), and the one a
 * link asks for with `?metric=` (bench/credit_diffusion.py's runs, webapp/training/sweeps.py).
 * Every metric is drawn at once as small multiples (`compareCharts`: order, title, units).
 * Unit-tested with `node --test` (tests/js/compare_metric.test.js).
 */

/** Metrics every compare page offers besides the run page's chart series. */
export const EXTRA_COMPARE_METRICS = Object.freeze(["expected_success", "task_reward"]);

/** The metric keys of the compare page's select: `chartSeries` first, then the extras, once each. */
export function compareMetrics(chartSeries) {
  return [...new Set([...chartSeries, ...EXTRA_COMPARE_METRICS])];
}

/** The metric `search` (a location.search string) names with `metric=` when `metrics` has it, else the first. */
export function pickMetric(search, metrics) {
  const wanted = new URLSearchParams(search).get("metric");
  return wanted !== null && metrics.includes(wanted) ? wanted : metrics[0];
}

/**
 * uPlot data of one measure of the server's sweep summary (webapp/training/sweeps.get_sweep_summary):
 * `measure` is "final" or "steps"; returns { data: [ns, then per arm mean, high, low], arms } with
 * null where an arm has no runs at that n (or no band, for one seed).
 */
export function sweepPlotData(summary, measure) {
  const data = [summary.n.slice()];
  for (const arm of summary.arms) {
    const cells = arm[measure];
    data.push(cells.map((c) => (c ? c[0] : null)), cells.map((c) => (c ? c[2] : null)), cells.map((c) => (c ? c[1] : null)));
  }
  return { data, arms: summary.arms.map((a) => a.arm) };
}

/** The episode length (config.n_subtasks) of a compare series, or null. */
export function seriesN(series) {
  const n = series.runs[0]?.run?.config?.n_subtasks;
  return Number.isInteger(n) ? n : null;
}

/** Each compare metric's title and units (docs/metrics.md; the trainer's iteration metrics). */
export const METRIC_INFO = Object.freeze({
  reward: ["Reward", "mean episode return"],
  success_rate: ["Success rate", "fraction of episodes, 0–1"],
  critical_steps: ["Critical steps", "steps on the critical path"],
  parallelism_efficiency: ["Parallelism efficiency", "ratio, 0–1"],
  tokens_per_episode: ["Tokens per episode", "tokens"],
  entropy: ["Policy entropy", "nats"],
  policy_loss: ["Policy loss", "loss"],
  value_loss: ["Value loss", "loss"],
  stop_value_loss: ["Stop value loss", "loss"],
  expected_success: ["Expected success E[R]", "probability, 0–1 (closed form)"],
  task_reward: ["Task reward", "reward of the task"],
});

/**
 * The compare page's charts, one per metric, in `metrics` order with the one `?metric=` names
 * (pickMetric) first: `[{key, title, units}]`; a key without METRIC_INFO reads as itself.
 */
export function compareCharts(search, metrics) {
  const first = pickMetric(search, metrics);
  return [first, ...metrics.filter((m) => m !== first)].map((key) => {
    const [title, units] = METRIC_INFO[key] ?? [key.replace(/_/g, " "), ""];
    return { key, title, units };
  });
}
