"""What every write to a ticket is made of (casework/support/services.py and the modules of
its parts: waiting, groups, feedback, inbound): lock the ticket, move it through its
lifecycle, add a message to its thread, queue the reply's email."""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib.auth.models import User

from casework.support.models import Ticket, TicketMessage
from casework.support.states import SUPPORT_LIFECYCLE

EMAIL_PURPOSE = "support.reply"
# Message-IDs carried in References, the newest kept (RFC 5322 lets it grow; clients trim it too).
REFERENCES_KEEP = 20
MESSAGE_MAX_LENGTH = 10_000


def _lock(ticket: Ticket) -> Ticket:
    return Ticket.objects.select_for_update(of=("self",)).select_related("case", "customer").get(pk=ticket.pk)


def _move(*, actor, ticket: Ticket, to: str, reason: str, data: dict | None = None, save: tuple[str, ...] = (),
          fact=None):
    """The one way a ticket's state changes (SUPPORT_LIFECYCLE through lifecycle_transition);
    `fact`: the record a claiming state rests on (the accepted email, for "replied")."""
    from casework.cases.lifecycle.services import lifecycle_transition

    return lifecycle_transition(actor=actor, lifecycle=SUPPORT_LIFECYCLE, record=ticket, to=to, reason=reason,
                                data={"ticket_id": ticket.ticket_id, **(data or {})}, save=save, fact=fact)


def _message_add(*, ticket: Ticket, direction: str, text: str, channel: str = "", sent_by: User | None = None,
                 auto_sent: bool = False, intake: dict | None = None, email: dict | None = None) -> TicketMessage:
    email = email or {}
    message = TicketMessage(ticket=ticket, direction=direction, text=text, channel=channel, sent_by=sent_by,
                            auto_sent=auto_sent, intake=intake or {}, email_message_id=email.get("message_id", ""),
                            email_subject=email.get("subject", "")[:300])
    message.full_clean(exclude=["ticket"])
    message.save()
    return message


def reply_subject(ticket: Ticket) -> str:
    """"[TKT-...] Re: <the customer's subject, or the ticket's title>", without piling up Re:s."""
    first = ticket.messages.filter(direction=TicketMessage.Direction.CUSTOMER).exclude(email_subject="") \
        .order_by("id").first()
    topic = (first.email_subject if first else "") or ticket.case.title
    topic = re.sub(r"\[TKT-[A-Z0-9]{8}\]\s*", "", topic)
    topic = re.sub(r"^\s*((re|aw|sv|fw|fwd)\s*:\s*)+", "", topic, flags=re.IGNORECASE).strip()
    return f"[{ticket.ticket_id}] Re: {topic}"


def _reply_email(*, ticket: Ticket, message: TicketMessage, auto_submitted: str | None = None):
    """Queue `message`'s email to the customer, in the caller's transaction, threaded: In-Reply-To
    the customer's latest message with a Message-ID (or our latest), References every earlier
    Message-ID of the thread. None when the customer has no address (nothing is emailed).
    `auto_submitted` (RFC 3834): by default "auto-replied" for a message the system sent by
    itself, none for a person's; a notice that answers no message says "auto-generated"."""
    from casework.outbox.email import email_queue, message_id_new

    if not ticket.customer.email:
        return None
    earlier = list(ticket.messages.exclude(pk=message.pk).exclude(email_message_id="")
                   .order_by("id").values_list("direction", "email_message_id"))
    theirs = [mid for direction, mid in earlier if direction == TicketMessage.Direction.CUSTOMER]
    in_reply_to = theirs[-1] if theirs else (earlier[-1][1] if earlier else "")
    email = email_queue(
        purpose=EMAIL_PURPOSE, to=ticket.customer.email, subject=reply_subject(ticket), body=message.text,
        case=ticket.case, source_id=message.pk, from_email=settings.SUPPORT_EMAIL_FROM,
        message_id=message_id_new(hint=ticket.ticket_id), in_reply_to=in_reply_to,
        references=[mid for _, mid in earlier][-REFERENCES_KEEP:],
        auto_submitted=("auto-replied" if message.auto_sent else "") if auto_submitted is None else auto_submitted)
    TicketMessage.objects.filter(pk=message.pk).update(email=email, email_message_id=email.message_id,
                                                       email_subject=email.subject)
    message.email, message.email_message_id, message.email_subject = email, email.message_id, email.subject
    return email
