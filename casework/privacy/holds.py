"""Legal holds: placed and lifted with a reason, by someone entitled, each on record.

Who may: on a case, a lead of a team owning its type (`user_leads`, as for restricting it);
on an entity, a person who leads some team (and sees the entity: `entity_get_for_user` is
the caller's check); on either, admins and data-protection officers. A hold keeps the case (or
every case naming the entity) from retention while it is open (casework/privacy/retention.py).
"""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.cases.models import Case
from casework.cases.reasons import REASON_MAX_LENGTH, reason_on_record  # noqa: F401 (REASON_MAX_LENGTH re-exported)
from casework.cases.visibility import case_visible, user_lead_case_types, user_leads
from casework.entities.models import Entity
from casework.people.roles import is_data_protection
from casework.privacy.models import LegalHold
from casework.privacy.retention import open_holds_q


def may_hold_case(user, case: Case) -> bool:
    return is_data_protection(user) or (case_visible(user, case) and user_leads(user, case))


def may_hold_entity(user) -> bool:
    return is_data_protection(user) or bool(user_lead_case_types(user))


def _reason(reason: str, field: str = "reason") -> str:
    return reason_on_record(reason, field=field)


def legal_holds_open(*, case: Case | None = None, entity: Entity | None = None, now: datetime | None = None):
    holds = LegalHold.objects.filter(open_holds_q(now or timezone.now())).select_related("placed_by")
    return holds.filter(case=case) if case is not None else holds.filter(entity=entity)


def case_held_by(case: Case, *, now: datetime | None = None) -> list[LegalHold]:
    """The open holds keeping this case: its own, and those on the entities it names (the case
    page's panel)."""
    now = now or timezone.now()
    return list(LegalHold.objects.filter(open_holds_q(now)).filter(
        case=case).select_related("placed_by")) + list(LegalHold.objects.filter(open_holds_q(now)).filter(
            entity__mentions__case=case).select_related("placed_by", "entity"))


@transaction.atomic
def legal_hold_place(*, actor, reason: str, case: Case | None = None, entity: Entity | None = None,
                     until: datetime | None = None, now: datetime | None = None) -> LegalHold:
    """Hold a case or an entity (exactly one) from retention, until lifted or `until`."""
    now = now or timezone.now()
    if (case is None) == (entity is None):
        raise ValidationError("Hold a case or an entity (one of them).")
    allowed = may_hold_case(actor, case) if case is not None else may_hold_entity(actor)
    if not allowed:
        raise PermissionDenied("Only a lead of a team owning the case's type, an admin or a data-protection "
                               "officer may place a legal hold.")
    if until is not None and until <= now:
        raise ValidationError({"until": "The hold must end in the future (or be left open-ended)."})
    hold = LegalHold(case=case, entity=entity, reason=_reason(reason), placed_by=actor, placed_at=now, until=until)
    hold.full_clean()
    hold.save()
    audit_record(actor=actor, action="legal_hold.placed", case=case, obj=hold,
                 data={"on": "case" if case is not None else "entity",
                       "entity_id": entity.pk if entity is not None else None,
                       "until": until.isoformat() if until else None, "reason": hold.reason})
    return hold


@transaction.atomic
def legal_hold_lift(*, actor, hold: LegalHold, reason: str, now: datetime | None = None) -> LegalHold:
    """End an open hold; retention may then take the case at its next run."""
    now = now or timezone.now()
    hold = LegalHold.objects.select_for_update(of=("self",)).select_related("case", "entity").get(pk=hold.pk)
    allowed = may_hold_case(actor, hold.case) if hold.case_id else may_hold_entity(actor)
    if not allowed:
        raise PermissionDenied("Only a lead of a team owning the case's type, an admin or a data-protection "
                               "officer may lift a legal hold.")
    if hold.lifted_at is not None:
        raise ValidationError("This hold was lifted already.")
    hold.lifted_by, hold.lifted_at, hold.lift_reason = actor, now, _reason(reason)
    hold.full_clean()
    hold.save(update_fields=["lifted_by", "lifted_at", "lift_reason"])
    audit_record(actor=actor, action="legal_hold.lifted", case=hold.case, obj=hold,
                 data={"on": "case" if hold.case_id else "entity", "entity_id": hold.entity_id,
                       "reason": hold.lift_reason})
    return hold
