"""`{% token_figure trace as tokens %}`: how a trace's measured tokens and its estimate read
(services.token_figure: `text`, `estimated`, `title`), for the trace list, sessions and the trace page."""

from django import template

from .. import services

register = template.Library()


@register.simple_tag
def token_figure(trace) -> dict:
    """`services.token_figure` of `trace.total_tokens` (measured, or None) and `trace.estimated_tokens`."""
    return services.token_figure(trace.total_tokens, trace.estimated_tokens)


@register.simple_tag
def cost_figure(trace) -> dict:
    """`services.cost_figure` of the trace's stored cost facts (`text`, `estimated`, `unknown`, `title`)."""
    return services.cost_figure(trace)
