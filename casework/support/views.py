"""Support pages: the queue with SLA clocks, the ticket's live triage and its actions,
logging an inbound message, auto-sent replies for spot checks, KB articles. Investigators only."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from casework.errors import DomainError
from casework.people.roles import investigator_required
from casework.security.throttles import page_throttle
from casework.support import selectors, services
from casework.support.forms import EscalateToGroupForm, MessageForm, ReasonForm, ReplyForm
from casework.support.states import WAITING, TicketState
from casework.support.templatetags.support_tags import support_view

PAGE_SIZE = 25
# ?show=: which tickets the queue lists, by the ticket's state (casework.support.states).
QUEUE_VIEWS = {
    "": ("All waiting", WAITING),
    "failed": ("Triage failed", (TicketState.TRIAGE_FAILED,)),
    "escalated": ("Escalated", (TicketState.ESCALATED,)),
    "routed": ("Routed", (TicketState.ROUTED,)),
    "one-click": ("Answer ready", (TicketState.ANSWER_READY,)),
    "reopened": ("Reopened", (TicketState.REOPENED,)),
    "pending": ("Pending on the customer", (TicketState.PENDING,)),
    "inactive": ("Closed for inactivity", (TicketState.CLOSED_INACTIVE,)),
}


def _ticket(request, ticket_id: str):
    return selectors.ticket_get_for_user(request.user, ticket_id)


@require_GET
@investigator_required
def queue(request):
    from casework.support.models import SupportGroup

    show = request.GET.get("show", "")
    states = QUEUE_VIEWS.get(show, QUEUE_VIEWS[""])[1]
    group = request.GET.get("group", "")
    group = group if group in SupportGroup.Key.values else ""
    page = Paginator(selectors.support_queue(request.user, states=states, group=group), PAGE_SIZE).get_page(request.GET.get("page"))
    rows = [(ticket, selectors.sla_clock(ticket)) for ticket in page.object_list]
    return render(request, "support/queue.html", {"page": page, "rows": rows, "show": show, "group": group,
                                                  "groups": SupportGroup.objects.all(),
                                                  "views": [(key, label) for key, (label, _) in QUEUE_VIEWS.items()]})


@require_GET
@investigator_required
def auto_sent(request):
    page = Paginator(selectors.auto_sent_replies(request.user), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "support/auto_sent.html", {"page": page})


@require_GET
@investigator_required
def kb_article(request, article_id: str):
    return render(request, "support/kb_article.html", {"article": selectors.kb_article_get(article_id)})


@require_http_methods(["GET", "POST"])
@investigator_required
def message_new(request):
    form = MessageForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            run = services.message_receive(actor=request.user, customer_id=form.cleaned_data["customer_id"].customer_id,
                                           message=form.cleaned_data["message"], channel=form.cleaned_data["channel"])
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            run.refresh_from_db()
            if run.case_id:
                messages.success(request, "Message received and triaged.")
                return redirect("cases:detail", reference=run.case.reference)
            messages.info(request, "Message received; it is being matched to a ticket (the queue shows it soon).")
            return redirect("support:queue")
    return render(request, "support/message_new.html", {"form": form}, status=400 if form.errors else 200)


@require_GET
@investigator_required
def triage(request, ticket_id: str):
    """The triage block, polled by htmx while a run is active."""
    ticket = _ticket(request, ticket_id)
    case = ticket.case
    sup = support_view(case)
    response = render(request, "support/_triage.html", {"case": case, "sup": sup})
    if request.GET.get("was_running") and not sup["running"] and request.htmx:
        # The run ended: reload the page so the thread and the reply box show its results too.
        response["HX-Refresh"] = "true"
    return response


def _act(request, ticket_id: str, form_class, action, done):
    ticket = _ticket(request, ticket_id)
    form = form_class(request.POST)
    if not form.is_valid():
        # Named by field, as the case pages do ("group: Select a valid choice ...").
        messages.error(request, "; ".join(f"{name}: {m}" for name, errors in form.errors.items() for m in errors))
        return redirect("cases:detail", reference=ticket.case.reference)
    try:
        result = action(actor=request.user, ticket=ticket, **form.cleaned_data)
        messages.success(request, done(result) if callable(done) else done)
    except DomainError as exc:
        messages.error(request, exc.message)
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    return redirect("cases:detail", reference=ticket.case.reference)


@require_POST
@investigator_required
def reply(request, ticket_id: str):
    return _act(request, ticket_id, ReplyForm, services.ticket_reply, lambda message: (
        "Reply queued: the case closes as replied once the customer's mail server accepts the email "
        "(the thread shows when it went out)." if message.email_id or (message.translation or {}).get("status")
        else "Reply written, not sent: the customer has no email address. Add it and send the reply, or close "
             "the case without a reply."))


@require_POST
@investigator_required
def resend(request, ticket_id: str):
    """Send a reply whose email failed again, or a written one once the customer has an address."""
    ticket = _ticket(request, ticket_id)
    try:
        services.ticket_reply_resend(actor=request.user, ticket=ticket)
        messages.success(request, "The reply's email is queued.")
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("cases:detail", reference=ticket.case.reference)


@require_POST
@investigator_required
def escalate(request, ticket_id: str):
    return _act(request, ticket_id, ReasonForm, services.ticket_escalate, "Ticket escalated.")


@require_POST
@investigator_required
def close(request, ticket_id: str):
    return _act(request, ticket_id, ReasonForm, services.ticket_close_no_action, "Closed with no action.")


@require_POST
@investigator_required
def escalate_group(request, ticket_id: str):
    from casework.support.groups import ticket_escalate_to_group_by_person

    return _act(request, ticket_id, EscalateToGroupForm, ticket_escalate_to_group_by_person,
                "Escalated to the group; its members were told.")


@require_POST
@investigator_required
def pending(request, ticket_id: str):
    from casework.support.waiting import ticket_set_pending

    return _act(request, ticket_id, ReplyForm, ticket_set_pending,
                "Question sent; the ticket waits on the customer and its SLA clock is paused.")


# --- the customer's one-click feedback (public: a signed link, no login) -------------------

_FEEDBACK_REFUSED = {"forged": 400, "expired": 410, "answered": 409}


@login_not_required
@never_cache
@page_throttle("signed_link")
@require_http_methods(["GET", "POST"])
def feedback(request, token: str):
    """GET shows the two buttons (nothing changes on a GET: mail scanners open links); POST
    (CSRF-checked) records the answer. A forged, expired or answered link says which."""
    from casework.support.feedback import feedback_check, ticket_feedback_record

    link = feedback_check(token)
    if request.method == "POST":
        answer = request.POST.get("answer", "")
        if answer not in ("solved", "not_solved"):
            return render(request, "support/feedback.html", {"link": link, "token": token,
                                                             "error": "answer: choose solved or not solved."},
                          status=400)
        link, recorded = ticket_feedback_record(token=token, solved=answer == "solved")
        if recorded is not None:
            return render(request, "support/feedback_thanks.html", {"feedback": recorded})
    if not link.ok:
        return render(request, "support/feedback_refused.html", {"link": link},
                      status=_FEEDBACK_REFUSED[link.state])
    return render(request, "support/feedback.html", {"link": link, "token": token})
