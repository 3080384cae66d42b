"""Write rate limits: fixed-window counters in Django's cache (Redis in production, so every web
process shares them; this process's memory otherwise). Three rates (RATES), each counted per user
and per project written to, whatever sends the write (a token, the browser session): ingestion
requests; counterfactual and attribution job samples (a job costs its N, not 1); comments, each
@mention one more. The ingestion rate below; the others alike with their own settings.

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
    """A write over a limit: `scope` "user" or "project", its `limit` per `window_s` seconds, and
    `retry_after_s` (whole seconds >= 1) until the window ends; `kind` the rate ("ingest",
    "job", "comment": RATES), `unit` what it counts."""

    scope: str
    limit: int
    window_s: int
    retry_after_s: int
    kind: str = "ingest"

    @property
    def message(self) -> str:
        what, unit, user_setting, project_setting = RATES[self.kind]
        setting = user_setting if self.scope == "user" else project_setting
        return (
            f"over the {what} rate of {self.limit} {unit} per {self.window_s} s for this {self.scope} "
            f"({setting}); retry in {self.retry_after_s} s"
        )


#: kind -> (what is limited, its unit, the user's setting, the project's setting).
RATES = {
    "ingest": ("ingestion", "requests", "SWARMSCOPE_INGEST_RATE", "SWARMSCOPE_INGEST_RATE_PROJECT"),
    "job": ("job", "samples", "SWARMSCOPE_JOB_SAMPLES_RATE", "SWARMSCOPE_JOB_SAMPLES_RATE_PROJECT"),
    "comment": ("comment", "comments and mentions", "SWARMSCOPE_COMMENT_RATE", "SWARMSCOPE_COMMENT_RATE_PROJECT"),
}


class RateLimited(Exception):  # noqa: N818 - the refusal, as PermissionRefused is
    """A write refused for a rate (`refused`); api_view answers 429 with Retry-After."""

    def __init__(self, refused: RateRefused):
        self.refused = refused
        super().__init__(refused.message)


def _count(key: str, window: int, cost: int = 1) -> int | None:
    """Add `cost` to the counter `key` (expiring after the window); None when the cache is down.
    Only the window's first request creates the key (with its expiry, which ends after the
    window, so no increment of this window can outlive it)."""
    try:
        try:
            return cache.incr(key, cost)
        except ValueError:  # no such key yet; of two requests racing here, add() lets one create it
            cache.add(key, 0, timeout=window + 1)
            return cache.incr(key, cost)
    except Exception:  # noqa: BLE001 - a broken cache must not stop ingestion
        log.warning("rate limit cache unavailable; request let through", exc_info=True)
        return None


def check_rate(
    kind: str, user_id: int | None, project_id: int | None, cost: int = 1, *, now: float | None = None
) -> RateRefused | None:
    """Count a write of `cost` (requests, samples, comments and mentions) by user `user_id` into
    project `project_id` against the `kind` rate's counters (RATES; None skips that counter).
    None when within both, else the RateRefused of the first it is over (user, then project; one
    the user counter refuses is not counted against the project). A limit of 0 is no limit."""
    _, _, user_setting, project_setting = RATES[kind]
    window = settings.SWARMSCOPE_INGEST_RATE_WINDOW_S
    now = time.time() if now is None else now
    slot = int(now // window)
    retry_after = max(1, math.ceil((slot + 1) * window - now))
    for scope, ident, limit in (
        ("user", user_id, getattr(settings, user_setting)),
        ("project", project_id, getattr(settings, project_setting)),
    ):
        if limit <= 0 or ident is None:
            continue
        count = _count(f"swarmscope:{kind}-rate:{scope}:{ident}:{slot}", window, cost)
        if count is not None and count > limit:
            return RateRefused(scope, limit, window, retry_after, kind)
    return None


def check_ingest_rate(user_id: int | None, project_id: int | None, *, now: float | None = None) -> RateRefused | None:
    """Count one ingestion request of user `user_id` into project `project_id` (None: that counter
    is not counted here). `check_rate("ingest", ...)`."""
    return check_rate("ingest", user_id, project_id, now=now)
