"""Listening to the shared case domain."""

from __future__ import annotations

from django.dispatch import receiver

from casework.cases.models import Case
from casework.cases.notifications.models import Notification
from casework.cases.notifications.signals import notification_email_failed, notification_emailed
from casework.cases.signals import case_closed


@receiver(case_closed, sender=Case, dispatch_uid="access_case_closed")
def _on_case_closed(sender, case, decision, actor, **kwargs):
    if case.case_type != "access_change":
        return
    from casework.access.services import mutation_after_case_closed

    mutation_after_case_closed(case=case, actor=actor, decision=decision)


@receiver(notification_emailed, sender=Notification, dispatch_uid="access_link_emailed")
def _on_link_emailed(sender, notification, **kwargs):
    from casework.access.services.requests import request_email_delivered

    request_email_delivered(notification=notification)


@receiver(notification_email_failed, sender=Notification, dispatch_uid="access_link_email_failed")
def _on_link_email_failed(sender, notification, **kwargs):
    from casework.access.services.requests import request_email_failed

    request_email_failed(notification=notification)
