"""The shared case domain's signals, turned into notifications (sent after commit)."""

from __future__ import annotations

from django.dispatch import receiver

from casework.cases.models import Case
from casework.cases.signals import case_assigned, case_viewed


@receiver(case_assigned, sender=Case, dispatch_uid="notifications_case_assigned")
def _on_case_assigned(sender, case, assignee, actor, **kwargs):
    from casework.cases.notifications.services import notify_case_assigned

    notify_case_assigned(case=case, assignee=assignee, actor=actor)


@receiver(case_viewed, sender=Case, dispatch_uid="notifications_case_viewed")
def _on_case_viewed(sender, case, user, **kwargs):
    """Opening the case is acting on what told them about it."""
    from casework.cases.notifications.services import notifications_mark_read_for_case

    notifications_mark_read_for_case(user=user, case=case)
