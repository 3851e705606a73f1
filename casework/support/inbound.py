"""Inbound support email: what an email provider posts (parsed by django-anymail into an
AnymailInboundMessage) becomes a customer's message on a ticket.

Steps of `email_receive`, in one transaction:
  1. The Message-ID is the idempotency key: a provider's retry of a message already received
     returns its first record and changes nothing.
  2. Mail loops (sent from our own address, or with a Message-ID under our domain) and
     automatic replies (Auto-Submitted, X-Autoreply / X-Autorespond, Precedence bulk / junk /
     list / auto_reply, out-of-office subjects) are recorded and open nothing.
  3. The sender's address finds the customer; an unknown address opens a new customer, or is
     held for a person (SUPPORT_UNKNOWN_SENDER).
  4. Quoted history and the signature are stripped (mail-parser-reply) for triage; the whole
     original is kept on the InboundEmail.
  5. Threading, before any model is asked: In-Reply-To / References naming a message of one of
     this customer's tickets (ours as sent, or theirs as received), else "[TKT-...]" in the
     subject. A ticket still open takes the message (and is triaged again); a solved one
     reopens within SUPPORT_REOPEN_DAYS, after that a new ticket follows it. Only a message
     that names no thread goes to intake, where seed 001's matcher sees only active tickets.
  6. Attachments are stored as the case's evidence (casework.cases.attachments: the same size
     and type rules, SHA-256), each refusal noted on the record.
"""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import timedelta
from email.utils import parseaddr

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.support.attachments import inbound_attachments_store
from casework.support.models import Customer, InboundEmail, Ticket, TicketMessage
from casework.support.states import FINAL

logger = logging.getLogger(__name__)

TICKET_IN_SUBJECT = re.compile(r"\[(TKT-[A-Z0-9]{8})\]", re.IGNORECASE)
MESSAGE_IDS = re.compile(r"<[^<>\s]+>")
# Subjects that out-of-office replies without the standard headers start with (Outlook,
# Gmail's vacation responder, and their German, French and Spanish versions).
OUT_OF_OFFICE = re.compile(r"^\s*(out of (the )?office|automatic reply|auto(matic)?[- ]?reply|autoreply|"
                           r"abwesenheitsnotiz|automatische antwort|r[ée]ponse automatique|"
                           r"respuesta autom[aá]tica)\b", re.IGNORECASE)
AUTO_PRECEDENCE = {"bulk", "junk", "list", "auto_reply"}
REPLY_LANGUAGES = ["en", "de", "fr", "es", "it", "nl", "pt", "sv", "pl", "cs"]


def _ids(value: str | None) -> list[str]:
    return MESSAGE_IDS.findall(value or "")


def _address(value: str) -> str:
    return parseaddr(value or "")[1].strip().lower()


def _our_addresses() -> set[str]:
    return {a for a in (_address(settings.SUPPORT_EMAIL_FROM), _address(settings.DEFAULT_FROM_EMAIL),
                        _address(settings.SERVER_EMAIL)) if a}


def why_not_a_customer_message(message, *, message_id: str, from_email: str) -> tuple[str, str]:
    """("loop" | "auto_reply", why), or ("", "") for a message a person wrote to us."""
    domain = settings.EMAIL_MESSAGE_ID_DOMAIN.lower()
    if from_email in _our_addresses():
        return InboundEmail.Outcome.LOOP, f"Sent from our own address {from_email}."
    if message_id.lower().endswith(f"@{domain}>"):
        return InboundEmail.Outcome.LOOP, f"Its Message-ID {message_id} is one of ours."
    auto_submitted = (message.get("Auto-Submitted") or "").strip().lower()
    if auto_submitted and auto_submitted != "no":
        return InboundEmail.Outcome.AUTO_REPLY, f"Auto-Submitted: {auto_submitted}."
    for header in ("X-Autoreply", "X-Autorespond", "X-Auto-Reply"):
        if message.get(header):
            return InboundEmail.Outcome.AUTO_REPLY, f"It carries {header}."
    precedence = (message.get("Precedence") or "").strip().lower()
    if precedence in AUTO_PRECEDENCE:
        return InboundEmail.Outcome.AUTO_REPLY, f"Precedence: {precedence}."
    if OUT_OF_OFFICE.search(message.get("Subject") or ""):
        return InboundEmail.Outcome.AUTO_REPLY, f"Its subject says it is automatic: {message.get('Subject')!r}."
    return "", ""


def reply_text(text: str) -> str:
    """The new part of a reply: without the quoted history and the signature (the original
    stays on the InboundEmail). Falls back to the whole text when nothing would be left."""
    from mailparser_reply import EmailReplyParser

    text = (text or "").replace("\r\n", "\n").strip()
    if not text:
        return ""
    try:
        parsed = EmailReplyParser(languages=REPLY_LANGUAGES).read(text=text)
        latest = parsed.replies[0] if parsed.replies else None
        body = (latest.body or latest.content or "").strip() if latest else ""
    except Exception:  # noqa: BLE001 - a parser failure keeps the whole text, never loses the message
        logger.warning("Could not strip the quoted history; the whole text is used.", exc_info=True)
        body = ""
    return body or text


def _text_of(message) -> str:
    if message.text:
        return message.text
    if message.html:
        from django.utils.html import strip_tags

        return strip_tags(re.sub(r"(?i)<br\s*/?>|</p>|</div>", "\n", message.html))
    return ""


def _new_customer(*, email: str, name: str) -> Customer:
    from casework.support.services import customer_save

    customer_id = "email-" + hashlib.sha256(email.encode()).hexdigest()[:12]
    return customer_save(actor="system", data={"customer_id": customer_id, "name": name[:120], "email": email})


def thread_find(*, customer: Customer, ids: list[str], subject: str) -> tuple[Ticket | None, str]:
    """The ticket this message answers, and how it was found: a Message-ID of the thread
    (ours or theirs) in In-Reply-To / References, newest first, else the ticket id in the subject;
    only this customer's tickets."""
    tickets = Ticket.objects.select_for_update(of=("self",)).select_related("case", "customer")
    if ids:
        known = dict(TicketMessage.objects.filter(email_message_id__in=ids, ticket__customer=customer)
                     .values_list("email_message_id", "ticket_id"))
        for mid in reversed(ids):
            if mid in known:
                return tickets.get(pk=known[mid]), f"headers ({mid})"
    match = TICKET_IN_SUBJECT.search(subject or "")
    if match:
        ticket = tickets.filter(ticket_id=match.group(1).upper(), customer=customer).first()
        if ticket is not None:
            return ticket, f"subject ({ticket.ticket_id})"
    return None, ""


def _past_merge(ticket: Ticket, how: str) -> tuple[Ticket, str]:
    """A ticket merged into another (casework.entities.case_merge) does not reopen: the
    customer's answer goes to the ticket it was merged into."""
    from casework.entities.selectors import case_survivor

    survivor = case_survivor(ticket.case)
    found = (Ticket.objects.select_for_update(of=("self",)).select_related("case", "customer")
             .filter(case=survivor).first()) if survivor is not None else None
    if found is None:
        return ticket, how
    return found, f"{how}; {ticket.ticket_id} was merged into {found.ticket_id}"


def _storable(value: str) -> str:
    return value.replace("\x00", "\ufffd")


def _no_sender(message, raw: str) -> str:
    """Why there is no sender, as precisely as the message lets us say."""
    if not raw.strip():
        return "Empty message: nothing was posted."
    if not message.keys():
        return "No sender address: no e-mail header was found (is the body an RFC 5322 message?)."
    return "No sender address (no From header)."


def _broken(message) -> str:
    """", the MIME structure is broken (...)" when the parser noted defects, else ""."""
    defects = sorted({type(d).__name__ for part in message.walk() for d in part.defects})
    return f": the MIME structure is broken ({', '.join(defects)})" if defects else ""


@transaction.atomic
def email_receive(*, message, provider: str, now=None) -> InboundEmail:
    """Receive one email (see the module's steps). Returns its record."""
    now = now or timezone.now()
    raw = message.as_string()
    # No e-mail may carry a NUL byte (RFC 5322), and PostgreSQL's text and jsonb refuse one (a
    # post of binary noise was a 500 there): stored as U+FFFD, and said in the note.
    nul = "\x00" in raw
    raw = _storable(raw)
    message_id = _storable((_ids(message.get("Message-ID")) or [""])[0])
    if not message_id:
        message_id = f"<sha256-{hashlib.sha256(raw.encode('utf-8', 'replace')).hexdigest()[:40]}@inbound.invalid>"
    existing = InboundEmail.objects.filter(message_id=message_id).first()
    if existing is not None:
        return existing
    name, from_email = (_storable(part) for part in parseaddr(message.get("From") or ""))
    from_email = from_email.strip().lower()
    subject = _storable(" ".join((message.get("Subject") or "").split())[:300])
    references = [_storable(i) for i in _ids(message.get("References"))]
    in_reply_to = [_storable(i) for i in _ids(message.get("In-Reply-To"))]
    text = _storable(_text_of(message))
    record = InboundEmail(provider=provider, message_id=message_id, from_email=from_email[:300], from_name=name[:200],
                          subject=subject, in_reply_to=" ".join(in_reply_to)[:300], references=" ".join(references),
                          raw=raw, text=text)

    def done(outcome: str, note: str = "", **fields) -> InboundEmail:
        if nul:
            note = f"{note} Its NUL bytes (no e-mail may carry one) are stored as U+FFFD.".strip()
        record.outcome, record.note = outcome, note[:500]
        for key, value in fields.items():
            setattr(record, key, value)
        record.save()
        audit_record(actor="system", action="support.email_received", case=record.ticket.case if record.ticket else None,
                     obj=record, data={"provider": provider, "message_id": message_id, "from": from_email,
                                       "outcome": outcome, "note": record.note,
                                       "ticket_id": record.ticket.ticket_id if record.ticket else None})
        return record

    dropped, why = why_not_a_customer_message(message, message_id=message_id, from_email=from_email)
    if dropped:
        return done(dropped, why)
    if not from_email:
        return done(InboundEmail.Outcome.REFUSED, _no_sender(message, raw))
    record.stripped = reply_text(text)
    if not record.stripped:
        return done(InboundEmail.Outcome.REFUSED, "No text" + _broken(message) + ".")
    from casework.support.tickets import MESSAGE_MAX_LENGTH

    stripped = record.stripped[:MESSAGE_MAX_LENGTH]
    customer = Customer.objects.filter(email__iexact=from_email).order_by("pk").first()
    if customer is None:
        if settings.SUPPORT_UNKNOWN_SENDER != "open":
            return done(InboundEmail.Outcome.HELD, f"No customer has the address {from_email}: held for a person.")
        try:
            with transaction.atomic():
                customer = _new_customer(email=from_email, name=name)
        except ValidationError as exc:
            return done(InboundEmail.Outcome.REFUSED, f"The sender {from_email!r} cannot be a customer: "
                                                      f"{'; '.join(exc.messages)}")
    record.customer = customer
    meta = {"message_id": message_id, "subject": subject, "inbound": None}

    ticket, how = thread_find(customer=customer, ids=[*references, *in_reply_to], subject=subject)
    if ticket is None:
        # No thread: seed 001's rule, through intake (the matcher sees only active tickets).
        from casework.support.services import message_receive

        record = done(InboundEmail.Outcome.INTAKE, "No thread in its headers or subject: intake matches it.")
        message_receive(actor="system", customer_id=customer.customer_id, message=stripped, channel="email",
                        email={**meta, "inbound": record.pk})
        return record
    from casework.support.services import ticket_follow_up, ticket_message_join, ticket_reopen

    ticket, how = _past_merge(ticket, how)
    if ticket.lifecycle in FINAL:
        solved_at = ticket.completed_at or ticket.case.closed_at or ticket.updated_at
        if now - solved_at <= timedelta(days=settings.SUPPORT_REOPEN_DAYS):
            ticket = ticket_reopen(actor="system", ticket=ticket, message=stripped, email=meta,
                                   reason=f"The customer answered the thread (found by {how}) "
                                          f"within SUPPORT_REOPEN_DAYS ({settings.SUPPORT_REOPEN_DAYS:g}).")
            outcome = InboundEmail.Outcome.REOPENED
        else:
            ticket = ticket_follow_up(actor="system", ticket=ticket, message=stripped, email=meta)
            outcome = InboundEmail.Outcome.FOLLOW_UP
    else:
        ticket_message_join(actor="system", ticket=ticket, message=stripped, email=meta, note=f"Found by {how}.")
        outcome = InboundEmail.Outcome.JOINED
    record = done(outcome, f"Found by {how}.", ticket=ticket)
    inbound_attachments_store(inbound=record, ticket=ticket)
    return record


@transaction.atomic
def inbound_release(*, actor, inbound: InboundEmail) -> InboundEmail:
    """A person lets a held email (unknown sender) in: the sender becomes a customer and the
    message goes through threading / intake as if the setting had been "open"; audited."""
    from anymail.inbound import AnymailInboundMessage

    from casework.errors import Conflict

    inbound = InboundEmail.objects.select_for_update().get(pk=inbound.pk)
    if inbound.outcome != InboundEmail.Outcome.HELD:
        raise Conflict(f"This email was not held ({inbound.get_outcome_display().lower()}).", code="not_held")
    customer = Customer.objects.filter(email__iexact=inbound.from_email).order_by("pk").first() or _new_customer(
        email=inbound.from_email, name=inbound.from_name)
    audit_record(actor=actor, action="support.email_released", obj=inbound,
                 data={"message_id": inbound.message_id, "from": inbound.from_email,
                       "customer_id": customer.customer_id})
    # The record is received again under its own Message-ID: the held one steps aside.
    message_id = inbound.message_id
    InboundEmail.objects.filter(pk=inbound.pk).update(message_id=f"{message_id[:-1]}.held-{inbound.pk}>",
                                                      note=f"Released by a person to {customer.customer_id}.")
    return email_receive(message=AnymailInboundMessage.parse_raw_mime(inbound.raw), provider=inbound.provider)


