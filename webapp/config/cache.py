"""The Redis cache backend: Django's, with one Redis client (and connection pool) per process.

Django makes a cache instance per thread and per async context, and its RedisCache a client with
its own connection pool per instance, so under ASGI every request that touched the cache (the rate
limit, the live-metrics flag) opened a new Redis connection. `SharedRedisCache` gives every
instance of one configuration the same client; redis-py's pools are thread-safe and reset
themselves in a forked child.
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient

_clients: dict[tuple[Any, ...], RedisCacheClient] = {}
_lock = threading.Lock()


class SharedRedisCache(RedisCache):
    """`django.core.cache.backends.redis.RedisCache` whose client is shared by all its instances
    with the same servers and OPTIONS in this process."""

    @cached_property
    def _cache(self) -> RedisCacheClient:
        key = (tuple(self._servers), tuple(sorted((k, repr(v)) for k, v in self._options.items())))
        with _lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = self._class(self._servers, **self._options)
        return client
