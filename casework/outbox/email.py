"""Email that a decision sends (a support reply), through the outbox.

`email_queue` is called inside the decision's transaction: the OutboundEmail row exists
exactly when the decision committed, and a worker is woken on commit. The worker
(casework/outbox/email_sending.py, `email_attempt`) claims a due email with a conditional
UPDATE (a duplicate wake-up does nothing), sends it once through Django's email backend
(EMAIL_URL: SMTP, or an ESP's backend from django-anymail) outside any transaction, and
records the outcome conditional on its claim. A failed attempt
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
import uuid
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audit.services import audit_record
from casework.errors import Conflict
from casework.outbox.email_purposes import EMAIL_PURPOSES, EmailPurpose, email_purpose_register  # noqa: F401 - types register here
from casework.outbox.models import OutboundEmail

logger = logging.getLogger(__name__)


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
                references: list[str] | tuple[str, ...] = (), auto_submitted: str = "",
                now: datetime | None = None) -> OutboundEmail:
    """Write one email in the caller's transaction and wake a worker once it commits.
    `auto_submitted`: only for mail no person wrote (OutboundEmail.auto_submitted)."""
    if purpose not in EMAIL_PURPOSES:
        raise ValueError(f"Unknown email purpose {purpose!r}: register it with email_purpose_register.")
    now = now or timezone.now()
    email = OutboundEmail(
        purpose=purpose, source_id=source_id, case=case, from_email=from_email or settings.DEFAULT_FROM_EMAIL,
        to=to, subject=" ".join(subject.split())[:300], body=body, message_id=message_id or message_id_new(),
        in_reply_to=in_reply_to, references=" ".join(dict.fromkeys(r for r in references if r)),
        auto_submitted=auto_submitted,
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
