"""Email that a decision sends (a support reply), through the outbox.

`email_queue` is called inside the decision's transaction: the OutboundEmail row exists
exactly when the decision committed, and a worker is woken on commit. `email_attempt` claims
a due email with a conditional UPDATE (a duplicate wake-up does nothing), sends it once
through Django's email backend (EMAIL_URL: SMTP, or an ESP's backend from django-anymail)
outside any transaction, and records the outcome conditional on its claim. A failed attempt
waits EMAIL_RETRY_SCHEDULE's next delay; after the last one the email is failed, with the
server's reason. The sweep (casework.outbox.tasks.outbox_email_send_due) re-wakes what is due,
so a lost broker message or a worker that died mid-send only delays it: at least once, under
the same stored Message-ID.

A case type that queues email registers, for its `purpose`, what happens when an email is
sent or has failed for good (`email_purpose_register`), called in the transaction that
records it: the core names no case type.
"""

from __future__ import annotations

import logging
import smtplib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from audit.services import audit_record
from casework.errors import Conflict
from casework.outbox.models import OutboundEmail

logger = logging.getLogger(__name__)

LEASE_MARGIN_SECONDS = 30
WAITING = (OutboundEmail.State.QUEUED, OutboundEmail.State.RETRYING)


@dataclass(frozen=True)
class EmailPurpose:
    name: str
    on_sent: Callable[[OutboundEmail], None]
    on_failed: Callable[[OutboundEmail], None]


EMAIL_PURPOSES: dict[str, EmailPurpose] = {}


def email_purpose_register(purpose: EmailPurpose) -> None:
    """A case type says what follows when its emails are sent or fail (from AppConfig.ready)."""
    EMAIL_PURPOSES[purpose.name] = purpose


def message_id_new(*, hint: str = "") -> str:
    """A Message-ID under EMAIL_MESSAGE_ID_DOMAIN, stored before sending so that every retry
    carries the same one and an answer's In-Reply-To finds it."""
    hint = "".join(c for c in hint.lower() if c.isalnum() or c in "-.")[:40]
    return f"<{hint + '.' if hint else ''}{uuid.uuid4().hex}@{settings.EMAIL_MESSAGE_ID_DOMAIN}>"


def _wake(ids: list[int]) -> None:
    from casework.outbox.tasks import outbox_email_send

    for pk in ids:
        try:
            outbox_email_send.delay(pk)
        except Exception:  # noqa: BLE001 - the sweep sends it later; the decision stands
            logger.warning("Could not enqueue email %s; the sweep will send it.", pk, exc_info=True)


@transaction.atomic
def email_queue(*, purpose: str, to: str, subject: str, body: str, case=None, source_id: int | None = None,
                from_email: str = "", message_id: str = "", in_reply_to: str = "",
                references: list[str] | tuple[str, ...] = (), now: datetime | None = None) -> OutboundEmail:
    """Write one email in the caller's transaction and wake a worker once it commits."""
    if purpose not in EMAIL_PURPOSES:
        raise ValueError(f"Unknown email purpose {purpose!r}: register it with email_purpose_register.")
    now = now or timezone.now()
    email = OutboundEmail(
        purpose=purpose, source_id=source_id, case=case, from_email=from_email or settings.DEFAULT_FROM_EMAIL,
        to=to, subject=" ".join(subject.split())[:300], body=body, message_id=message_id or message_id_new(),
        in_reply_to=in_reply_to, references=" ".join(dict.fromkeys(r for r in references if r)),
        next_attempt_at=now, woken_at=now, created_at=now)
    email.full_clean(exclude=["case"])
    email.save()
    pk = email.pk
    transaction.on_commit(lambda: _wake([pk]))
    return email


@transaction.atomic
def email_retry(*, actor, email: OutboundEmail, now: datetime | None = None) -> OutboundEmail:
    """Send a failed email again (same Message-ID, one more full retry schedule); audited."""
    now = now or timezone.now()
    email = OutboundEmail.objects.select_for_update().get(pk=email.pk)
    if email.state != OutboundEmail.State.FAILED:
        raise Conflict(f"This email is {email.get_state_display().lower()}, not failed: nothing to retry.",
                       code="email_not_failed")
    OutboundEmail.objects.filter(pk=email.pk).update(
        state=OutboundEmail.State.QUEUED, next_attempt_at=now, woken_at=now, claim_token="", lease_until=None,
        retry_base=F("attempts"), updated_at=now)
    audit_record(actor=actor, action="email.retried", case=email.case, obj=email,
                 data={"purpose": email.purpose, "message_id": email.message_id, "last_error": email.last_error})
    pk = email.pk
    transaction.on_commit(lambda: _wake([pk]))
    email.refresh_from_db()
    return email


# --- Sending ------------------------------------------------------------------------------

def emails_due(*, now: datetime, limit: int = 500) -> list[int]:
    """Emails a worker should take now: waiting and due with no wake-up sent in the last
    WEBHOOK_REDELIVER_AFTER_SECONDS, or being sent by a worker whose claim expired."""
    quiet = now - timedelta(seconds=settings.WEBHOOK_REDELIVER_AFTER_SECONDS)
    return list(
        OutboundEmail.objects
        .filter(Q(state__in=WAITING, next_attempt_at__lte=now) & (Q(woken_at__isnull=True) | Q(woken_at__lte=quiet))
                | Q(state=OutboundEmail.State.SENDING, lease_until__lt=now))
        .order_by("next_attempt_at", "pk").values_list("pk", flat=True)[:limit])


def emails_mark_woken(ids: list[int], now: datetime) -> None:
    OutboundEmail.objects.filter(pk__in=ids).update(woken_at=now)


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

    headers = {"Message-ID": email.message_id, "Auto-Submitted": "auto-replied"}
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
    from casework.outbox.services import retry_delay

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
