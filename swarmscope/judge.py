"""LLM-judge failure attribution for traces that cannot be re-run (docs/architecture.md "Credit"): the three
methods of Who&When ("Which Agent Causes Task Failures and When?", Zhang et al., ICML 2025), over
any `complete(messages) -> str` callable (`Complete`; e.g. `trainer.rollout.chat.ChatClient.complete`).

The steps of a trace are its events in order (a Who&When log has one event per history entry, so
step k is `mistake_step` k); a step's agent is its event's agent.

- `all_at_once`: the whole log in one prompt; the answer names "Agent Name:" and "Step Number:".
- `step_by_step`: the log up to step k, for k = 0, 1, ...; the judge answers whether step k is the
  decisive mistake ("Yes"/"No"); the first "Yes" is the prediction (its step and speaker). When it
  never says yes, no prediction.
- `binary_search`: the segment [lo, hi] is split at mid = (lo + hi) // 2; the judge says whether
  the mistake is in the "upper half" (lo .. mid) or the "lower half" (mid + 1 .. hi), until one
  step is left (its speaker is the agent).

With `ground_truth` (the published baselines' setting) the prompt gives the correct answer.
Answers that cannot be parsed raise `JudgeParseError` with the answer.

Each question also names the form of its answer (`structured`, vLLM's structured outputs), which a
`complete` that takes a `structured` keyword may enforce (the OpenAI client does on vLLM): a step
is judged with the choice "Yes" / "No" (`YES_NO`), a segment with "upper half" / "lower half"
(`HALVES`), the whole log with a regex of the asked format whose agent is one of the log's speakers
and whose step one of its indices (`all_at_once_format`), so that every answer parses. A callable
without that keyword is asked as before and its free answer parsed.

Scoring is by exact equality (the benchmark's own scorer counts substrings, "1" in "12"): a step
is correct when the predicted index equals the label's; an agent when the names are equal ignoring
case (the data README: agent names compare case-insensitively).

The outcome verifier (`verifier_messages`, `parse_verdict`) scores a rollout's final answer where
exact match cannot (no ground truth, or free-form answers): the judge answers a strict JSON verdict,
`{"correct": true|false}` (1.0 / 0.0) or `{"score": x}` with x in [0, 1].
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from swarmscope.model import Trace


class StructuredComplete(Protocol):
    """A judge model that may constrain its answer: `structured` is None or one of {"choice": [str,
    ...]} (the answer is one of them), {"regex": pattern} (the whole answer matches it) and {"json":
    schema}; a model that cannot enforce it answers freely (the judge parses either)."""

    def __call__(self, messages: list[dict[str, str]], *, structured: dict[str, Any] | None = None) -> str: ...


#: The judge's model: the answer to chat `messages` (system, user), with or without `structured`.
Complete = StructuredComplete | Callable[[list[dict[str, str]]], str]
METHODS = ("all_at_once", "step_by_step", "binary_search")
SYSTEM = "You are a helpful assistant skilled in analyzing conversations."

_AGENT = re.compile(r"agent\s*name\s*:\s*\**\s*([^\n*]+)", re.IGNORECASE)
_STEP = re.compile(r"step\s*number\s*:\s*\**\s*(\d+)", re.IGNORECASE)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_HALF = re.compile(r"\b(upper|lower)\s+half\b", re.IGNORECASE)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)
VERIFIER_SYSTEM = "You are a strict verifier of the final answers of multi-agent systems."
#: The answer of `step_by_step` (one step: is it the decisive mistake?) and `binary_search` (one split).
YES_NO: dict[str, Any] = {"choice": ["Yes", "No"]}
HALVES: dict[str, Any] = {"choice": ["upper half", "lower half"]}
#: Characters the reason of an all-at-once answer may have (one line; ~100 tokens of English, well
#: under the client's 512 max_tokens, and the agent and step come first).
REASON_CHARS = 400
_REGEX_SPECIAL = re.compile(r"([\\.^$*+?()\[\]{}|])")


class JudgeParseError(ValueError):
    """The judge's answer does not hold what the method asks for."""

    def __init__(self, message: str, answer: str):
        self.answer = answer
        super().__init__(f"{message}: {answer[:200]!r}")


@dataclass(frozen=True)
class Step:
    index: int
    agent: str
    content: str


@dataclass(frozen=True)
class Prediction:
    """A judge's attribution: `agent` and `step` (None where it gave none), `calls` made, `reason`."""

    method: str
    agent: str | None
    step: int | None
    calls: int
    reason: str = ""


def steps_of(trace: Trace) -> list[Step]:
    return [Step(k, e.agent, e.content or "") for k, e in enumerate(trace.events)]


def _task(trace: Trace, ground_truth: bool) -> str:
    text = f"The problem is: {trace.attributes.get('question', trace.name)}\n"
    if ground_truth and "ground_truth" in trace.attributes:
        text += f"The Answer for the problem is: {trace.attributes['ground_truth']}\n"
    return text


def _log(steps: list[Step]) -> str:
    return "\n".join(f"Step {s.index} - {s.agent}: {s.content}" for s in steps)


def _takes_structured(complete: Complete) -> bool:
    """Whether `complete` accepts the `structured` keyword (by name or **kwargs)."""
    try:
        parameters = inspect.signature(complete).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind is p.VAR_KEYWORD or (p.name == "structured" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        for p in parameters
    )


def _ask(complete: Complete, prompt: str, structured: dict[str, Any] | None = None) -> str:
    """The judge's answer to `prompt`, constrained to `structured` where `complete` takes it."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
    if structured is not None and _takes_structured(complete):
        answer = cast(StructuredComplete, complete)(messages, structured=structured)
    else:
        answer = cast(Callable[[list[dict[str, str]]], str], complete)(messages)
    if not isinstance(answer, str):
        raise JudgeParseError("the judge answered no text", repr(answer))
    return answer


def regex_literal(text: str) -> str:
    """`text` as a regex matching exactly it: the metacharacters `\\.^$*+?()[]{}|` escaped, a
    newline as `\\n`; nothing else (unlike `re.escape`, whose escaped spaces and `#` some of
    vLLM's regex engines warn about)."""
    return _REGEX_SPECIAL.sub(r"\\\1", text).replace("\n", r"\n")


def all_at_once_prompt(trace: Trace, ground_truth: bool = True) -> str:
    return (
        "You are an AI assistant tasked with analyzing a multi-agent conversation history when solving a real world "
        "problem. "
        + _task(trace, ground_truth)
        + "Identify which agent made an error, at which step, and explain the reason for the error. "
        "Here's the conversation:\n\n" + _log(steps_of(trace)) + "\n\n"
        "Based on this conversation, please predict the following:\n"
        "1. The name of the agent who made a mistake that should be directly responsible for the wrong solution "
        "to the real world problem.\n"
        "2. In which step the mistake agent first made mistake. The steps are numbered from 0.\n"
        "3. The reason for your prediction.\n"
        "Please answer in the format:\nAgent Name: (Your prediction)\nStep Number: (Your prediction)\n"
        "Reason for Mistake: (Your reason)"
    )


def all_at_once_format(trace: Trace) -> dict[str, Any] | None:
    """The all-at-once answer as vLLM's structured output: {"regex": "Agent Name: (A|B|...)\\nStep
    Number: (0|1|...|n-1)\\nReason for Mistake: [^\\n]{0,REASON_CHARS}"}, A, B, ... the log's
    speakers in order of first step; None for a log without steps."""
    steps = steps_of(trace)
    if not steps:
        return None
    agents = "|".join(regex_literal(a) for a in dict.fromkeys(s.agent for s in steps))
    numbers = "|".join(str(s.index) for s in steps)
    return {
        "regex": f"Agent Name: ({agents})\\nStep Number: ({numbers})\\nReason for Mistake: [^\\n]{{0,{REASON_CHARS}}}"
    }


def parse_all_at_once(answer: str) -> tuple[str, int]:
    """(agent, step) from "Agent Name: X" and "Step Number: N". Raises JudgeParseError."""
    agent, step = _AGENT.search(answer), _STEP.search(answer)
    if not agent or not step:
        raise JudgeParseError("expected 'Agent Name:' and 'Step Number:'", answer)
    return agent.group(1).strip().strip("`'\"."), int(step.group(1))


def step_prompt(trace: Trace, k: int, ground_truth: bool = True) -> str:
    steps = steps_of(trace)
    return (
        "You are an AI assistant tasked with evaluating the correctness of each step in an ongoing multi-agent "
        "conversation aimed at solving a real-world problem. "
        + _task(trace, ground_truth)
        + "Here is the conversation history up to the current step:\n"
        + _log(steps[: k + 1])
        + "\n\n"
        f"The most recent step (Step {k}) was by '{steps[k].agent}'.\n"
        "Your task is to determine whether this most recent step contains an error that could hinder the "
        "problem-solving process or lead to an incorrect solution. Please respond with 'Yes' or 'No' and "
        "provide a clear explanation for your judgment."
    )


def parse_yes_no(answer: str) -> bool:
    """The first "yes" or "no" of the answer. Raises JudgeParseError when there is none."""
    match = _YES_NO.search(answer)
    if not match:
        raise JudgeParseError("expected 'Yes' or 'No'", answer)
    return match.group(1).casefold() == "yes"


def binary_prompt(trace: Trace, lo: int, mid: int, hi: int, ground_truth: bool = True) -> str:
    steps = steps_of(trace)
    return (
        "You are an AI assistant tasked with analyzing a segment of a multi-agent conversation. Multiple agents "
        "are collaborating to address a user query, with the goal of resolving the query through their "
        "collective dialogue. "
        + _task(trace, ground_truth)
        + "Your primary task is to identify the location of the most critical mistake within the provided "
        "segment. Determine which half of the segment contains the single step where this crucial error occurs, "
        "ultimately leading to the failure in resolving the user's query.\n"
        f"The segment spans steps {lo} to {hi}:\n" + _log(steps[lo : hi + 1]) + "\n\n"
        f"Based on your analysis, predict whether the error is more likely to be located in the upper half "
        f"(steps {lo} - {mid}) or the lower half (steps {mid + 1} - {hi}) of the segment. "
        "Please simply output either 'upper half' or 'lower half'. You should not output anything else."
    )


def parse_half(answer: str) -> str:
    """'upper' or 'lower'. Raises JudgeParseError when the answer names neither or both."""
    halves = {m.group(1).casefold() for m in _HALF.finditer(answer)}
    if len(halves) != 1:
        raise JudgeParseError("expected exactly one of 'upper half' or 'lower half'", answer)
    return halves.pop()


def all_at_once(trace: Trace, complete: Complete, ground_truth: bool = True) -> Prediction:
    answer = _ask(complete, all_at_once_prompt(trace, ground_truth), all_at_once_format(trace))
    agent, step = parse_all_at_once(answer)
    return Prediction("all_at_once", agent, step, 1, answer)


def step_by_step(trace: Trace, complete: Complete, ground_truth: bool = True) -> Prediction:
    steps = steps_of(trace)
    for k in range(len(steps)):
        answer = _ask(complete, step_prompt(trace, k, ground_truth), YES_NO)
        if parse_yes_no(answer):
            return Prediction("step_by_step", steps[k].agent, k, k + 1, answer)
    return Prediction("step_by_step", None, None, len(steps))


def binary_search(trace: Trace, complete: Complete, ground_truth: bool = True) -> Prediction:
    steps = steps_of(trace)
    if not steps:
        return Prediction("binary_search", None, None, 0)
    lo, hi, calls = 0, len(steps) - 1, 0
    while lo < hi:
        mid = (lo + hi) // 2
        half = parse_half(_ask(complete, binary_prompt(trace, lo, mid, hi, ground_truth), HALVES))
        calls += 1
        lo, hi = (lo, mid) if half == "upper" else (mid + 1, hi)
    return Prediction("binary_search", steps[lo].agent, lo, calls)


JUDGES: dict[str, Callable[..., Prediction]] = {
    "all_at_once": all_at_once,
    "step_by_step": step_by_step,
    "binary_search": binary_search,
}


def judge(trace: Trace, complete: Complete, method: str = "all_at_once", ground_truth: bool = True) -> Prediction:
    if method not in JUDGES:
        raise ValueError(f"unknown method {method!r}; one of {METHODS}")
    return JUDGES[method](trace, complete, ground_truth)


def labels_of(trace: Trace) -> tuple[str | None, int | None]:
    """The trace's (mistake_agent, mistake_step as an int) labels, None where absent or not an index."""
    values: dict[str, Any] = {label.key: label.value for label in trace.labels}
    agent = values.get("mistake_agent")
    try:
        step = int(str(values.get("mistake_step")).strip())
    except ValueError:
        step = None
    return (None if agent is None else str(agent)), step


def agent_correct(prediction: Prediction, label: str | None) -> bool:
    """Exact equality of agent names, ignoring case and surrounding space."""
    return (
        prediction.agent is not None
        and label is not None
        and prediction.agent.strip().casefold() == label.strip().casefold()
    )


def step_correct(prediction: Prediction, label: int | None) -> bool:
    """Exact equality of step indices (never a substring match)."""
    return prediction.step is not None and label is not None and prediction.step == label


def accuracy(pairs: list[tuple[Prediction | None, tuple[str | None, int | None]]]) -> tuple[float, float]:
    """(step accuracy, agent accuracy) over (prediction or None, (agent label, step label)) pairs."""
    if not pairs:
        return 0.0, 0.0
    steps = sum(p is not None and step_correct(p, s) for p, (_, s) in pairs)
    agents = sum(p is not None and agent_correct(p, a) for p, (a, _) in pairs)
    return steps / len(pairs), agents / len(pairs)


def verifier_messages(trace: Trace, answer: str) -> list[dict[str, str]]:
    """The chat messages asking whether `answer` (a rollout's final turn) solves the task of
    `trace` (its `question` attribute, else its name), with its `ground_truth` as the reference
    where it has one. The expected reply is the strict verdict of `parse_verdict`."""
    reference = f"Reference answer: {trace.attributes['ground_truth']}\n" if "ground_truth" in trace.attributes else ""
    prompt = (
        f"Task: {trace.attributes.get('question', trace.name)}\n{reference}"
        f"Final answer of the system (its last turn):\n{answer}\n\n"
        "Is this final answer a correct solution of the task"
        + (" (equivalent to the reference answer)" if reference else "")
        + "? "
        'Reply with only a JSON object and nothing else: {"correct": true} or {"correct": false}.'
    )
    return [{"role": "system", "content": VERIFIER_SYSTEM}, {"role": "user", "content": prompt}]


def parse_verdict(answer: str) -> float:
    """The outcome in [0, 1] of a verifier's reply: a JSON object (alone, or alone in one ```json
    fence) with exactly one of `correct` (a JSON boolean: 1.0 / 0.0) or `score` (a number in
    [0, 1]); other keys (e.g. a reason) are ignored. Raises JudgeParseError for anything else."""
    expected = 'expected a JSON verdict {"correct": true|false} or {"score": x in [0, 1]}'
    text = answer.strip() if isinstance(answer, str) else ""
    fenced = _FENCE.match(text)
    try:
        verdict = json.loads(fenced.group(1) if fenced else text)
    except ValueError:
        raise JudgeParseError(expected, str(answer)) from None
    if not isinstance(verdict, dict) or ("correct" in verdict) == ("score" in verdict):
        raise JudgeParseError(expected, str(answer))
    if "correct" in verdict:
        if not isinstance(verdict["correct"], bool):
            raise JudgeParseError('"correct" must be true or false', str(answer))
        return float(verdict["correct"])
    value = verdict["score"]
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0.0 <= value <= 1.0
    ):
        raise JudgeParseError('"score" must be a number in [0, 1]', str(answer))
    return float(value)
