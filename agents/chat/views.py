"""'Ask the agent' on every case page: the panel (loaded by htmx into the case page's tab),
sending a question (the panel comes back at once with the answer "answering"), the answer as
it arrives (its fragment, read by htmx every 400 ms until it is done or failed: polling
rather than server-sent events, so that no web server thread is held for an answer's
length), a new conversation, and an answer's trace."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from agents.chat import selectors, services
from agents.chat.models import ChatMessage, Conversation
from agents.trace_waterfall import waterfall
from audit.tracing import read_trace
from casework.cases.selectors import case_get_for_user
from casework.errors import Conflict
from casework.people.roles import investigator_required


def _panel(request, case, *, error: str = "", status: int = 200):
    conversation = selectors.conversation_current(user=request.user, case=case)
    history = selectors.conversation_history(conversation)
    for m in history:
        if m.status == ChatMessage.Status.ANSWERING:
            services.message_expire_stale(m)
    context = {"case": case, "history": history, "info": selectors.conversation_info(conversation, history),
               "error": error, "answering": any(m.status == ChatMessage.Status.ANSWERING for m in history)}
    if request.htmx:
        return render(request, "chat/_panel.html", context, status=status)
    return redirect("cases:detail", reference=case.reference)


@require_GET
@investigator_required
def panel(request, reference: str):
    return _panel(request, case_get_for_user(request.user, reference))


@require_POST
@investigator_required
def send(request, reference: str):
    case = case_get_for_user(request.user, reference)
    try:
        services.message_ask(actor=request.user, case=case, content=request.POST.get("content", ""))
    except ValidationError as exc:
        return _panel(request, case, error="; ".join(exc.messages), status=400)
    except Conflict as exc:
        return _panel(request, case, error=exc.message, status=409)
    return _panel(request, case)


@require_GET
@investigator_required
def message(request, reference: str, message_id: int):
    """One answer as it stands; once it is done or failed, the panel's figures come with it."""
    case = case_get_for_user(request.user, reference)
    answer = ChatMessage.objects.filter(pk=message_id, role=ChatMessage.Role.ASSISTANT,
                                        conversation__case=case, conversation__user=request.user).first()
    if answer is None:
        raise Http404("No such answer on this case.")
    services.message_expire_stale(answer)
    context = {"case": case, "m": answer}
    if answer.status != ChatMessage.Status.ANSWERING:
        history = selectors.conversation_history(answer.conversation)
        context |= {"info": selectors.conversation_info(answer.conversation, history), "oob": True}
    return render(request, "chat/_message.html", context)


@require_POST
@investigator_required
def new(request, reference: str):
    case = case_get_for_user(request.user, reference)
    services.conversation_start(actor=request.user, case=case)
    return _panel(request, case)


@require_GET
@investigator_required
def trace(request, reference: str, trace_id: str):
    case = case_get_for_user(request.user, reference)
    if not re.fullmatch(r"[0-9a-f]{32}", trace_id) or not Conversation.objects.filter(
            case=case, user=request.user, trace_id=trace_id).exists():
        raise Http404("No such answer on this case.")
    return render(request, "chat/trace.html", {"case": case, "trace_id": trace_id,
                                               "wf": waterfall(read_trace(trace_id))})
