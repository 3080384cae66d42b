"""The Redis cache backend shares one client per process (webapp.config.cache): Django makes a cache
instance per thread and async context, and its own RedisCache a connection pool per instance, so
each ASGI request opened a new Redis connection (issue 19: 6 % of Daphne's time in the live-metrics
flag's `cache.add`)."""

import threading
import uuid

import pytest
import redis
from django.core.cache.backends.redis import RedisCache

from webapp.config.cache import SharedRedisCache

URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def server():
    try:
        redis.Redis.from_url(URL, socket_connect_timeout=2).ping()
    except redis.ConnectionError as exc:
        pytest.skip(f"no Redis at {URL}: {exc}")


def instances(backend, n: int) -> list:
    """`n` cache instances, each made and used in its own thread (as Django's handler does)."""
    made: list = []
    key = f"test-shared-cache:{uuid.uuid4().hex}"

    def use() -> None:
        cache = backend(URL, {})
        cache.add(key, 1, timeout=30)  # the live-metrics flag's call
        made.append(cache)

    threads = [threading.Thread(target=use) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made[0].get(key) == 1
    made[0].delete(key)
    return made


def pools(made: list) -> set[int]:
    return {id(pool) for cache in made for pool in cache._cache._pools.values()}


def test_cache_instances_of_threads_share_one_connection_pool(server):
    made = instances(SharedRedisCache, 8)
    assert len({id(cache._cache) for cache in made}) == 1
    assert len(pools(made)) == 1


def test_djangos_own_backend_makes_a_pool_per_instance(server):
    """What the shared backend replaces (if Django shares pools one day, it can go)."""
    assert len(pools(instances(RedisCache, 4))) == 4


def test_other_options_get_their_own_client(server):
    one, other = SharedRedisCache(URL, {}), SharedRedisCache(URL, {"OPTIONS": {"db": 1}})
    assert one._cache is not other._cache
