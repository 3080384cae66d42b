/**
 * The metrics panel: the server-computed metrics of a trace (swarmscope.metrics, docs/metrics.md),
 * its failure modes, a uPlot chart of the agents alive over time, the trace-level labels, and
 * the imported metrics, rewards and costs as given. Computed and imported metrics are shown apart, as stored.
 * A metric that cannot be computed on the trace shows the reason the server gives
 * (`computed_metrics.unavailable[name]`) instead of a number.
 *
 * Live: the page passes the newest computed metrics it has (the snapshot's, then each `metrics`
 * message the worker pushes while the trace streams, webapp/traces/services.py
 * `do_publish_metrics`), so the panel shows what a reload would: one computation, on the server.
 */

import { themedAxes } from "../lib/chart_theme.js";
import { formatNumber, formatPercent, formatSeconds, formatValue } from "../lib/format.js";
import { el } from "../lib/dom.js";

/** Known computed metrics: label, how to format, and the source of the formula. */
export const COMPUTED_METRICS = Object.freeze({
  critical_steps: { label: "Critical steps", format: formatNumber,
    help: "agent actions on the longest chain of steps run one after another; a step is an LLM turn with the tool calls it issues, overlapping sub-agents run in parallel, a single agent counts its own steps (Kimi K2.5 PARL)" },
  total_steps: { label: "Steps", format: formatNumber,
    help: "agent actions: LLM turns with the tool calls and dispatches they issue; humans, harness routines and content-free framework spans take none (the units of critical steps)" },
  parallelism_efficiency: { label: "Parallelism efficiency", format: formatNumber,
    help: "T_serial / T_parallel: summed work durations over the heaviest chain of events run one after another, concurrent tool calls of one agent in parallel (survey §9); steps / critical steps without durations" },
  useful_agent_utilisation: { label: "Useful-agent utilisation", format: formatPercent,
    help: "sub-agent actions with a causal path to the final answer / all sub-agent actions; humans, users and harness routines are no sub-agents" },
  protocol_overhead: { label: "Protocol overhead", format: formatPercent,
    help: "coordination tokens (delegations, spawns, routing decisions, messages to other agents) / all tokens; returned work does not count (survey §9)" },
  message_redundancy: { label: "Message redundancy", format: formatPercent,
    help: "messages repeating an earlier message to the same receiver / all messages" },
  error_amplification: { label: "Error amplification", format: formatNumber,
    help: "mean corrupted causal descendants per initially corrupted event (survey §9)" },
  fan_out_max: { label: "Max fan-out", format: formatNumber, help: "most agents spawned by one agent" },
  spawn_depth: { label: "Spawn depth", format: formatNumber, help: "depth of the spawn tree" },
  tokens: { label: "Tokens (measured)", format: formatNumber,
    help: "token usage the source measured (its reported total, else its events' usage); estimates are never added" },
  estimated_tokens: { label: "Tokens, estimated", format: (x) => `~${formatNumber(x)} est.`, estimate: true,
    help: "an estimate, not a measurement: characters / 4 of the content of the events without measured usage; kept out of the measured figure" },
});

/** Keys of computed_metrics that are not shown as metric cards. */
const NOT_CARDS = new Set(["agents_alive", "flags", "failure_modes", "unavailable"]);

/** The failure modes of computed_metrics.failure_modes: label, and the key holding its agents. */
export const FAILURE_MODES = Object.freeze({
  pseudo_parallelism: { label: "Pseudo-parallelism", agents: "pseudo_parallel_agents",
    help: "spawned agents none of whose events has a causal path to the final answer" },
  serial_collapse: { label: "Serial collapse", agents: null,
    help: "critical steps ≥ 0.9 × all steps (and the same in time) while two or more sub-agents act" },
  free_riding: { label: "Free-riding", agents: "free_riders",
    help: "agents with ≥ 5 % of events whose removal effect's 95 % interval contains 0" },
});

/**
 * How one computed metric reads: `{text, reason}`. A null or missing value with a reason in
 * `computed.unavailable` reads "n/a" with that reason; a number is formatted; `reason` is "" then.
 * @param {object} computed the trace's computed_metrics
 * @param {string} key
 */
export function metricText(computed, key) {
  const value = computed?.[key];
  const reason = computed?.unavailable?.[key];
  if ((value === null || value === undefined) && reason) return { text: "n/a", reason };
  return { text: (COMPUTED_METRICS[key]?.format ?? formatValue)(value), reason: "" };
}

/**
 * The failure modes as rows `{name, label, state, detail}`: state "raised" (detail: the agents),
 * "clear", or "unavailable" (detail: the reason, e.g. "needs attribution: ...").
 * @param {object} computed the trace's computed_metrics
 */
export function failureModeRows(computed) {
  const modes = computed?.failure_modes ?? {};
  const unavailable = computed?.unavailable ?? {};
  return Object.entries(FAILURE_MODES).filter(([name]) => name in modes || name in unavailable).map(([name, info]) => {
    const value = modes[name];
    if (value === null || value === undefined) {
      return { name, label: info.label, state: "unavailable", detail: unavailable[name] ?? "not computed" };
    }
    const agents = info.agents ? modes[info.agents] ?? [] : [];
    return { name, label: info.label, state: value ? "raised" : "clear", detail: value ? agents.join(", ") : "" };
  });
}

/**
 * The definitions of what the panel shows of `computed` (its metric cards with a known definition,
 * then its failure modes), in that order: `[{key, label, help}]`. The panel lists them under the
 * cards ("What these measure"), so they are read on the page, not only in hover titles.
 * @param {object} computed the trace's computed_metrics
 */
export function metricDefinitions(computed) {
  const shown = Object.keys(COMPUTED_METRICS).filter((k) => k in (computed ?? {}) && !(k === "estimated_tokens" && !computed[k]));
  return [
    ...shown.map((key) => ({ key, label: COMPUTED_METRICS[key].label, help: COMPUTED_METRICS[key].help })),
    ...failureModeRows(computed).map((row) => ({ key: row.name, label: row.label, help: FAILURE_MODES[row.name].help })),
  ];
}

/**
 * `[[t, count], ...]` as uPlot data `[[t...], [count...]]`, sorted by t.
 * @param {[number, number][]} pairs
 * @returns {[number[], number[]]}
 */
export function agentsAliveSeries(pairs) {
  const sorted = [...(pairs ?? [])].filter((p) => Array.isArray(p) && p.length >= 2).sort((a, b) => a[0] - b[0]);
  return [sorted.map((p) => p[0]), sorted.map((p) => p[1])];
}

/**
 * The raised failure-mode flags: `{name: value}` entries whose value is truthy (a non-empty
 * list or object, true, a non-zero number), as `[name, detail]`.
 */
export function raisedFlags(flags) {
  return Object.entries(flags ?? {}).filter(([, v]) => {
    if (Array.isArray(v)) return v.length > 0;
    if (v && typeof v === "object") return Object.keys(v).length > 0;
    return Boolean(v);
  }).map(([name, v]) => [name, v === true ? "" : formatValue(v)]);
}

const humanise = (key) => key.replace(/_/g, " ").replace(/^\w/, (c) => c.toUpperCase());

export class MetricsPanel {
  /** @param {HTMLElement} root the `[data-testid=metrics-panel]` element */
  constructor(root) {
    this.root = root;
    this.trace = null;
    this.labelCount = 0;
    this.computed = null;
    this.shownKey = "";
    this.plot = null;
    this._resize = new ResizeObserver(() => this._fitPlot());
  }

  /**
   * Render `trace` (the snapshot's trace object), the labels about the whole trace (e.g. MAST's
   * failure modes) and `computed`, the newest computed metrics (default: the trace's own
   * `computed_metrics`); does nothing when none of what it shows changed.
   */
  render(trace, labels = [], computed = trace?.computed_metrics) {
    if (!trace) return;
    computed = computed ?? {};
    // A delta replaces the trace object without changing what is shown here: redraw only on a change.
    const key = JSON.stringify([trace.metrics, trace.rewards, trace.costs, labels.length]);
    if (computed === this.computed && key === this.shownKey) return;
    this.trace = trace;
    this.labelCount = labels.length;
    this.computed = computed;
    this.shownKey = key;
    const parts = [];

    const cards = el("dl", null, "metric-cards");
    cards.dataset.testid = "computed-metrics";
    const extra = Object.keys(computed).filter((k) => !(k in COMPUTED_METRICS) && !NOT_CARDS.has(k));
    // An estimate of nothing (every event measured) is no card.
    const keys = [...Object.keys(COMPUTED_METRICS).filter((k) => k in computed && !(k === "estimated_tokens" && !computed[k])),
      ...extra.filter((k) => typeof computed[k] === "number")];
    const others = extra.filter((k) => typeof computed[k] !== "number");
    for (const key of keys) {
      const info = COMPUTED_METRICS[key];
      const card = el("div", null, "metric-card");
      card.dataset.metric = key;
      const { text, reason } = metricText(computed, key);
      card.title = [info?.help, reason].filter(Boolean).join("\n");
      card.append(el("dt", info?.label ?? humanise(key)), el("dd", text, info?.estimate ? "estimate" : ""));
      if (reason) {
        card.classList.add("metric-unavailable");
        const why = el("dd", reason, "metric-reason muted");
        why.dataset.testid = "metric-reason";
        card.append(why);
      }
      cards.append(card);
    }
    if (!keys.length) cards.append(el("p", "No computed metrics yet.", "muted"));
    parts.push(cards);
    const definitions = metricDefinitions(computed);
    if (definitions.length) {
      const list = el("dl", null, "meta metric-definitions");
      for (const { key, label, help } of definitions) {
        const term = el("dt", label);
        term.dataset.metric = key;
        list.append(term, el("dd", help));
      }
      const more = el("details", null, "metrics-more");
      more.dataset.testid = "metric-definitions";
      more.append(el("summary", "What these measure"), list);
      parts.push(more);
    }

    const modes = failureModeRows(computed);
    if (modes.length) {
      const list = el("ul", null, "flag-list");
      list.dataset.testid = "failure-modes";
      for (const row of modes) {
        const text = row.state === "raised" ? row.label + (row.detail ? `: ${row.detail}` : "")
          : row.state === "clear" ? `${row.label}: no` : `${row.label}: ${row.detail}`;
        const li = el("li", text, row.state === "raised" ? "flag flag-warning" : "flag muted");
        li.dataset.failureMode = row.name;
        li.dataset.state = row.state;
        li.title = FAILURE_MODES[row.name].help;
        list.append(li);
      }
      const section = el("section", null, "metrics-section");
      section.append(el("h3", "Failure modes"), list);
      parts.push(section);
    }

    const flags = raisedFlags(computed.flags);
    if (flags.length) {
      const list = el("ul", null, "flag-list");
      list.dataset.testid = "metric-flags";
      for (const [name, detail] of flags) {
        const li = el("li", humanise(name), "flag flag-warning");
        if (detail) li.title = detail;
        list.append(li);
      }
      parts.push(list);
    }

    if (others.length) {
      const more = el("details", null, "metrics-more");
      const table = el("dl", null, "meta");
      for (const k of others) table.append(el("dt", k), el("dd", formatValue(computed[k])));
      more.append(el("summary", "More computed values"), table);
      parts.push(more);
    }

    const chart = el("figure", null, "alive-chart");
    chart.append(el("figcaption", "Agents alive over time"));
    const plotHost = el("div", null, "alive-plot");
    plotHost.dataset.testid = "agents-alive-chart";
    plotHost.dataset.points = JSON.stringify(computed.agents_alive ?? []);
    chart.append(plotHost);
    parts.push(chart);

    if (labels.length) {
      const list = el("ul", null, "label-list");
      list.dataset.testid = "trace-labels";
      for (const l of labels) {
        const li = el("li");
        li.append(el("span", l.key, "label-key"), " ", el("span", formatValue(l.value)));
        if (l.source) li.append(" ", el("span", `(${l.source})`, "muted"));
        list.append(li);
      }
      const section = el("section", null, "metrics-section");
      section.append(el("h3", "Labels"), list);
      parts.push(section);
    }

    for (const [title, values] of [["Imported metrics", trace.metrics], ["Rewards", trace.rewards], ["Costs", trace.costs]]) {
      if (!values || !Object.keys(values).length) continue;
      const table = el("dl", null, "meta");
      for (const [k, v] of Object.entries(values)) table.append(el("dt", k), el("dd", formatValue(v)));
      const section = el("section", null, "metrics-section");
      section.append(el("h3", title), table);
      parts.push(section);
    }

    this.root.replaceChildren(...parts);
    this._plot(plotHost, agentsAliveSeries(computed.agents_alive));
  }

  _plot(host, data) {
    this.plot?.destroy();
    this.plot = null;
    this._resize.disconnect();
    const { uPlot } = globalThis;
    if (!uPlot || data[0].length === 0) {
      host.append(el("p", data[0].length ? "Chart unavailable: uPlot is not loaded." : "No data.", "muted"));
      return;
    }
    this.plot = new uPlot({
      width: Math.max(200, host.clientWidth || 300),
      height: 120,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false } },
      axes: themedAxes([
        { values: (u, ticks) => ticks.map(formatSeconds), size: 28, font: "11px system-ui, sans-serif" },
        { size: 36, font: "11px system-ui, sans-serif" },
      ]),
      series: [
        {},
        { label: "agents alive", stroke: "#4263eb", width: 1.5, fill: "rgba(66,99,235,0.12)",
          points: { show: false }, paths: uPlot.paths.stepped({ align: 1 }) },
      ],
    }, data, host);
    this._resize.observe(host);
  }

  _fitPlot() {
    if (!this.plot) return;
    const width = Math.max(200, this.plot.root.parentElement?.clientWidth ?? 300);
    if (width !== this.plot.width) this.plot.setSize({ width, height: 120 });
  }
}
