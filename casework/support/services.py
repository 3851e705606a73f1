"""Every write to support data goes through these functions; each is audited in its transaction.

The flow of a message (seed 001, "Pre-Workflow" and "Post-Workflow"):
  message_receive      the message and its customer are checked and an intake run starts
                       (agents pipeline "support", mode "intake"); no ticket exists yet.
  intake_resolve       the intake run's finish: the matcher's answer is accepted only at
                       high/medium confidence and only for one of this customer's ACTIVE
                       tickets (checked here, never taken from the model); the message is
                       appended to that ticket, or a new ticket (and SUP- case) is opened;
                       then a triage run is enqueued on the ticket's case.
  ticket_apply_triage  the triage run's finish: the ticket's urgency, type, language,
                       action and suggested reply; route_specialist keeps it active,
                       auto_respond / escalate_human complete it.
  ticket_reply / ticket_escalate / ticket_close_no_action
                       a person's decision; each closes the case (a second one is a Conflict).
"""

from __future__ import annotations

import re
import secrets
import string

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.context import correlation
from audit.services import audit_record
from casework.cases.models import Case
from casework.support.models import Customer, KBArticle, RecommendedAction, Ticket, TicketMessage

PIPELINE = "support"
MESSAGE_MAX_LENGTH = 10_000
ACCEPTED_CONFIDENCE = ("high", "medium")
_TICKET_ALPHABET = string.ascii_uppercase + string.digits
PRIORITY_FOR_URGENCY = {"critical": "critical", "high": "high", "medium": "medium", "low": "low"}


LANGUAGE_NAMES = {"english": "en", "spanish": "es", "french": "fr", "german": "de", "portuguese": "pt",
                  "italian": "it", "dutch": "nl", "thai": "th", "japanese": "ja", "chinese": "zh", "russian": "ru"}


def language_code(value: str) -> str:
    """A short lower-case code for what a model called the language ("pt", "pt-BR",
    "Portuguese (Brazil)" -> "pt-br", "pt-br", "pt")."""
    value = (value or "").strip().lower()
    first = re.split(r"[^a-z]+", value)[0] if value else ""
    if first in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[first]
    return re.sub(r"[^a-z-]", "", value)[:8]


def new_ticket_id() -> str:
    """TKT- and 8 upper-case letters or digits, unused so far."""
    while True:
        ticket_id = "TKT-" + "".join(secrets.choice(_TICKET_ALPHABET) for _ in range(8))
        if not Ticket.objects.filter(ticket_id=ticket_id).exists():
            return ticket_id


def _clean_message(message: str) -> str:
    message = (message or "").strip()
    if not message:
        raise ValidationError({"message": "The message is empty."})
    if len(message) > MESSAGE_MAX_LENGTH:
        raise ValidationError({"message": f"A message is at most {MESSAGE_MAX_LENGTH} characters."})
    return message


# --- reference data ---------------------------------------------------------------------

@transaction.atomic
def customer_save(*, actor, data: dict) -> Customer:
    """Create or update a customer by customer_id (admin, CSV import, demo)."""
    customer = Customer.objects.filter(customer_id=data.get("customer_id", "")).first() or Customer()
    created = customer.pk is None
    for field in ("customer_id", "name", "email", "plan", "tenure_months", "seats", "region", "vip"):
        if field in data:
            setattr(customer, field, data[field])
    customer.full_clean()
    customer.save()
    audit_record(actor=actor, action="support.customer_created" if created else "support.customer_updated",
                 obj=customer, data={k: getattr(customer, k) for k in ("customer_id", "plan", "vip")})
    return customer


@transaction.atomic
def kb_article_save(*, actor, data: dict) -> KBArticle:
    """Create or update a knowledge-base article by article_id; refreshes its search index."""
    from casework.support.search import kb_index_refresh

    article = KBArticle.objects.filter(article_id=data.get("article_id", "")).first() or KBArticle()
    created = article.pk is None
    for field in ("article_id", "title", "category", "body"):
        if field in data:
            setattr(article, field, data[field])
    article.full_clean()
    article.save()
    kb_index_refresh([article.pk])
    audit_record(actor=actor, action="support.kb_article_created" if created else "support.kb_article_updated",
                 obj=article, data={"article_id": article.article_id, "category": article.category})
    return article


# --- intake -----------------------------------------------------------------------------

@transaction.atomic
def message_receive(*, actor, customer_id: str, message: str, channel: str = "api"):
    """Accept a customer's message and start its intake run (matching, then triage).

    Returns the intake AgentRun; its case is set once the message has its ticket."""
    from agents.tasks import pipeline_enqueue

    message = _clean_message(message)
    customer = Customer.objects.filter(customer_id=(customer_id or "").strip()).first()
    if customer is None:
        raise ValidationError({"customer_id": f"No customer {customer_id!r}."})
    channel = (channel or "api").strip()[:20] or "api"
    run = pipeline_enqueue(case=None, pipeline=PIPELINE, mode="intake", actor=actor, initial_state={
        "input_customer_id": customer.customer_id, "input_message": message, "input_channel": channel,
        "input_received_at": timezone.now().isoformat()})
    audit_record(actor=actor, action="support.message_received", obj=run,
                 data={"customer_id": customer.customer_id, "channel": channel, "length": len(message),
                       "intake_run": run.pk})
    return run


def match_accepted(*, customer: Customer, match: dict | None) -> Ticket | None:
    """The matched ticket if the match may be used: high or medium confidence, and the id is
    one of this customer's active tickets right now. Anything else (a low confidence, an id
    the model made up, another customer's ticket, a completed one) is ignored."""
    if not match or match.get("confidence") not in ACCEPTED_CONFIDENCE:
        return None
    ticket_id = str(match.get("matched_ticket_id") or "").strip().upper()
    if not ticket_id:
        return None
    return (Ticket.objects.select_for_update(of=("self",)).select_related("case", "customer")
            .filter(customer=customer, ticket_id=ticket_id, lifecycle=Ticket.Lifecycle.ACTIVE,
                    case__status__in=[s for s in Case.Status.values if s != Case.Status.CLOSED]).first())


@transaction.atomic
def intake_resolve(*, actor, customer_id: str, message: str, channel: str, match: dict | None,
                   note: str = "", intake_run: int | None = None) -> tuple[Ticket, bool]:
    """Give the message its ticket: the accepted match, or a new ticket. Enqueues the triage
    of the whole thread. Returns (ticket, matched)."""
    customer = Customer.objects.get(customer_id=customer_id)
    ticket = match_accepted(customer=customer, match=match)
    matched = ticket is not None
    intake = {"run": intake_run, "matched": matched, "confidence": (match or {}).get("confidence"), "note": note}
    if ticket is None:
        ticket = ticket_open(actor=actor, customer=customer, message=message, channel=channel, intake=intake)
    else:
        _message_add(ticket=ticket, direction=TicketMessage.Direction.CUSTOMER, text=message, channel=channel,
                     intake=intake)
        Ticket.objects.filter(pk=ticket.pk).update(updated_at=timezone.now())
    audit_record(actor=actor, action="support.message_matched" if matched else "support.message_unmatched",
                 case=ticket.case, obj=ticket,
                 data={"ticket_id": ticket.ticket_id, "thread_id": ticket.thread_id, "match": match, "note": note})
    ticket_triage(actor=actor, ticket=ticket)
    return ticket, matched


@transaction.atomic
def ticket_open(*, actor, customer: Customer, message: str, channel: str = "api", intake: dict | None = None) -> Ticket:
    from casework.cases.services import case_create

    message = _clean_message(message)
    title = " ".join(message.split())
    title = title if len(title) <= 80 else title[:79].rstrip() + "…"
    case = case_create(actor=actor, case_type="support_ticket", title=title,
                       description=f"Support ticket from {customer.customer_id} ({customer.get_plan_display()}).")
    ticket = Ticket(case=case, ticket_id=new_ticket_id(), customer=customer, channel=channel)
    ticket.full_clean(exclude=["case"])
    ticket.save()
    _message_add(ticket=ticket, direction=TicketMessage.Direction.CUSTOMER, text=message, channel=channel,
                 intake=intake or {})
    audit_record(actor=actor, action="support.ticket_opened", case=case, obj=ticket,
                 data={"ticket_id": ticket.ticket_id, "thread_id": ticket.thread_id})
    return ticket


def ticket_triage(*, actor, ticket: Ticket):
    """Triage the whole thread again in a new run, correlated by the thread id."""
    from agents.tasks import pipeline_enqueue

    with correlation(ticket.thread_id):
        return pipeline_enqueue(case=ticket.case, pipeline=PIPELINE, mode="triage", actor=actor,
                                initial_state={"input_ticket_id": ticket.ticket_id})


def _message_add(*, ticket: Ticket, direction: str, text: str, channel: str = "", sent_by: User | None = None,
                 auto_sent: bool = False, intake: dict | None = None) -> TicketMessage:
    message = TicketMessage(ticket=ticket, direction=direction, text=text, channel=channel, sent_by=sent_by,
                            auto_sent=auto_sent, intake=intake or {})
    message.full_clean(exclude=["ticket"])
    message.save()
    return message


# --- triage results ---------------------------------------------------------------------

@transaction.atomic
def ticket_apply_triage(*, actor, ticket: Ticket, triage: dict) -> Ticket:
    """Store a triage (see agents.pipelines.support.triage_summary) on its ticket.

    A ticket whose case a person already closed keeps the triage for the record and
    nothing else changes."""
    from casework.cases.services import case_set_priority

    ticket = Ticket.objects.select_for_update(of=("self",)).select_related("case", "customer").get(pk=ticket.pk)
    if (ticket.triage.get("run") or 0) > (triage.get("run") or 0):
        # A newer run (a follow-up's) finished first: an older triage does not overwrite it.
        audit_record(actor=actor, action="support.triage_superseded", case=ticket.case, obj=ticket,
                     data={"run": triage.get("run"), "kept": ticket.triage.get("run")})
        return ticket
    result = triage.get("result") or {}
    info = result.get("extracted_info") or {}
    now = timezone.now()
    ticket.triage = triage
    ticket.triaged_at = now
    language = (triage.get("translation") or {}).get("original_language") or info.get("language") or ""
    ticket.language = language_code(language)
    ticket.urgency = result.get("urgency") or ""
    ticket.ticket_type = (triage.get("supervisor") or {}).get("ticket_type") or info.get("product_area") or ""
    if ticket.ticket_type not in ("billing", "technical", "general"):
        ticket.ticket_type = ""
    ticket.recommended_action = result.get("recommended_action") or ""
    ticket.suggested_reply = result.get("suggested_response") or ""
    translations = (triage.get("translation") or {}).get("by_message") or {}
    for message in ticket.messages.filter(pk__in=[int(k) for k in translations]):
        TicketMessage.objects.filter(pk=message.pk).update(text_en=translations[str(message.pk)])
    closed = ticket.case.is_closed
    completes = ticket.recommended_action in (RecommendedAction.AUTO_RESPOND, RecommendedAction.ESCALATE_HUMAN)
    if not closed:
        ticket.lifecycle = Ticket.Lifecycle.COMPLETED if completes else Ticket.Lifecycle.ACTIVE
        ticket.completed_at = now if completes else None
    ticket.full_clean(exclude=["case", "customer"])
    ticket.save()
    audit_record(actor=actor, action="support.triaged", case=ticket.case, obj=ticket,
                 data={"run": triage.get("run"), "urgency": ticket.urgency, "ticket_type": ticket.ticket_type,
                       "recommended_action": ticket.recommended_action, "lifecycle": ticket.lifecycle,
                       "failures": triage.get("failures", []), "guards": triage.get("guards", [])})
    if closed:
        return ticket
    if ticket.urgency:
        case_set_priority(actor=actor, case=ticket.case, priority=PRIORITY_FOR_URGENCY[ticket.urgency],
                          reason=result.get("reasoning", "")[:500])
    if ticket.recommended_action == RecommendedAction.AUTO_RESPOND and settings.SUPPORT_AUTO_SEND:
        ticket_auto_send(actor=actor, ticket=ticket)
    return ticket


@transaction.atomic
def ticket_auto_send(*, actor, ticket: Ticket) -> TicketMessage | None:
    """The system sends an auto_respond triage's reply itself (SUPPORT_AUTO_SEND=true). The
    case stays open, awaiting the customer: a person spot-checks the reply and closes it."""
    from casework.cases.services import case_set_status

    ticket = Ticket.objects.select_for_update(of=("self",)).select_related("case", "customer").get(pk=ticket.pk)
    if (ticket.case.is_closed or ticket.recommended_action != RecommendedAction.AUTO_RESPOND
            or not ticket.suggested_reply or ticket.messages.filter(auto_sent=True).exists()):
        return None
    message = _message_add(ticket=ticket, direction=TicketMessage.Direction.AGENT, text=ticket.suggested_reply,
                           channel=ticket.channel, auto_sent=True)
    if ticket.first_response_at is None:
        Ticket.objects.filter(pk=ticket.pk).update(first_response_at=message.created_at)
    case_set_status(actor=actor, case=ticket.case, status=Case.Status.AWAITING_RESPONSE)
    audit_record(actor=actor, action="support.reply_auto_sent", case=ticket.case, obj=message,
                 data={"ticket_id": ticket.ticket_id, "body": ticket.suggested_reply[:500]})
    return message


# --- a person's decision ----------------------------------------------------------------

def _decide(*, actor, ticket: Ticket, outcome: str, reason: str):
    from casework.cases.services import case_close

    decision = case_close(actor=actor, case=ticket.case, outcome=outcome, reason=reason)
    Ticket.objects.filter(pk=ticket.pk).update(lifecycle=Ticket.Lifecycle.COMPLETED,
                                               completed_at=ticket.completed_at or timezone.now())
    ticket.refresh_from_db()
    return decision


@transaction.atomic
def ticket_reply(*, actor, ticket: Ticket, body: str) -> TicketMessage:
    """Send the (edited) reply and close the case as `replied`. A second send is a Conflict."""
    body = (body or "").strip()
    if not body:
        raise ValidationError({"body": "Write the reply before sending it."})
    if len(body) > MESSAGE_MAX_LENGTH:
        raise ValidationError({"body": f"A reply is at most {MESSAGE_MAX_LENGTH} characters."})
    _decide(actor=actor, ticket=ticket, outcome="replied", reason=f"Replied to the customer: {body[:300]}")
    message = _message_add(ticket=ticket, direction=TicketMessage.Direction.AGENT, text=body,
                           channel=ticket.channel, sent_by=actor if isinstance(actor, User) else None)
    if ticket.first_response_at is None:
        Ticket.objects.filter(pk=ticket.pk).update(first_response_at=message.created_at)
    audit_record(actor=actor, action="support.reply_sent", case=ticket.case, obj=message,
                 data={"ticket_id": ticket.ticket_id, "body": body[:500],
                       "edited": body != (ticket.suggested_reply or "").strip()})
    return message


@transaction.atomic
def ticket_escalate(*, actor, ticket: Ticket, reason: str):
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why the ticket is escalated."})
    return _decide(actor=actor, ticket=ticket, outcome="escalated", reason=reason)


@transaction.atomic
def ticket_close_no_action(*, actor, ticket: Ticket, reason: str):
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why no action is needed."})
    return _decide(actor=actor, ticket=ticket, outcome="no_action", reason=reason)

