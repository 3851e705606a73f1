"""Submitting a change: validate it, open its case, start the investigation on commit."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.access.models import (
    AccessLevel,
    Employee,
    HRMutation,
    System,
)
from casework.access.states import AccessStatus
from casework.entities.extraction import entities_extract
from casework.errors import Conflict

logger = logging.getLogger(__name__)


PIPELINE = "access"
# How far in the future a change may be dated (clock skew between systems).
FUTURE_SKEW = timedelta(minutes=10)



def _employee_actor(employee: Employee) -> str:
    # Employees answering through a link have no login; the audit names them by id.
    return f"employee:{employee.employee_id}"


def _priority(*, changed_by: Employee, changed_for: Employee, level: AccessLevel) -> str:
    if changed_by.pk == changed_for.pk:
        return "critical"  # someone changed their own access
    ranks = list(AccessLevel.objects.values_list("rank", flat=True))
    if ranks and level.rank >= max(ranks):
        return "high"
    if ranks and level.rank <= min(ranks):
        return "low"
    return "medium"



@transaction.atomic
def mutation_submit(
    *,
    actor,
    changed_by: Employee,
    changed_for: Employee,
    system: System,
    access_level: AccessLevel,
    field_changed: str,
    changed_at: datetime,
    change_type: str = HRMutation.ChangeType.UPDATE,
    old_value: str = "",
    new_value: str = "",
    reason: str = "",
    manager: Employee | None = None,
    mutation_id: str = "",
    metadata: dict | None = None,
    initial_status: str = AccessStatus.PENDING,
    investigate: bool = True,
    now: datetime | None = None,
) -> HRMutation:
    """Record a change under investigation as a new access-change case and, on commit,
    start its investigation. `initial_status` other than Pending is for importing history:
    such a mutation is stored as it was and not investigated."""
    from casework.cases.services import case_create

    now = now or timezone.now()
    if changed_at is None or timezone.is_naive(changed_at):
        raise ValidationError({"changed_at": "Give the change's time with a time zone (UTC)."})
    if changed_at > now + FUTURE_SKEW:
        raise ValidationError({"changed_at": "A change cannot be dated in the future."})
    if initial_status not in AccessStatus.values:
        raise ValidationError({"status": f"Unknown status {initial_status!r}."})
    manager = manager or changed_by.manager
    mutation_id = (mutation_id or "").strip() or f"M-{uuid.uuid4().hex[:8]}"
    if HRMutation.objects.filter(mutation_id=mutation_id).exists():
        raise Conflict(f"A mutation {mutation_id} already exists.", code="duplicate_mutation")
    title = f"{changed_by.name}: {field_changed} for {changed_for.name} on {system.code}"[:200]
    mutation = HRMutation(
        mutation_id=mutation_id, changed_by=changed_by, changed_for=changed_for, system=system,
        access_level=access_level, change_type=change_type, field_changed=(field_changed or "").strip(),
        old_value=old_value or "", new_value=new_value or "", changed_at=changed_at, reason=reason or "",
        manager=manager, metadata=metadata or {}, status=initial_status,
    )
    mutation.full_clean(exclude=["case"])
    case = case_create(
        actor=actor, case_type="access_change", title=title,
        description=mutation.summary() + (f"\n\nReason given with the change: {reason}" if reason else ""),
        priority=_priority(changed_by=changed_by, changed_for=changed_for, level=access_level),
    )
    mutation.case = case
    mutation.save()
    entities_extract(case=case)
    audit_record(actor=actor, action="access.mutation_submitted", case=case, obj=mutation,
                 data={"mutation_id": mutation_id, "changed_by": changed_by.employee_id,
                       "changed_for": changed_for.employee_id, "system": system.code,
                       "access_level": access_level.name, "changed_at": changed_at.isoformat(),
                       "status": initial_status})
    if initial_status == AccessStatus.PENDING and investigate:
        _enqueue(mutation, "investigate", actor)
    return mutation


def _enqueue(mutation: HRMutation, mode: str, actor) -> None:
    from agents.tasks import pipeline_enqueue

    pipeline_enqueue(case=mutation.case, pipeline=PIPELINE, mode=mode, actor=actor,
                     initial_state={"input_mutation_id": mutation.mutation_id})

