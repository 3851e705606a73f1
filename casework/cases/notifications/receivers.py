"""The shared case domain's signals, and the outbox's, turned into notifications."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.dispatch import receiver

from casework.cases.models import Case
from casework.cases.signals import case_assigned, case_viewed
from casework.outbox.models import Endpoint
from casework.outbox.signals import endpoint_owner_notice
from casework.people.signals import user_deactivated


@receiver(case_assigned, sender=Case, dispatch_uid="notifications_case_assigned")
def _on_case_assigned(sender, case, assignee, actor, **kwargs):
    from casework.cases.notifications.services import notify_case_assigned

    notify_case_assigned(case=case, assignee=assignee, actor=actor)


@receiver(case_viewed, sender=Case, dispatch_uid="notifications_case_viewed")
def _on_case_viewed(sender, case, user, **kwargs):
    """Opening the case is acting on what told them about it."""
    from casework.cases.notifications.services import notifications_mark_read_for_case

    notifications_mark_read_for_case(user=user, case=case)


@receiver(endpoint_owner_notice, sender=Endpoint, dispatch_uid="notifications_endpoint_owner_notice")
def _on_endpoint_owner_notice(sender, users, subject, body, url, case, **kwargs):
    """A webhook endpoint was disabled, or a delivery failed for good: its owner (or the admins) hear of it."""
    from casework.cases.notifications.services import notification_send

    for user in users:
        notification_send(actor="system", kind="webhook", subject=subject, body=body, user=user, url=url, case=case)


@receiver(user_deactivated, sender=User, dispatch_uid="notifications_user_deactivated")
def _on_user_deactivated(sender, user, actor, cases_returned, **kwargs):
    if cases_returned:
        from casework.cases.notifications.services import notify_cases_returned

        notify_cases_returned(actor=actor, user=user, references=cases_returned)
