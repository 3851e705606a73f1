"""A support ticket's personal data, for retention (casework.privacy): the thread's messages,
the raw e-mail received for it, the suggested reply and the triage's notes. The ticket's
classification (type, urgency, action), its dates and decision stay; the customer row, shared by
their other tickets, is left to erasure of the subject."""

from __future__ import annotations

from casework.cases.types import Retention
from casework.support.models import InboundEmail, Ticket, TicketMessage

REMOVED = "[removed under the retention policy]"


def ticket_purge(case) -> dict[str, int]:
    ticket = Ticket.objects.filter(case=case).first()
    if ticket is None:
        return {}
    messages = TicketMessage.objects.filter(ticket=ticket).update(
        text=REMOVED, text_en="", intake={}, translation={}, email_subject="")
    emails = InboundEmail.objects.filter(ticket=ticket).update(
        raw="", text="", stripped="", from_email="", from_name="", subject="", references="", attachments=[])
    Ticket.objects.filter(pk=ticket.pk).update(suggested_reply="", triage={})
    return {"messages": messages, "raw e-mails": emails}


RETENTION = Retention(
    purge=ticket_purge, shared=("description", "attachments", "mentions", "agent_calls", "comments"),
    describe="Messages, raw e-mail, suggested reply and triage notes, attachments, entity mentions, agent "
             "prompts and answers, comments; the ticket's classification and decision stay.")
