"""Listening to the shared case domain."""

from __future__ import annotations

from django.dispatch import receiver

from casework.cases.models import Case
from casework.cases.signals import case_closed


@receiver(case_closed, sender=Case, dispatch_uid="access_case_closed")
def _on_case_closed(sender, case, decision, actor, **kwargs):
    if case.case_type != "access_change":
        return
    from casework.access.services import mutation_after_case_closed

    mutation_after_case_closed(case=case, actor=actor, decision=decision)
