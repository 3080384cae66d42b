"""What a trace's LLM calls cost in US dollars, from the model price table of the `genai-prices`
package (maintained by Pydantic from the providers' price pages; its bundled snapshot is used, the
app fetches nothing), and the other per-trace facts the trace list filters on (models, errors).

A priced event is one naming its model (`attributes["model"]`, else `gen_ai.response.model` /
`gen_ai.request.model`; a `provider/` prefix is tried as the provider). Its usage is read from
`input_tokens`, `output_tokens`, `cache_read_input_tokens` and `cache_creation_input_tokens`: cache
tokens are part of the input as the OpenTelemetry GenAI conventions count them, except where they
exceed it (Anthropic's and Claude Code's `input_tokens` leave the cache out), where they are added to it. An event
with a model but no input/output split is priced at its tokens as output tokens (measured, else its
content's characters / 4), and the cost is then marked an estimate. A model the table does not know
is named in `unknown_models` and adds nothing: a cost with unknown models is a lower bound, and a
trace whose models are all unknown, or that names none, has no cost (`usd` None), never 0.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from swarmscope import model as core
from swarmscope.metrics import is_failed_tool_result
from swarmscope.tokens import event_usage, is_estimated

logger = logging.getLogger(__name__)

MODEL_KEYS = ("model", "gen_ai.response.model", "gen_ai.request.model")


@dataclass(frozen=True)
class TraceCost:
    """`usd`: the summed price of the priced events (None when none could be priced); `estimated`:
    some priced tokens were estimates or had no input/output split; `models`: every model named,
    sorted; `unknown_models`: those the price table does not know; `priced_events`: how many."""

    usd: float | None
    estimated: bool
    models: tuple[str, ...]
    unknown_models: tuple[str, ...]
    priced_events: int = 0


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def event_model(event: core.Event) -> str | None:
    """The model an event names, or None."""
    for key in MODEL_KEYS:
        value = event.attributes.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:200]
    return None


@functools.lru_cache(maxsize=512)
def _price(model: str, n_in: int, n_out: int, cache_read: int, cache_write: int) -> float | None:
    """USD for one call's usage, None when the table does not know the model."""
    from genai_prices import Usage, calc_price  # noqa: PLC0415 - its price table loads on first use

    usage = Usage(
        input_tokens=n_in,
        output_tokens=n_out,
        cache_read_tokens=cache_read or None,
        cache_write_tokens=cache_write or None,
    )
    provider, _, name = model.partition("/")
    tries = [(model, None)] + ([(name, provider), (name, None)] if name else [])  # "anthropic/claude-..."
    try:
        for ref, provider_id in tries:
            try:
                return float(calc_price(usage, model_ref=ref, provider_id=provider_id).total_price)
            except LookupError:
                continue
        return None
    except ValueError as error:  # usage the table's units cannot split (logged, priced as nothing)
        logger.info("no price for %s with usage %s: %s", model, usage, error)
        return None


def get_trace_cost(trace: core.Trace) -> TraceCost:
    """The cost of the trace's LLM calls (see the module docstring). Events with usage but no model
    are priced at the trace's model where it names exactly one (`attributes["models"]`: Codex)."""
    named = trace.attributes.get("models") if isinstance(trace.attributes, dict) else None
    only = named[0] if isinstance(named, list) and len(named) == 1 and isinstance(named[0], str) else None
    total = 0.0
    priced = 0
    estimated = False
    models: set[str] = set()
    unknown: set[str] = set()
    for event in trace.events:
        model = event_model(event)
        if model is None and only and ("input_tokens" in event.attributes or "output_tokens" in event.attributes):
            model = only
        if model is None:
            continue
        models.add(model)
        attrs = event.attributes
        n_in, n_out = _int(attrs.get("input_tokens")), _int(attrs.get("output_tokens"))
        cache_read = _int(attrs.get("cache_read_input_tokens")) or 0
        cache_write = _int(attrs.get("cache_creation_input_tokens")) or 0
        if n_in is None and n_out is None:
            usage = event_usage(event)
            n_in, n_out = 0, usage.measured if usage.measured is not None else usage.estimated
            cache_read = cache_write = 0
            estimated = True
        else:
            n_in, n_out = n_in or 0, n_out or 0
            if cache_read + cache_write > n_in:
                n_in += cache_read + cache_write
            estimated = estimated or is_estimated(event)
        price = _price(model, n_in, n_out, cache_read, cache_write)
        if price is None:
            unknown.add(model)
            continue
        total += price
        priced += 1
    return TraceCost(
        usd=total if priced else None,
        estimated=estimated and priced > 0,
        models=tuple(sorted(models)),
        unknown_models=tuple(sorted(unknown)),
        priced_events=priced,
    )


def error_count(events: Iterable[core.Event]) -> int:
    """Events that failed: a status "error" or a truthy `error` attribute (OpenTelemetry span
    status, Claude Code's `is_error`), failed tool results included (swarmscope.metrics)."""
    n = 0
    for event in events:
        status = event.attributes.get("status")
        failed = bool(event.attributes.get("error")) or (isinstance(status, str) and status.casefold() == "error")
        n += failed or is_failed_tool_result(event)
    return n


def format_usd(usd: float | None) -> str:
    """`$0.0131`, `$1.24`, `$1,204`: four significant decimals below a dollar; "" for None."""
    if usd is None:
        return ""
    if usd == 0:
        return "$0"
    if usd < 0.01:
        return f"${usd:.4f}"
    if usd < 1000:
        return f"${usd:,.2f}"
    return f"${usd:,.0f}"
