"""The support ticket's lifecycle (Ticket.lifecycle), in one table (seed 001, "Post-Workflow").

    received ──agent──> routed ─────────────┐
        │   ──agent──> answer_ready ──system (SUPPORT_AUTO_SEND)──> replied
        │   ──agent──> escalated            │
        └───agent/system──> triage_failed   │
    any open state ──person (one click: send the reply)──> replied
    any open state ──person (escalate elsewhere, no action needed)──> closed_no_reply

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

Each state puts the shared case in the queue (State.case_status). The two end states are
reached by a person's decision, which has closed the case already (the transition service then
leaves it closed); only an auto-sent reply reaches "replied" on an open case, which then awaits
the customer until a person confirms it. closed_no_reply says Closed: only a person's move
enters it (tests/cases/test_lifecycles.py holds every type to that).
"""

from __future__ import annotations

from django.db import models

from casework.cases.lifecycle.table import AGENT, PERSON, SYSTEM, Lifecycle, State, move


class TicketState(models.TextChoices):
    RECEIVED = "received", "Received, being triaged"
    TRIAGE_FAILED = "triage_failed", "Triage failed"
    ROUTED = "routed", "Routed to a specialist"
    ANSWER_READY = "answer_ready", "Reply drafted, not sent"
    ESCALATED = "escalated", "Escalated, open"
    REPLY_QUEUED = "reply_queued", "Reply written, email queued"
    REPLY_FAILED = "reply_failed", "Reply not delivered"
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
    S.REPLY_QUEUED: "A reply was written (by a person, or by SUPPORT_AUTO_SEND) and its email is queued: "
                     "nothing has reached the customer yet. The email worker moves it on.",
    S.REPLY_FAILED: "The reply's email could not be delivered after its retries (the reason is on the page): "
                    "the customer has not got it. A person sends it again or closes the ticket.",
    S.REPLIED: "A reply really went out (its email was accepted by the mail server, or, for a customer with no "
               "address, it was recorded for the channel it came from): a person's one click (which closes the case as replied) or "
               "SUPPORT_AUTO_SEND (the case then awaits the customer until a person confirms the reply).",
    S.REOPENED: "The customer answered a solved ticket's thread within SUPPORT_REOPEN_DAYS (In-Reply-To, References "
                "or the ticket id in the subject): it is back with a person, never auto-answered; its case reopened. "
                "Follow-ups join it.",
    S.CLOSED_NO_REPLY: "A person closed the case without a reply (escalated elsewhere, or no action needed). "
                       "Reached only once the decision closed the case; the SLA clock stops.",
}

CASE_STATUS = {
    S.RECEIVED: "new",
    # A person has to act and no agent recommended anything: the working part of the queue
    # (as access's Manual Intervention Required).
    S.TRIAGE_FAILED: "in_progress",
    S.ROUTED: "awaiting_decision",
    S.ANSWER_READY: "awaiting_decision",
    S.ESCALATED: "awaiting_decision",
    S.REPLY_QUEUED: "awaiting_response",
    # A person has to act: the reply did not reach the customer.
    S.REPLY_FAILED: "in_progress",
    S.REPLIED: "awaiting_response",
    S.CLOSED_NO_REPLY: "closed",
    S.REOPENED: "in_progress",
}

# Solved: a reply went out or a person closed it. Not dead ends: the customer's answer to the
# thread reopens it (within SUPPORT_REOPEN_DAYS), so the table marks no state final.
FINAL = frozenset({S.REPLIED, S.CLOSED_NO_REPLY})
OPEN = tuple(s for s in S if s not in FINAL)
# A triage's result: where the triage's recommended action puts the ticket.
FOR_ACTION = {"route_specialist": S.ROUTED, "auto_respond": S.ANSWER_READY, "escalate_human": S.ESCALATED}
# A new message of the customer may join these (the seed keeps them in Redis); the others were
# persisted, and a new message opens a new ticket.
MATCHABLE = (S.RECEIVED, S.TRIAGE_FAILED, S.ROUTED, S.REOPENED)
# Waiting for a person: the support queue.
WAITING = (S.TRIAGE_FAILED, S.ROUTED, S.ANSWER_READY, S.ESCALATED, S.REPLY_FAILED, S.REOPENED)
# Sending a reply: a person's, or SUPPORT_AUTO_SEND's (from answer_ready).
REPLY_FROM = (S.RECEIVED, S.TRIAGE_FAILED, S.ROUTED, S.ESCALATED, S.REOPENED)
# A triage (a new one after a follow-up, too) may route the ticket from these.
TRIAGED_FROM = (S.RECEIVED, S.TRIAGE_FAILED, S.ROUTED)

SUPPORT_LIFECYCLE = Lifecycle(
    key="support_ticket",
    label="Support ticket (seed 001)",
    record="support.Ticket",
    field="lifecycle",
    initial=S.RECEIVED,
    audit_action="support.state_changed",
    states=tuple(State(str(s), s.label, MEANINGS[s], CASE_STATUS[s]) for s in S),
    transitions=tuple(
        move([S.RECEIVED, S.ROUTED], S.TRIAGE_FAILED, AGENT, SYSTEM,
             note="the triage failed, stopped, or its run raised: a person triages")
        + move([S.RECEIVED, S.TRIAGE_FAILED], S.ROUTED, AGENT, note="the triage recommends route_specialist")
        + move(TRIAGED_FROM, S.ANSWER_READY, AGENT, note="the triage recommends auto_respond (after the code's guards)")
        + move(TRIAGED_FROM, S.ESCALATED, AGENT, note="the triage recommends escalate_human")
        + move(S.ANSWER_READY, S.REPLIED, PERSON, SYSTEM,
               note="sent in one click, or by SUPPORT_AUTO_SEND (never a VIP's), to a customer with no email address")
        + move(REPLY_FROM, S.REPLIED, PERSON,
               note="a person sends the reply to a customer with no email address (closes the case as replied)")
        + move(S.ANSWER_READY, S.REPLY_QUEUED, PERSON, SYSTEM,
               note="sent in one click, or by SUPPORT_AUTO_SEND (never a VIP's): the email is queued")
        + move(REPLY_FROM, S.REPLY_QUEUED, PERSON, note="a person sends the reply: the email is queued")
        + move([S.REPLY_QUEUED, S.REPLY_FAILED], S.REPLIED, SYSTEM,
               note="the mail server accepted the reply's email (also one sent again from the admin)")
        + move(S.REPLY_QUEUED, S.REPLY_FAILED, SYSTEM, note="the email failed after its retries")
        + move(S.REPLY_FAILED, S.REPLY_QUEUED, PERSON, note="a person sends the email again")
        + move(FINAL, S.REOPENED, SYSTEM,
               note="the customer answered the thread within SUPPORT_REOPEN_DAYS: back to a person, the case reopens")
        + move([s for s in OPEN if s != S.REPLY_QUEUED], S.CLOSED_NO_REPLY, PERSON,
               note="a person escalates elsewhere or closes: no action needed")
    ),
)


def ticket_state_label(key: str) -> str:
    return SUPPORT_LIFECYCLE.label_of(key)
