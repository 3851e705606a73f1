"""Every write to the outbox goes through these functions.

Events: `event_record` is called inside the transaction of what happened (a decision, an
assignment) and writes the event and one Delivery per subscribed endpoint there, so the
event exists exactly when the change committed. After commit, one Celery message per
delivery wakes a worker; the database, not the broker, says what is due
(`deliveries_due`, swept by casework.outbox.tasks.outbox_deliver_due).

Delivering, what the worker does with each, is casework/outbox/delivery.py.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agents.runtime.effects import effect_key_next
from audit.rowsql import rows_all, rows_insert
from audit.services import audit_record
from casework.case_type_source import case_types_known
from casework.errors import Conflict
from casework.outbox.catalogue import EVENT_TYPES
from casework.outbox.models import Delivery, Endpoint, OutboxEvent, secret_new
from casework.outbox.safety import url_resolve_checked
from casework.people.models import Team

logger = logging.getLogger(__name__)

EVENT_FIELDS = tuple(f.name for f in OutboxEvent._meta.concrete_fields)  # its id is ours, not the database's



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
    if event_id is None and (effect_key := effect_key_next()) is not None:
        # Recorded by a call a person approved (agents.runtime.effects): the same call made
        # again after its worker died finds its event and records none twice.
        event_id = f"evt_{uuid.uuid5(uuid.NAMESPACE_URL, 'casework-effect:' + effect_key).hex}"
        if (recorded := OutboxEvent.objects.filter(id=event_id).first()) is not None:
            return recorded
    event_id = event_id or OutboxEvent._meta.get_field("id").default()
    event = OutboxEvent(
        id=event_id, type=type, version=event_type.version, case=case, case_type=case_type, created_at=now,
        payload={"id": event_id, "type": type, "version": event_type.version,
                 "timestamp": now.isoformat(), "data": data},
    )
    rows_insert([event], fields=EVENT_FIELDS)  # its INSERT built once (audit.rowsql): one per run's end
    # Compiled once (audit.rowsql): every run's end records an event.
    enabled = rows_all("outbox endpoints enabled", lambda: Endpoint.objects.filter(enabled=True))
    teams = _team_case_types({e.team_id for e in enabled if e.team_id is not None})
    restricted = bool(getattr(case, "restricted", False))
    endpoints = [e for e in enabled
                 if e.subscribes(type, case_type, team_types=teams.get(e.team_id, ()), restricted=restricted)]
    if endpoints:
        deliveries = Delivery.objects.bulk_create([
            Delivery(event=event, endpoint=endpoint, next_attempt_at=now, woken_at=now, created_at=now)
            for endpoint in endpoints])
        ids = [d.pk for d in deliveries] if all(d.pk for d in deliveries) else \
            list(Delivery.objects.filter(event=event).values_list("pk", flat=True))
        transaction.on_commit(lambda: _wake(ids))
    return event


def _team_case_types(team_ids: set[int]) -> dict[int, frozenset[str]]:
    """The case types each of these teams owns now (one query, only when a team's endpoint exists)."""
    if not team_ids:
        return {}
    return {pk: frozenset(types or ()) for pk, types in Team.objects.filter(pk__in=team_ids)
            .values_list("pk", "case_types")}


def _wake(ids: list[int]) -> None:
    from casework.outbox.tasks import outbox_deliver

    for pk in ids:
        try:
            outbox_deliver.delay(pk)
        except Exception:  # noqa: BLE001 - the sweep sends it later; the decision stands
            logger.warning("Could not enqueue webhook delivery %s; the sweep will send it.", pk, exc_info=True)


# --- Endpoints ----------------------------------------------------------------------------

def _clean_team(team: Team | None, case_types: list[str]) -> None:
    """A team's endpoint subscribes within its team's case types (it would receive no others)."""
    if team is None:
        return
    outside = [t for t in case_types if t not in (team.case_types or [])]
    if outside:
        raise ValidationError({"case_types": f"{team.name} does not own {', '.join(outside)}: a team's endpoint "
                                             "receives only its team's case types."})


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
            "owner": endpoint.owner.get_username() if endpoint.owner_id else None,
            "team": endpoint.team.name if endpoint.team_id else None}


@transaction.atomic
def endpoint_create(*, actor, url: str, description: str = "", event_types=None, case_types=None,
                    timeout_seconds: int = 10, owner: User | None = None,
                    enabled: bool = True, team: Team | None = None) -> tuple[Endpoint, str]:
    """A new endpoint and its signing secret, returned here once (the caller shows it once).
    `team`: a team's system, receiving only its team's case types (Endpoint.team)."""
    url_resolve_checked(url)
    event_types, case_types = _clean_subscriptions(event_types, case_types)
    _clean_team(team, case_types)
    endpoint = Endpoint(url=url, description=description, event_types=event_types, case_types=case_types,
                        timeout_seconds=timeout_seconds, enabled=enabled, team=team,
                        owner=owner if owner is not None else (actor if isinstance(actor, User) else None))
    endpoint.full_clean()
    endpoint.save()
    audit_record(actor=actor, action="webhook.endpoint_created", obj=endpoint, data=_audit_data(endpoint))
    return endpoint, endpoint.secret


EDITABLE = ("url", "description", "enabled", "event_types", "case_types", "timeout_seconds", "owner", "team")


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
    _clean_team(endpoint.team, endpoint.case_types)
    if changes.get("enabled") and not before["enabled"]:
        endpoint.disabled_reason = ""
        endpoint.consecutive_failures = 0
        endpoint.paused_until = None
        endpoint.probe_until = None
        from casework.outbox.delivery import BREAKER_COUNTS_RESET

        for name, value in BREAKER_COUNTS_RESET.items():
            setattr(endpoint, name, value)
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
