/**
 * The compare page: 2–4 runs or seed groups on one uPlot chart against environment steps; a seed
 * group is its mean curve with a 95 % band (runs_model.groupBand); `?metric=` picks the metric
 * shown first (compare_metric.pickMetric). Seed groups spanning several n add the server's summary
 * vs n (`sweep-summary`: final E[R] and env steps to the target per arm, 95 % bands) and draw the
 * curves of one n at a time.
 */

import { el } from "../lib/dom.js";
import { compareMetrics, pickMetric, seriesN, sweepPlotData } from "../model/compare_metric.js";
import { TRAINING_CHARTS, curveOf, groupBand, interpolate } from "../model/runs_model.js";

const COLORS = ["#4263eb", "#e8590c", "#2f9e44", "#ae3ec9"];
const METRICS = compareMetrics(TRAINING_CHARTS.flatMap((c) => c.series));
const allSeries = JSON.parse(document.getElementById("compare-data").textContent);
const summaryTag = document.getElementById("sweep-summary");
const summary = summaryTag ? JSON.parse(summaryTag.textContent) : null;
const nSelect = document.querySelector('[data-testid="compare-n"]');
let series = allSeries;
const host = document.querySelector('[data-testid="compare-chart"]');
const select = document.querySelector('[data-testid="compare-metric"]');
const legend = document.querySelector('[data-testid="compare-legend"]');
for (const key of METRICS) {
  const option = el("option", key.replace(/_/g, " "));
  option.value = key;
  select.append(option);
}
select.value = pickMetric(globalThis.location.search, METRICS);
let plot = null;

function fade(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${n >> 16},${(n >> 8) & 255},${n & 255},${alpha})`;
}

function drawSummary() {
  const legendHost = document.querySelector('[data-testid="sweep-legend"]');
  const charts = [
    ["final", '[data-testid="sweep-final-chart"]', summary.final === "held_out" ? "final held-out E[R]" : "last-iteration E[R]"],
    ["steps", '[data-testid="sweep-steps-chart"]', "env steps to the target E[R]"],
  ];
  for (const [measure, selector, label] of charts) {
    const chartHost = document.querySelector(selector);
    const { data, arms } = sweepPlotData(summary, measure);
    const specs = [{ label: "n subtasks" }];
    const uBands = [];
    arms.forEach((arm, i) => {
      const color = COLORS[i % COLORS.length];
      const at = specs.length;
      specs.push({ label: arm, stroke: color, width: 2, spanGaps: true, points: { show: true } },
        { label: `${arm} 95 % high`, stroke: fade(color, 0.3), width: 1, spanGaps: true },
        { label: `${arm} 95 % low`, stroke: fade(color, 0.3), width: 1, spanGaps: true });
      uBands.push({ series: [at + 1, at + 2], fill: fade(color, 0.15) });
    });
    chartHost.dataset.arms = String(arms.length);
    chartHost.dataset.points = String(data[0].length);
    chartHost.replaceChildren();
    new globalThis.uPlot({
      title: label, width: Math.max(400, chartHost.clientWidth || 600), height: 300,
      scales: { x: { time: false, distr: 3, range: [summary.n[0] / 1.25, summary.n.at(-1) * 1.25] } },
      series: specs, bands: uBands, axes: [{ label: "n subtasks (log)" }, { label }],
    }, data, chartHost);
  }
  legendHost.replaceChildren(...summary.arms.map((arm, i) => {
    const li = el("li");
    li.style.borderLeftColor = COLORS[i % COLORS.length];
    const cells = summary.n.map((n, j) => `n=${n}: ${arm.seeds[j]} seeds${arm.censored[j] ? `, ${arm.censored[j]} censored` : ""}`);
    li.append(el("strong", arm.arm), el("span", ` · ${cells.join("; ")}`, "muted"));
    return li;
  }));
}

function draw() {
  const key = select.value;
  if (nSelect) series = allSeries.filter((s) => String(seriesN(s)) === nSelect.value);
  const bands = series.map((s) => groupBand(s.runs.map((snap) => curveOf(snap.iterations, key))));
  const xs = [...new Set(bands.flatMap((b) => b[0]))].sort((a, b) => a - b);
  const data = [xs];
  const specs = [{ label: "env steps" }];
  const uBands = [];
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const at = (row) => xs.map((x) => interpolate(bands[i][0].map((bx, j) => [bx, bands[i][row][j]]).filter((p) => p[1] !== null), x));
    data.push(at(1));
    specs.push({ label: s.label, stroke: color, width: 2, spanGaps: true });
    if (s.kind === "group" && s.runs.length > 1) {
      const hi = data.length;
      data.push(at(3), at(2));
      specs.push({ label: `${s.label} 95 % high`, stroke: fade(color, 0.3), width: 1, spanGaps: true },
        { label: `${s.label} 95 % low`, stroke: fade(color, 0.3), width: 1, spanGaps: true });
      uBands.push({ series: [hi, hi + 1], fill: fade(color, 0.15) });
    }
  });
  host.dataset.points = String(xs.length);
  host.dataset.series = String(series.length);
  plot?.destroy();
  host.replaceChildren();
  if (!xs.length) {
    host.append(el("p", "No iterations with this metric yet.", "muted"));
    return;
  }
  plot = new globalThis.uPlot({
    width: Math.max(400, host.clientWidth || 900), height: 380, scales: { x: { time: false } },
    series: specs, bands: uBands, axes: [{ label: "env steps" }, { label: key.replace(/_/g, " ") }],
  }, data, host);
  legend.replaceChildren(...series.map((s, i) => {
    const li = el("li");
    li.style.borderLeftColor = COLORS[i % COLORS.length];
    li.append(el("strong", s.label), el("span", s.kind === "group" ? ` · mean of ${s.runs.length} seeds, 95 % band` : " · one run", "muted"));
    for (const snap of s.runs) {
      const a = el("a", ` #${snap.run.id}`);
      a.href = `/runs/${snap.run.id}/`;
      li.append(a);
    }
    const leftOut = s.left_out ?? [];
    if (leftOut.length) {
      li.append(el("span", ` · ${leftOut.length} repeated run${leftOut.length === 1 ? "" : "s"} left out:`, "muted"));
      for (const r of leftOut) {
        const a = el("a", ` #${r.id}`);
        a.href = `/runs/${r.id}/`;
        a.title = `seed ${r.seed} again; #${r.kept} is kept`;
        li.append(a);
      }
    }
    return li;
  }));
}

select.addEventListener("change", draw);
if (summary) {
  for (const n of [...new Set(allSeries.map(seriesN))].sort((a, b) => a - b)) {
    const option = el("option", String(n));
    option.value = String(n);
    nSelect.append(option);
  }
  nSelect.addEventListener("change", draw);
  drawSummary();
}
draw();
