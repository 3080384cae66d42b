"""Evaluation scores and the reward: which score, if any, is a trace's reward.

Importers keep every evaluation score as a label with its name (Langfuse scores, OpenTelemetry
`gen_ai.evaluation.result`), and the numeric ones, one number per name, in
`trace.attributes["score_values"]` ({name: number}). A score is not a reward by itself: an
evaluation such as `hallucination = 1` says nothing good about the run. `select_reward` makes one
score the reward (`trace.rewards[name]`): the one the user names (an import's `--reward-score`,
the project's "reward score" setting), else one named `reward` (`DEFAULT_REWARD_SCORE`), and
records which in `trace.attributes["reward_score"]`. Rewards that are not scores (a native trace's,
SwarmSim's, the survey schema's) are left as they are.
"""

from __future__ import annotations

from typing import Any

from swarmscope.inputs import text_refusal
from swarmscope.model import Trace

#: Trace attribute: {score name: number} of the trace's numeric evaluation scores.
SCORE_VALUES = "score_values"
#: Trace attribute: the name of the score that `select_reward` made the reward.
REWARD_SCORE = "reward_score"
#: The score that is the reward when no name is given.
DEFAULT_REWARD_SCORE = "reward"
#: The longest score name accepted as a reward score name (the project setting's column).
MAX_NAME_LENGTH = 200


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
    of that name, where it has such a numeric score (`SCORE_VALUES`) and no reward of that name
    already; `attributes["reward_score"]` then names it. A trace whose reward was already chosen
    (it has `reward_score`: Swarmscope's own export read back) is left as it is. Changes `trace`
    in place and returns it."""
    scores = trace.attributes.get(SCORE_VALUES)
    if not isinstance(scores, dict) or REWARD_SCORE in trace.attributes:
        return trace
    for key in dict.fromkeys(k for k in (name, DEFAULT_REWARD_SCORE) if k):
        value = scores.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if key not in trace.rewards:
                trace.rewards[key] = float(value)
                trace.attributes[REWARD_SCORE] = key
            break
    return trace
