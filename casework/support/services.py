"""Every write to support data goes through these functions; each is audited in its transaction.

The flow of a message (seed 001, "Pre-Workflow" and "Post-Workflow"):
  message_receive      the message and its customer are checked and an intake run starts
                       (agents pipeline "support", mode "intake"); no ticket exists yet.
  intake_resolve       the intake run's finish: the matcher's answer is accepted only at
                       high/medium confidence and only for one of this customer's ACTIVE
                       tickets (checked here, never taken from the model); the message is
                       appended to that ticket, or a new ticket (and SUP- case) is opened;
                       then a triage run is enqueued on the ticket's case.
  ticket_apply_triage  the triage run's finish: the code's guards, then the ticket's urgency,
                       type, language, action and suggested reply; the ticket moves to routed,
                       answer_ready, escalated or triage_failed (casework.support.states).
  ticket_triage_failed the triage run raised: triage_failed, in the queue for a person.
  ticket_auto_send     SUPPORT_AUTO_SEND: the system sends a drafted answer (never a VIP's).
  ticket_reply / ticket_escalate / ticket_close_no_action
                       a person's decision; each closes the case (a second one is a Conflict),
                       the ticket ends replied or closed without a reply.
  support_case_closing / support_case_closed
                       the generic close's hooks (casework.support.signals).
Every state change goes through lifecycle_transition over SUPPORT_LIFECYCLE.
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
from casework.entities.extraction import entities_extract
from casework.errors import Conflict
from casework.support.feedback import feedback_append
from casework.support.models import Customer, KBArticle, RecommendedAction, Ticket, TicketMessage
from casework.support.states import FINAL, FOR_ACTION, MATCHABLE, SUPPORT_LIFECYCLE, TRIAGED_FROM, TicketState
from casework.support.tickets import MESSAGE_MAX_LENGTH, _lock, _message_add, _move, _reply_email

PIPELINE = "support"
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
def message_receive(*, actor, customer_id: str, message: str, channel: str = "api", email: dict | None = None):
    """Accept a customer's message and start its intake run (matching, then triage).
    `email`: an inbound email's {"message_id", "subject", "inbound"} (casework.support.inbound),
    stored on the message once it has its ticket.

    Returns the intake AgentRun; its case is set once the message has its ticket."""
    from agents.tasks import pipeline_enqueue

    message = _clean_message(message)
    customer = Customer.objects.filter(customer_id=(customer_id or "").strip()).first()
    if customer is None:
        raise ValidationError({"customer_id": f"No customer {customer_id!r}."})
    channel = (channel or "api").strip()[:20] or "api"
    run = pipeline_enqueue(case=None, pipeline=PIPELINE, mode="intake", actor=actor, initial_state={
        "input_customer_id": customer.customer_id, "input_message": message, "input_channel": channel,
        "input_received_at": timezone.now().isoformat(), **({"input_email": email} if email else {})})
    audit_record(actor=actor, action="support.message_received", obj=run,
                 data={"customer_id": customer.customer_id, "channel": channel, "length": len(message),
                       "intake_run": run.pk})
    return run


def match_accepted(*, customer: Customer, match: dict | None) -> Ticket | None:
    """The matched ticket if the match may be used: high or medium confidence, and the id is
    one of this customer's matchable tickets right now (received, triage failed, routed).
    Anything else (a low confidence, an id the model made up, another customer's ticket, one
    drafted, escalated, answered or closed) is ignored."""
    if not match or match.get("confidence") not in ACCEPTED_CONFIDENCE:
        return None
    ticket_id = str(match.get("matched_ticket_id") or "").strip().upper()
    if not ticket_id:
        return None
    return (Ticket.objects.select_for_update(of=("self",)).select_related("case", "customer")
            .filter(customer=customer, ticket_id=ticket_id, lifecycle__in=MATCHABLE,
                    case__status__in=[s for s in Case.Status.values if s != Case.Status.CLOSED]).first())


@transaction.atomic
def intake_resolve(*, actor, customer_id: str, message: str, channel: str, match: dict | None,
                   note: str = "", intake_run: int | None = None, email: dict | None = None) -> tuple[Ticket, bool]:
    """Give the message its ticket: the accepted match, or a new ticket. Enqueues the triage
    of the whole thread. Returns (ticket, matched)."""
    customer = Customer.objects.get(customer_id=customer_id)
    ticket = match_accepted(customer=customer, match=match)
    matched = ticket is not None
    intake = {"run": intake_run, "matched": matched, "confidence": (match or {}).get("confidence"), "note": note}
    if ticket is None:
        ticket = ticket_open(actor=actor, customer=customer, message=message, channel=channel, intake=intake,
                             email=email)
    else:
        _message_add(ticket=ticket, direction=TicketMessage.Direction.CUSTOMER, text=message, channel=channel,
                     intake=intake, email=email)
        Ticket.objects.filter(pk=ticket.pk).update(updated_at=timezone.now())
        from casework.support.waiting import ticket_customer_answered

        ticket = ticket_customer_answered(actor="system", ticket=ticket)  # pending: the SLA clock runs again
        # The new message may name an account or an address the thread did not.
        entities_extract(case=ticket.case)
    if email and email.get("inbound"):
        from casework.support.attachments import inbound_attachments_store
        from casework.support.models import InboundEmail

        inbound = InboundEmail.objects.filter(pk=email["inbound"]).first()
        if inbound is not None:
            InboundEmail.objects.filter(pk=inbound.pk).update(ticket=ticket)
            inbound_attachments_store(inbound=inbound, ticket=ticket)
    audit_record(actor=actor, action="support.message_matched" if matched else "support.message_unmatched",
                 case=ticket.case, obj=ticket,
                 data={"ticket_id": ticket.ticket_id, "thread_id": ticket.thread_id, "match": match, "note": note})
    ticket_triage(actor=actor, ticket=ticket)
    return ticket, matched


@transaction.atomic
def ticket_open(*, actor, customer: Customer, message: str, channel: str = "api", intake: dict | None = None,
                email: dict | None = None, follows: Ticket | None = None) -> Ticket:
    from casework.cases.services import case_create

    message = _clean_message(message)
    title = " ".join(message.split())
    title = title if len(title) <= 80 else title[:79].rstrip() + "…"
    case = case_create(actor=actor, case_type="support_ticket", title=title,
                       description=f"Support ticket from {customer.customer_id} ({customer.get_plan_display()}).")
    ticket = Ticket(case=case, ticket_id=new_ticket_id(), customer=customer, channel=channel, follows=follows)
    ticket.full_clean(exclude=["case", "follows"])
    ticket.save()
    _message_add(ticket=ticket, direction=TicketMessage.Direction.CUSTOMER, text=message, channel=channel,
                 intake=intake or {}, email=email)
    entities_extract(case=case)
    audit_record(actor=actor, action="support.ticket_opened", case=case, obj=ticket,
                 data={"ticket_id": ticket.ticket_id, "thread_id": ticket.thread_id,
                       **({"follows": follows.ticket_id} if follows else {})})
    return ticket


def ticket_triage(*, actor, ticket: Ticket):
    """Triage the whole thread again in a new run, correlated by the ticket's id (not the
    thread id: a correlation id is chained into the audit hash and cannot be erased, so it
    carries no customer id)."""
    from agents.tasks import pipeline_enqueue

    with correlation(ticket.ticket_id):
        return pipeline_enqueue(case=ticket.case, pipeline=PIPELINE, mode="triage", actor=actor,
                                initial_state={"input_ticket_id": ticket.ticket_id})


# --- answers by email that name their ticket (casework.support.inbound) ------------------

@transaction.atomic
def ticket_message_join(*, actor, ticket: Ticket, message: str, email: dict | None = None, note: str = "") -> Ticket:
    """A customer's message that names its open ticket (email headers or subject) joins it, and
    the thread is triaged again. The matcher is not asked."""
    ticket = Ticket.objects.select_for_update(of=("self",)).select_related("case", "customer").get(pk=ticket.pk)
    message = _clean_message(message)
    _message_add(ticket=ticket, direction=TicketMessage.Direction.CUSTOMER, text=message, channel="email",
                 intake={"matched": True, "confidence": "thread", "note": note}, email=email)
    Ticket.objects.filter(pk=ticket.pk).update(updated_at=timezone.now())
    from casework.support.waiting import ticket_customer_answered

    ticket = ticket_customer_answered(actor="system", ticket=ticket)  # pending: the SLA clock runs again
    audit_record(actor=actor, action="support.message_threaded", case=ticket.case, obj=ticket,
                 data={"ticket_id": ticket.ticket_id, "note": note,
                       "message_id": (email or {}).get("message_id")})
    ticket_triage(actor=actor, ticket=ticket)
    return ticket


@transaction.atomic
def ticket_reopen(*, actor, ticket: Ticket, message: str, reason: str, email: dict | None = None) -> Ticket:
    """The customer answered a solved ticket within SUPPORT_REOPEN_DAYS: its case reopens (the
    decision kept, no longer final), the message joins the thread and the ticket goes back to
    a person (reopened: never auto-answered), through the lifecycle."""
    from casework.cases.services import case_reopen

    ticket = _lock(ticket)
    message = _clean_message(message)
    if ticket.case.is_closed:
        case_reopen(actor=actor, case=ticket.case, reason=reason)
        ticket.case.refresh_from_db()
    _message_add(ticket=ticket, direction=TicketMessage.Direction.CUSTOMER, text=message, channel="email",
                 intake={"matched": True, "confidence": "thread", "note": reason}, email=email)
    ticket.reopened_at, ticket.completed_at = timezone.now(), None
    ticket = _move(actor=actor, ticket=ticket, to=TicketState.REOPENED, reason=reason,
                   save=("reopened_at", "completed_at"))
    ticket_triage(actor=actor, ticket=ticket)
    return ticket


@transaction.atomic
def ticket_follow_up(*, actor, ticket: Ticket, message: str, email: dict | None = None) -> Ticket:
    """The customer answered a ticket solved longer than SUPPORT_REOPEN_DAYS ago: a new ticket
    that follows the old one, triaged as any new ticket."""
    old = ticket
    ticket = ticket_open(actor=actor, customer=old.customer, message=message, channel="email", email=email,
                         follows=old, intake={"matched": False, "note": f"Answers {old.ticket_id}, solved more than "
                                                                     f"SUPPORT_REOPEN_DAYS ago: a new ticket follows it."})
    ticket_triage(actor=actor, ticket=ticket)
    return ticket


# --- triage results ---------------------------------------------------------------------


@transaction.atomic
def ticket_apply_triage(*, actor, ticket: Ticket, triage: dict) -> Ticket:
    """Store a triage (see casework.support.agents.pipeline.triage_summary) on its ticket.

    Steps: lock the ticket; an older run's triage never overwrites a newer one's; store the
    translations; on a ticket that is not open to a triage any more (a person closed it, a
    reply went out, it waits as drafted or escalated) keep the triage for the record and
    change nothing else; apply the code's guards (casework.support.guards: urgency floor,
    unknown urgency, the seed's recommended actions, a person's priority) and audit each
    override; set urgency, type, language, action and the suggested reply; move the ticket to
    where its result puts it (a triage that did not finish: triage failed; otherwise by
    recommended action); the case's priority follows the urgency unless a person set it; a
    drafted answer is sent when SUPPORT_AUTO_SEND is on."""
    from casework.cases.services import case_set_priority
    from casework.support.guards import note_overrides, triage_guard, triage_priority

    ticket = Ticket.objects.select_for_update(of=("self",)).select_related("case", "customer").get(pk=ticket.pk)
    if (ticket.triage.get("run") or 0) > (triage.get("run") or 0):
        # A newer run (a follow-up's) finished first: an older triage does not overwrite it.
        audit_record(actor=actor, action="support.triage_superseded", case=ticket.case, obj=ticket,
                     data={"run": triage.get("run"), "kept": ticket.triage.get("run")})
        return ticket
    now = timezone.now()
    translations = (triage.get("translation") or {}).get("by_message") or {}
    for message in ticket.messages.filter(pk__in=[int(k) for k in translations]):
        TicketMessage.objects.filter(pk=message.pk).update(text_en=translations[str(message.pk)])
    if ticket.case.is_closed or ticket.lifecycle not in TRIAGED_FROM:
        ticket.triage, ticket.triaged_at = triage, now
        ticket.save(update_fields=["triage", "triaged_at", "updated_at"])
        audit_record(actor=actor, action="support.triage_kept_for_record", case=ticket.case, obj=ticket,
                     data={"run": triage.get("run"), "lifecycle": ticket.lifecycle,
                           "case_closed": ticket.case.is_closed})
        return ticket
    overrides = triage_guard(ticket=ticket, triage=triage)
    result = triage["result"]
    priority, kept = triage_priority(ticket=ticket, urgency=PRIORITY_FOR_URGENCY[result["urgency"]])
    if kept is not None:
        note_overrides(triage, [kept])
        overrides.append(kept)
    info = result.get("extracted_info") or {}
    ticket.triage = triage
    ticket.triaged_at = now
    language = (triage.get("translation") or {}).get("original_language") or info.get("language") or ""
    ticket.language = language_code(language)
    ticket.urgency = result["urgency"]
    ticket.ticket_type = (triage.get("supervisor") or {}).get("ticket_type") or info.get("product_area") or ""
    if ticket.ticket_type not in ("billing", "technical", "general"):
        ticket.ticket_type = ""
    ticket.recommended_action = result.get("recommended_action") or RecommendedAction.ROUTE_SPECIALIST
    ticket.suggested_reply = result.get("suggested_response") or ""
    ticket.full_clean(exclude=["case", "customer"])
    ticket.save()
    for o in overrides:
        audit_record(actor="system", action="support.guard_applied", case=ticket.case, obj=ticket,
                     data={"run": triage.get("run"), **o.as_dict()})
    to = TicketState.TRIAGE_FAILED if triage.get("incomplete") else FOR_ACTION[ticket.recommended_action]
    ticket = _move(actor=actor, ticket=ticket, to=to, reason=(result.get("reasoning") or "")[:500],
                   data={"run": triage.get("run"), "recommended_action": ticket.recommended_action})
    audit_record(actor=actor, action="support.triaged", case=ticket.case, obj=ticket,
                 data={"run": triage.get("run"), "urgency": ticket.urgency, "ticket_type": ticket.ticket_type,
                       "recommended_action": ticket.recommended_action, "lifecycle": ticket.lifecycle,
                       "failures": triage.get("failures", []), "guards": triage.get("guards", [])})
    if priority is not None:
        case_set_priority(actor=actor, case=ticket.case, priority=priority, reason=(result.get("reasoning") or "")[:500])
    if ticket.lifecycle == TicketState.ESCALATED:
        from casework.support.groups import ticket_escalate_to_group

        ticket_escalate_to_group(actor="system", ticket=ticket, reason=(result.get("reasoning") or "")[:500])
    if ticket.lifecycle == TicketState.ANSWER_READY and settings.SUPPORT_AUTO_SEND:
        ticket_auto_send(actor="system", ticket=ticket)
    return ticket


@transaction.atomic
def ticket_triage_failed(*, actor, ticket: Ticket, run: int | None, error: str) -> Ticket:
    """A triage run raised (the pipeline's on_failed): the ticket says its triage failed and
    stays in the queue for a person, instead of waiting for a triage that will not come."""
    ticket = Ticket.objects.select_for_update(of=("self",)).select_related("case").get(pk=ticket.pk)
    if ticket.case.is_closed or ticket.lifecycle not in (TicketState.RECEIVED, TicketState.ROUTED):
        return ticket
    if (ticket.triage.get("run") or 0) > (run or 0):
        return ticket  # a newer triage has landed; this failure says nothing about it
    from casework.cases.services import case_set_priority
    from casework.support.guards import note_overrides, triage_guard, triage_priority

    # What the page shows: the failure, the earlier triage's result (if any) kept, the guards
    # applied to an urgency nobody assessed.
    triage = {**ticket.triage, "run": run, "incomplete": True, "guards": [], "overrides": [],
              "failures": [{"agent": "triage run", "error": (error or "")[:500]}],
              "result": {**(ticket.triage.get("result") or {}), "urgency": ticket.urgency}}
    overrides = triage_guard(ticket=ticket, triage=triage, actions=False)
    priority, kept = triage_priority(ticket=ticket, urgency=PRIORITY_FOR_URGENCY[triage["result"]["urgency"]])
    if kept is not None:
        note_overrides(triage, [kept])
        overrides.append(kept)
    ticket.triage, ticket.urgency = triage, triage["result"]["urgency"]
    ticket.recommended_action = ticket.recommended_action or RecommendedAction.ROUTE_SPECIALIST
    ticket.save(update_fields=["triage", "urgency", "recommended_action", "updated_at"])
    for o in overrides:
        audit_record(actor="system", action="support.guard_applied", case=ticket.case, obj=ticket,
                     data={"run": run, **o.as_dict()})
    ticket = _move(actor=actor, ticket=ticket, to=TicketState.TRIAGE_FAILED,
                   reason=f"The triage run {run} failed: {(error or '')[:300]}", data={"run": run})
    if priority is not None:
        case_set_priority(actor=actor, case=ticket.case, priority=priority,
                          reason="The triage failed; a person triages it.")
    return ticket


@transaction.atomic
def ticket_auto_send(*, actor, ticket: Ticket) -> TicketMessage | None:
    """The system sends a drafted answer itself (SUPPORT_AUTO_SEND=true). Never a VIP's (the
    refusal is audited). The case stays open, awaiting the customer: a person spot-checks the
    reply and closes it."""
    ticket = Ticket.objects.select_for_update(of=("self",)).select_related("case", "customer").get(pk=ticket.pk)
    if ticket.case.is_closed or ticket.lifecycle != TicketState.ANSWER_READY or not ticket.suggested_reply:
        return None
    if ticket.reopened_at is not None:
        audit_record(actor="system", action="support.guard_applied", case=ticket.case, obj=ticket,
                     data={"rule": "reopened_never_auto_sent", "field": "auto_send", "proposed": "send",
                           "decided": "not sent",
                           "reason": f"{ticket.ticket_id} was reopened by the customer: a person sends the reply."})
        return None
    if ticket.customer.vip:
        audit_record(actor="system", action="support.guard_applied", case=ticket.case, obj=ticket,
                     data={"rule": "vip_never_auto_sent", "field": "auto_send", "proposed": "send",
                           "decided": "not sent",
                           "reason": f"{ticket.customer.customer_id} is a VIP: a person sends the reply."})
        return None
    if not ticket.customer.email:
        # Nothing could go out: a sent-looking state with no email behind it is what issue 43 removed.
        audit_record(actor="system", action="support.guard_applied", case=ticket.case, obj=ticket,
                     data={"rule": "no_address_never_auto_sent", "field": "auto_send", "proposed": "send",
                           "decided": "not sent",
                           "reason": f"{ticket.customer.customer_id} has no email address: nothing can be sent; "
                                     "a person answers another way or closes it."})
        return None
    message = _message_add(ticket=ticket, direction=TicketMessage.Direction.AGENT, text=ticket.suggested_reply,
                           channel=ticket.channel, auto_sent=True)
    feedback_append(ticket, message)  # "Did this answer your question?" (casework.support.feedback)
    email = _reply_email(ticket=ticket, message=message)
    ticket.first_response_at = ticket.first_response_at or message.created_at
    _move(actor=actor, ticket=ticket, to=TicketState.REPLY_QUEUED,
          reason="Written automatically (SUPPORT_AUTO_SEND); its email is queued.",
          data={"message": message.pk, "auto_sent": True, "email": email.pk}, save=("first_response_at",))
    audit_record(actor=actor, action="support.reply_auto_written", case=ticket.case, obj=message,
                 data={"ticket_id": ticket.ticket_id, "body": ticket.suggested_reply[:500]})
    return message


# --- the reply's email (casework.outbox.email) -------------------------------------------


def _needs_translation(ticket: Ticket) -> bool:
    return bool(ticket.language) and ticket.language.split("-")[0] != "en"


def _reply_translate(*, actor, ticket: Ticket, message: TicketMessage):
    from agents.tasks import pipeline_enqueue

    with correlation(ticket.ticket_id):
        return pipeline_enqueue(case=ticket.case, pipeline=PIPELINE, mode="reply", actor=actor,
                                initial_state={"input_message_id": message.pk})


@transaction.atomic
def reply_translation_apply(*, actor, message_id: int, output: dict | None, provider: str = "",
                            error: str = "") -> TicketMessage | None:
    """The reply's translation landed (the "reply" run's finish, or its failure): the message
    keeps what the person wrote and gets the customer's-language text and the English beside
    it; then its email is queued. No translation (offline, a model that did not, a failure):
    the reply goes as written and the page says why. Once only: a repeat changes nothing."""
    message = TicketMessage.objects.select_for_update().filter(pk=message_id).first()
    if message is None or (message.translation or {}).get("status") != "pending":
        return message
    ticket = _lock(message.ticket)
    as_written = message.text
    translation = {"language": ticket.language, "as_written": as_written}
    if output and output.get("translated") and (output.get("reply") or "").strip():
        message.text = output["reply"].strip()
        message.text_en = (output.get("reply_en") or "").strip()
        translation["status"] = "translated"
    else:
        message.text_en = (output or {}).get("reply_en", "").strip() if output else ""
        translation["status"] = ("failed" if output is None else
                                 "not_translated_offline" if provider == "offline" else "not_translated")
        if error:
            translation["error"] = error[:300]
    message.translation = translation
    message.save(update_fields=["text", "text_en", "translation"])
    # After the translation: the translator never sees (nor rewrites) the signed link.
    feedback_append(ticket, message)
    audit_record(actor=actor, action="support.reply_translated", case=ticket.case, obj=message,
                 data={"ticket_id": ticket.ticket_id, **{k: v for k, v in translation.items() if k != "as_written"}})
    _reply_email(ticket=ticket, message=message)
    return message


def reply_email_sent(email) -> None:
    """The mail server accepted a reply's email (in the transaction that records it): the
    ticket waiting on it is replied (the email is the fact "replied" rests on), a person's reply
    closes its case as `replied` (their decision, taken at the click, recorded now that it
    happened), and `support.reply_sent` goes out to the webhooks."""
    from casework.outbox.services import case_data, event_record

    message = TicketMessage.objects.filter(pk=email.source_id).select_related("ticket", "sent_by").first()
    if message is None:
        return
    ticket = _lock(message.ticket)
    if ticket.lifecycle in (TicketState.REPLY_QUEUED, TicketState.REPLY_FAILED):
        ticket.completed_at = email.sent_at
        _move(actor="system", ticket=ticket, to=TicketState.REPLIED,
              reason=f"The reply's email was accepted by the mail server ({email.message_id}).",
              data={"message": message.pk, "email": email.pk}, save=("completed_at",), fact=email)
    if message.sent_by_id and not message.auto_sent and not ticket.case.is_closed \
            and ticket.lifecycle == TicketState.REPLIED:
        from casework.cases.services import case_close

        case_close(actor=message.sent_by, case=ticket.case, outcome="replied",
                   reason=f"Replied to the customer (the mail server accepted the email at "
                          f"{email.sent_at:%Y-%m-%d %H:%M} UTC): {_as_written(message)[:300]}")
    event_record(type="support.reply_sent", case=ticket.case, now=email.sent_at, data={
        "case": case_data(ticket.case), "ticket_id": ticket.ticket_id, "customer_id": ticket.customer.customer_id,
        "message": {"id": message.pk, "message_id": email.message_id, "subject": email.subject,
                    "auto_sent": message.auto_sent,
                    "sent_by": message.sent_by.get_username() if message.sent_by_id else None,
                    "sent_at": email.sent_at.isoformat()}})


def _as_written(message: TicketMessage) -> str:
    """The reply as its author wrote it (before the translation and the feedback link)."""
    written = (message.translation or {}).get("as_written") or message.text
    return written.split("\n\nDid this answer your question?")[0].strip()


def _told_of_a_failed_reply(ticket: Ticket, message: TicketMessage) -> list[User]:
    """Who hears that a reply did not reach the customer: its author, the case's assignee, and,
    with nobody assigned, the ticket's group (or else every investigator who may see the case)."""
    from casework.cases.visibility import people_who_may_see
    from casework.people.roles import is_investigator
    from casework.support.groups import group_eligible_members

    people = [u for u in (message.sent_by, ticket.case.assignee) if u is not None]
    if ticket.case.assignee_id is None:
        people += (group_eligible_members(ticket.group, ticket.case) if ticket.group_id else
                   [u for u in people_who_may_see(ticket.case).order_by("username") if is_investigator(u)])
    return list({u.pk: u for u in people if u.is_active}.values())


def reply_email_failed(email) -> None:
    """A reply's email failed after its retries: the ticket says so, the case (still open: it
    closes as replied only on the mail server's acceptance) is back in the queue with a person
    to act, and its author, its assignee (or, unassigned, its group or team) are told."""
    from casework.cases.notifications.services import notification_send

    message = TicketMessage.objects.filter(pk=email.source_id).select_related("ticket", "sent_by").first()
    if message is None:
        return
    ticket = _lock(message.ticket)
    if ticket.lifecycle == TicketState.REPLY_QUEUED:
        _move(actor="system", ticket=ticket, to=TicketState.REPLY_FAILED,
              reason=f"The reply's email failed after {email.attempts} attempts: {email.last_error}",
              data={"message": message.pk, "email": email.pk})
    author = message.sent_by.get_username() if message.sent_by_id else "the automatic reply"
    for user in _told_of_a_failed_reply(ticket, message):
        notification_send(actor="system", kind="support", user=user, case=ticket.case,
                          subject=f"The reply on {ticket.ticket_id} was not delivered",
                          body=f"The email to {email.to} ({author}) failed after {email.attempts} attempts: "
                               f"{email.last_error}. The customer has not got it; {ticket.case.reference} is back in "
                               "the queue. Send it again from the ticket's page, or close it without a reply.",
                          url=f"/cases/{ticket.case.reference}/")


@transaction.atomic
def ticket_reply_resend(*, actor, ticket: Ticket) -> TicketMessage:
    """A person sends the failed reply's email again (the same message and Message-ID), or the
    reply that could not be sent once the customer has an email address."""
    from casework.outbox.email import email_retry
    from casework.outbox.models import OutboundEmail

    ticket = _lock(ticket)
    if ticket.lifecycle == TicketState.REPLY_UNSENT:
        message = ticket.messages.filter(direction=TicketMessage.Direction.AGENT, email__isnull=True) \
            .order_by("-id").first()
        if message is None or not ticket.customer.email:
            raise Conflict(f"{ticket.customer.customer_id} has no email address yet: add it, then send the reply.",
                           code="no_address")
        email = _reply_email(ticket=ticket, message=message)
        _move(actor=actor, ticket=ticket, to=TicketState.REPLY_QUEUED,
              reason=f"The customer's address was added; a person sent the reply to {email.to}.",
              data={"message": message.pk, "email": email.pk})
        return message
    message = (ticket.messages.filter(direction=TicketMessage.Direction.AGENT, email__state=OutboundEmail.State.FAILED)
               .select_related("email").order_by("-id").first())
    if message is None:
        raise Conflict(f"{ticket.ticket_id} has no failed reply email to send again.", code="no_failed_email")
    email_retry(actor=actor, email=message.email)
    if ticket.lifecycle == TicketState.REPLY_FAILED:
        _move(actor=actor, ticket=ticket, to=TicketState.REPLY_QUEUED, reason="A person sent the email again.",
              data={"message": message.pk, "email": message.email_id})
    return message


# --- a person's decision ----------------------------------------------------------------


def _close_without_reply(*, actor, ticket: Ticket, outcome: str, reason: str):
    from casework.cases.services import case_close

    ticket = _lock(ticket)
    decision = case_close(actor=actor, case=ticket.case, outcome=outcome, reason=reason)
    ticket_after_close(actor=actor, ticket=ticket, outcome=outcome, reason=reason)
    return decision


def ticket_after_close(*, actor, ticket: Ticket, outcome: str, reason: str = "") -> Ticket:
    """The ticket follows its case's close (a decision here, or the generic close): a ticket
    that is still open is closed without a reply (a `replied` close needs a reply that went
    out, which has moved the ticket to replied already: support_case_closing refuses it
    otherwise)."""
    if ticket.lifecycle in FINAL or ticket.lifecycle == TicketState.REPLY_QUEUED:
        # A reply was written and its email is on its way: the email's outcome moves the ticket.
        return ticket
    ticket.completed_at = timezone.now()
    return _move(actor=actor, ticket=ticket, to=TicketState.CLOSED_NO_REPLY,
                 reason=f"Closed as {outcome} without a reply: {reason[:300]}", data={"outcome": outcome},
                 save=("completed_at",))


def replied_close_refusal(ticket: Ticket) -> str:
    """Why the case may not be closed as `replied` ("" if it may): no reply has gone out (the
    ticket is replied only once the mail server accepted a reply's email)."""
    if ticket.lifecycle == TicketState.REPLIED:
        return ""
    if ticket.lifecycle == TicketState.REPLY_QUEUED:
        return (f"The reply on {ticket.ticket_id} is queued, not sent: the case closes as replied by itself once "
                "the mail server accepts it.")
    return (f"No reply was sent on {ticket.ticket_id}: send the reply from the ticket's page (the case closes "
            "as replied once its email is accepted), or choose another outcome.")


@transaction.atomic
def ticket_reply(*, actor, ticket: Ticket, body: str) -> TicketMessage:
    """A person sends the (edited) reply: their decision to close the case as `replied`. The
    reply's email is queued; the case stays open (awaiting the mail server) and closes as
    replied only when the server accepts it (reply_email_sent), or comes back to the queue
    if it fails (reply_email_failed). A customer with no email address gets nothing: the reply
    is written, not sent (reply_unsent), and the case stays with a person. A second reply
    (after another person's, or after the system sent the drafted one) is a Conflict."""
    from casework.cases.lifecycle.services import transition_check
    from casework.cases.services import case_may_decide

    body = (body or "").strip()
    if not body:
        raise ValidationError({"body": "Write the reply before sending it."})
    if len(body) > MESSAGE_MAX_LENGTH:
        raise ValidationError({"body": f"A reply is at most {MESSAGE_MAX_LENGTH} characters."})
    ticket = _lock(ticket)
    case = ticket.case
    if case.is_closed:
        decision = case.decisions.filter(final=True).select_related("decided_by").first()
        who = decision.decided_by.get_username() if decision and decision.decided_by else "someone"
        raise Conflict(f"{case.reference} was already closed by {who}"
                       + (f" at {decision.decided_at:%Y-%m-%d %H:%M} UTC." if decision else "."),
                       code="already_closed")
    case_may_decide(actor, case)
    if ticket.lifecycle in (TicketState.REPLIED, TicketState.REPLY_QUEUED, TicketState.REPLY_FAILED,
                            TicketState.REPLY_UNSENT):
        sent = ticket.messages.filter(direction=TicketMessage.Direction.AGENT).order_by("-id").first()
        who = "the system" if sent is None or sent.auto_sent else (
            sent.sent_by.get_username() if sent.sent_by else "someone")
        when = f" at {sent.created_at:%Y-%m-%d %H:%M} UTC" if sent else ""
        then = {TicketState.REPLIED: "Close the case to confirm that reply.",
                TicketState.REPLY_QUEUED: "Its email is queued; the case closes as replied once it is accepted.",
                TicketState.REPLY_FAILED: "Its email failed: send it again, or close the case without a reply.",
                TicketState.REPLY_UNSENT: "The customer has no email address: add it and send that reply, or "
                                          "close the case without a reply."}[ticket.lifecycle]
        raise Conflict(f"{ticket.ticket_id} was already answered by {who}{when}; a second reply is refused. {then}",
                       code="already_replied")
    target = TicketState.REPLY_QUEUED if ticket.customer.email else TicketState.REPLY_UNSENT
    transition_check(SUPPORT_LIFECYCLE, actor=actor, source=ticket.lifecycle, target=target,
                     reference=case.reference)
    message = _message_add(ticket=ticket, direction=TicketMessage.Direction.AGENT, text=body,
                           channel=ticket.channel, sent_by=actor if isinstance(actor, User) else None)
    edited = body != (ticket.suggested_reply or "").strip()
    if ticket.customer.email and _needs_translation(ticket):
        # Emailed once reply_translator has given it in the customer's language (reply_translation_apply).
        TicketMessage.objects.filter(pk=message.pk).update(
            translation={"status": "pending", "language": ticket.language})
        _reply_translate(actor=actor, ticket=ticket, message=message)
        message.email = None
        ticket.first_response_at = ticket.first_response_at or message.created_at
        _move(actor=actor, ticket=ticket, to=TicketState.REPLY_QUEUED,
              reason=f"A person sent the reply; it is translated to {ticket.language}, then emailed.",
              data={"message": message.pk, "translation": "pending"}, save=("first_response_at",))
        audit_record(actor=actor, action="support.reply_written", case=case, obj=message,
                     data={"ticket_id": ticket.ticket_id, "body": body[:500], "edited": edited,
                           "email": "after the translation"})
        return message
    feedback_append(ticket, message)  # "Did this answer your question?" (casework.support.feedback)
    email = _reply_email(ticket=ticket, message=message)
    if email is None:
        # Nothing went out, so it is no first response either.
        _move(actor=actor, ticket=ticket, to=TicketState.REPLY_UNSENT,
              reason="A person wrote the reply, but the customer has no email address: nothing was sent.",
              data={"message": message.pk})
    else:
        ticket.first_response_at = ticket.first_response_at or message.created_at
        _move(actor=actor, ticket=ticket, to=TicketState.REPLY_QUEUED,
              reason="A person sent the reply; its email is queued (the case closes as replied once it is accepted).",
              data={"message": message.pk, "email": email.pk}, save=("first_response_at",))
    audit_record(actor=actor, action="support.reply_written", case=case, obj=message,
                 data={"ticket_id": ticket.ticket_id, "body": body[:500], "edited": edited,
                       "email": email.pk if email else None})
    return message


@transaction.atomic
def ticket_escalate(*, actor, ticket: Ticket, reason: str):
    """A person escalates the ticket out of this queue: the case closes as `escalated`, and the
    ticket is closed without a reply."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why the ticket is escalated."})
    return _close_without_reply(actor=actor, ticket=ticket, outcome="escalated", reason=reason)


@transaction.atomic
def ticket_close_no_action(*, actor, ticket: Ticket, reason: str):
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why no action is needed."})
    return _close_without_reply(actor=actor, ticket=ticket, outcome="no_action", reason=reason)


# --- the generic close (casework.cases: /cases/<ref>/close/, the API, the bulk close) -----

def support_case_closing(*, case: Case, outcome: str) -> None:
    """Before the generic close writes its decision: `replied` needs a reply that went out."""
    ticket = Ticket.objects.filter(case=case).first()
    if ticket is not None and outcome == "replied" and (why := replied_close_refusal(ticket)):
        raise ValidationError({"outcome": why})


@transaction.atomic
def support_case_closed(*, case: Case, outcome: str, reason: str, actor) -> Ticket | None:
    """After the generic close committed: the ticket follows (ticket_after_close)."""
    ticket = Ticket.objects.select_for_update(of=("self",)).select_related("case").filter(case=case).first()
    if ticket is None:
        return None
    return ticket_after_close(actor=actor, ticket=ticket, outcome=outcome, reason=reason)
