"""The support ticket's lifecycle (Ticket.lifecycle), in one table (seed 001, "Post-Workflow").

    received ──agent──> routed ─────────────┐
        │   ──agent──> answer_ready ──system (SUPPORT_AUTO_SEND)──> replied
        │   ──agent──> escalated            │
        └───agent/system──> triage_failed   │
    any open state ──person (one click: send the reply)──> reply_queued ──system (the mail server accepted it)──> replied
                                                          └──system (failed after its retries)──> reply_failed
    any open state ──person (the customer has no address)──> reply_unsent ──person (an address was added: send)──> reply_queued
    any open state ──person (escalate elsewhere, no action needed)──> closed_no_reply
    routed / triage_failed / answer_ready / reopened ──person (to a group)──> escalated
    routed / triage_failed / escalated / reopened ──person (asks the customer)──> pending
    pending ──system (the customer answered)──> routed
    pending ──system (SUPPORT_AUTO_CLOSE_DAYS of silence)──> closed_inactive ──person (closes)──> closed_no_reply
    replied / closed_no_reply ──system (the customer wrote back, or "not solved")──> reopened

The seed persists auto_respond and escalate_human tickets and keeps route_specialist ones
"activated" in Redis. It calls both persisted kinds "completed", and the seed itself says an
escalated ticket persists as "open" until a person handles it; an auto_respond ticket has only a
drafted reply until someone (or SUPPORT_AUTO_SEND) sends it. So each says here what really
happened: a reply is "sent" only once one went out, and a ticket is done only when a reply went
out or a person closed it without one.

Who moves what: the triage's agents route a ticket (received, routed or a failed triage ->
routed / answer_ready / escalated / triage_failed); the system sends a drafted answer when
SUPPORT_AUTO_SEND is on (never a VIP's: casework.support.guards) and marks a triage whose run
raised as failed; only a person replies by hand or closes. Tickets that a new message may join
(the seed's "activated" tickets) are MATCHABLE; tickets waiting for a person are WAITING (the
support queue).

A claim rests on a fact (DESIGN.md): "replied" is entered only with the reply's OutboundEmail
in state sent (lifecycle_transition checks it). A person's reply is their decision to close the
case as `replied`, but the case stays open until that fact arrives: the mail server's
acceptance closes it with their decision (casework.support.services.reply_email_sent); a
failure brings it back to the queue (reply_failed) and tells the people working it. A customer
with no email address gets nothing sent: the reply is written, not sent (reply_unsent), until
an address is added and it goes out.

Each state puts the shared case in the queue (State.case_status). closed_no_reply is reached
by a person's decision, which has closed the case already (the transition service then leaves
it closed); "replied" follows the accepted email (a person's reply then closes the case; an
auto-sent one leaves it awaiting the customer until a person confirms it). closed_no_reply says Closed: only a person's move
enters it (tests/cases/test_lifecycles.py holds every type to that). That is why the system's
auto-close after SUPPORT_AUTO_CLOSE_DAYS is its own state, closed_inactive: the ticket says what
the system did under that policy, and the case waits for a person's decision
(casework.support.waiting).
"""

from __future__ import annotations

from django.db import models

from casework.cases.lifecycle.table import AGENT, PERSON, SYSTEM, Fact, Lifecycle, State, move


class TicketState(models.TextChoices):
    RECEIVED = "received", "Received, being triaged"
    TRIAGE_FAILED = "triage_failed", "Triage failed"
    ROUTED = "routed", "Routed to a specialist"
    ANSWER_READY = "answer_ready", "Reply drafted, not sent"
    ESCALATED = "escalated", "Escalated, open"
    PENDING = "pending", "Pending: waiting on the customer"
    CLOSED_INACTIVE = "closed_inactive", "Closed for inactivity"
    REPLY_QUEUED = "reply_queued", "Reply written, email queued"
    REPLY_FAILED = "reply_failed", "Reply not delivered"
    REPLY_UNSENT = "reply_unsent", "Reply written, not sent: no email address"
    REPLIED = "replied", "Reply sent"
    CLOSED_NO_REPLY = "closed_no_reply", "Closed without a reply"
    REOPENED = "reopened", "Reopened: the customer wrote back"


S = TicketState

MEANINGS = {
    S.RECEIVED: "The customer's message opened the ticket; the agents are triaging it (translation, "
                "supervisor, specialist). Nothing has been decided yet.",
    S.TRIAGE_FAILED: "The triage did not finish (an agent failed or was not trusted, the run stopped or raised): "
                     "no agent routed it. A person must look; it stays in the queue, and a follow-up message may "
                     "still join it.",
    S.ROUTED: "route_specialist: a person writes the reply (the suggestion is a draft). Follow-up messages join "
              "it and it is triaged again (the seed's activated ticket).",
    S.ANSWER_READY: "auto_respond: a reply backed by a knowledge-base article is drafted, but nothing has gone out "
                    "until a person sends it in one click (or SUPPORT_AUTO_SEND sends it).",
    S.ESCALATED: "escalate_human (direct escalation, a VIP, a sensitive matter): open until a person handles it "
                 "(seed 001: persisted as open). No reply has gone out.",
    S.PENDING: "A person asked the customer something and waits for the answer: the SLA clock is paused "
               "(due_at moves later by the paused time when the customer answers). Without an answer for "
               "SUPPORT_AUTO_CLOSE_DAYS the system closes it for inactivity.",
    S.CLOSED_INACTIVE: "The customer did not answer for SUPPORT_AUTO_CLOSE_DAYS: the system closed the ticket "
                       "under that policy and told the customer so. The case stays open for a person to "
                       "confirm (only a person's decision closes a case); an answer of the customer reopens it.",
    S.REPLY_QUEUED: "A reply was written (by a person, or by SUPPORT_AUTO_SEND) and its email is queued: "
                     "nothing has reached the customer yet. The email worker moves it on.",
    S.REPLY_FAILED: "The reply's email could not be delivered after its retries (the reason is on the page): "
                    "the customer has not got it. A person sends it again or closes the ticket.",
    S.REPLY_UNSENT: "A person wrote a reply, but the customer has no email address: nothing went out and no "
                    "support.reply_sent was emitted. The case stays with a person: add the customer's address and "
                    "send it, or close the case without a reply.",
    S.REPLIED: "A reply really went out: its email was accepted by the customer's mail server. A person's reply "
               "then closes the case as replied (their decision, recorded when the fact arrived); one sent by "
               "SUPPORT_AUTO_SEND leaves the case awaiting the customer until a person confirms it.",
    S.CLOSED_NO_REPLY: "A person closed the case without a reply (escalated elsewhere, or no action needed). "
                       "Reached only once the decision closed the case; the SLA clock stops.",
    S.REOPENED: "The customer answered a solved ticket's thread within SUPPORT_REOPEN_DAYS (In-Reply-To, References "
                "or the ticket id in the subject), or said \"not solved\" on a reply's feedback link: it is back with "
                "a person, never auto-answered; its case reopened. Follow-ups join it.",
}

CASE_STATUS = {
    S.RECEIVED: "new",
    # A person has to act and no agent recommended anything: the working part of the queue
    # (as access's Manual Intervention Required).
    S.TRIAGE_FAILED: "in_progress",
    S.ROUTED: "awaiting_decision",
    S.ANSWER_READY: "awaiting_decision",
    S.ESCALATED: "awaiting_decision",
    S.PENDING: "awaiting_response",
    # The ticket is closed; the case waits for a person's decision to close it.
    S.CLOSED_INACTIVE: "awaiting_decision",
    S.REPLY_QUEUED: "awaiting_response",
    # A person has to act: the reply did not reach the customer.
    S.REPLY_FAILED: "in_progress",
    # Nothing went out: a person adds an address and sends it, or closes without a reply.
    S.REPLY_UNSENT: "in_progress",
    S.REPLIED: "awaiting_response",
    S.CLOSED_NO_REPLY: "closed",
    S.REOPENED: "in_progress",
}

# Solved: a reply went out or a person closed it. Not dead ends: the customer's answer to the
# thread (within SUPPORT_REOPEN_DAYS) or "not solved" on a reply's feedback link reopens it, so the
# table marks no state final.
FINAL = frozenset({S.REPLIED, S.CLOSED_NO_REPLY})
OPEN = tuple(s for s in S if s not in FINAL)
# A triage's result: where the triage's recommended action puts the ticket.
FOR_ACTION = {"route_specialist": S.ROUTED, "auto_respond": S.ANSWER_READY, "escalate_human": S.ESCALATED}
# A new message of the customer may join these (the seed keeps them in Redis); the others were
# persisted, and a new message opens a new ticket.
MATCHABLE = (S.RECEIVED, S.TRIAGE_FAILED, S.ROUTED, S.PENDING, S.CLOSED_INACTIVE, S.REOPENED)
# Waiting for a person: the support queue.
WAITING = (S.TRIAGE_FAILED, S.ROUTED, S.ANSWER_READY, S.ESCALATED, S.REPLY_FAILED, S.REPLY_UNSENT, S.CLOSED_INACTIVE,
           S.REOPENED)
# Sending a reply: a person's, or SUPPORT_AUTO_SEND's (from answer_ready).
REPLY_FROM = (S.RECEIVED, S.TRIAGE_FAILED, S.ROUTED, S.ESCALATED, S.PENDING, S.CLOSED_INACTIVE, S.REOPENED)
# A person may ask the customer and wait (pending) from these.
PENDING_FROM = (S.TRIAGE_FAILED, S.ROUTED, S.ESCALATED, S.REOPENED)
# A triage (a new one after a follow-up, too) may route the ticket from these.
TRIAGED_FROM = (S.RECEIVED, S.TRIAGE_FAILED, S.ROUTED)

# What a state says happened outside Casework, and the record it rests on (DESIGN.md: "A claim
# rests on a fact"): lifecycle_transition enters it only with that record.
CLAIMS = {
    S.REPLIED: {"claim": "the reply reached the customer's mail server",
                "fact": Fact("outbox.OutboundEmail", "the reply's email, accepted by the mail server (state sent)",
                             holds=lambda email: email.state == "sent" and email.purpose == "support.reply")},
}

SUPPORT_LIFECYCLE = Lifecycle(
    key="support_ticket",
    label="Support ticket (seed 001)",
    record="support.Ticket",
    field="lifecycle",
    initial=S.RECEIVED,
    audit_action="support.state_changed",
    states=tuple(State(str(s), s.label, MEANINGS[s], CASE_STATUS[s], **CLAIMS.get(s, {})) for s in S),
    transitions=tuple(
        move([S.RECEIVED, S.ROUTED], S.TRIAGE_FAILED, AGENT, SYSTEM,
             note="the triage failed, stopped, or its run raised: a person triages")
        + move([S.RECEIVED, S.TRIAGE_FAILED], S.ROUTED, AGENT, note="the triage recommends route_specialist")
        + move(TRIAGED_FROM, S.ANSWER_READY, AGENT, note="the triage recommends auto_respond (after the code's guards)")
        + move(S.RECEIVED, S.ESCALATED, AGENT, note="the triage recommends escalate_human")
        + move([S.TRIAGE_FAILED, S.ROUTED], S.ESCALATED, AGENT, PERSON,
               note="the triage recommends escalate_human, or a person escalates it to a group")
        + move([*REPLY_FROM, S.ANSWER_READY], S.REPLY_UNSENT, PERSON,
               note="a person writes the reply, but the customer has no email address: nothing is sent")
        + move(S.REPLY_UNSENT, S.REPLY_QUEUED, PERSON, note="an address was added: a person sends the reply")
        + move(S.ANSWER_READY, S.REPLY_QUEUED, PERSON, SYSTEM,
               note="sent in one click, or by SUPPORT_AUTO_SEND (never a VIP's): the email is queued")
        + move(REPLY_FROM, S.REPLY_QUEUED, PERSON, note="a person sends the reply: the email is queued")
        + move([S.REPLY_QUEUED, S.REPLY_FAILED], S.REPLIED, SYSTEM,
               note="the mail server accepted the reply's email (also one sent again from the admin)")
        + move(S.REPLY_QUEUED, S.REPLY_FAILED, SYSTEM, note="the email failed after its retries")
        + move(S.REPLY_FAILED, S.REPLY_QUEUED, PERSON, note="a person sends the email again")
        + move([S.ANSWER_READY, S.REOPENED], S.ESCALATED, PERSON,
               note="a person escalates it to a group: it waits in that group's queue")
        + move(PENDING_FROM, S.PENDING, PERSON, note="a person asks the customer and waits: the SLA clock pauses")
        + move([S.PENDING, S.CLOSED_INACTIVE], S.ROUTED, SYSTEM,
               note="the customer answered: back to a person, the SLA clock runs again")
        + move(S.PENDING, S.CLOSED_INACTIVE, SYSTEM,
               note="no answer for SUPPORT_AUTO_CLOSE_DAYS: closed under that policy, the case left for a person")
        + move(FINAL, S.REOPENED, SYSTEM,
               note="the customer answered the thread within SUPPORT_REOPEN_DAYS, or said \"not solved\" on the "
                    "reply's feedback link: back to a person, the case reopens")
        + move([s for s in OPEN if s != S.REPLY_QUEUED], S.CLOSED_NO_REPLY, PERSON,
               note="a person escalates elsewhere or closes: no action needed")
    ),
)


def ticket_state_label(key: str) -> str:
    return SUPPORT_LIFECYCLE.label_of(key)
