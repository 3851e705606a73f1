"""SMTP: sending a notification's email (the only module that talks to the mail server).

The send happens in a Celery task (notification_email_send, below) with retries spaced out,
never in the request that created the notification; EMAIL_TIMEOUT bounds each attempt. A delivery that gives up is recorded on the notification (the access
flow shows it on the case, with a "Resend link" button) and audited.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.core.mail import EmailMessage
from django.db.models import F
from django.utils import timezone

from audit.services import audit_record
from casework.cases.notifications.models import Notification
from casework.cases.notifications.selectors import notification_may_reach
from casework.cases.notifications.signals import notification_email_failed as email_failed_signal
from casework.cases.notifications.signals import notification_emailed

logger = logging.getLogger(__name__)


def absolute_url(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def notification_email(notification_id: int) -> bool:
    """One attempt to email the notification; raises what the mail server raised. Returns
    False when there is nothing to do (already emailed, no address)."""
    note = Notification.objects.select_related("case", "recipient_user").get(pk=notification_id)
    if note.emailed_at or not note.recipient_email:
        return False
    if note.case_id and note.target_type_id is None and not notification_may_reach(note.recipient_user, note.case):
        # They left the case's team (or it was restricted) since: its email is not sent.
        Notification.objects.filter(pk=note.pk).update(
            email_failed_at=timezone.now(), email_error="Not sent: the recipient may no longer see the case.")
        audit_record(actor="system", action="notification.email_withheld", case=note.case, obj=note,
                     data={"to": note.recipient_email, "kind": note.kind})
        return False
    Notification.objects.filter(pk=note.pk).update(email_attempts=F("email_attempts") + 1)
    text = note.body + (f"\n\n{absolute_url(note.url) if note.url.startswith('/') else note.url}" if note.url else "")
    # A restricted case says so in words, as on every page that shows it.
    subject = f"[Restricted] {note.subject}" if note.case is not None and note.case.restricted else note.subject
    # No person wrote it (RFC 3834): out-of-office replies and filters treat it as automatic.
    EmailMessage(subject, text, settings.DEFAULT_FROM_EMAIL, [note.recipient_email],
                 headers={"Auto-Submitted": "auto-generated"}).send()
    Notification.objects.filter(pk=note.pk).update(emailed_at=timezone.now(), email_failed_at=None, email_error="")
    # The mail server accepted it: what rests on that fact (an access change's "Awaiting User
    # Response") follows, in the case type that listens.
    note.refresh_from_db()
    _tell(notification_emailed, note)
    return True


def notification_email_failed(notification_id: int, error: str) -> None:
    """The last attempt failed: say so on the notification and audit."""
    note = Notification.objects.select_related("case").get(pk=notification_id)
    Notification.objects.filter(pk=note.pk).update(email_failed_at=timezone.now(), email_error=error[:1000])
    logger.warning("Gave up emailing notification %s to %s: %s", note.pk, note.recipient_email, error)
    audit_record(actor="system", action="notification.email_failed", case=note.case, obj=note,
                 data={"to": note.recipient_email, "kind": note.kind, "error": error[:500],
                       "target": note.target_id})
    note.refresh_from_db()
    _tell(email_failed_signal, note)


def _tell(signal, note: Notification) -> None:
    """Send `signal`; a receiver's error is logged, never a reason to email the person again."""
    for receiver, result in signal.send_robust(sender=Notification, notification=note):
        if isinstance(result, Exception):
            logger.error("%s failed on notification %s: %r", receiver, note.pk, result, exc_info=result)


# Spaced out so that a mail server's blip is not a lost email: 30 s, 2 min, 10 min.
EMAIL_RETRY_COUNTDOWNS = (30, 120, 600)


# Its name from when it was in tasks.py: messages queued under it still find it.
@shared_task(bind=True, name="casework.cases.notifications.tasks.notification_email_send", ignore_result=True,
             max_retries=len(EMAIL_RETRY_COUNTDOWNS), soft_time_limit=60, time_limit=90, acks_late=True)
def notification_email_send(self, notification_id: int) -> None:
    """Email one notification; on failure retry later, and after the last retry record the
    failure on the notification. Idempotent: an emailed notification is not sent twice."""
    try:
        notification_email(notification_id)
    except Exception as exc:  # noqa: BLE001 - SMTP, DNS, timeouts: all worth a retry, then a record
        if self.request.retries < self.max_retries:
            raise self.retry(exc=exc, countdown=EMAIL_RETRY_COUNTDOWNS[self.request.retries]) from exc
        notification_email_failed(notification_id, f"{type(exc).__name__}: {exc}")
