"""In-app notifications; the email of each goes out through email_delivery."""

from __future__ import annotations

import logging

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.access.models import Notification
from casework.errors import DomainError

logger = logging.getLogger(__name__)


@transaction.atomic
def notification_send(*, actor, kind: str, subject: str, body: str, url: str = "", case=None,
                      user: User | None = None, email: str = "", name: str = "", request=None) -> Notification:
    """An in-app notification (when the person has a login) and an email (when they have an
    address), handed to a Celery task (retries, EMAIL_TIMEOUT) once the transaction commits."""
    email = email or (user.email if user else "")
    name = name or (user.get_full_name() or user.get_username() if user else "")
    if not user and not email:
        raise DomainError(f"{name or 'This person'} has neither a login nor an email address to notify.",
                          code="no_channel")
    note = Notification.objects.create(recipient_user=user, recipient_email=email, recipient_name=name, case=case,
                                       kind=kind, subject=subject[:200], body=body, url=url, request=request)
    audit_record(actor=actor, action="access.notification_sent", case=case, obj=note,
                 data={"kind": kind, "to": email or name, "in_app": user is not None, "subject": note.subject})
    if email:
        from casework.access.tasks import notification_email_send

        transaction.on_commit(lambda: notification_email_send.delay(note.pk))
    return note


def notification_mark_read(*, user: User, notification: Notification) -> None:
    if notification.recipient_user_id != user.pk:
        raise PermissionDenied("This notification is not yours.")
    Notification.objects.filter(pk=notification.pk, read_at__isnull=True).update(read_at=timezone.now())


def notifications_mark_all_read(*, user: User) -> int:
    return Notification.objects.filter(recipient_user=user, read_at__isnull=True).update(read_at=timezone.now())


def investigators_to_notify(case) -> list[User]:
    from casework.people.roles import INVESTIGATOR

    if case.assignee_id:
        return [case.assignee]
    return list(User.objects.filter(groups__name=INVESTIGATOR, is_active=True).order_by("username"))

