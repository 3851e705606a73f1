"""Velocity counters in Redis (TXN_AGGREGATES_REDIS_URL) survive a real Redis restart: a
throwaway redis-server of this test's own (never the shared one), killed with SIGKILL and
started again empty, as bench/infra_restarts.py does; the rebuild from the database then gives
the same counters, and the same decisions, as if Redis had never gone."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from datetime import UTC, datetime, timedelta

import pytest
import redis
from rest_framework.test import APIClient

from casework.transactions import aggregates
from casework.transactions.aggregates import redis_store
from casework.transactions.decisions.api import DecideApi
from casework.transactions.monitoring.services import rule_create, rule_version_approve

pytestmark = pytest.mark.django_db

WHEN = datetime(2026, 11, 29, 7, 0, tzinfo=UTC)


class RedisServer:
    """redis-server on a free 127.0.0.1 port, without persistence: a restart starts empty."""

    def __init__(self, binary: str, directory) -> None:
        self.binary, self.directory = binary, directory
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.directory)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        probe = redis.Redis.from_url(self.url, socket_connect_timeout=0.2)
        for _ in range(200):  # readiness, not timing: up to ~10 s on a loaded machine
            try:
                probe.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def restart(self) -> None:
        self.kill()
        self.start()


@pytest.fixture
def redis_server(tmp_path, settings):
    binary = shutil.which("redis-server")
    if binary is None:
        # CI installs redis-server: there a missing one is a broken machine, never a pass.
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (CI installs it)")
        pytest.skip("redis-server is not installed")
    server = RedisServer(binary, tmp_path)
    server.start()
    settings.TXN_AGGREGATES_REDIS_URL = server.url
    settings.TXN_AGGREGATES_REBUILD_GRACE_S = 0  # one connection, nothing in flight: no wait
    yield server
    server.kill()


class StepClock:
    """The budget counted in steps, never in machine time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def txn(n: int, card: str, amount: str, device: str, seconds: int) -> dict:
    return {"transaction_id": f"TX-{card}-{n}", "account_id": card, "card_last4": "4242", "amount": amount,
            "currency": "EUR", "merchant": "Web Shop", "mcc": "5999", "country": "NL", "channel": "ecommerce",
            "device_id": device, "occurred_at": (WHEN + timedelta(seconds=seconds)).isoformat(),
            "home_country": "NL"}


# One stream (amount, device, seconds): small charges 20 s apart on a third device, then a large
# one 20 minutes later (out of the 10-minute window, within the hour).
STREAM = [("2.00", "dev-1", 0), ("3.00", "dev-1", 20), ("2.50", "dev-2", 40), ("1.00", "dev-2", 60),
          ("4.00", "dev-3", 80), ("2.00", "dev-3", 100), ("90.00", "dev-3", 1200)]


def test_counters_rebuilt_after_a_redis_restart_give_the_same_decisions(redis_server, settings, monkeypatch,
                                                                        alice, mona):
    settings.TXN_DECISION_BUDGET_MS = 1_000_000
    monkeypatch.setattr(DecideApi, "clock", staticmethod(StepClock()))
    for name, action, conditions in [
        ("Card testing", "block", [{"agg": {"fn": "count", "by": "card", "window": "10m",
                                            "where": [{"field": "amount", "op": "lte", "value": 5}]},
                                    "op": "gte", "value": 5}]),
        ("Third device", "review", [{"agg": {"fn": "count_distinct", "of": "device", "by": "account",
                                             "window": "1h"}, "op": "gte", "value": 3}]),
        ("Above the average", "review", [{"field": "amount", "op": "gt", "than": {
            "agg": {"fn": "avg", "of": "amount", "by": "card", "window": "30d", "current": False}, "times": 3}}]),
    ]:
        rule_version_approve(actor=mona, version=rule_create(actor=alice, name=name, action=action, mode="live",
                                                             conditions=conditions))
    assert aggregates.rebuild()["redis"] == 0  # the first generation: empty history
    api = APIClient()
    api.force_authenticate(alice)

    def decide(n: int, card: str) -> tuple[str, list[str]]:
        body = api.post("/api/transactions/decide", txn(n, card, *STREAM[n]), format="json").json()
        return body["outcome"], [hit["reason"] for hit in body["hits"]]

    # Card A: the whole stream with Redis up. Card B: the first four, then Redis dies.
    without_restart = [decide(n, "CARD-A") for n in range(len(STREAM))]
    before_restart = [decide(n, "CARD-B") for n in range(4)]
    counters = redis_store.snapshot()

    redis_server.restart()  # SIGKILL, then a new empty server on the same port
    assert not redis_store.ready() and redis_store.snapshot() == (set(), set())
    assert aggregates.ensure()  # what the beat does every 30 s: Redis lost them, rebuild
    assert redis_store.ready() and redis_store.snapshot() == counters

    after_rebuild = [decide(n, "CARD-B") for n in range(4, len(STREAM))]
    assert before_restart + after_rebuild == without_restart
    outcomes = [outcome for outcome, _ in without_restart]
    assert outcomes == ["allow", "allow", "allow", "allow", "block", "block", "review"], without_restart
    assert "count(card, 10m where amount ≤ 5) = 5 ≥ 5" in without_restart[4][1]
