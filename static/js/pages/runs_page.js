/**
 * The run page: connects to `/ws/runs/<id>/` (snapshot, then numbered deltas; reconnects with
 * `?seq=N`), and redraws the summary, the training charts, the stop-decision panel, the
 * attribution panel and the sample episodes as iterations arrive. Model: runs_model.js.
 */

import { themedAxes } from "../lib/chart_theme.js";
import { el } from "../lib/dom.js";
import { formatNumber } from "../lib/format.js";
import { LiveConnection, websocketUrl, withParam } from "../lib/live_connection.js";
import {
  ACTIVE_STATUSES as ACTIVE, TRAINING_CHARTS, applyRunDelta, attributionIndexes, formatEta, iterationNumber, llmGapNote, llmStopNote,
  metricSeries, overrunNote, resumeState, runBadge, shareSeries, shouldApply, stepsText, stopCurves, stopRegretLabel,
} from "../model/runs_model.js";

const COLORS = ["#4263eb", "#e8590c", "#2f9e44", "#ae3ec9", "#1098ad", "#f08c00", "#c2255c", "#5c940d", "#868e96"];

/**
 * A uPlot chart in `host` that is re-fed with `setData` and keeps its width to its host; `yRange`
 * (`[min, max]`) fixes the left axis (uPlot's own range pads a rate of 1 up to 2).
 */
class Chart {
  constructor(host, { labels, height = 170, xLabel = "env steps", rightAxis = null, yRange = null }) {
    this.host = host;
    this.labels = labels;
    this.opts = { height, xLabel, rightAxis, yRange };
    this.plot = null;
    /** What the chart says while it has no points (a panel sets why, where it knows; null: the default). */
    this.emptyText = null;
    new ResizeObserver(() => this.plot?.setSize({ width: this._width(), height })).observe(host);
  }

  _width() {
    return Math.max(220, this.host.clientWidth || 320);
  }

  setData(data, labels = this.labels) {
    const { uPlot } = globalThis;
    const unreported = data[0].length > 0 && data.slice(1).every((ys) => ys.every((y) => y === null));
    const empty = !data[0].length || unreported;
    this.host.dataset.points = String(data[0].length);
    if (!uPlot || empty) {
      this.plot?.destroy();
      this.plot = null;
      this.host.replaceChildren(el("p", empty ? this.emptyText ?? (unreported ? "Not reported by this run's iterations." : "No data yet.") : "Chart unavailable: uPlot is not loaded.", "muted"));
      return;
    }
    if (this.plot && labels.join("|") === this.labels.join("|")) {
      this.plot.setData(data);
      return;
    }
    this.labels = labels;
    this.plot?.destroy();
    this.host.replaceChildren();
    const font = "11px system-ui, sans-serif";
    this.plot = new uPlot({
      width: this._width(), height: this.opts.height,
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false }, ...(this.opts.yRange ? { y: { range: this.opts.yRange } } : {}) },
      axes: themedAxes([{ label: this.opts.xLabel, labelSize: 14, size: 30, font, labelFont: font }, { size: 56, font },
        ...(this.opts.rightAxis ? [{ scale: "right", side: 1, size: 56, font, grid: { show: false },
          label: this.opts.rightAxis, labelSize: 14, labelFont: font }] : [])]),
      series: [{ label: this.opts.xLabel }, ...labels.map((label, i) => ({
        label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true,
        ...(this.opts.rightAxis && i === labels.length - 1 ? { scale: "right" } : {}),
        points: { show: data[0].length < 40 }, value: (u, v) => (v === null || v === undefined ? "–" : formatNumber(v)),
      }))],
    }, data, this.host);
  }
}

class RunPage {
  constructor(root) {
    this.root = root;
    this.snapshot = null;
    this.charts = new Map();
    this.q = (id) => root.querySelector(`[data-testid="${id}"]`);
    const grid = this.q("training-charts");
    for (const spec of TRAINING_CHARTS) {
      const figure = el("figure");
      figure.dataset.chart = spec.key;
      const host = el("div", null, "plot");
      host.dataset.testid = `chart-${spec.key}`;
      figure.append(el("figcaption", spec.title), host);
      grid.append(figure);
      this.charts.set(spec.key, new Chart(host, { labels: spec.series.map((s) => s.replace(/_/g, " ")), yRange: spec.yRange }));
    }
    this.stopChart = new Chart(this.q("stop-chart"), { labels: ["p(stop)", "value of continuing"], xLabel: "decision step", rightAxis: "value of continuing" });
    this.regretChart = new Chart(this.q("regret-chart"), { labels: ["premature stops", "late stops", "stop regret (offered stops)"],
      rightAxis: "stop regret" });
    this.roleChart = new Chart(this.q("credit-role-chart"), { labels: [] });
    this.agentChart = new Chart(this.q("credit-agent-chart"), { labels: [] });
    this.indexChart = new Chart(this.q("credit-index-chart"), { labels: ["free-rider index (removal effect)", "pseudo-parallelism index"] });
    this.stopSelect = this.q("stop-iteration");
    this.episodeSelect = this.q("episode-iteration");
    this.stopSelect.addEventListener("change", () => this._renderStop(true));
    this.episodeSelect.addEventListener("change", () => this._renderEpisodes(true));
    this.connection = new LiveConnection(() => this._url(), {
      onMessage: (msg) => this.receive(msg),
      onState: (state) => this._badge(state),
    });
    this.connection.start();
  }

  _url() {
    const base = websocketUrl(this.root.dataset.wsUrl);
    return this.snapshot ? withParam(base, "seq", this.snapshot.seq) : base;
  }

  _badge(state) {
    const badge = this.q("live-badge");
    // before the first snapshot: the status the page was rendered with
    const status = this.snapshot?.run.status ?? this.q("run-status").dataset.status;
    [badge.dataset.state, badge.textContent] = runBadge(state, status);
  }

  receive(msg) {
    if (msg.type === "error") {
      if (msg.code === "snapshot_too_large") this._loadOverHttp();
      return;
    }
    if (!shouldApply(this.snapshot ? this.snapshot.seq : null, msg)) return;
    this.snapshot = msg.type === "snapshot" ? msg : applyRunDelta(this.snapshot, msg);
    this.render();
  }

  /** A run too big for one websocket message: load its snapshot over HTTP, then reconnect with `?seq=N`. */
  async _loadOverHttp() {
    const response = await fetch(this.root.dataset.snapshotUrl, { credentials: "same-origin" });
    if (!response.ok) return;
    const snapshot = await response.json();
    if (this.snapshot && snapshot.seq <= this.snapshot.seq) return;
    this.snapshot = snapshot;
    this.render();
    this.connection.socket?.close(); // reconnects with ?seq=N and gets only what came after
  }

  render() {
    const { run, iterations } = this.snapshot;
    this.root.dataset.seq = String(this.snapshot.seq);
    this.root.dataset.status = run.status;
    const status = this.q("run-status");
    status.textContent = run.status;
    status.dataset.status = run.status;
    const progress = this.q("run-progress");
    progress.max = Math.max(1, run.budget_steps);
    progress.value = run.env_steps;
    this.q("run-steps").textContent = stepsText(run.env_steps, run.budget_steps, " env steps");
    this.q("run-iterations").textContent = String(iterations.length);
    this.q("run-best").textContent = run.best_reward === null ? "–" : formatNumber(run.best_reward);
    this.q("run-eta").textContent = formatEta(run.eta_s);
    const error = this.q("run-error");
    error.hidden = !run.error;
    error.textContent = run.error;
    // A viewer's buttons stay disabled (`data-can-write="false"`, the server's role check).
    const readOnly = this.root.dataset.canWrite === "false";
    // an external run can be cancelled too: its CLI stops at its next report
    this.q("cancel-run").disabled = readOnly || !(run.status === "queued" || run.status === "running");
    // a queued run whose broker message was lost (a Redis restart) can be sent again: Resume re-queues it;
    // a run whose budget is spent has nothing left to train
    const resume = resumeState(run, readOnly, this.root.dataset.readOnlyHint);
    this.q("resume-run").disabled = resume.disabled;
    this.q("resume-run").title = resume.title;
    const overrun = overrunNote(run, iterations);
    this.q("run-overrun").hidden = !overrun;
    this.q("run-overrun").textContent = overrun ?? "";
    this.q("run-waiting").hidden = iterations.length > 0 || !ACTIVE.has(run.status);
    this._badge(this.connection.state);

    this.charts.get("entropy").emptyText = llmGapNote(run.config, iterations[iterations.length - 1], "entropy");
    for (const spec of TRAINING_CHARTS) this.charts.get(spec.key).setData(metricSeries(iterations, spec.series));
    this._fillSelect(this.stopSelect, iterations);
    this._fillSelect(this.episodeSelect, iterations);
    this._renderStop(false);
    this.regretChart.setData([iterations.map((it) => it.env_steps),
      ...["premature", "late", "stop_regret"].map((k) => iterations.map((it) => it.stop?.[k] ?? null))]);
    const roles = shareSeries(iterations, "by_role");
    this.roleChart.setData(roles.data, roles.names);
    const agents = shareSeries(iterations, "by_agent");
    this.agentChart.setData(agents.data, agents.names);
    this.indexChart.setData(attributionIndexes(iterations));
    this._renderEpisodes(false);
  }

  /** Keep an iteration picker in step: new iterations are added; "latest" follows the newest. */
  _fillSelect(select, iterations) {
    const following = !select.value || select.value === "latest";
    if (select.options.length !== iterations.length + 1) {
      const options = [el("option", "latest")];
      options[0].value = "latest";
      for (const it of [...iterations].reverse()) {
        const option = el("option", `${iterationNumber(it)} (${it.env_steps} steps)`);
        option.value = String(it.iteration);
        options.push(option);
      }
      const previous = select.value;
      select.replaceChildren(...options);
      select.value = following ? "latest" : previous;
    }
  }

  _selected(select) {
    const its = this.snapshot.iterations;
    if (select.value === "latest" || !select.value) return its[its.length - 1] ?? null;
    return its.find((it) => String(it.iteration) === select.value) ?? null;
  }

  _renderStop() {
    const it = this._selected(this.stopSelect);
    const note = llmStopNote(this.snapshot.run.config, it);
    this.q("stop-note").hidden = !note;
    this.q("stop-note").textContent = note ?? "";
    this.stopChart.emptyText = llmGapNote(this.snapshot.run.config, it, "p(stop)") ? "No p(stop): the note above says why." : null;
    this.stopChart.setData(stopCurves(it));
    const cards = this.q("stop-cards");
    cards.dataset.iteration = it ? String(it.iteration) : "";
    const entries = [["Iteration", it ? iterationNumber(it) : null], [stopRegretLabel(it), it?.stop?.stop_regret],
      ["Premature stops", it?.stop?.premature], ["Late stops", it?.stop?.late],
      ["Mean episode length", it?.metrics?.episode_length]];
    cards.replaceChildren(...entries.map(([label, value]) => {
      const card = el("div", null, "metric-card");
      card.append(el("dt", label), el("dd", value === undefined || value === null ? "–" : formatNumber(value)));
      return card;
    }));
  }

  _renderEpisodes() {
    const it = this._selected(this.episodeSelect);
    const list = this.q("episode-list");
    const ids = it?.episodes ?? [];
    if (!ids.length) {
      list.replaceChildren(el("li", it ? "This iteration kept no sample episodes." : "No iterations yet.", "muted"));
      return;
    }
    list.replaceChildren(...ids.map((id, i) => {
      const li = el("li");
      const link = el("a", `Episode ${i + 1} of iteration ${iterationNumber(it)}`);
      link.href = `/traces/${id}/`;
      link.dataset.testid = "episode-link";
      li.append(link, el("span", ` · trace ${id} · open in the trace debugger`, "muted"));
      return li;
    }));
  }
}

const root = document.getElementById("run-app");
if (root) window.runPage = new RunPage(root);
