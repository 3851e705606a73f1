"""Delivering: what the delivery worker does (casework.outbox.tasks).

`delivery_attempt` claims a due delivery with a conditional UPDATE (a duplicate message finds
it claimed and does nothing), sends one signed request outside any transaction, keeping its
claim's short lease fresh while the request is in flight (casework/outbox/leases.py), and
records the answer conditional on its claim. At least once: a worker that dies after the
receiver answered but before the record stops renewing; its claim lapses within
WEBHOOK_LEASE_SECONDS and the delivery is sent again under the same `webhook-id`. A failed
attempt's retry is held for the worker that will send it at its due time (an ETA message,
sent by casework.outbox.tasks.outbox_deliver), until that time plus a lease. The database, not the broker, says what is due
(`deliveries_due`, swept by casework.outbox.tasks.outbox_deliver_due).

Apart from casework/outbox/services.py, which wakes the workers: the tasks call this module,
and nothing here sends a task.
"""

from __future__ import annotations

import logging
import math
import random
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Case, F, Q, Value, When
from django.db.models.functions import Greatest
from django.utils import timezone

from audit.services import audit_record
from casework.outbox import metrics
from casework.outbox.catalogue import EVENT_TYPES
from casework.outbox.leases import call_holding_lease, lease_seconds, retry_hold, waiting_due_q
from casework.outbox.models import Delivery, DeliveryAttempt, Endpoint
from casework.outbox.signals import action_delivery_answered, endpoint_owner_notice

logger = logging.getLogger(__name__)

WAITING = (Delivery.State.PENDING, Delivery.State.RETRYING)


def deliveries_due(*, now: datetime, limit: int = 500) -> list[int]:
    """Deliveries a worker should take now, oldest due first: waiting and due, of an enabled
    endpoint outside its cool-off, held by nobody with no wake-up sent in the last
    WEBHOOK_REDELIVER_AFTER_SECONDS, or held by a holder whose lease ran out (leases.py);
    or being delivered by a worker whose claim lapsed. Of an endpoint whose breaker is
    half-open, only the first: it goes as the probe."""
    rows = (
        Delivery.objects.filter(endpoint__enabled=True)
        .filter(Q(endpoint__paused_until__isnull=True) | Q(endpoint__paused_until__lte=now))
        .filter(Q(endpoint__probe_until__isnull=True) | Q(endpoint__probe_until__lte=now))
        .filter(waiting_due_q(now=now, waiting=WAITING)
                | Q(state=Delivery.State.DELIVERING, lease_until__lt=now))
        .order_by("next_attempt_at", "pk").values_list("pk", "endpoint_id", "endpoint__paused_until")[:limit])
    ids, probed = [], set()
    for pk, endpoint_id, paused_until in rows:
        if paused_until is not None:
            if endpoint_id in probed:
                continue
            probed.add(endpoint_id)
        ids.append(pk)
    return ids


def delivery_claim(delivery: Delivery, *, now: datetime) -> str | None:
    """Take the delivery for one attempt: returns the claim token, or None when it is not due,
    already taken, or done. One conditional UPDATE; a duplicate message gets None."""
    token = uuid.uuid4().hex
    lease = now + timedelta(seconds=lease_seconds())  # renewed while the request is in flight
    claimed = (Delivery.objects.filter(pk=delivery.pk)
               .filter(Q(state__in=WAITING, next_attempt_at__lte=now)
                       | Q(state=Delivery.State.DELIVERING, lease_until__lt=now))
               .update(state=Delivery.State.DELIVERING, claim_token=token, lease_until=lease,
                       attempts=F("attempts") + 1, updated_at=now))
    return token if claimed == 1 else None


def _probe_claim(endpoint: Endpoint, *, now: datetime) -> datetime | bool | None:
    """The breaker is half-open: take its one place for a probe with a conditional UPDATE.
    Returns the probe's lease (its claim on the place), False when another delivery holds
    it (or the breaker opened again), None when the breaker closed meanwhile (no probe needed)."""
    lease = now + timedelta(seconds=lease_seconds())  # renewed with the probe's claim
    taken = (Endpoint.objects.filter(pk=endpoint.pk, paused_until__lte=now)
             .filter(Q(probe_until__isnull=True) | Q(probe_until__lte=now))
             .update(probe_until=lease))
    if taken == 1:
        logger.info("Webhook endpoint %s is half-open: one delivery goes as a probe.", endpoint.pk)
        return lease
    closed = Endpoint.objects.filter(pk=endpoint.pk, paused_until__isnull=True).exists()
    return None if closed else False


def retry_delay(failed_attempts: int, schedule: list[int] | None = None) -> float | None:
    """Seconds before the next attempt after this many failed ones (of this schedule:
    WEBHOOK_RETRY_SCHEDULE unless given), or None when the schedule is spent. Jitter spreads
    a burst of failures over time."""
    schedule = settings.WEBHOOK_RETRY_SCHEDULE if schedule is None else schedule
    if failed_attempts > len(schedule):
        return None
    jitter = settings.WEBHOOK_RETRY_JITTER
    return schedule[failed_attempts - 1] * random.uniform(1 - jitter, 1 + jitter)  # noqa: S311 - not a secret


def delivery_attempt(delivery_id: int, *, now: datetime | None = None) -> Delivery | None:
    """One attempt of one delivery, if it is due and this worker claims it; returns it after
    the attempt, or None when there was nothing to do.

    Steps: read the delivery and its endpoint; leave it waiting if the endpoint is disabled or
    paused (no attempt spent); claim it; POST outside any transaction (the signature's
    timestamp is the moment it leaves, the clock's, whatever `now` the schedule runs on);
    record the answer, conditional on the claim."""
    from casework.outbox.sender import webhook_post

    now = now or timezone.now()
    delivery = Delivery.objects.select_related("endpoint", "event").filter(pk=delivery_id).first()
    if delivery is None:
        return None
    endpoint = delivery.endpoint
    if not endpoint.enabled or endpoint.is_paused(now):
        return None
    probe = _probe_claim(endpoint, now=now) if endpoint.paused_until is not None else None
    if probe is False:
        return None
    token = delivery_claim(delivery, now=now)
    if token is None:
        if probe:
            Endpoint.objects.filter(pk=endpoint.pk, probe_until=probe).update(probe_until=None)
        return None
    delivery.refresh_from_db(fields=["attempts"])
    import json

    body = json.dumps(delivery.event.payload, separators=(",", ":"), ensure_ascii=False)
    held = {"probe": probe}

    def renew(elapsed: float) -> None:
        """Still at it: the claim (and the probe's place) for another lease from now."""
        until = now + timedelta(seconds=elapsed + lease_seconds())
        Delivery.objects.filter(pk=delivery.pk, claim_token=token, state=Delivery.State.DELIVERING).update(
            lease_until=until)
        if held["probe"] and Endpoint.objects.filter(pk=endpoint.pk, probe_until=held["probe"]).update(
                probe_until=until):
            held["probe"] = until

    answer = call_holding_lease(
        lambda: webhook_post(url=endpoint.url, msg_id=delivery.event_id, body=body,
                             secrets=endpoint.signing_secrets(now), timeout=float(endpoint.timeout_seconds),
                             timestamp=timezone.now(), keep_chars=settings.WEBHOOK_RESPONSE_KEEP_CHARS),
        renew=renew)
    metrics.LATENCY.observe(answer.latency_ms / 1000)
    with transaction.atomic():
        _record(delivery, token=token, answer=answer, now=now, probe=probe is not None)
    delivery.refresh_from_db()
    return delivery


def _record(delivery: Delivery, *, token: str, answer, now: datetime, probe: bool = False) -> None:
    endpoint = delivery.endpoint
    common = {"claim_token": "", "lease_until": None, "last_status": answer.status,
              "last_response": answer.body, "last_error": answer.error, "last_latency_ms": answer.latency_ms,
              "updated_at": now}
    ours = Delivery.objects.filter(pk=delivery.pk, claim_token=token, state=Delivery.State.DELIVERING)
    if answer.ok:
        outcome, changes = "delivered", {"state": Delivery.State.DELIVERED, "delivered_at": now}
    elif answer.status == 410:
        outcome, changes = "gone", {"state": Delivery.State.DEAD}
    else:
        delay = retry_delay(delivery.attempts - delivery.retry_base)
        if delay is None:
            outcome, changes = "dead", {"state": Delivery.State.DEAD}
        else:
            due = now + timedelta(seconds=delay)
            outcome, changes = "retrying", {"state": Delivery.State.RETRYING, "woken_at": None,
                                            "next_attempt_at": due}
            if delay <= settings.WEBHOOK_RETRY_ETA_MAX_SECONDS:
                # Sent with an ETA at its due time by the task (outbox_deliver), held until
                # then plus a lease; a later one is the sweep's to send when due.
                changes |= retry_hold(now=now, due=due)
    if ours.update(**(common | changes)) != 1:
        logger.warning("Delivery %s was taken over by another worker; its answer is not recorded here.",
                       delivery.pk)
        return
    DeliveryAttempt.objects.create(delivery=delivery, number=delivery.attempts, at=now, status=answer.status,
                                   response=answer.body, error=answer.error, latency_ms=answer.latency_ms)
    event_type = EVENT_TYPES.get(delivery.event.type)
    if event_type is not None and event_type.action and outcome != "retrying":
        # An action event: the action it carries follows its delivery (casework/cases/actions/receivers.py).
        delivery.last_status, delivery.last_error = answer.status, answer.error
        delivery.state = Delivery.State.DELIVERED if answer.ok else Delivery.State.DEAD
        action_delivery_answered.send(sender=Delivery, delivery=delivery, ok=answer.ok, now=now)
    metrics.DELIVERIES.labels(outcome).inc()
    if answer.ok:
        if Endpoint.objects.filter(pk=endpoint.pk, paused_until__isnull=False).update(
                consecutive_failures=0, paused_until=None, probe_until=None, **BREAKER_COUNTS_RESET):
            # The probe (or a request sent before the breaker opened) got through: the breaker
            # closes, and what waited behind it goes at the next sweep (its wake-ups, sent while
            # the endpoint was paused, did nothing).
            logger.info("Webhook endpoint %s answered %s: circuit breaker closed.", endpoint.pk,
                        "the probe" if probe else "a request sent before its breaker opened")
            Delivery.objects.filter(endpoint=endpoint, state__in=WAITING).update(woken_at=None)
        else:
            _breaker_count(endpoint.pk, now=now, failed=False, consecutive_failures=0)
        return
    metrics.FAILURES.labels(metrics.failure_reason(answer.status, answer.error)).inc()
    if outcome == "gone":
        _endpoint_disable(endpoint=endpoint, reason="The receiver answered 410 Gone.")
        return
    attempts, failures = _breaker_count(endpoint.pk, now=now, failed=True,
                                        consecutive_failures=F("consecutive_failures") + 1)
    endpoint.refresh_from_db(fields=["consecutive_failures", "paused_until"])
    # An attempt of the previous window still partly inside counts whole toward the minimum
    # (the weighting would otherwise leave two failures a moment apart, either side of a
    # window's edge, at 1.99 attempts); the rate is the weighted one.
    too_many = (math.ceil(attempts - 1e-9) >= settings.WEBHOOK_BREAKER_MIN_ATTEMPTS
                and failures >= settings.WEBHOOK_BREAKER_FAILURE_RATE * attempts)
    if too_many or probe:
        # Opens, or (a failed probe) opens again for another cool-off.
        until = now + timedelta(seconds=settings.WEBHOOK_BREAKER_COOLOFF_SECONDS)
        Endpoint.objects.filter(pk=endpoint.pk).update(paused_until=until, probe_until=None)
        if probe:
            logger.warning("Webhook endpoint %s failed its probe: circuit breaker open again until %s.",
                           endpoint.pk, until)
        elif endpoint.paused_until is not None:
            logger.info("Webhook endpoint %s: a request sent before its breaker opened failed too; "
                        "open until %s.", endpoint.pk, until)
        else:
            logger.warning("Webhook endpoint %s: circuit breaker open until %s: %.0f of %.0f attempts failed "
                           "in the last %d s.", endpoint.pk, until, failures, attempts,
                           settings.WEBHOOK_BREAKER_WINDOW_SECONDS)
    if outcome == "dead":
        event = delivery.event
        what = f"HTTP {answer.status}" if answer.status is not None else answer.error
        _notify_owner(endpoint, case=event.case,
                      subject=f"Webhook delivery failed for good: {event.type} to {endpoint}",
                      body=f"Event {event.id} ({event.type}) could not be delivered to {endpoint.url} after "
                           f"{delivery.attempts} attempts; the last answer: {what}. Replay it from the admin "
                           "or the API once the receiver is fixed.")


BREAKER_COUNTS_RESET = {"breaker_attempts": 0, "breaker_failures": 0, "breaker_previous_attempts": 0,
                        "breaker_previous_failures": 0}


def _breaker_count(endpoint_id: int, *, now: datetime, failed: bool, **also) -> tuple[float, float]:
    """Count one answered attempt in the endpoint's window (one UPDATE: rows lock, so
    concurrent workers each count theirs) and return the attempts and failures of the last
    WEBHOOK_BREAKER_WINDOW_SECONDS: a sliding window estimated from two fixed ones (the
    current, and the previous weighted by how much of it is still inside), so the counts
    stay two numbers per endpoint however many attempts there are. Only a failure needs the
    figures (is the rate too high?); a success just counts and returns zeros."""
    size = settings.WEBHOOK_BREAKER_WINDOW_SECONDS
    window = int(now.timestamp() // size)
    failure = 1 if failed else 0
    # A worker whose `now` is a little behind counts into the current window.
    current, previous = Q(breaker_window__gte=window), Q(breaker_window=window - 1)
    Endpoint.objects.filter(pk=endpoint_id).update(
        breaker_previous_attempts=Case(When(current, then=F("breaker_previous_attempts")),
                                       When(previous, then=F("breaker_attempts")), default=Value(0)),
        breaker_previous_failures=Case(When(current, then=F("breaker_previous_failures")),
                                       When(previous, then=F("breaker_failures")), default=Value(0)),
        breaker_attempts=Case(When(current, then=F("breaker_attempts") + 1), default=Value(1)),
        breaker_failures=Case(When(current, then=F("breaker_failures") + failure), default=Value(failure)),
        breaker_window=Greatest(F("breaker_window"), Value(window)), **also)
    if not failed:
        return 0.0, 0.0
    row = Endpoint.objects.filter(pk=endpoint_id).values(
        "breaker_window", "breaker_attempts", "breaker_failures", "breaker_previous_attempts",
        "breaker_previous_failures").get()
    inside = min(1.0, max(0.0, 1 - (now.timestamp() - row["breaker_window"] * size) / size))
    return (row["breaker_attempts"] + inside * row["breaker_previous_attempts"],
            row["breaker_failures"] + inside * row["breaker_previous_failures"])


def _endpoint_disable(*, endpoint: Endpoint, reason: str) -> None:
    """In the caller's transaction: disable, audit, tell the owner."""
    Endpoint.objects.filter(pk=endpoint.pk).update(enabled=False, disabled_reason=reason[:300],
                                                   updated_at=timezone.now())
    audit_record(actor="system", action="webhook.endpoint_disabled", obj=endpoint,
                 data={"url": endpoint.url, "reason": reason})
    _notify_owner(endpoint, subject=f"Webhook endpoint disabled: {endpoint}",
                  body=f"{endpoint.url} was disabled: {reason} Its deliveries wait; enable it again "
                       "in the admin or the API to resume them.")


def _notify_owner(endpoint: Endpoint, *, subject: str, body: str, case=None) -> None:
    """Tell the endpoint's owner; an endpoint with no (active) owner is the admins' to mend,
    so every active admin is told instead. Nobody at all to tell: a warning in the log. The
    notifications app sends them (endpoint_owner_notice: it sits in a layer above)."""
    owner = endpoint.owner if endpoint.owner_id and endpoint.owner.is_active else None
    recipients = [owner] if owner is not None else _admins()
    if not recipients:
        logger.warning("%s (endpoint %s has no owner and there is no admin to notify)", subject, endpoint.pk)
        return
    if owner is None:
        body += " This endpoint has no owner: you are told as an admin; set its owner in the admin."
    endpoint_owner_notice.send(sender=Endpoint, users=recipients, subject=subject, body=body,
                               url=f"/admin/outbox/endpoint/{endpoint.pk}/change/", case=case)


def _admins() -> list[User]:
    """Active users holding the admin role (the group, or a superuser: casework.people.roles)."""
    from casework.people.roles import ADMIN

    return list(User.objects.filter(Q(groups__name=ADMIN) | Q(is_superuser=True), is_active=True)
                .distinct().order_by("pk"))
