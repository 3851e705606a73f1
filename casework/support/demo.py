"""The support demo loader: customers and articles, then every ticket produced by sending its
messages through the pipeline (intake, then triage), in this process, one after the other,
so that a follow-up finds its ticket active. Nothing about a triage is set by hand."""

from __future__ import annotations

from django.db import transaction

from casework.support.demo_data import CUSTOMERS, KB_ARTICLES, TICKETS
from casework.support.models import Ticket

# Auto-answers the demo sends as the system would with SUPPORT_AUTO_SEND=true; the others wait
# for one click.
AUTO_SENT = 2


def _run_now(run) -> None:
    """Run an enqueued run here and now (the worker, if one gets the message, finds it done)."""
    from agents.models import AgentRun
    from agents.tasks import run_pipeline

    run_pipeline.apply(args=(run.pk,))
    run.refresh_from_db()
    for triage in AgentRun.objects.filter(case_id=run.case_id, mode="triage", status=AgentRun.Status.QUEUED):
        run_pipeline.apply(args=(triage.pk,))


def _receive(actor, customer_id: str, message: str, channel: str) -> Ticket | None:
    from casework.support.services import message_receive

    with transaction.atomic():
        run = message_receive(actor=actor, customer_id=customer_id, message=message, channel=channel)
    _run_now(run)
    run.refresh_from_db()
    return Ticket.objects.select_related("case").filter(case_id=run.case_id).first()


def demo_load_support(*, users: dict) -> int:
    """Idempotent: if any ticket exists, it creates nothing."""
    from casework.cases.services import case_assign
    from casework.support.services import (
        customer_save,
        kb_article_save,
        ticket_auto_send,
        ticket_close_no_action,
        ticket_escalate,
        ticket_reply,
    )

    if Ticket.objects.exists():
        return 0
    for customer_id, name, plan, tenure, seats, region, vip in CUSTOMERS:
        customer_save(actor="system", data={"customer_id": customer_id, "name": name, "plan": plan,
                                            "tenure_months": tenure, "seats": seats, "region": region, "vip": vip,
                                            "email": f"{customer_id.lower()}@example.com"})
    for article_id, category, title, body in KB_ARTICLES:
        kb_article_save(actor="system", data={"article_id": article_id, "category": category, "title": title,
                                              "body": body})
    # The support desk's agent (ivan in the demo; alice where a test loads this alone).
    agent = users.get("ivan") or users.get("alice") or "system"
    created, auto_sent = 0, 0
    for customer_id, channel, message, then, follow_ups in TICKETS:
        ticket = _receive("system", customer_id, message, channel)
        if ticket is None:
            continue
        created += 1
        for follow_up in follow_ups:
            _receive("system", customer_id, follow_up, channel)
        ticket.refresh_from_db()
        if ticket.recommended_action == "auto_respond" and not then and auto_sent < AUTO_SENT:
            # As the system does with SUPPORT_AUTO_SEND=true, so the spot-check list has rows.
            auto_sent += bool(ticket_auto_send(actor="system", ticket=ticket))
        if not then or agent == "system":
            continue
        ticket.refresh_from_db()
        case_assign(actor=agent, case=ticket.case, assignee=agent)
        if then == "reply":
            ticket_reply(actor=agent, ticket=ticket, body=(ticket.suggested_reply or "Thanks, we are on it.")
                         + "\n\nP.S. Reply to this email if anything is still unclear.")
        elif then == "escalate":
            ticket_escalate(actor=agent, ticket=ticket, reason="Outage for an enterprise customer: on-call paged.")
        elif then == "close":
            ticket_close_no_action(actor=agent, ticket=ticket, reason="The customer solved it themselves.")
    return created
