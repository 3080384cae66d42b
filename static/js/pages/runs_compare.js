/**
 * The compare page: 2–4 runs or seed groups against environment steps, every metric at once as
 * small multiples (a grid of uPlot charts, each with its title and units, each a focusable figure;
 * the cursor is synced across them; `?metric=` puts that metric's chart first:
 * compare_metric.compareCharts); a seed group is its mean curve with a 95 % band
 * (runs_model.groupBand). Seed groups spanning several n add the server's summary vs n
 * (`sweep-summary`: final E[R] and env steps to the target per arm, 95 % bands) and draw the
 * curves of one n at a time.
 */

import { themedAxes } from "../lib/chart_theme.js";
import { el } from "../lib/dom.js";
import { compareCharts, compareMetrics, seriesN, sweepPlotData } from "../model/compare_metric.js";
import { TRAINING_CHARTS, curveOf, groupBand, interpolate } from "../model/runs_model.js";

const COLORS = ["#4263eb", "#e8590c", "#2f9e44", "#ae3ec9"];
const CHARTS = compareCharts(globalThis.location.search, compareMetrics(TRAINING_CHARTS.flatMap((c) => c.series)));
const allSeries = JSON.parse(document.getElementById("compare-data").textContent);
const summaryTag = document.getElementById("sweep-summary");
const summary = summaryTag ? JSON.parse(summaryTag.textContent) : null;
const nSelect = document.querySelector('[data-testid="compare-n"]');
let series = allSeries;
const grid = document.querySelector('[data-testid="compare-charts"]');
const legend = document.querySelector('[data-testid="compare-legend"]');
let plots = [];
window.swarmscopeCompare = { plots: () => plots }; // the uPlot instances, for tests

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
      title: label, width: Math.max(400, chartHost.clientWidth || 600), height: 300, legend: { show: false },
      scales: { x: { time: false, distr: 3, range: [summary.n[0] / 1.25, summary.n.at(-1) * 1.25] } },
      series: specs, bands: uBands, axes: themedAxes([{ label: "n subtasks (log)" }, { label, size: 64 }]),
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

/** uPlot data and series of one metric for the current series: {data, specs, bands, points}. */
function metricPlot(key) {
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
  return { data, specs, bands: uBands, points: xs.length };
}

function draw() {
  if (nSelect) series = allSeries.filter((s) => String(seriesN(s)) === nSelect.value);
  for (const plot of plots) plot.destroy();
  plots = [];
  const figures = CHARTS.map((chart) => {
    const figure = el("figure", null, "compare-cell");
    figure.dataset.testid = "compare-chart";
    figure.dataset.metric = chart.key;
    figure.tabIndex = 0; // keyboard reachable: Tab moves from chart to chart
    const caption = el("figcaption");
    caption.append(el("span", chart.title), el("span", chart.units ? ` · ${chart.units}` : "", "muted"));
    const host = el("div", null, "plot");
    figure.append(caption, host);
    return { chart, figure, host };
  });
  grid.replaceChildren(...figures.map((f) => f.figure));
  let drawn = 0;
  for (const { chart, figure, host } of figures) {
    const { data, specs, bands, points } = metricPlot(chart.key);
    figure.dataset.points = String(points);
    figure.setAttribute("aria-label", `${chart.title}${chart.units ? ` (${chart.units})` : ""} against env steps: `
      + (points ? `${series.length} series, ${points} points` : "no iterations with this metric yet"));
    if (!points) {
      figure.classList.add("empty");
      host.append(el("p", "No iterations with this metric yet.", "muted"));
      continue;
    }
    drawn += 1;
    plots.push(new globalThis.uPlot({
      width: Math.max(280, host.clientWidth || 400), height: 220, scales: { x: { time: false } },
      cursor: { sync: { key: "compare" } }, legend: { show: false },
      series: specs, bands, axes: themedAxes([{ label: "env steps" }, { size: 52 }]), // units: in the caption
    }, data, host));
  }
  grid.dataset.series = String(series.length);
  grid.dataset.charts = String(drawn);
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
