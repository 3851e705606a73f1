"""Django's Redis cache, keeping one redis.Redis client per connection pool.

Django's RedisCacheClient builds a new redis.Redis for every cache call (get_client), and a
redis-py 5 client copies its ~170 response callbacks into a case-insensitive dict when it is
made: about 1 ms of CPU on this machine under load, four times per API request (the throttle
reads and writes its counter, the circuit breaker ...). A client is only a pool and those
callbacks, and is safe to share between threads, so one per pool is kept. CACHE_URL=redis://...
selects this backend (casework/settings.py)."""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient as DjangoRedisCacheClient


class RedisCacheClient(DjangoRedisCacheClient):
    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        clients = self.__dict__.setdefault("_clients", {})
        client = clients.get(id(pool))
        if client is None:
            client = clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = RedisCacheClient
