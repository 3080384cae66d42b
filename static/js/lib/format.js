/**
 * How numbers read in the UI: durations, counts, ratios and shares.
 */

/** Seconds as a short label: "850 ms", "12.5 s", "3:05". */
export function formatSeconds(s) {
  if (!Number.isFinite(s)) return "";
  const abs = Math.abs(s);
  if (abs === 0) return "0 s";
  if (abs < 1) return `${Number((s * 1000).toPrecision(3))} ms`;
  if (abs < 120) return `${Number(s.toPrecision(4))} s`;
  const m = Math.floor(abs / 60);
  const sec = Math.round(abs % 60);
  return `${s < 0 ? "-" : ""}${m}:${String(sec).padStart(2, "0")}`;
}

/**
 * A number with at most 3 significant digits past the integer part, grouped as `locale` groups
 * thousands (Intl.NumberFormat; the browser's own locale by default): "1,234" (en), "1.234" (de),
 * "0.123". Every count and token figure of the UI reads through here, so they agree.
 */
export function formatNumber(x, locale = undefined) {
  if (typeof x !== "number" || !Number.isFinite(x)) return x === null || x === undefined ? "—" : String(x);
  if (Number.isInteger(x) || Math.abs(x) >= 100) return Math.round(x).toLocaleString(locale);
  return Number(x.toPrecision(3)).toLocaleString(locale, { maximumFractionDigits: 20 });
}

/**
 * Rewrite the text of every element under `root` carrying `data-number` (a plain number the
 * server rendered, the attribute holding it) with formatNumber, so that server-rendered counts
 * read as the page's own ones do.
 */
export function localizeNumbers(root) {
  for (const node of root.querySelectorAll("[data-number]")) {
    const value = Number(node.dataset.number);
    if (node.dataset.number !== "" && Number.isFinite(value)) node.textContent = formatNumber(value);
  }
}

/** A share in [0, 1] as a percentage ("12.5 %"). */
export function formatPercent(x) {
  if (typeof x !== "number" || !Number.isFinite(x)) return "—";
  return `${Number((x * 100).toPrecision(3))} %`;
}

/** Any JSON value as one short line. */
export function formatValue(v) {
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (v === null || v === undefined) return "—";
  return typeof v === "string" ? v : JSON.stringify(v);
}

/**
 * How a trace's tokens read, as the server renders them (webapp/traces/services.py `token_figure`):
 * `text` the measured total, or "~N est." where the source measured none; `estimated` whether
 * `text` is an estimate; `title` what the figure is, naming an estimate kept out of it.
 * @param {number|null|undefined} measured `total_tokens` (null: nothing measured)
 * @param {number|null|undefined} estimated `estimated_tokens`
 * @returns {{text: string, estimated: boolean, title: string}}
 */
export function tokenFigure(measured, estimated) {
  const guess = Number.isFinite(estimated) ? estimated : 0;
  if (Number.isFinite(measured)) {
    let title = "measured token usage, as the source reported it";
    if (guess) title += `; ~${formatNumber(guess)} more estimated from content (characters / 4) for events without usage, not counted`;
    return { text: formatNumber(measured), estimated: false, title };
  }
  if (guess) {
    return { text: `~${formatNumber(guess)} est.`, estimated: true,
      title: "estimate: the source measured no token usage; characters / 4 of the events' content" };
  }
  return { text: "–", estimated: false, title: "no token usage reported" };
}

/** `$0.0131`, `$1.24`, `$1,204`: four significant decimals below a cent; "" for none
 * (webapp.traces.prices.format_usd). */
export function formatUsd(usd) {
  if (!Number.isFinite(usd)) return "";
  if (usd === 0) return "$0";
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  const digits = usd < 1000 ? 2 : 0;
  return `$${usd.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}

/**
 * How a trace's cost reads beside its tokens (webapp.traces.services.cost_figure says the same):
 * `cost` is the trace summary's `{usd, estimated, models, unknown_models}`. `text` "$0.16",
 * "~$0.16" where it prices estimated tokens, "$0.16+" where some model has no price, "unknown
 * model" where none has (never "$0"), "" where it names no model.
 */
export function costFigure(cost) {
  const unknown = (cost?.unknown_models ?? []).join(" ");
  if (!cost || !Number.isFinite(cost.usd)) {
    if (unknown) {
      return { text: "unknown model", estimated: false, unknown,
        title: `no price for ${unknown} in the price table (genai-prices)` };
    }
    return { text: "", estimated: false, unknown: "", title: "" };
  }
  let text = formatUsd(cost.usd);
  let title = "cost of its LLM calls at list prices (genai-prices)";
  if (cost.estimated) [text, title] = [`~${text}`, `${title}; some tokens are estimates`];
  if (unknown) [text, title] = [`${text}+`, `${title}; no price for ${unknown}: at least this`];
  return { text, estimated: Boolean(cost.estimated), unknown, title };
}

/** What an "input" badge says: the event's content is what its agent received, not what it said. */
export const CONTENT_FROM_INPUT_TITLE = "no output recorded: this is the prompt the agent received";

/**
 * Whether an event's content is its input, not its output: an LLM turn whose output the source did
 * not record shows its prompt, flagged `content_from: "input"` (docs/otel-mapping.md "Events").
 */
export function contentFromInput(ev) {
  return ev?.attributes?.content_from === "input";
}

/** `text` (an event's content or an excerpt of it) marked "[input] …" where it is the event's input. */
export function contentLabel(ev, text) {
  return contentFromInput(ev) && text ? `[input] ${text}` : text;
}

/** Whether an event's `tokens` is an importer's estimate (characters / 4), not the source's count. */
export function tokensEstimated(ev) {
  return Boolean(ev?.attributes?.tokens_estimated);
}

/** What an empty trace page says: waiting when live; when it was made from spans (`attributes.spans`,
 * the OpenTelemetry importers), that none of them is an agent, model or tool span by the conventions
 * read (docs/otel-mapping.md, "Reading a span"), rather than a bare "no events". */
export function emptyTraceText(trace) {
  if (trace?.live) return "No events yet: waiting for the swarm to send some…";
  const spans = Number(trace?.attributes?.spans) || 0;
  if (spans > 0) {
    return `This trace has no events: none of its ${formatNumber(spans)} span${spans === 1 ? "" : "s"} is an agent, ` +
      "model call or tool call by the conventions Swarmscope reads (OpenTelemetry GenAI, OpenInference, " +
      "Traceloop, Monocle; docs/otel-mapping.md, \"Reading a span\").";
  }
  return "This trace has no events.";
}
