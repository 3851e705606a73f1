"""SMTP: sending a notification's email (the only module that talks to the mail server).

The send happens in a Celery task (casework.cases.notifications.tasks.notification_email_send)
with retries spaced out, never in the request that created the notification; EMAIL_TIMEOUT
bounds each attempt. A delivery that gives up is recorded on the notification (the access
flow shows it on the case, with a "Resend link" button) and audited.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db.models import F
from django.utils import timezone

from audit.services import audit_record
from casework.cases.notifications.models import Notification

logger = logging.getLogger(__name__)


def absolute_url(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def notification_email(notification_id: int) -> bool:
    """One attempt to email the notification; raises what the mail server raised. Returns
    False when there is nothing to do (already emailed, no address)."""
    note = Notification.objects.get(pk=notification_id)
    if note.emailed_at or not note.recipient_email:
        return False
    Notification.objects.filter(pk=note.pk).update(email_attempts=F("email_attempts") + 1)
    text = note.body + (f"\n\n{absolute_url(note.url) if note.url.startswith('/') else note.url}" if note.url else "")
    send_mail(note.subject, text, settings.DEFAULT_FROM_EMAIL, [note.recipient_email])
    Notification.objects.filter(pk=note.pk).update(emailed_at=timezone.now(), email_failed_at=None, email_error="")
    return True


def notification_email_failed(notification_id: int, error: str) -> None:
    """The last attempt failed: say so on the notification and audit."""
    note = Notification.objects.select_related("case").get(pk=notification_id)
    Notification.objects.filter(pk=note.pk).update(email_failed_at=timezone.now(), email_error=error[:1000])
    logger.warning("Gave up emailing notification %s to %s: %s", note.pk, note.recipient_email, error)
    audit_record(actor="system", action="notification.email_failed", case=note.case, obj=note,
                 data={"to": note.recipient_email, "kind": note.kind, "error": error[:500],
                       "target": note.target_id})
