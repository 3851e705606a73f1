"""A case decided as fraud flags every entity it names (Entities.fraud_outcomes of its type)."""

from __future__ import annotations

from django.dispatch import receiver

from casework.cases.models import Case
from casework.cases.signals import case_closed


@receiver(case_closed, sender=Case, dispatch_uid="entities_case_closed")
def _on_case_closed(sender, case, decision, actor, **kwargs):
    from casework.entities.services import entities_confirm_fraud

    declared = case.type_info.entities
    if declared is not None and decision.outcome in declared.fraud_outcomes:
        entities_confirm_fraud(case=case, decided_at=decision.decided_at)
