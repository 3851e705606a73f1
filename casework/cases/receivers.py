"""The platform's signals, turned into what the case core does."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.dispatch import receiver

from casework.people.signals import user_deactivating


@receiver(user_deactivating, sender=User, dispatch_uid="cases_user_deactivating")
def _on_user_deactivating(sender, user, actor, **kwargs) -> list[str]:
    """A person without access works no case: their open cases go back to the queue,
    unassigned (each unassignment audited on its case). Returns their references."""
    from casework.cases.models import Case
    from casework.cases.services import case_assign
    from casework.cases.sla import DONE_STATUSES

    returned = []
    for case in Case.objects.filter(assignee=user).exclude(status__in=DONE_STATUSES).order_by("id"):
        case_assign(actor=actor, case=case, assignee=None)
        returned.append(case.reference)
    return returned
