"""kombu's Redis transport, keeping one client per channel for its synchronous commands.

kombu builds a new `redis.Redis` on the channel's connection pool for each block of
synchronous commands (`Channel.conn_or_acquire`): a delivered message's entry in the unacked
index, its removal when the task is acknowledged, each publish. Building one copies redis-py's
table of response callbacks (a few hundred entries) into a case-insensitive dict: about 60 us,
at least twice per task, 1.6% of a busy worker's CPU (bench/README.md, runtime_throughput).

A `redis.Redis` holds no connection of its own: each command takes one from the pool and gives
it back, so threads share it safely. The channel keeps one per pool and builds another when
kombu replaces its pool (after a fork, or when it reconnects).

casework/celery.py points kombu's "redis" and "rediss" aliases here, so CELERY_BROKER_URL
stays `redis://...`.
"""

from __future__ import annotations

from kombu.transport import redis


class Channel(redis.Channel):
    _sync_client: tuple | None = None  # (the pool it was built on, the client)

    def _create_client(self, asynchronous=False):
        if asynchronous:  # the consumer's own client (BRPOP), built once by kombu already
            return super()._create_client(asynchronous=True)
        pool = self.pool
        held = self._sync_client
        if held is None or held[0] is not pool:
            held = self._sync_client = (pool, super()._create_client())
        return held[1]


class Transport(redis.Transport):
    Channel = Channel
