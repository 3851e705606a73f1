"""A support ticket's personal data, for retention (casework.privacy): the thread's messages,
the raw e-mail received for it, the suggested reply and the triage's notes. The ticket's
classification (type, urgency, action), its dates and decision stay; the customer row, shared by
their other tickets, is left to erasure of the subject."""

from __future__ import annotations

from casework.cases.types import Retention
from casework.support.models import Customer, InboundEmail, Ticket, TicketMessage

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


def ticket_held(case) -> dict:
    ticket = Ticket.objects.filter(case=case).select_related("customer").first()
    if ticket is None:
        return {}
    customer = ticket.customer
    return {
        "ticket": {"ticket_id": ticket.ticket_id, "channel": ticket.channel, "language": ticket.language,
                   "ticket_type": ticket.ticket_type, "urgency": ticket.urgency,
                   "suggested_reply": ticket.suggested_reply, "created_at": ticket.created_at},
        "customer": {"customer_id": customer.customer_id, "name": customer.name, "email": customer.email,
                     "plan": customer.plan},
        "messages": list(TicketMessage.objects.filter(ticket=ticket).values(
            "direction", "text", "text_en", "channel", "email_subject", "created_at")),
        "raw_emails": list(InboundEmail.objects.filter(ticket=ticket).values(
            "message_id", "from_email", "from_name", "subject", "raw", "received_at", "attachments")),
    }

def customer_identifiers(entity) -> list[str]:
    """A customer's name and e-mail address and the account ids they wrote (for a customer
    entity); for an e-mail entity (stored
    as a keyed hash) the addresses in clear that the tickets naming it hold and that hash to it."""
    from casework.entities.kinds import normalise

    if entity.kind == "customer":
        customer = Customer.objects.filter(customer_id=entity.value).first()
        if customer is None:
            return []
        # The accounts the customer named in their own messages ("someone used my account
        # ACC-1043": casework/support/entities.py): the erasure widens to those entities, and
        # from them to the cards on the account, so the account need not be named by hand.
        from casework.entities.models import Entity

        accounts = list(Entity.objects.filter(kind="account", mentions__source_field="message",
                                              mentions__case__support_ticket__customer=customer)
                        .values_list("value", flat=True).distinct()[:20])
        return [v for v in (customer.name, customer.email) if v] + accounts
    if entity.kind != "email":
        return []
    tickets = Ticket.objects.filter(case__entity_mentions__entity=entity)
    candidates = set(Customer.objects.filter(tickets__in=tickets).exclude(email="").values_list("email", flat=True))
    candidates |= set(InboundEmail.objects.filter(ticket__in=tickets).exclude(from_email="")
                      .values_list("from_email", flat=True))
    found = []
    for address in candidates:
        try:
            if normalise("email", address)[0] == entity.value:
                found.append(address)
        except Exception:  # noqa: BLE001 - an unparseable address is simply not this one
            continue
    return found


RETENTION = Retention(
    identifiers=customer_identifiers,
    purge=ticket_purge, held=ticket_held, shared=("description", "attachments", "mentions", "agent_calls", "comments", "outbox"),
    describe="Messages, raw e-mail, suggested reply and triage notes, attachments, entity mentions, agent "
             "prompts and answers, comments; the ticket's classification and decision stay.")
