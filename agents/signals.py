"""The runtime listening to the shared case domain."""

from __future__ import annotations

from django.dispatch import receiver

from casework.cases.models import Case
from casework.cases.signals import case_closed


@receiver(case_closed, sender=Case, dispatch_uid="agents_end_waiting_runs")
def _on_case_closed(sender, case, decision, actor, **kwargs):
    """A closed case has nobody left to answer its runs' questions: end the waiting ones."""
    from agents.services import runs_end_waiting

    runs_end_waiting(actor=actor or "system", case=case,
                     reason=f"The case was closed ({decision.outcome_label}) while this run waited for a person.")
