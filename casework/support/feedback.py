""""Did this answer your question?" (issue 25.5): a signed link under every reply that went out
(an auto-answer, a person's reply), to a public page with two buttons, solved / not solved.

The token is `{"m": message id, "t": ticket id}` signed with django.core.signing.Signer under
its own salt (as the access module's employee links): it cannot be forged without SECRET_KEY
nor moved to another reply. It carries no timestamp, so a reply always has the same link; the
link expires SUPPORT_FEEDBACK_LINK_DAYS after the reply was sent (the database's answer, with an
injectable now). One answer per reply: the database's unique message keeps a second one out.

"Not solved" sends the ticket back to a person through its lifecycle (reopened; a closed case
reopens, its decision kept on record, no longer final), audited with the customer as the actor
("customer:<id> via feedback link"). "Solved" is recorded (and audited). The dashboard reads
TicketFeedback (casework.support.dashboard).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core import signing
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from audit.services import audit_record
from casework.support.models import Ticket, TicketFeedback, TicketMessage

SALT = "casework.support.feedback.v1"
PROMPT = "Did this answer your question? Tell us in one click:"


def _signer() -> signing.Signer:
    return signing.Signer(salt=SALT)


def feedback_token(ticket: Ticket, message: TicketMessage) -> str:
    return _signer().sign_object({"m": message.pk, "t": ticket.pk})


def feedback_url(ticket: Ticket, message: TicketMessage) -> str:
    """The absolute link a reply carries (SITE_URL + the public page)."""
    return settings.SITE_URL.rstrip("/") + reverse("support:feedback", args=[feedback_token(ticket, message)])


def feedback_append(ticket: Ticket, message: TicketMessage) -> TicketMessage:
    """Put the link under a reply's text (what the customer receives), in the reply's transaction."""
    message.text = f"{message.text}\n\n{PROMPT} {feedback_url(ticket, message)}"
    TicketMessage.objects.filter(pk=message.pk).update(text=message.text)
    return message


def feedback_expires_at(message: TicketMessage) -> datetime:
    return message.created_at + timedelta(days=settings.SUPPORT_FEEDBACK_LINK_DAYS)


@dataclass
class FeedbackLink:
    state: str  # ok | forged | expired | answered
    message: TicketMessage | None = None

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    def text(self) -> str:
        m = self.message
        if self.state == "forged" or m is None:
            return ("This link is not valid. It may have been copied only in part, or changed. "
                    "Open it from the message you received again, or reply to that message.")
        if self.state == "expired":
            return (f"This link expired on {feedback_expires_at(m):%d %B %Y} UTC. If you still need help, "
                    "reply to the message and the team will pick it up.")
        if self.state == "answered":
            answer = "solved" if m.feedback.solved else "not solved"
            return f"You already told us this reply left your question {answer}, on {m.feedback.created_at:%d %B %Y}. Thank you."
        return ""


def feedback_check(token: str, *, now: datetime | None = None) -> FeedbackLink:
    """What a token is (forged, expired, answered, or ok); reads only."""
    now = now or timezone.now()
    try:
        data = _signer().unsign_object(token)
        message_id, ticket_id = int(data["m"]), int(data["t"])
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        return FeedbackLink("forged")
    message = (TicketMessage.objects.select_related("ticket__case", "ticket__customer", "feedback")
               .filter(pk=message_id, ticket_id=ticket_id, direction=TicketMessage.Direction.AGENT).first())
    if message is None:
        return FeedbackLink("forged")
    if hasattr(message, "feedback"):
        return FeedbackLink("answered", message)
    if now > feedback_expires_at(message):
        return FeedbackLink("expired", message)
    return FeedbackLink("ok", message)


def _backing_article(ticket: Ticket) -> str:
    """The KB article the reply rests on: the first the triage's specialist cited (kb_search checked)."""
    articles = ((ticket.triage or {}).get("result") or {}).get("relevant_articles") or []
    return str(articles[0])[:20] if articles else ""


@transaction.atomic
def ticket_feedback_record(*, token: str, solved: bool, now: datetime | None = None) -> tuple[FeedbackLink, TicketFeedback | None]:
    """Record the customer's answer; "not solved" reopens the ticket to a person. Returns the
    link's state and the answer (None when the link was refused)."""
    from casework.cases.services import case_reopen
    from casework.support.states import FINAL, TicketState
    from casework.support.tickets import _lock, _move

    now = now or timezone.now()
    link = feedback_check(token, now=now)
    if not link.ok:
        return link, None
    message = link.message
    ticket = _lock(message.ticket)
    actor = f"customer:{ticket.customer.customer_id} via feedback link"
    try:
        with transaction.atomic():
            feedback = TicketFeedback.objects.create(
                message=message, ticket=ticket, solved=solved, auto_sent=message.auto_sent,
                category=ticket.ticket_type, article_id=_backing_article(ticket), created_at=now)
    except IntegrityError:
        message.refresh_from_db()
        return FeedbackLink("answered", TicketMessage.objects.select_related("feedback").get(pk=message.pk)), None
    audit_record(actor=actor, action="support.feedback_solved" if solved else "support.feedback_not_solved",
                 case=ticket.case, obj=feedback,
                 data={"ticket_id": ticket.ticket_id, "message": message.pk, "auto_sent": message.auto_sent,
                       "article_id": feedback.article_id, "category": feedback.category})
    if not solved and ticket.lifecycle in FINAL:
        reason = f"The customer said the reply of {message.created_at:%Y-%m-%d %H:%M} UTC did not solve it."
        if ticket.case.is_closed:
            case_reopen(actor=actor, case=ticket.case, reason=reason)
        ticket.completed_at = None
        _move(actor=actor, ticket=ticket, to=TicketState.REOPENED, reason=reason,
              data={"feedback": feedback.pk}, save=("completed_at",))
    return link, feedback
