"""The trace side of the LLM rollout backends (trainer.rollout.openai): who speaks in an LLM trace,
who orchestrates it, and what a conversation's final answer is and scores.

Speakers (`speakers_of`) are the agents an LLM writes for; the orchestrator (`find_orchestrator`)
is an LLM agent of the trace that picks who speaks next, asked with `speaker_question` and read
strictly with `parse_speaker`.

Scoring reads a conversation's final answer, its last substantive turn (`final_turn`: turns that
are empty or only AG2's TERMINATE are skipped, and a trailing TERMINATE is dropped, as the Who&When
scorer reads the last real answer). Exact match (`score`) gives 1.0 when that answer (the text after
the last "FINAL ANSWER:", else the whole turn) equals the ground truth after `normalise_answer`,
else 0.0. The verifier scoring is the backend's (trainer.rollout.openai).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from typing import Any

from swarmscope.model import Trace

#: Event types replayed as recorded: no LLM re-generates them.
REPLAYED_TYPES = ("tool_result", "human_intervention")
#: The two speaker orders (trainer.rollout.openai).
ORIGINAL, ORCHESTRATOR = "original", "orchestrator"
#: The two scorings (module docstring).
EXACT_MATCH, VERIFIER = "exact_match", "verifier"
#: Agent roles that mark the orchestrator (importers: whowhen sets "orchestrator"), compared casefolded.
ORCHESTRATOR_ROLES = ("orchestrator", "manager", "group_chat_manager", "chat_manager")
#: Event types only an orchestrator emits (docs/architecture.md: O2 delegate, O5 stop).
ORCHESTRATOR_TYPES = ("orchestrator_decision", "delegate", "stop")
#: Agent roles whose turns no LLM writes, so they are never offered as speakers.
NOT_SPEAKER_ROLES = ("human", "tool")
_FINAL = re.compile(r"final answer\s*:", re.IGNORECASE)
_TERMINATE = re.compile(r"(?:^|\s)TERMINATE[\s.!]*$")


def substantive(text: str) -> str:
    """`text` without a trailing TERMINATE (AG2's end-of-chat word) and surrounding space."""
    return _TERMINATE.sub("", text.strip()).strip()


def final_turn(contents: Iterable[str]) -> str:
    """The final answer of a conversation: the last of `contents` that is not empty once a trailing
    TERMINATE is dropped (`substantive`), so dropped; "" when there is none."""
    for content in reversed(list(contents)):
        text = substantive(content or "")
        if text:
            return text
    return ""


def normalise_answer(text: Any) -> str:
    """Lower case, punctuation and the articles a/an/the removed, whitespace collapsed."""
    text = str(text).casefold().translate(str.maketrans("", "", string.punctuation))
    return " ".join(w for w in text.split() if w not in ("a", "an", "the"))


def final_answer(text: str) -> str:
    """The text after the last "FINAL ANSWER:", else the whole text."""
    parts = _FINAL.split(text)
    return parts[-1].strip() if len(parts) > 1 else text.strip()


def score(text: str, ground_truth: Any) -> float:
    """1.0 when the final answer of `text` equals `ground_truth` after normalisation, else 0.0."""
    return float(normalise_answer(final_answer(text)) == normalise_answer(ground_truth))


def find_orchestrator(trace: Trace) -> str | None:
    """The agent that orchestrates `trace` where it is itself an LLM agent in it: the one agent with
    an orchestrator role (ORCHESTRATOR_ROLES) and turns an LLM wrote, else the one agent that emits
    orchestrator decisions, delegations or stops (ORCHESTRATOR_TYPES). None when there is none, or
    several (a pipeline of delegating agents has no single speaker-picker)."""
    written = {e.agent for e in trace.events if e.type not in REPLAYED_TYPES}
    by_role = [a.name for a in trace.agents if (a.role or "").casefold() in ORCHESTRATOR_ROLES and a.name in written]
    candidates = by_role or sorted({e.agent for e in trace.events if e.type in ORCHESTRATOR_TYPES})
    return candidates[0] if len(candidates) == 1 else None


def speakers_of(trace: Trace) -> list[str]:
    """The agents an LLM speaks for, in the order of their first turn: agents with a turn that is
    not replayed (REPLAYED_TYPES), other than humans and tools (NOT_SPEAKER_ROLES)."""
    roles = {a.name: (a.role or "").casefold() for a in trace.agents}
    speakers: list[str] = []
    for event in trace.events:
        if (
            event.type not in REPLAYED_TYPES
            and event.agent not in speakers
            and event.agent.casefold() != "human"
            and roles.get(event.agent, "") not in NOT_SPEAKER_ROLES
        ):
            speakers.append(event.agent)
    return speakers


def speaker_question(speakers: list[str]) -> str:
    """The "who speaks next" question put to the orchestrator after its view of the history
    (after AG2's GroupChat `select_speaker_prompt_template`: "Read the above conversation. Then
    select the next role from {agentlist} to play. Only return the role.")."""
    listed = "\n".join(f"- {name}" for name in speakers)
    return (
        "Read the above conversation. Then select the agent who speaks next, from this list:\n"
        f"{listed}\nOnly return the agent's name, exactly as listed, and nothing else."
    )


def parse_speaker(answer: str, speakers: list[str]) -> str | None:
    """The listed speaker that `answer` names, or None. Strict: the whole answer must be one name
    (case-insensitive; surrounding space, quotes, backticks, asterisks, square brackets and a final
    full stop are allowed); a sentence around the name, or two names, give None."""
    text = answer.strip()
    for _ in range(2):  # "**WebSurfer**." and "`WebSurfer.`"
        text = text.rstrip(".").strip().strip("`*\"'").strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    return {name.casefold(): name for name in speakers}.get(text.casefold())
