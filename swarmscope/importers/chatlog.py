"""Building blocks shared by the importers of chat logs (Who&When, MAST).

Chat logs name their speakers inconsistently ("WebSurfer" / "Websurfer", "spotify Agent" /
"Spotify Agent"), give no token counts and no clock: these helpers canonicalise names, estimate
tokens (flagged, docs/architecture.md) and chain events in their logged order.
"""

from __future__ import annotations

from swarmscope.model import Edge, Event, estimate_tokens
from swarmscope.tokens import TOKENS_ESTIMATED


class AgentNames:
    """Canonical spellings of agent names compared case-insensitively: the first spelling seen wins."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        """The canonical spelling of `name`, registering it when new."""
        return self._names.setdefault(name.casefold(), name)

    def find(self, name: str) -> str | None:
        """The canonical spelling of `name`, or None when no such agent was registered."""
        return self._names.get(name.casefold())


def estimate_missing_tokens(event: Event) -> Event:
    """Fill `event.tokens` from its content and flag it, where the source gave content but no count."""
    if event.tokens is None and event.content is not None:
        event.tokens = estimate_tokens(event.content)
        event.attributes[TOKENS_ESTIMATED] = True
    return event


def temporal_chain(events: list[Event]) -> list[Edge]:
    """`temporal` edges between consecutive events: len(events) - 1 edges, in order."""
    return [Edge(a.id, b.id, "temporal") for a, b in zip(events, events[1:])]
