"""The Redis cache keeps one client per connection pool (casework/redis_cache.py), against a
real Redis (REDIS_TEST_URL, default db 7 on 127.0.0.1; skipped where none answers)."""

from __future__ import annotations

import os

import pytest
import redis

from casework.redis_cache import RedisCache

URL = os.environ.get("REDIS_TEST_URL", "redis://127.0.0.1:6379/7")


@pytest.fixture
def cache() -> RedisCache:
    try:
        redis.Redis.from_url(URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        # A developer's machine without Redis skips; CI starts Redis (.ci/run), so there a missing
        # Redis is a broken machine and fails, never a pass.
        if os.environ.get("CI"):
            pytest.fail(f"no Redis at {URL} (CI starts one)")
        pytest.skip(f"no Redis at {URL}")
    return RedisCache(URL, {"KEY_PREFIX": "test-redis-cache"})  # no clear(): it would empty the whole db


def test_one_client_serves_every_call_and_the_cache_works(cache):
    first = cache._cache.get_client(write=True)
    assert cache._cache.get_client(write=True) is first
    cache.set("answer", 42, timeout=30)
    assert cache.get("answer") == 42
    assert cache.incr("answer") == 43
    cache.delete("answer")
    assert cache.get("answer") is None
    assert cache._cache.get_client() is first  # one server: reads and writes share the pool
