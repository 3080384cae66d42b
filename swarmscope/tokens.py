"""Token usage of a trace: what the source measured, and estimates kept apart (docs/metrics.md "Tokens").

An event's tokens are **measured** when its source reported them: `Event.tokens` without the
`tokens_estimated` attribute. Importers estimate the tokens of events whose source reports none
(chat logs, spans without usage) as characters / 4 of the content (`model.estimate_tokens`) and
flag them `tokens_estimated`; events with neither tokens nor a flag are estimated the same way
when a figure is asked for (metrics do so: `metrics.event_tokens`).

A trace's measured total is the usage its source reports for the whole trace (`costs["tokens"]`:
the survey schema and native traces, and every importer, which puts the sum of its measured usage
there), else the sum of its events' measured tokens; None when nothing was measured. Its estimate
is the sum of the estimates of the events without measured tokens. The estimate is never added to
the total: the list, the trace page, the API and the metrics show it apart, marked as an estimate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .model import Event, Trace, estimate_tokens

#: Event attribute set to True where `tokens` was estimated from `content` (characters / 4).
TOKENS_ESTIMATED = "tokens_estimated"


@dataclass(frozen=True)
class TokenUsage:
    """`measured`: tokens the source reported (None: it reported none); `estimated`: tokens
    estimated at characters / 4 for what it did not measure (0 when nothing is estimated)."""

    measured: int | None
    estimated: int


def is_estimated(event: Event) -> bool:
    """Whether `event.tokens` is an importer's estimate rather than the source's count."""
    return bool(event.attributes.get(TOKENS_ESTIMATED))


def event_usage(event: Event) -> TokenUsage:
    """One event's tokens: (tokens, 0) when measured, else (None, its flagged estimate, else
    characters / 4 of its content, 0 without content)."""
    if event.tokens is not None and not is_estimated(event):
        return TokenUsage(event.tokens, 0)
    return TokenUsage(None, event.tokens if event.tokens is not None else estimate_tokens(event.content))


def events_usage(events: Iterable[Event]) -> TokenUsage:
    """The summed `event_usage` of `events` (measured None when none of them was measured)."""
    measured: int | None = None
    estimated = 0
    for event in events:
        usage = event_usage(event)
        if usage.measured is not None:
            measured = usage.measured if measured is None else measured + usage.measured
        estimated += usage.estimated
    return TokenUsage(measured, estimated)


def reported_total(costs: Mapping[str, Any]) -> int | None:
    """`costs["tokens"]` as a whole number of tokens (rounded), or None where it is absent or not a
    finite non-negative number."""
    value = costs.get("tokens")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return round(value)


def trace_usage(trace: Trace) -> TokenUsage:
    """The trace's measured total (`reported_total(trace.costs)`, else the events' measured sum)
    and the estimate of its events without measured tokens."""
    usage = events_usage(trace.events)
    reported = reported_total(trace.costs)
    return TokenUsage(reported if reported is not None else usage.measured, usage.estimated)
