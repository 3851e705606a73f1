"""What a support ticket adds to the evaluation harness (agents.evals), registered on its
CaseType (casework.cases.types.case_type_register_evaluation): a scenario's customers,
knowledge-base articles and earlier messages are saved, then its message is received as the API
receives one; a decided case becomes a scenario (the first message, the customer masked, the
articles as they are)."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from casework.cases.types import Evaluation, Grounding

ACTOR = "evaluation"

# The person's outcome -> what the triage should have concluded.
DECISION_FIELDS = {"escalated": {"case.priority": ["high", "critical"]}}


def submit_support(data: dict, reference: dict) -> None:
    from casework.support.services import customer_save, kb_article_save, message_receive

    with transaction.atomic():
        for customer in reference.get("customers", []):
            customer_save(actor=ACTOR, data=customer)
        for article in reference.get("articles", []):
            kb_article_save(actor=ACTOR, data=article)
    for earlier in reference.get("earlier_messages", []):
        with transaction.atomic():
            message_receive(actor=ACTOR, customer_id=earlier["customer_id"], message=earlier["message"])
        _drain()
    with transaction.atomic():
        message_receive(actor=ACTOR, customer_id=data["customer_id"], message=data["message"],
                        channel=data.get("channel", "api"))


def support_scenario_parts(ticket, mask):
    customer = ticket.customer
    first = ticket.messages.filter(direction="customer").order_by("id").first()
    customer_id = mask("customer", customer.customer_id)
    reference = {
        "customers": [{"customer_id": customer_id, "name": mask("name", customer.name), "plan": customer.plan,
                       "tenure_months": customer.tenure_months, "seats": customer.seats, "region": customer.region,
                       "vip": customer.vip}],
        "articles": [{"article_id": a.article_id, "category": a.category, "title": a.title, "body": a.body}
                     for a in _articles()],
    }
    fields = {"record.ticket_type": ticket.ticket_type} if ticket.ticket_type else {}
    return {"customer_id": customer_id, "message": mask.text(first.text if first else "")}, reference, fields


def _articles():
    from casework.support.models import KBArticle

    return KBArticle.objects.order_by("article_id")[:50]


def _drain() -> None:
    from agents.evals.runner import drain_runs

    drain_runs()


def support_statements(case) -> list[str]:
    """What the triage and the specialists state: the suggested reply and their reasoning."""
    from agents.evals.grounding import outputs_of, texts_in

    return texts_in(outputs_of(case), ("suggested_response", "reasoning"))


def _grounding() -> Grounding:
    from agents.evals.grounding import AMOUNT

    # Article and customer ids, amounts, and every number (a plan's seats, an invoice total).
    return Grounding(statements=support_statements, numbers=True,
                     items={"article id": r"\bkb_\w+", "customer id": r"\bCUST-[A-Z0-9-]*\d", "amount": AMOUNT})


EVALUATION = Evaluation(submit=submit_support, export=support_scenario_parts, decision_fields=DECISION_FIELDS,
                        grounding=_grounding(),
                        suite_dir=Path(__file__).resolve().parent / "scenarios",
                        setting_prefixes=("SUPPORT",))
