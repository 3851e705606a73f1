"""`{% support_case case as sup %}`: the support ticket page's view model, computed once per
case object (the overview and the decision box both need it)."""

from __future__ import annotations

from django import template

from agents.models import AgentRun
from casework.cases.masking import masked_for
from casework.support import selectors

register = template.Library()

_ATTR = "_support_view"

TRANSLATION_NOTES = {
    "english": "",
    "translated": "",
    "not_translated_offline": "not translated (no language model configured)",
    "not_translated": "not translated (the translator returned no translation)",
    "failed": "not translated (the translator failed)",
}


def support_view(case) -> dict | None:
    ticket = selectors.ticket_for_case(case)
    if ticket is None:
        return None
    triage = ticket.triage or {}
    translation = triage.get("translation") or {}
    runs = list(AgentRun.objects.filter(case=case, pipeline="support").order_by("-created_at", "-id")[:5])
    messages = list(ticket.messages.select_related("sent_by", "email"))
    replies = [m for m in messages if m.direction == "agent"]
    return {
        "ticket": ticket,
        "customer": ticket.customer,
        "messages": messages,
        # The latest reply was the system's (SUPPORT_AUTO_SEND), not a person's.
        "auto_reply": bool(replies) and replies[-1].auto_sent,
        "sla": selectors.sla_clock(ticket),
        "triage": triage,
        "result": triage.get("result") or {},
        "supervisor": triage.get("supervisor"),
        "kb_hits": triage.get("kb_results") or [],
        "relevant": set((triage.get("result") or {}).get("relevant_articles") or []),
        "translation": translation,
        "translation_note": TRANSLATION_NOTES.get(translation.get("status", ""), ""),
        "running": any(r.is_active for r in runs),
        "latest_run": runs[0] if runs else None,
    }


@register.inclusion_tag("support/_email_state.html", takes_context=True)
def email_state(context, message):
    """What happened to a reply's email, never more: queued (and why it is being retried), the
    time the mail server accepted it, or why it failed; or that it was not emailed at all. The
    customer's address is special-category (masked outside the support teams)."""
    email = message.email
    to = masked_for(context["request"].user, "support_ticket", "email", email.to) if email is not None else ""
    return {"m": message, "email": email, "to": to}


@register.simple_tag
def support_case(case):
    if not hasattr(case, _ATTR):
        setattr(case, _ATTR, support_view(case))
    return getattr(case, _ATTR)


@register.filter
def sla_left(minutes) -> str:
    """Minutes left on an SLA clock as '2 h 05 min left' or '35 min overdue'."""
    if minutes is None:
        return "met"
    overdue = minutes < 0
    minutes = abs(int(minutes))
    text = f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"
    return f"{text} overdue" if overdue else f"{text} left"
