"""Actions: what a decision asks another system to do, and how far it got.

`action_request` is called by a case type inside its decision's transaction: it writes the
action event to the outbox (casework.outbox.services.event_record) and the Action that tracks
it, so both exist exactly when the decision committed. The delivery worker moves it to
delivered on a 2xx (or failed when every delivery died: `action_delivery_recorded`). The system
that carried it out confirms (or reports a failure) through a signed callback,
`action_callback`, verified with the Standard Webhooks reference library against the secrets
of the endpoints its event was delivered to; a person may confirm or fail it from the case
page (`action_resolve`). Every move goes through the lifecycle transition service, audited.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from audit.services import audit_record
from casework.cases.actions.states import ACTION_LIFECYCLE, CONFIRMED, DELIVERED, FAILED
from casework.cases.lifecycle.services import lifecycle_transition
from casework.errors import Conflict, DomainError
from casework.outbox.catalogue import EVENT_TYPES
from casework.outbox.models import Action, Delivery, Endpoint, event_id_new
from casework.outbox.services import case_data, event_record

REASON_MAX = 500
REFERENCE_MAX = 200


class SignatureRefused(DomainError):
    """A callback whose signature no secret of the action's endpoints verifies: 401."""

    status_code = 401


class ActionNotFound(DomainError):
    status_code = 404


def confirm_deadline_minutes(event_type: str) -> int:
    return int(settings.ACTION_CONFIRM_DEADLINES.get(event_type, settings.ACTION_CONFIRM_DEADLINE_MINUTES))


def confirm_path(event_id: str) -> str:
    return f"/api/actions/{event_id}/confirmation"


# --- Requesting ----------------------------------------------------------------------------

@transaction.atomic
def action_request(*, actor, type: str, case, data: dict, now: datetime | None = None) -> Action:  # noqa: A002
    """Write the action event (data: `case`, `action`, and the type's own `data`) and its
    Action, in the caller's transaction: a decision that rolls back asks for nothing."""
    event_type = EVENT_TYPES.get(type)
    if event_type is None or not event_type.action:
        raise ValueError(f"{type!r} is not a registered action event (an EventType with `action`).")
    now = now or timezone.now()
    event_id = event_id_new()
    deadline = now + timedelta(minutes=confirm_deadline_minutes(type))
    requested_by = actor if isinstance(actor, User) else None
    block = {"id": event_id, "kind": event_type.action,
             "requested_by": requested_by.get_username() if requested_by else None,
             "requested_at": now.isoformat(), "deadline": deadline.isoformat(), "confirm_url": confirm_path(event_id)}
    event = event_record(type=type, case=case, data={"case": case_data(case), "action": block, **data}, now=now,
                         event_id=event_id)
    action = Action(event=event, case=case, type=type, label=event_type.action, requested_by=requested_by,
                    requested_at=now, deadline_at=deadline)
    action.full_clean(validate_unique=False, validate_constraints=False)
    action.save()
    audit_record(actor=actor, action="action.requested", case=case, obj=action,
                 data={"type": type, "event": event_id, "label": event_type.action, "deadline": deadline.isoformat()})
    return action


# --- Delivery (the delivery worker's answer, in its transaction: receivers.py) ------------

def action_delivery_recorded(*, delivery: Delivery, ok: bool, now: datetime) -> None:
    """A delivery of an action event got its answer: a 2xx delivers the action (a replay that
    gets through after it failed too); a dead delivery fails it when no other delivery of its
    event got through or may still."""
    action = Action.objects.filter(event_id=delivery.event_id).first()
    if action is None:
        return
    endpoint = delivery.endpoint
    if ok:
        if action.delivered_at is None:
            action.delivered_at, action.delivered_to = now, str(endpoint)[:200]
        if action.state == CONFIRMED:
            # The system confirmed before this worker recorded its 2xx: keep when it was delivered.
            Action.objects.filter(pk=action.pk, delivered_at__isnull=True).update(
                delivered_at=now, delivered_to=str(endpoint)[:200])
            return
        if action.state in (Action.State.REQUESTED, FAILED):
            if action.state == FAILED:
                action.failure_reason = ""
            lifecycle_transition(actor="system", lifecycle=ACTION_LIFECYCLE, record=action, to=DELIVERED,
                                 reason=f"{endpoint} answered HTTP {delivery.last_status}.",
                                 data={"event": action.event_id, "endpoint": endpoint.url},
                                 save=("delivered_at", "delivered_to", "failure_reason"), fact=delivery)
        return
    if action.state != Action.State.REQUESTED:
        return
    others = Delivery.objects.filter(event_id=delivery.event_id).exclude(pk=delivery.pk)
    if others.exclude(state=Delivery.State.DEAD).exists():
        return
    what = f"HTTP {delivery.last_status}" if delivery.last_status else (delivery.last_error or "no answer")
    action.failure_reason = (f"Not delivered: {endpoint} answered {what} "
                             f"after {delivery.attempts} attempt{'s' if delivery.attempts != 1 else ''}.")[:REASON_MAX]
    action.resolved_at = now
    lifecycle_transition(actor="system", lifecycle=ACTION_LIFECYCLE, record=action, to=FAILED,
                         reason=action.failure_reason, data={"event": action.event_id},
                         save=("failure_reason", "resolved_at"))


# --- Confirmation --------------------------------------------------------------------------

def _signature_headers(headers) -> dict:
    headers = {k.lower(): v for k, v in headers.items()}
    missing = [h for h in ("webhook-id", "webhook-timestamp", "webhook-signature") if not headers.get(h)]
    if missing:
        raise SignatureRefused(f"Unsigned: the {', '.join(missing)} header{'s are' if len(missing) > 1 else ' is'} "
                               "missing (sign it as Standard Webhooks, with the endpoint's secret).",
                               code="signature_missing")
    return headers


def _verified_endpoint(action: Action | None, *, body: bytes, headers, now: datetime) -> Endpoint:
    """The endpoint whose secret signed this callback: one the action's event went to. For an
    id that is no action's, any endpoint's: only a caller holding a real secret may learn that
    the id is unknown; anyone else gets the refusal a known id gets, word for word."""
    endpoints = (Endpoint.objects.all() if action is None else
                 Endpoint.objects.filter(pk__in=Delivery.objects.filter(event_id=action.event_id)
                                         .values("endpoint_id")))
    for endpoint in endpoints:
        for secret in endpoint.signing_secrets(now):
            try:
                Webhook(secret).verify(body, headers, json_parse=False)
            except (WebhookVerificationError, ValueError):
                continue
            return endpoint
    raise SignatureRefused("The signature does not verify with the secret of any endpoint this action was sent to "
                           "(or its timestamp is more than 5 minutes off).", code="signature_invalid")


def _parse(body: bytes) -> dict:
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise ValidationError({"body": "Send a JSON object."}) from exc
    if not isinstance(payload, dict):
        raise ValidationError({"body": "Send a JSON object."})
    status = payload.get("status")
    if status not in ("confirmed", "failed"):
        raise ValidationError({"status": "Say `confirmed` or `failed`."})
    reason = payload.get("reason") or ""
    reference = payload.get("reference") or ""
    if not isinstance(reason, str) or len(reason) > REASON_MAX:
        raise ValidationError({"reason": f"A text of at most {REASON_MAX} characters."})
    if not isinstance(reference, str) or len(reference) > REFERENCE_MAX:
        raise ValidationError({"reference": f"A text of at most {REFERENCE_MAX} characters."})
    if status == "failed" and not reason.strip():
        raise ValidationError({"reason": "Say why it failed."})
    return {"status": status, "reason": reason.strip(), "reference": reference.strip()}


@transaction.atomic
def action_callback(*, event_id: str, body: bytes, headers, now: datetime | None = None) -> Action:
    """The system that carried out an action says it did (or could not): verify the signature
    against the secrets of the endpoints its event was delivered to, then confirm or fail it.
    The same answer again is a no-op; a different one after the first is a Conflict."""
    now = now or timezone.now()
    headers = _signature_headers(headers)  # an unsigned request learns nothing, not even if the action exists
    action = Action.objects.select_related("event").filter(event_id=event_id).first()
    # The signature first: a wrongly signed request learns nothing either.
    endpoint = _verified_endpoint(action, body=body, headers=headers, now=now)
    if action is None:
        raise ActionNotFound(f"No action has the event id {event_id!r}.", code="unknown_action")
    parsed = _parse(body)
    return _resolve(action, actor=f"webhook:{endpoint}"[:150], to=parsed["status"], reason=parsed["reason"],
                    reference=parsed["reference"], by_name=str(endpoint)[:200], via=endpoint, now=now)


@transaction.atomic
def action_resolve(*, actor: User, action: Action, to: str, reason: str = "", now: datetime | None = None) -> Action:
    """A person says the action was carried out (they checked with the other system), or failed."""
    if to not in (CONFIRMED, FAILED):
        raise ValidationError({"state": "Choose confirmed or failed."})
    reason = (reason or "").strip()
    if to == FAILED and not reason:
        raise ValidationError({"reason": "Say why it failed."})
    if len(reason) > REASON_MAX:
        raise ValidationError({"reason": f"At most {REASON_MAX} characters."})
    return _resolve(action, actor=actor, to=to, reason=reason, reference="",
                    by_name=actor.get_full_name() or actor.get_username(), via=None, now=now or timezone.now())


def _resolve(action: Action, *, actor, to: str, reason: str, reference: str, by_name: str, via, now) -> Action:
    locked = Action.objects.select_for_update().get(pk=action.pk)
    if locked.state == to:
        return locked  # the same word again (a retried callback, a double click)
    if locked.state == CONFIRMED:
        raise Conflict(f"This {locked.label.lower()} was confirmed already by {locked.resolved_by_name}.",
                       code="already_confirmed")
    locked.resolved_at, locked.resolved_by_name, locked.resolved_via = now, by_name, via
    locked.resolved_by = actor if isinstance(actor, User) else None
    locked.external_reference = reference
    locked.failure_reason = reason[:REASON_MAX] if to == FAILED else ""
    return lifecycle_transition(
        actor=actor, lifecycle=ACTION_LIFECYCLE, record=locked, to=to, reason=reason or f"{to} by {by_name}",
        data={"event": locked.event_id, "by_name": by_name, "reference": reference},
        save=("resolved_at", "resolved_by_name", "resolved_via", "resolved_by", "external_reference",
              "failure_reason"), fact=locked if to == CONFIRMED else None)


# --- Reading -------------------------------------------------------------------------------

def action_overdue_q(now: datetime | None = None) -> Q:
    """Actions asked for and not confirmed (nor failed) by their deadline."""
    return Q(state__in=Action.OPEN, deadline_at__lt=now or timezone.now())


def case_has_overdue_action(now: datetime | None = None) -> Exists:
    """For a Case queryset: whether one of its actions is overdue (the queue's badge and filter)."""
    return Exists(Action.objects.filter(action_overdue_q(now), case_id=OuterRef("pk")))


def case_actions(case) -> list[Action]:
    return list(Action.objects.filter(case=case).select_related("event", "resolved_by", "requested_by")
                .order_by("requested_at", "pk"))

