"""What a support ticket names (casework.entities): its customer and the customer's email
(stored hashed, shown masked), and what the customer wrote in their messages: account ids
(settings.ENTITIES_ACCOUNT_ID_PATTERN), IP addresses and email addresses. "Someone logged
into my account ACC-1043" is how a ticket meets the account's fraud alert."""

from __future__ import annotations

import re

from django.conf import settings

from casework.cases.types import Entities, Found

IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
# The customer's own words only; a thread is read up to this many messages.
MESSAGES = 20


def ticket_entities(case) -> list[Found]:
    from casework.support.models import TicketMessage

    ticket = getattr(case, "support_ticket", None)
    if ticket is None:
        return []
    customer = ticket.customer
    found = [Found("customer", customer.customer_id, "customer_id")]
    if customer.email:
        found.append(Found("email", customer.email, "customer.email"))
    account = re.compile(settings.ENTITIES_ACCOUNT_ID_PATTERN)
    texts = (ticket.messages.filter(direction=TicketMessage.Direction.CUSTOMER).order_by("id")
             .values_list("text", flat=True)[:MESSAGES])
    for text in texts:
        found += [Found("account", m.group(0), "message") for m in account.finditer(text)]
        found += [Found("ip", m, "message") for m in IPV4.findall(text)]
        found += [Found("email", m, "message") for m in EMAIL.findall(text)]
    return found


ENTITIES = Entities(extract=ticket_entities)
