"""kombu's Redis transport with one client per channel (casework/broker_redis.py), against a
real Redis: messages go through and are acknowledged as before, with one client built."""

from __future__ import annotations

import uuid

from kombu import Connection
from kombu.transport import redis, resolve_transport

import casework.celery  # noqa: F401 - sets the transport aliases, as `celery -A casework` does
from casework.broker_redis import Transport

BROKER = "redis://127.0.0.1:6379/14"


def test_redis_urls_use_the_casework_transport():
    assert resolve_transport("redis") is Transport
    assert resolve_transport("rediss") is Transport


def test_a_channel_builds_its_synchronous_client_once_per_pool_and_messages_still_flow(monkeypatch):
    queue = f"test-broker-redis-{uuid.uuid4().hex}"
    built = []
    original = redis.Channel._create_client

    def counting(self, asynchronous=False):  # kombu's own: builds a new client each time
        built.append(asynchronous)
        return original(self, asynchronous)

    monkeypatch.setattr(redis.Channel, "_create_client", counting)
    with Connection(BROKER) as conn:
        channel = conn.default_channel
        assert isinstance(channel, Transport.Channel)
        try:
            simple = conn.SimpleQueue(queue)
            for n in range(5):
                simple.put({"n": n})
            received, tags = [], []
            for _ in range(5):
                message = simple.get(timeout=5)
                received.append(message.payload["n"])
                tags.append(message.delivery_tag)
                message.ack()  # the unacked index's entry removed, through the shared client
            assert received == [0, 1, 2, 3, 4]
            assert built.count(False) <= 1  # five publishes and five acks, one synchronous client
            first = channel._create_client()
            assert channel._create_client() is first
            channel._disconnect_pools()  # what kombu does after a fork or a lost connection
            assert channel._create_client() is not first
            with channel.conn_or_acquire() as client:
                assert client.llen(queue) == 0
                # Every one of this test's messages acknowledged. Its own tags, not the index's
                # size: the database may be an xdist worker's broker too (tests/xdist_worker.py).
                assert [client.zscore(channel.unacked_index_key, tag) for tag in tags] == [None] * 5
            simple.close()
        finally:
            channel.client.delete(queue)
