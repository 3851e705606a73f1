"""What the support ticket adds to the outbox: its action event `support.reply_sent` (in the
webhook catalogue) and what follows when a reply's email is sent or fails."""

from __future__ import annotations

from casework.outbox.catalogue import CASE, EventType, _data

REPLY_SENT = EventType(
    "support.reply_sent", 1,
    "A support reply (a person's, or one sent automatically) was emailed to the customer: the mail server "
    "accepted it. Sent once the email went out, never when it was only written.",
    _data(case=CASE, ticket_id={"type": "string", "example": "TKT-7Q2M4K9D"},
          customer_id={"type": "string"},
          message=_data(id={"type": "integer"},
                        message_id={"type": "string", "description": "The email's Message-ID, with <>."},
                        subject={"type": "string"},
                        auto_sent={"type": "boolean", "description": "Sent by SUPPORT_AUTO_SEND, not a person."},
                        sent_by={"type": "string", "nullable": True, "description": "User name, or null."},
                        sent_at={"type": "string", "format": "date-time"})),
)


def support_events_register() -> None:
    from casework.outbox.catalogue import event_type_register
    from casework.outbox.email import EmailPurpose, email_purpose_register
    from casework.support.services import reply_email_failed, reply_email_sent
    from casework.support.tickets import EMAIL_PURPOSE

    event_type_register(REPLY_SENT)
    email_purpose_register(EmailPurpose(EMAIL_PURPOSE, on_sent=reply_email_sent, on_failed=reply_email_failed))
