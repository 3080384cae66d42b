"""`GET /healthz`: is this web process able to serve? For load balancers and container health checks.

Answers `{"status": "ok" | "error", "checks": {"database": "ok" | "<error>", "redis": ...}}` with
200 when every check passed, else 503. No login, no session, no redirect to HTTPS (settings exempt
the path), so a probe on the container's own port works.
"""

from __future__ import annotations

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

#: Seconds a probe may wait on Redis before the check fails.
REDIS_TIMEOUT_S = 2.0


def _check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except DatabaseError as exc:
        return f"error: {exc.__class__.__name__}: {exc}".strip()


def _check_redis() -> str:
    """PING the Redis of the channel layer (REDIS_URL); 'not configured' on the in-memory layer."""
    if not settings.REDIS_URL:
        return "not configured"
    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S
        )
        try:
            client.ping()
        finally:
            client.close()
        return "ok"
    except (redis.RedisError, OSError) as exc:
        return f"error: {exc.__class__.__name__}: {exc}"


@require_GET
def healthz(request):
    checks = {"database": _check_database(), "redis": _check_redis()}
    healthy = all(not value.startswith("error") for value in checks.values())
    return JsonResponse({"status": "ok" if healthy else "error", "checks": checks}, status=200 if healthy else 503)
