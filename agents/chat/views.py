"""'Ask the agent' on every case page: the panel (loaded by htmx into the case page's tab),
sending a question (the answer is rendered into the panel when it is complete: not streamed,
an htmx indicator shows while the agent works), a new conversation, and an answer's trace."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from agents.chat import selectors, services
from agents.chat.models import Conversation
from audit.tracing import read_trace, trace_tree
from casework.cases.selectors import case_get_for_user
from casework.people.roles import investigator_required


def _panel(request, case, *, error: str = "", status: int = 200):
    conversation = selectors.conversation_current(user=request.user, case=case)
    history = selectors.conversation_history(conversation)
    context = {"case": case, "history": history, "info": selectors.conversation_info(conversation, history),
               "error": error}
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
        services.message_send(actor=request.user, case=case, content=request.POST.get("content", ""))
    except ValidationError as exc:
        return _panel(request, case, error="; ".join(exc.messages), status=400)
    return _panel(request, case)


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
                                               "spans": trace_tree(read_trace(trace_id))})
