"""The webhook circuit breaker opens on a failure rate over a window, not on a short run of
failures: a receiver that fails now and then (30% under concurrency makes five in a row a
matter of time) keeps its deliveries flowing; one that fails most attempts is paused, and a
half-open probe resumes it. A real receiver; the clock is given (`now=`), never waited for."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from casework.cases.services import case_create
from casework.outbox.delivery import delivery_attempt
from casework.outbox.models import Delivery
from casework.outbox.tasks import outbox_deliver_due

pytestmark = pytest.mark.django_db

SECOND = timedelta(seconds=1)


@pytest.fixture
def breaker(settings):
    settings.WEBHOOK_BREAKER_WINDOW_SECONDS = 60
    settings.WEBHOOK_BREAKER_MIN_ATTEMPTS = 10
    settings.WEBHOOK_BREAKER_FAILURE_RATE = 0.5
    settings.WEBHOOK_BREAKER_COOLOFF_SECONDS = 300
    settings.WEBHOOK_RETRY_SCHEDULE = [3600]  # no retry falls due inside these tests


def _window_start():
    """A moment just after a window begins (WEBHOOK_BREAKER_WINDOW_SECONDS, 60, apart), still
    to come: where the window's edges fall then never depends on when the test runs."""
    from datetime import UTC, datetime

    now = timezone.now().timestamp()
    return datetime.fromtimestamp((now // 60 + 1) * 60 + 1, tz=UTC)


def _deliveries(alice, n: int) -> list[int]:
    """n events, their on-commit wake-ups never sent (a plain `db` test): each test sends them."""
    for i in range(n):
        case_create(actor=alice, case_type="fraud_alert", title=f"Case {i}")
    return list(Delivery.objects.order_by("pk").values_list("pk", flat=True))


def test_five_failures_in_a_row_at_a_low_failure_rate_leave_the_breaker_closed(alice, receiver, endpoint, breaker):
    receiver.script = [200] * 10 + [503] * 5 + [200] * 15  # 5 of 30 (17%), all five in a row
    ids = _deliveries(alice, 30)
    t = _window_start()
    for i, pk in enumerate(ids):
        delivery_attempt(pk, now=t + i * SECOND)

    endpoint.refresh_from_db()
    assert endpoint.breaker_state(t + 30 * SECOND) == "closed"
    assert len(receiver.received) == 30  # every one was sent; none waited out a cool-off
    assert Delivery.objects.filter(state=Delivery.State.DELIVERED).count() == 25


def test_a_high_failure_rate_over_the_window_opens_it_and_a_probe_closes_it(alice, receiver, endpoint, breaker):
    receiver.script = [503] * 10
    ids = _deliveries(alice, 12)
    t = _window_start()
    for i, pk in enumerate(ids[:9]):
        delivery_attempt(pk, now=t + i * SECOND)
    endpoint.refresh_from_db()
    # Nine failures in a row, but fewer attempts than the window needs to judge: still closed.
    assert endpoint.breaker_state(t + 9 * SECOND) == "closed"

    delivery_attempt(ids[9], now=t + 9 * SECOND)  # the tenth: 10 attempts, 100% failed
    endpoint.refresh_from_db()
    assert endpoint.breaker_state(t + 10 * SECOND) == "open"
    assert delivery_attempt(ids[10], now=t + 10 * SECOND) is None  # waits, no attempt spent
    assert len(receiver.received) == 10

    # Cool-off over: one delivery goes alone as the probe; its 2xx closes the breaker ...
    later = t + 9 * SECOND + 301 * SECOND
    assert outbox_deliver_due(now=later) == 1
    endpoint.refresh_from_db()
    assert endpoint.breaker_state(later) == "closed"
    # ... and what waited goes at the next sweep; the failures before it are forgotten.
    assert outbox_deliver_due(now=later + SECOND) == 1
    assert Delivery.objects.filter(state=Delivery.State.DELIVERED).count() == 2
    assert len(receiver.received) == 12


def test_failures_older_than_the_window_are_forgotten(alice, receiver, endpoint, breaker):
    receiver.script = [503] * 12
    ids = _deliveries(alice, 12)
    t = _window_start()
    for i, pk in enumerate(ids[:9]):
        delivery_attempt(pk, now=t + i * SECOND)
    # Nine failures, then three more two windows later: never ten attempts in one window.
    for i, pk in enumerate(ids[9:]):
        delivery_attempt(pk, now=t + 200 * SECOND + i * SECOND)
    endpoint.refresh_from_db()
    assert endpoint.breaker_state(t + 203 * SECOND) == "closed"
    assert len(receiver.received) == 12
