"""Evaluation scores and the reward: which score, if any, is a trace's reward.

Importers keep every evaluation score as a label with its name (Langfuse scores, OpenTelemetry
`gen_ai.evaluation.result`), and the numeric ones, one number per name, in
`trace.attributes["score_values"]` ({name: number}). A score is not a reward by itself: an
evaluation such as `hallucination = 1` says nothing good about the run. `select_reward` makes one
score the reward (`trace.rewards[name]`): the one the user names (an import's `--reward-score`,
the project's "reward score" setting), else one named `reward` (`DEFAULT_REWARD_SCORE`), and
records which in `trace.attributes["reward_score"]`. Rewards that are not scores (a native trace's,
SwarmSim's, the survey schema's) are left as they are. `is_score_label` tells a score's label from
others (the trace list summarises them); `missing_reward_score` is the import report's note for a
named reward score that none of the imported traces has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from swarmscope.inputs import text_refusal
from swarmscope.model import Label, Trace, within_float_range

#: Trace attribute: {score name: number} of the trace's numeric evaluation scores.
SCORE_VALUES = "score_values"
#: Trace attribute: the name of the score that `select_reward` made the reward.
REWARD_SCORE = "reward_score"
#: The score that is the reward when no name is given.
DEFAULT_REWARD_SCORE = "reward"
#: The longest score name accepted as a reward score name (the project setting's column).
MAX_NAME_LENGTH = 200
#: Label sources of evaluation scores: a Langfuse score's ("langfuse:API", "langfuse:EVAL", ...)
#: and an OpenTelemetry evaluation result's (the event name, `otel.fields.EVALUATION_SOURCE`).
LANGFUSE_SOURCE_PREFIX = "langfuse:"
EVALUATION_RESULT_SOURCE = "gen_ai.evaluation.result"
#: The key suffix of an evaluation's explanation label (text beside the score, not a score).
EXPLANATION_SUFFIX = ".explanation"


def is_score_label(label: Label) -> bool:
    """Whether `label` is an evaluation score (a Langfuse score, an OpenTelemetry evaluation
    result), not the explanation that comes with one."""
    source = label.source or ""
    if source.startswith(LANGFUSE_SOURCE_PREFIX):
        return True
    return source == EVALUATION_RESULT_SOURCE and not label.key.endswith(EXPLANATION_SUFFIX)


def missing_reward_score(
    name: str, attributes: Iterable[Mapping[str, Any]], *, from_project: bool = False
) -> str | None:
    """The import report's note when no trace (given by its `attributes`) has a numeric score
    named `name` (exact, case-sensitive match, as Langfuse names are), naming the score names they
    do have and a near miss that differs only in case; None when one has it. `from_project`: the
    name is the project's setting, not the import's, and the note is only made when the traces
    have scores at all (an import of traces without any is no near miss)."""
    present: set[str] = set()
    for attrs in attributes:
        scores = attrs.get(SCORE_VALUES) if isinstance(attrs, Mapping) else None
        if isinstance(scores, Mapping):
            if name in scores:
                return None
            present.update(str(k) for k in scores)
    if from_project and not present:
        return None
    named = f"a score '{name}'" + (", the project's reward score setting," if from_project else "")
    found = f"scores present: {', '.join(sorted(present))}" if present else "these traces have no evaluation scores"
    close = sorted(k for k in present if k.casefold() == name.casefold())
    hint = f"; did you mean '{close[0]}'? Score names are case-sensitive" if close else ""
    fallback = (
        f"the score '{DEFAULT_REWARD_SCORE}' is the reward instead"
        if DEFAULT_REWARD_SCORE in present and name != DEFAULT_REWARD_SCORE
        else "no reward set from a score"
    )
    return f"no trace in this import has {named} ({found}){hint}; {fallback}"


def reward_score_name(value: Any, field: str = "reward_score") -> str | None:
    """A reward score name as the user typed it, stripped; None when empty (no name given).
    Raises ValueError naming `field` for a value that is not text, is longer than
    MAX_NAME_LENGTH characters, or holds text no database stores."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{field}: must be a score name (text), not {type(value).__name__}")
    name = value.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"{field}: a score name is at most {MAX_NAME_LENGTH} characters")
    refusal = text_refusal(name)
    if refusal is not None:
        raise ValueError(f"{field}: {refusal}")
    return name or None


def select_reward(trace: Trace, name: str | None = None) -> Trace:
    """`trace` with its score named `name` (else its score named `reward`) as the reward channel
    of that name, where it has such a numeric score (`SCORE_VALUES`; a number no float holds is
    none) and no reward of that name already; `attributes["reward_score"]` then names it. A trace
    whose reward was already chosen (it has `reward_score`: Swarmscope's own export read back) is
    left as it is. Changes `trace` in place and returns it."""
    scores = trace.attributes.get(SCORE_VALUES)
    if not isinstance(scores, dict) or REWARD_SCORE in trace.attributes:
        return trace
    for key in dict.fromkeys(k for k in (name, DEFAULT_REWARD_SCORE) if k):
        value = scores.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and within_float_range(value):
            if key not in trace.rewards:
                trace.rewards[key] = float(value)
                trace.attributes[REWARD_SCORE] = key
            break
    return trace
