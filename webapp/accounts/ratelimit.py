"""Per-token ingestion rate limit: a fixed-window counter in Django's cache (Redis in production,
so every web process shares it; this process's memory otherwise).

At most SWARMSCOPE_INGEST_RATE ingestion requests per SWARMSCOPE_INGEST_RATE_WINDOW_S seconds per
API token; the next one is refused with the seconds until the window ends (the API answers 429
with `Retry-After`). Counting never fails a request: a cache that is down lets it through.
"""

from __future__ import annotations

import logging
import math
import time

from django.conf import settings
from django.core.cache import cache

log = logging.getLogger(__name__)


def check_ingest_rate(token_id: int, *, now: float | None = None) -> int | None:
    """Count one ingestion request of token `token_id`. Returns None when it is within the rate,
    else the whole seconds (>= 1) until the current window ends."""
    limit = settings.SWARMSCOPE_INGEST_RATE
    window = settings.SWARMSCOPE_INGEST_RATE_WINDOW_S
    if limit <= 0:
        return None
    now = time.time() if now is None else now
    slot = int(now // window)
    key = f"swarmscope:ingest-rate:{token_id}:{slot}"
    try:
        cache.add(key, 0, timeout=window + 1)
        count = cache.incr(key)
    except Exception:  # noqa: BLE001 - a broken cache must not stop ingestion
        log.warning("rate limit cache unavailable; request let through", exc_info=True)
        return None
    if count <= limit:
        return None
    return max(1, math.ceil((slot + 1) * window - now))
