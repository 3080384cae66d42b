"""Ingestion rate limits: fixed-window counters in Django's cache (Redis in production, so every
web process shares them; this process's memory otherwise).

Two counters per window of SWARMSCOPE_INGEST_RATE_WINDOW_S seconds: one per user (at most
SWARMSCOPE_INGEST_RATE ingestion requests, whichever of their tokens or their browser session sends
them) and one per project (at most SWARMSCOPE_INGEST_RATE_PROJECT, all its members together). A
request over either is refused with the seconds until the window ends (the API answers 429 with
`Retry-After`). A request the user counter refuses is not counted against the project, so one
member's flood does not use up the others' share. Counting never fails a request: a cache that is
down lets it through.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RateRefused:
    """An ingestion request over a limit: `scope` "user" or "project", its `limit` per `window_s`
    seconds, and `retry_after_s` (whole seconds >= 1) until the window ends."""

    scope: str
    limit: int
    window_s: int
    retry_after_s: int

    @property
    def message(self) -> str:
        setting = "SWARMSCOPE_INGEST_RATE" if self.scope == "user" else "SWARMSCOPE_INGEST_RATE_PROJECT"
        return (
            f"over the ingestion rate of {self.limit} requests per {self.window_s} s for this {self.scope} "
            f"({setting}); retry in {self.retry_after_s} s"
        )


def _count(key: str, window: int) -> int | None:
    """Add one to the counter `key` (expiring after the window); None when the cache is down. Only
    the window's first request creates the key (with its expiry, which ends after the window, so no
    increment of this window can outlive it)."""
    try:
        try:
            return cache.incr(key)
        except ValueError:  # no such key yet; of two requests racing here, add() lets one create it
            cache.add(key, 0, timeout=window + 1)
            return cache.incr(key)
    except Exception:  # noqa: BLE001 - a broken cache must not stop ingestion
        log.warning("rate limit cache unavailable; request let through", exc_info=True)
        return None


def check_ingest_rate(user_id: int, project_id: int | None, *, now: float | None = None) -> RateRefused | None:
    """Count one ingestion request of user `user_id` into project `project_id` (None: not known
    before the view; only the user counter then). Returns None when it is within both rates, else
    the RateRefused of the first one it is over (user, then project). A limit of 0 is no limit."""
    window = settings.SWARMSCOPE_INGEST_RATE_WINDOW_S
    now = time.time() if now is None else now
    slot = int(now // window)
    retry_after = max(1, math.ceil((slot + 1) * window - now))
    for scope, ident, limit in (
        ("user", user_id, settings.SWARMSCOPE_INGEST_RATE),
        ("project", project_id, settings.SWARMSCOPE_INGEST_RATE_PROJECT),
    ):
        if limit <= 0 or ident is None:
            continue
        count = _count(f"swarmscope:ingest-rate:{scope}:{ident}:{slot}", window)
        if count is not None and count > limit:
            return RateRefused(scope, limit, window, retry_after)
    return None
