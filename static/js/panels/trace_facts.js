/**
 * The trace header's facts about the task (lib/transcript_data.js `traceFacts`): the question
 * (first lines, "more" for all), the ground truth, the outcome, the labelled mistake (agent,
 * step as a button that goes to it, reason) and the other trace labels. Text only.
 */

import { el } from "../lib/dom.js";
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
    this.root.replaceChildren(dl);
  }
}
