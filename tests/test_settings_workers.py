"""tests/settings.py gives each pytest-xdist worker its own Redis database, so one worker's flush or
queue cannot reach another's (CI runs the services tests with `-n auto` on one Redis)."""

import pytest

from tests.settings import worker_redis_url


def test_each_worker_takes_the_database_after_the_urls_own():
    assert worker_redis_url("redis://127.0.0.1:6379/7", 0) == "redis://127.0.0.1:6379/7"
    assert worker_redis_url("redis://127.0.0.1:6379/7", 1) == "redis://127.0.0.1:6379/8"
    assert worker_redis_url("redis://:pw@cache:6380", 2) == "redis://:pw@cache:6380/2"
    assert worker_redis_url("unix:///run/redis.sock?db=3", 1) == "unix:///run/redis.sock?db=4"


def test_a_worker_past_database_15_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="Redis database 16 .*use fewer"):
        worker_redis_url("redis://127.0.0.1:6379/7", 9)
