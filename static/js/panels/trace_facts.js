/**
 * The trace header's facts about the task (lib/transcript_data.js `traceFacts`): the question
 * (first lines, "more" for all), the ground truth, the outcome, the labelled mistake (agent,
 * step as a button that goes to it, reason) and the other trace labels. Text only.
 */

import { el } from "../lib/dom.js";
import { costFigure, formatNumber, tokenFigure } from "../lib/format.js";
import { traceFacts } from "../lib/transcript_data.js";

const MISTAKE_KEYS = new Set(["mistake_agent", "mistake_step", "mistake_reason"]);
/** At most this many other labels are shown as chips. */
const LABELS_SHOWN = 12;

export class TraceFacts {
  /**
   * @param {HTMLElement} root the `[data-testid=trace-facts]` element
   * @param {{onGoToMistake: () => void}} options
   */
  constructor(root, { onGoToMistake }) {
    this.root = root;
    this.onGoToMistake = onGoToMistake;
    this._key = null;
    this._questionOpen = false;
  }

  render(trace, labels) {
    if (!this.root) return;
    const facts = traceFacts(trace, labels);
    const key = JSON.stringify(facts);
    if (key === this._key) return;
    this._key = key;
    const items = [];
    if (facts.question) {
      const dd = el("dd", null, "fact-question");
      dd.dataset.testid = "fact-question";
      const text = el("span", facts.question, "fact-question-text");
      dd.append(text);
      dd.classList.toggle("open", this._questionOpen);
      if (facts.question.length > 160 || facts.question.includes("\n")) {
        const more = el("button", this._questionOpen ? "less" : "more", "link-button fact-more");
        more.type = "button";
        more.setAttribute("aria-expanded", String(this._questionOpen));
        more.addEventListener("click", () => {
          this._questionOpen = !this._questionOpen;
          dd.classList.toggle("open", this._questionOpen);
          more.textContent = this._questionOpen ? "less" : "more";
          more.setAttribute("aria-expanded", String(this._questionOpen));
        });
        dd.append(" ", more);
      }
      items.push(["Question", dd]);
    }
    if (facts.groundTruth) {
      const dd = el("dd", facts.groundTruth);
      dd.dataset.testid = "fact-ground-truth";
      items.push(["Ground truth", dd]);
    }
    if (facts.outcome) {
      const dd = el("dd", facts.outcome, facts.outcomeOk === true ? "fact-ok" : facts.outcomeOk === false ? "fact-bad" : "");
      dd.dataset.testid = "fact-outcome";
      items.push(["Outcome", dd]);
    }
    if (facts.mistake) {
      const dd = el("dd", null, "fact-mistake");
      dd.dataset.testid = "fact-mistake";
      const m = facts.mistake;
      if (m.agent) dd.append(el("strong", m.agent), " ");
      if (m.step !== "") {
        if (m.eventId) {
          const go = el("button", `at step ${m.step}`, "link-button");
          go.type = "button";
          go.title = "Go to the labelled mistake step in the transcript";
          go.addEventListener("click", () => this.onGoToMistake());
          dd.append(go);
        } else {
          dd.append(`at step ${m.step}`);
        }
      }
      if (m.reason) dd.append(el("span", ` — ${m.reason}`, "fact-reason"));
      items.push(["Mistake", dd]);
    }
    const others = facts.labels.filter((l) => !MISTAKE_KEYS.has(l.key));
    if (others.length) {
      const dd = el("dd", null, "fact-labels");
      dd.dataset.testid = "fact-labels";
      for (const l of others.slice(0, LABELS_SHOWN)) {
        const chip = el("span", `${l.key}: ${l.value.length > 80 ? `${l.value.slice(0, 80)}…` : l.value}`, "chip");
        chip.title = `${l.key} = ${l.value}${l.agent ? ` (agent ${l.agent})` : ""}${l.eventId ? ` (event ${l.eventId})` : ""}`;
        dd.append(chip, " ");
      }
      if (others.length > LABELS_SHOWN) dd.append(el("span", `+${others.length - LABELS_SHOWN} more`, "muted"));
      items.push(["Labels", dd]);
    }
    this.root.hidden = items.length === 0;
    const dl = el("dl", null, "facts");
    for (const [name, dd] of items) dl.append(el("dt", name), dd);
    const close = el("button", "×", "dismiss");
    close.type = "button";
    close.dataset.dismiss = "facts";
    close.dataset.testid = "dismiss-facts";
    close.setAttribute("aria-label", "Hide the task facts");
    close.title = "Hide the task facts (Task facts, in the header, shows them again)";
    this.root.replaceChildren(dl, close);
  }
}

/**
 * The header's token figure (`[data-testid=trace-tokens]`, rendered first by trace_detail.html) kept
 * up to date with the trace summary of each snapshot and delta: the measured total, or the estimate
 * marked as one where nothing was measured, and beside a measured total the estimate of the events
 * without usage, apart and not added (docs/metrics.md "Tokens"). Hidden when there is neither.
 * @param {HTMLElement|null} root
 * @param {{total_tokens?: number|null, estimated_tokens?: number}|null} trace
 */
export function renderTokens(root, trace) {
  if (!root || !trace) return;
  const measured = Number.isFinite(trace.total_tokens) ? trace.total_tokens : null;
  const estimated = Number.isFinite(trace.estimated_tokens) ? trace.estimated_tokens : 0;
  const key = `${measured}/${estimated}`;
  if (root.dataset.shown === key) return;
  root.dataset.shown = key;
  root.dataset.measured = measured === null ? "" : String(measured);
  root.dataset.estimated = String(estimated);
  const figure = tokenFigure(measured, estimated);
  const main = el("span", `${figure.text} tokens`, figure.estimated ? "estimate" : "");
  main.dataset.tokens = "figure";
  main.title = figure.title;
  const parts = ["· ", main];
  if (measured !== null && estimated) {
    const apart = el("span", `(~${formatNumber(estimated)} est. apart)`, "estimate muted");
    apart.dataset.tokens = "estimate";
    apart.title = "estimated from content (characters / 4) for the events without measured usage; not in the measured figure";
    parts.push(" ", apart);
  }
  root.replaceChildren(...parts);
  root.hidden = measured === null && !estimated;
}

/**
 * The header's cost (`[data-testid=trace-cost]`, rendered first by trace_detail.html) kept up to
 * date with the trace summary's `cost` (costFigure: `~` for estimated tokens, "unknown model" for
 * models without a price, never "$0" for them). Hidden when the trace names no model.
 * @param {HTMLElement|null} root
 * @param {{cost?: {usd: number|null, estimated: boolean, unknown_models: string[]}}|null} trace
 */
export function renderCost(root, trace) {
  if (!root || !trace?.cost) return;
  const figure = costFigure(trace.cost);
  root.textContent = `· ${figure.text}`;
  root.title = figure.title;
  root.classList.toggle("estimate", figure.estimated);
  root.classList.toggle("unknown", Boolean(figure.unknown));
  root.hidden = !figure.text;
}
