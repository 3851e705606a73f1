"""The case core's signals, turned into what entities record."""

from __future__ import annotations

from django.dispatch import receiver

from casework.cases.models import Case
from casework.cases.signals import case_decision_recorded


@receiver(case_decision_recorded, sender=Case, dispatch_uid="entities_case_decision_recorded")
def _on_case_decision_recorded(sender, case, decision, **kwargs):
    from casework.entities.services import entities_decided

    entities_decided(case=case, decision=decision)
