/**
 * Estimate -> confirm -> run: the submit flow of the forms that start rollout jobs (the
 * counterfactual dialog, the attribution panel).
 *
 * A submit first POSTs the request body to `estimateUrl`. Where the backend calls an LLM the answer
 * says `confirmation_required`: the estimate line shows its cost and the Run button turns into
 * "Confirm and run" (`data-confirm="true"`); only a second submit of the same body POSTs it to
 * `runUrl` with `confirmed: true`. Any change to the form that changes the body drops the shown
 * estimate (`changed()`), so a confirmation is always for the request whose cost was shown. A
 * backend that needs no confirmation starts at once; the started job keeps the estimate it was
 * confirmed with (its `estimate`, beside which the panels show its usage). While the estimate's cost
 * pilot waits or runs (`pilot.status` "queued" or "running": a first what-if job's own first samples, sent to measure
 * how far the model's turns run) the estimate is asked for again (`show`: every `pollMs` or slower) and shown anew. Errors
 * (`{error, field?}` answers, or the body's own validation) show in the alert line. Server text is only ever set with `textContent`.
 */

import { csrfToken, el } from "../lib/dom.js";
import { formatNumber } from "../lib/format.js";

/** POST `body` as JSON with the session's CSRF token: {ok, answer (the parsed JSON)}. */
export async function postJson(url, body) {
  const response = await fetch(url, {
    method: "POST", credentials: "same-origin", body: JSON.stringify(body),
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
  });
  return { ok: response.ok, answer: await response.json() };
}

/**
 * An estimate's tokens in words (webapp/counterfactuals/costs.py): the expected prompt and completion
 * tokens, and where the answer has them the range the re-generated turns' lengths leave open, from
 * turns as long as the recorded ones (`recorded_length`) to every turn at its cap (`at_cap`,
 * `turn_max_tokens`): "≈ 5,000 prompt + 2,000 completion tokens (7,000 in all; 3,000 if the
 * re-generated turns are as long as the recorded ones, at most 9,000 if each runs to its 512-token
 * cap; turns expected to use 35 % of the room their cap leaves (default))": the expected share
 * (`cap_share`) and where it comes from (`cap_share_source`: the setting, the model's finished jobs,
 * or the default), where the answer has them. Where the range is one number (every recorded turn at its
 * cap) the share does not matter and is not shown.
 */
export function estimateTokens(e) {
  const head = `≈ ${formatNumber(e.prompt_tokens)} prompt + ${formatNumber(e.completion_tokens)} completion tokens `;
  const all = `${formatNumber(e.total_tokens)} in all`;
  const low = e.recorded_length?.total_tokens;
  const high = e.at_cap?.total_tokens;
  if (!Number.isInteger(low) || !Number.isInteger(high) || !Number.isInteger(e.turn_max_tokens)) return `${head}(${all})`;
  if (low === high) {
    return `${head}(${all}; the recorded turns already reach their ${formatNumber(e.turn_max_tokens)}-token cap, `
      + "so no re-generated turn can run longer)";
  }
  const share = typeof e.cap_share === "number" && e.cap_share_source
    ? `; turns expected to use ${Math.round(e.cap_share * 100)} % of the room their cap leaves (${e.cap_share_source})`
    : "";
  return `${head}(${all}; ${formatNumber(low)} if the re-generated turns are as long as the recorded ones, at most `
    + `≈ ${formatNumber(high)} if each runs to its ${formatNumber(e.turn_max_tokens)}-token cap${share})`;
}

/**
 * A what-if estimate's cost pilot in words (webapp/counterfactuals/pilot.py: the job's own
 * first chunk, sent before the estimate where no finished job on the trace says how far the model's
 * turns run, and taken by the job that is then started): running, done (what it sent) or failed
 * (why, and that the estimate uses the prior share); "" where the answer has none.
 */
export function pilotText(pilot) {
  if (!pilot) return "";
  const samples = `${formatNumber(pilot.samples)} of the job's own samples`;
  const waited = `${formatNumber(Math.round(pilot.elapsed_s))} s so far`;
  const meanwhile = "the estimate updates when it ends (confirming now keeps the estimate above). ";
  if (pilot.status === "queued") {
    return `Measuring how far this model's turns run on this trace: a pilot of ${samples} waits for the rollout `
      + `worker (${waited}); ${meanwhile}`;
  }
  if (pilot.status === "running") {
    return `Measuring how far this model's turns run on this trace: a pilot of ${samples} is running `
      + `(${waited}); ${meanwhile}`;
  }
  if (pilot.status === "done") {
    const tokens = pilot.prompt_tokens + pilot.completion_tokens;
    return `The pilot, ${samples}, ran ${formatNumber(pilot.turns)} turns in ${formatNumber(pilot.seconds)} s `
      + `(${formatNumber(tokens)} tokens in ${formatNumber(pilot.requests)} requests); the job takes them as its `
      + "first samples if started now. ";
  }
  return `The pilot could not run: ${pilot.reason.replace(/\.$/, "")}. The estimate uses the share it would `
    + "without a pilot. ";
}

/** An error answer (`{error, field?}`) as one line: "n: must be at least 2". */
const errorText = (answer) => `${answer.field ? `${answer.field}: ` : ""}${answer.error}`;

export class EstimatedRun {
  /**
   * The Run button, estimate line and error line are built here (`run`, `estimate`, `error`);
   * the caller places them in its form.
   * @param {{estimateUrl: string, runUrl: string, body: () => object, describe: (answer: object) => string,
   *   onStarted: (job: object) => void, runClass: string, runTestid: string, estimateTestid: string,
   *   pendingText?: string|null}} options
   *   `body` returns the request body from the form (throws Error naming what is wrong);
   *   `describe` words an estimate answer; `onStarted` gets the started job (the run answer);
   *   `pendingText`, when given, shows in the estimate line while the estimate is asked for;
   *   `pollMs`: while the shown estimate's pilot runs, it is asked for again this often
   */
  constructor({ estimateUrl, runUrl, body, describe, onStarted, runClass, runTestid, estimateTestid,
    pendingText = null, pollMs = 5000 }) {
    Object.assign(this, { estimateUrl, runUrl, body, describe, onStarted, pendingText, pollMs });
    /** The timer of the next ask while a pilot runs, or null. */
    this.poll = null;
    /** The request body whose estimate is shown and awaits confirmation (JSON), or null. */
    this.awaiting = null;
    /** The estimate answer shown for `awaiting`, or null. */
    this.shown = null;
    this.run = el("button", "Run", runClass);
    this.run.type = "submit";
    this.run.dataset.testid = runTestid;
    this.estimate = el("p", null, "what-if-estimate");
    this.estimate.dataset.testid = estimateTestid;
    this.estimate.setAttribute("role", "status");
    this.estimate.hidden = true;
    this.error = el("p", null, "notice");
    this.error.setAttribute("role", "alert");
    this.error.hidden = true;
  }

  /** Drop the estimate whenever `form` changes, or one of `inputs` is typed in. */
  watch(form, inputs) {
    form.addEventListener("change", () => this.changed());
    for (const control of inputs) control.addEventListener("input", () => this.changed());
  }

  /** Drop a shown estimate when the request it was for has changed. */
  changed() {
    if (this.awaiting === null) return;
    let key = null;
    try {
      key = JSON.stringify(this.body());
    } catch {
      // an invalid request is not the estimated one
    }
    if (key !== this.awaiting) this.reset();
  }

  /** Back to a plain Run: no estimate shown, nothing awaiting confirmation. */
  reset() {
    clearTimeout(this.poll);
    this.poll = null;
    this.awaiting = null;
    this.shown = null;
    this.estimate.hidden = true;
    this.estimate.textContent = "";
    this.run.textContent = "Run";
    delete this.run.dataset.confirm;
  }

  /** Show `text` in the error line (hidden when empty). */
  setError(text) {
    this.error.textContent = text;
    this.error.hidden = !text;
  }

  /** The form's submit: estimate, or (the same body, confirmed) run. */
  async submit() {
    let body;
    try {
      body = this.body();
    } catch (err) {
      this.setError(err.message);
      return;
    }
    this.setError("");
    const key = JSON.stringify(body);
    if (this.awaiting !== key) {
      // First the cost: an LLM backend's job only starts once the user has seen and confirmed it.
      if (this.pendingText) {
        this.estimate.hidden = false;
        this.estimate.textContent = this.pendingText;
      }
      const { ok, answer } = await postJson(this.estimateUrl, body);
      if (!ok) {
        this.reset();
        this.setError(errorText(answer));
        return;
      }
      if (answer.confirmation_required) {
        this.estimate.hidden = false;
        this.run.textContent = "Confirm and run";
        this.run.dataset.confirm = "true";
        this.awaiting = key;
        this.show(answer, key, body);
        this.run.focus();
        return;
      }
      this.reset();
    } else {
      body.confirmed = true;
    }
    const { ok, answer } = await postJson(this.runUrl, body);
    if (!ok) {
      this.setError(errorText(answer));
      return;
    }
    this.reset();
    this.onStarted(answer);
  }

  /**
   * Show the estimate `answer` for the request `key` (`body`); while its pilot waits or runs, ask again
   * in `pollMs`, or in 3 times the last ask's duration where that is longer (an estimate of a long
   * trace counts its prompts on the server: asking back to back would slow the pilot it waits for).
   */
  show(answer, key, body, askedMs = 0) {
    this.shown = answer;
    this.estimate.textContent = `Estimated cost on ${answer.backend}: ${this.describe(answer)}. `
      + `${pilotText(answer.pilot)}Press “Confirm and run” to start it.`;
    clearTimeout(this.poll);
    const pending = ["queued", "running"].includes(answer.pilot?.status);
    this.poll = pending ? setTimeout(() => this.refresh(key, body), Math.max(this.pollMs, 3 * askedMs)) : null;
  }

  /** Ask again for the estimate of `key` while it is still the one shown (a pilot was running). */
  async refresh(key, body) {
    this.poll = null;
    if (this.awaiting !== key) return;
    const asked = Date.now();
    const { ok, answer } = await postJson(this.estimateUrl, body);
    if (this.awaiting !== key) return; // the form changed meanwhile
    if (!ok) {
      this.setError(errorText(answer));
      return;
    }
    this.show(answer, key, body, Date.now() - asked);
  }
}
