"""Every write to the outbox goes through these functions.

Events: `event_record` is called inside the transaction of what happened (a decision, an
assignment) and writes the event and one Delivery per subscribed endpoint there, so the
event exists exactly when the change committed. After commit, one Celery message per
delivery wakes a worker; the database, not the broker, says what is due
(`deliveries_due`, swept by casework.outbox.tasks.outbox_deliver_due).

Delivering: `delivery_attempt` claims a due delivery with a conditional UPDATE (a duplicate
message finds it claimed and does nothing), sends one signed request outside any transaction,
and records the answer conditional on its claim. At least once: a worker that dies after the
receiver answered but before the record leaves the claim to expire (lease_until), and the
delivery is sent again under the same `webhook-id`.
"""

from __future__ import annotations

import logging
import random
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from audit.rowsql import rows_all, rows_insert
from audit.services import audit_record
from casework.errors import Conflict
from casework.outbox import metrics
from casework.outbox.case_types import case_types_known
from casework.outbox.catalogue import EVENT_TYPES
from casework.outbox.models import Delivery, DeliveryAttempt, Endpoint, OutboxEvent, secret_new
from casework.outbox.safety import url_resolve_checked
from casework.outbox.signals import action_delivery_answered, endpoint_owner_notice

logger = logging.getLogger(__name__)

EVENT_FIELDS = tuple(f.name for f in OutboxEvent._meta.concrete_fields)  # its id is ours, not the database's

# A claim outlives the request's timeout by this much before another worker may take it.
LEASE_MARGIN_SECONDS = 30
WAITING = (Delivery.State.PENDING, Delivery.State.RETRYING)


# --- Events --------------------------------------------------------------------------------

def case_data(case) -> dict:
    return {"reference": case.reference, "case_type": case.case_type, "title": case.title,
            "status": case.status, "priority": case.priority,
            "assignee": case.assignee.get_username() if case.assignee_id else None,
            "url": f"/cases/{case.reference}/"}


def decision_data(decision) -> dict:
    """A decision as events carry it (catalogue.DECISION)."""
    return {"outcome": decision.outcome, "outcome_label": str(decision.outcome_label), "reason": decision.reason,
            "decided_by": decision.decided_by.get_username() if decision.decided_by_id else None,
            "decided_at": decision.decided_at.isoformat()}


# No savepoint of its own inside the caller's transaction (two round trips at every run's end):
# no caller goes on after an error here, so the caller's transaction rolls back whole anyway.
@transaction.atomic(savepoint=False)
def event_record(*, type: str, case=None, data: dict, now: datetime | None = None,  # noqa: A002
                 event_id: str | None = None) -> OutboxEvent:
    """Write one event and its deliveries in the caller's transaction; wake workers on commit.

    The endpoints are chosen now (enabled, subscribed to the type and the case's type): an
    endpoint added later does not receive earlier events, one paused by its circuit breaker
    does (its deliveries wait for it)."""
    event_type = EVENT_TYPES.get(type)
    if event_type is None:
        raise ValueError(f"Unknown event type {type!r}: add it to casework/outbox/catalogue.py, "
                         "or register it (catalogue.event_type_register) from the case type's AppConfig.ready.")
    now = now or timezone.now()
    case_type = case.case_type if case is not None else ""
    event_id = event_id or OutboxEvent._meta.get_field("id").default()
    event = OutboxEvent(
        id=event_id, type=type, version=event_type.version, case=case, case_type=case_type, created_at=now,
        payload={"id": event_id, "type": type, "version": event_type.version,
                 "timestamp": now.isoformat(), "data": data},
    )
    rows_insert([event], fields=EVENT_FIELDS)  # its INSERT built once (audit.rowsql): one per run's end
    # Compiled once (audit.rowsql): every run's end records an event.
    endpoints = [e for e in rows_all("outbox endpoints enabled", lambda: Endpoint.objects.filter(enabled=True))
                 if e.subscribes(type, case_type)]
    if endpoints:
        deliveries = Delivery.objects.bulk_create([
            Delivery(event=event, endpoint=endpoint, next_attempt_at=now, woken_at=now, created_at=now)
            for endpoint in endpoints])
        ids = [d.pk for d in deliveries] if all(d.pk for d in deliveries) else \
            list(Delivery.objects.filter(event=event).values_list("pk", flat=True))
        transaction.on_commit(lambda: _wake(ids))
    return event


def _wake(ids: list[int]) -> None:
    from casework.outbox.tasks import outbox_deliver

    for pk in ids:
        try:
            outbox_deliver.delay(pk)
        except Exception:  # noqa: BLE001 - the sweep sends it later; the decision stands
            logger.warning("Could not enqueue webhook delivery %s; the sweep will send it.", pk, exc_info=True)


# --- Endpoints ----------------------------------------------------------------------------

def _clean_subscriptions(event_types, case_types) -> tuple[list[str], list[str]]:
    known = case_types_known()
    event_types, case_types = list(dict.fromkeys(event_types or [])), list(dict.fromkeys(case_types or []))
    unknown = [t for t in event_types if t not in EVENT_TYPES]
    if unknown:
        raise ValidationError({"event_types": f"Unknown event type(s): {', '.join(unknown)}. "
                                              f"Choose from: {', '.join(EVENT_TYPES)}."})
    unknown = [t for t in case_types if t not in known]
    if unknown:
        raise ValidationError({"case_types": f"Unknown case type(s): {', '.join(unknown)}. "
                                             f"Choose from: {', '.join(known)}."})
    return event_types, case_types


def _audit_data(endpoint: Endpoint) -> dict:
    """What an endpoint's audit entry says about it: never its secrets."""
    return {"url": endpoint.url, "description": endpoint.description, "enabled": endpoint.enabled,
            "event_types": endpoint.event_types, "case_types": endpoint.case_types,
            "timeout_seconds": endpoint.timeout_seconds,
            "owner": endpoint.owner.get_username() if endpoint.owner_id else None}


@transaction.atomic
def endpoint_create(*, actor, url: str, description: str = "", event_types=None, case_types=None,
                    timeout_seconds: int = 10, owner: User | None = None,
                    enabled: bool = True) -> tuple[Endpoint, str]:
    """A new endpoint and its signing secret, returned here once (the caller shows it once)."""
    url_resolve_checked(url)
    event_types, case_types = _clean_subscriptions(event_types, case_types)
    endpoint = Endpoint(url=url, description=description, event_types=event_types, case_types=case_types,
                        timeout_seconds=timeout_seconds, enabled=enabled,
                        owner=owner if owner is not None else (actor if isinstance(actor, User) else None))
    endpoint.full_clean()
    endpoint.save()
    audit_record(actor=actor, action="webhook.endpoint_created", obj=endpoint, data=_audit_data(endpoint))
    return endpoint, endpoint.secret


EDITABLE = ("url", "description", "enabled", "event_types", "case_types", "timeout_seconds", "owner")


@transaction.atomic
def endpoint_update(*, actor, endpoint: Endpoint, **changes) -> Endpoint:
    """Change an endpoint's settings; enabling it again also closes its circuit breaker."""
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise ValidationError({name: "This field cannot be changed." for name in unknown})
    endpoint = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
    before = _audit_data(endpoint)
    if "url" in changes and changes["url"] != endpoint.url:
        url_resolve_checked(changes["url"])
    if "event_types" in changes or "case_types" in changes:
        changes["event_types"], changes["case_types"] = _clean_subscriptions(
            changes.get("event_types", endpoint.event_types), changes.get("case_types", endpoint.case_types))
    for name, value in changes.items():
        setattr(endpoint, name, value)
    if changes.get("enabled") and not before["enabled"]:
        endpoint.disabled_reason = ""
        endpoint.consecutive_failures = 0
        endpoint.paused_until = None
        endpoint.probe_until = None
    endpoint.full_clean()
    endpoint.save()
    after = _audit_data(endpoint)
    changed = {k: {"from": before[k], "to": after[k]} for k in after if before[k] != after[k]}
    if changed:
        audit_record(actor=actor, action="webhook.endpoint_updated", obj=endpoint, data={"changed": changed})
    return endpoint


@transaction.atomic
def endpoint_rotate_secret(*, actor, endpoint: Endpoint, now: datetime | None = None) -> tuple[Endpoint, str]:
    """A new signing secret; the current one keeps signing beside it for
    WEBHOOK_SECRET_OVERLAP_HOURS, so receivers can switch without missing a delivery."""
    now = now or timezone.now()
    endpoint = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_secret_expires_at = now + timedelta(hours=settings.WEBHOOK_SECRET_OVERLAP_HOURS)
    endpoint.secret = secret_new()
    endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at", "updated_at"])
    audit_record(actor=actor, action="webhook.secret_rotated", obj=endpoint,
                 data={"url": endpoint.url, "previous_valid_until": endpoint.previous_secret_expires_at.isoformat()})
    return endpoint, endpoint.secret


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


# --- Replay -------------------------------------------------------------------------------

@transaction.atomic
def delivery_replay(*, actor, delivery: Delivery, now: datetime | None = None) -> Delivery:
    """Send a delivery again (delivered, dead or waiting): the same event id, attempts counted
    on from where they are, one more full retry schedule."""
    now = now or timezone.now()
    delivery = Delivery.objects.select_for_update().select_related("endpoint", "event").get(pk=delivery.pk)
    if delivery.state == Delivery.State.DELIVERING and delivery.lease_until and delivery.lease_until > now:
        raise Conflict("This delivery is being sent right now.", code="delivering")
    previous = delivery.state
    _replay_reset(Delivery.objects.filter(pk=delivery.pk), now)
    audit_record(actor=actor, action="webhook.delivery_replayed", case=delivery.event.case, obj=delivery,
                 data={"event": delivery.event_id, "type": delivery.event.type, "endpoint": delivery.endpoint.url,
                       "from": previous})
    pk = delivery.pk
    transaction.on_commit(lambda: _wake([pk]))
    delivery.refresh_from_db()
    return delivery


@transaction.atomic
def endpoint_replay_failed(*, actor, endpoint: Endpoint, now: datetime | None = None) -> int:
    """Send every dead delivery of the endpoint again; returns how many."""
    now = now or timezone.now()
    dead = Delivery.objects.filter(endpoint=endpoint, state=Delivery.State.DEAD)
    ids = list(dead.values_list("pk", flat=True))
    _replay_reset(Delivery.objects.filter(pk__in=ids), now)
    audit_record(actor=actor, action="webhook.deliveries_replayed", obj=endpoint,
                 data={"endpoint": endpoint.url, "count": len(ids)})
    transaction.on_commit(lambda: _wake(ids))
    return len(ids)


def _replay_reset(queryset, now: datetime) -> None:
    # The retry schedule restarts: `attempts` keeps counting, `retry_base` marks where it restarted.
    queryset.update(state=Delivery.State.PENDING, next_attempt_at=now, woken_at=now, claim_token="",
                    lease_until=None, retry_base=F("attempts"), updated_at=now)


# --- Delivering ---------------------------------------------------------------------------

def deliveries_due(*, now: datetime, limit: int = 500) -> list[int]:
    """Deliveries a worker should take now, oldest due first: waiting and due, of an enabled
    endpoint outside its cool-off, and with no wake-up sent in the last
    WEBHOOK_REDELIVER_AFTER_SECONDS; or being delivered by a worker whose claim expired.
    Of an endpoint whose breaker is half-open, only the first: it goes as the probe."""
    quiet = now - timedelta(seconds=settings.WEBHOOK_REDELIVER_AFTER_SECONDS)
    rows = (
        Delivery.objects.filter(endpoint__enabled=True)
        .filter(Q(endpoint__paused_until__isnull=True) | Q(endpoint__paused_until__lte=now))
        .filter(Q(endpoint__probe_until__isnull=True) | Q(endpoint__probe_until__lte=now))
        .filter(Q(state__in=WAITING, next_attempt_at__lte=now) & (Q(woken_at__isnull=True) | Q(woken_at__lte=quiet))
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


def deliveries_mark_woken(ids: list[int], now: datetime) -> None:
    Delivery.objects.filter(pk__in=ids).update(woken_at=now)


def delivery_claim(delivery: Delivery, *, now: datetime) -> str | None:
    """Take the delivery for one attempt: returns the claim token, or None when it is not due,
    already taken, or done. One conditional UPDATE; a duplicate message gets None."""
    token = uuid.uuid4().hex
    lease = now + timedelta(seconds=delivery.endpoint.timeout_seconds + LEASE_MARGIN_SECONDS)
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
    lease = now + timedelta(seconds=endpoint.timeout_seconds + LEASE_MARGIN_SECONDS)
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
    answer = webhook_post(url=endpoint.url, msg_id=delivery.event_id, body=body,
                          secrets=endpoint.signing_secrets(now), timeout=float(endpoint.timeout_seconds),
                          timestamp=timezone.now(), keep_chars=settings.WEBHOOK_RESPONSE_KEEP_CHARS)
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
            outcome, changes = "retrying", {"state": Delivery.State.RETRYING, "woken_at": None,
                                            "next_attempt_at": now + timedelta(seconds=delay)}
    if ours.update(**common, **changes) != 1:
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
                consecutive_failures=0, paused_until=None, probe_until=None):
            # The probe (or a request sent before the breaker opened) got through: the breaker
            # closes, and what waited behind it goes at the next sweep (its wake-ups, sent while
            # the endpoint was paused, did nothing).
            logger.info("Webhook endpoint %s answered %s: circuit breaker closed.", endpoint.pk,
                        "the probe" if probe else "a request sent before its breaker opened")
            Delivery.objects.filter(endpoint=endpoint, state__in=WAITING).update(woken_at=None)
        else:
            Endpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=0)
        return
    metrics.FAILURES.labels(metrics.failure_reason(answer.status, answer.error)).inc()
    if outcome == "gone":
        _endpoint_disable(endpoint=endpoint, reason="The receiver answered 410 Gone.")
        return
    Endpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=F("consecutive_failures") + 1)
    endpoint.refresh_from_db(fields=["consecutive_failures", "paused_until"])
    if endpoint.consecutive_failures >= settings.WEBHOOK_BREAKER_THRESHOLD or probe:
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
            logger.warning("Webhook endpoint %s: circuit breaker open until %s after %d failures in a row.",
                           endpoint.pk, until, endpoint.consecutive_failures)
    if outcome == "dead":
        event = delivery.event
        what = f"HTTP {answer.status}" if answer.status is not None else answer.error
        _notify_owner(endpoint, case=event.case,
                      subject=f"Webhook delivery failed for good: {event.type} to {endpoint}",
                      body=f"Event {event.id} ({event.type}) could not be delivered to {endpoint.url} after "
                           f"{delivery.attempts} attempts; the last answer: {what}. Replay it from the admin "
                           "or the API once the receiver is fixed.")
