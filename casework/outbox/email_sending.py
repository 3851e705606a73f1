"""Sending the outbox's email: what the email worker does (casework.outbox.tasks).

`email_attempt` claims a due email with a conditional UPDATE (a duplicate wake-up does
nothing), sends it once through Django's email backend outside any transaction, and records
the outcome conditional on its claim; a sent or failed-for-good email calls its purpose's
handler (casework/outbox/email.py) in that transaction. Apart from email.py, which queues and
wakes the workers: the tasks call this module, and nothing here sends a task.
"""

from __future__ import annotations

import logging
import smtplib
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from audit.services import audit_record
from casework.outbox.delivery import retry_delay
from casework.outbox.email_purposes import EMAIL_PURPOSES
from casework.outbox.leases import waiting_due_q
from casework.outbox.models import OutboundEmail

logger = logging.getLogger(__name__)

LEASE_MARGIN_SECONDS = 30
WAITING = (OutboundEmail.State.QUEUED, OutboundEmail.State.RETRYING)


def emails_due(*, now: datetime, limit: int = 500) -> list[int]:
    """Emails a worker should take now: waiting and due, held by nobody with no wake-up sent
    in the last WEBHOOK_REDELIVER_AFTER_SECONDS or held by a sweep that died (leases.py), or
    being sent by a worker whose claim expired."""
    return list(
        OutboundEmail.objects
        .filter(waiting_due_q(now=now, waiting=WAITING) | Q(state=OutboundEmail.State.SENDING, lease_until__lt=now))
        .order_by("next_attempt_at", "pk").values_list("pk", flat=True)[:limit])


def _claim(email_id: int, *, now: datetime) -> str | None:
    token = uuid.uuid4().hex
    lease = now + timedelta(seconds=settings.EMAIL_TIMEOUT + LEASE_MARGIN_SECONDS)
    claimed = (OutboundEmail.objects.filter(pk=email_id)
               .filter(Q(state__in=WAITING, next_attempt_at__lte=now)
                       | Q(state=OutboundEmail.State.SENDING, lease_until__lt=now))
               .update(state=OutboundEmail.State.SENDING, claim_token=token, lease_until=lease,
                       attempts=F("attempts") + 1, updated_at=now))
    return token if claimed == 1 else None


def smtp_reason(exc: Exception) -> str:
    """What the server said, as a person reads it: "550 5.1.1 No such user" (not a repr)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused) and exc.recipients:
        code, text = next(iter(exc.recipients.values()))
        return f"{code} {text.decode('utf-8', 'replace') if isinstance(text, bytes) else text}"[:300]
    if isinstance(exc, smtplib.SMTPResponseException):
        text = exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else exc.smtp_error
        return f"{exc.smtp_code} {text}"[:300]
    return f"{type(exc).__name__}: {exc}"[:300]


def _send(email: OutboundEmail) -> str:
    """One send through the configured backend; "" or the reason it failed."""
    from django.core.mail import EmailMessage, get_connection

    headers = {"Message-ID": email.message_id}
    if email.auto_submitted:  # a person's reply carries none (RFC 3834)
        headers["Auto-Submitted"] = email.auto_submitted
    if email.in_reply_to:
        headers["In-Reply-To"] = email.in_reply_to
    if email.references:
        headers["References"] = email.references
    message = EmailMessage(subject=email.subject, body=email.body, from_email=email.from_email, to=[email.to],
                           headers=headers, connection=get_connection(fail_silently=False))
    try:
        sent = message.send()
    except Exception as exc:  # noqa: BLE001 - any backend's failure is a failed attempt, recorded
        return smtp_reason(exc)
    return "" if sent else "The email backend accepted nothing."


def email_attempt(email_id: int, *, now: datetime | None = None) -> OutboundEmail | None:
    """One attempt of one email if it is due and this worker claims it; returns it after the
    attempt, or None when there was nothing to do."""
    now = now or timezone.now()
    token = _claim(email_id, now=now)
    if token is None:
        return None
    email = OutboundEmail.objects.get(pk=email_id)
    error = _send(email)
    with transaction.atomic():
        ours = OutboundEmail.objects.select_for_update().filter(pk=email_id, claim_token=token,
                                                                state=OutboundEmail.State.SENDING)
        if not ours.exists():
            logger.warning("Email %s was taken over by another worker; its outcome is not recorded here.", email_id)
            return None
        common = {"claim_token": "", "lease_until": None, "last_error": error, "updated_at": now}
        if not error:
            ours.update(**common, state=OutboundEmail.State.SENT, sent_at=now)
        else:
            delay = retry_delay(email.attempts - email.retry_base, settings.EMAIL_RETRY_SCHEDULE)
            if delay is None:
                ours.update(**common, state=OutboundEmail.State.FAILED)
            else:
                ours.update(**common, state=OutboundEmail.State.RETRYING, woken_at=None,
                            next_attempt_at=now + timedelta(seconds=delay))
        email.refresh_from_db()
        if email.state not in (OutboundEmail.State.SENT, OutboundEmail.State.FAILED):
            return email
        audit_record(actor="system", action=f"email.{email.state}", case=email.case,
                     obj=email, data={"purpose": email.purpose, "message_id": email.message_id,
                                      "attempt": email.attempts, "error": error})
        purpose = EMAIL_PURPOSES.get(email.purpose)
        if purpose is not None:
            (purpose.on_sent if email.state == OutboundEmail.State.SENT else purpose.on_failed)(email)
    return email
