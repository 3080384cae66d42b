"""Readers for the GenAI agent conventions that say who hands work to whom, and how it went:
transfers (`gen_ai.transfer.*`, the earlier `gen_ai.agent.handoff.*`), remote callers
(`gen_ai.caller.*`), evaluation results (`gen_ai.evaluation.*`) and token details (cache, reasoning).

Sources: https://github.com/open-telemetry/semantic-conventions-genai, `model/gen-ai/registry.yaml`,
`model/gen-ai/events.yaml` and `docs/gen-ai/non-normative/examples-agent-interactions.md` (all
"Development": names may change; older names are kept). How they map: docs/otel-mapping.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import keys
from .span import Span, as_int, span_memo


@dataclass(frozen=True)
class Transfer:
    """An `execute_tool` span that transfers work: to `target` (an agent, human or workflow name;
    `target_type` as given, else None), passing control (`pass_control`, a hand-off) or expecting it
    back (`return_to_caller`, call-and-return)."""

    target: str
    pass_control: bool
    target_type: str | None
    mode: str


@dataclass(frozen=True)
class Evaluation:
    """One `gen_ai.evaluation.result`: `name` (None: unnamed), `score` (a number or None), `label`,
    `explanation` (text or None)."""

    name: str | None
    score: float | None
    label: str | None
    explanation: str | None


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


@span_memo
def transfer(span: Span) -> Transfer | None:
    """The transfer a span records (`gen_ai.transfer.target.name` with `gen_ai.transfer.mode`, or
    `gen_ai.agent.handoff.target.name`, always a hand-off), else None. A mode other than
    `pass_control` (`return_to_caller`, or none given) is call-and-return."""
    attributes = span.attributes
    target = _text(attributes.get(keys.TRANSFER_TARGET_NAME))
    if target is not None:
        mode = _text(attributes.get(keys.TRANSFER_MODE)) or "return_to_caller"
        return Transfer(
            target=target,
            pass_control=mode == keys.PASS_CONTROL,
            target_type=_text(attributes.get(keys.TRANSFER_TARGET_TYPE)),
            mode=mode,
        )
    target = _text(attributes.get(keys.HANDOFF_TARGET_NAME))
    if target is not None:
        return Transfer(target=target, pass_control=True, target_type="agent", mode=keys.PASS_CONTROL)
    return None


def caller(span: Span) -> str | None:
    """The immediate logical caller an `invoke_agent` span names (`gen_ai.caller.name`, an agent
    or workflow, possibly in another process), else None."""
    if span.attributes.get(keys.OPERATION_NAME) != keys.INVOKE_AGENT:
        return None
    return _text(span.attributes.get(keys.CALLER_NAME))


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _evaluation(attributes: dict[str, Any]) -> Evaluation:
    return Evaluation(
        name=_text(attributes.get(keys.EVALUATION_NAME)),
        score=_number(attributes.get(keys.EVALUATION_SCORE_VALUE)),
        label=_text(attributes.get(keys.EVALUATION_SCORE_LABEL)),
        explanation=_text(attributes.get(keys.EVALUATION_EXPLANATION)),
    )


def is_evaluation_span(span: Span) -> bool:
    """Whether the span itself is an evaluation (it carries `gen_ai.evaluation.name`)."""
    return _text(span.attributes.get(keys.EVALUATION_NAME)) is not None


def evaluations(span: Span) -> list[Evaluation]:
    """The `gen_ai.evaluation.result` events of a span, in order (the span being evaluated)."""
    return [_evaluation(e.attributes) for e in span.events if e.name == keys.EVALUATION_RESULT_EVENT]


def span_evaluation(span: Span) -> Evaluation | None:
    """An evaluation span's own result (about its parent span), else None."""
    return _evaluation(span.attributes) if is_evaluation_span(span) else None


#: Token details -> the attributes that report them, first found wins.
TOKEN_DETAIL_KEYS = {
    "cache_read_input_tokens": (
        keys.USAGE_CACHE_READ,
        "gen_ai.usage.cache_read_input_tokens",  # OpenLLMetry / Traceloop
        keys.LLM_TOKENS_CACHE_READ,
    ),
    "cache_creation_input_tokens": (
        keys.USAGE_CACHE_CREATION,
        "gen_ai.usage.cache_creation_input_tokens",  # OpenLLMetry / Traceloop
        keys.LLM_TOKENS_CACHE_WRITE,
    ),
    "reasoning_output_tokens": (keys.USAGE_REASONING, keys.LLM_TOKENS_REASONING),
}


def token_details(span: Span) -> dict[str, int]:
    """Cache-read, cache-creation and reasoning token counts a span reports (a subset of its input
    / output tokens, per the spec), by `TOKEN_DETAIL_KEYS` name; absent ones left out."""
    found = {}
    for name, candidates in TOKEN_DETAIL_KEYS.items():
        value = next((n for key in candidates if (n := as_int(span.attributes.get(key))) is not None), None)
        if value is not None:
            found[name] = value
    return found
