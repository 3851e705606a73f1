"""What a transaction investigation adds to "Ask the agent" (agents.chat), registered on its
CaseType (casework.cases.types.case_type_register_chat): two read-only tools,
get_card_transactions (the card's history, newest first) and get_investigation_record (the tool
executions, planner decisions, insights and recommendations of the investigation); and the
investigated transaction in the conversation's context.

Every handler reads only and takes the case reference, so a question about another
investigation works as the person's own access allows.
"""

from __future__ import annotations

from pydantic import Field

from agents.chat.context import CaseArgs
from agents.runtime.tools import Tool

LIMIT = 50


class CardArgs(CaseArgs):
    limit: int = Field(default=20, ge=1, le=LIMIT, description="How many transactions, newest first.")


def _investigation(reference: str):
    from casework.transactions.models import Investigation

    investigation = (Investigation.objects.select_related("case", "transaction__account")
                     .filter(case__reference=reference.upper()).first())
    if investigation is None:
        raise LookupError(f"No transaction investigation on case {reference!r}.")
    return investigation


def get_card_transactions(args: CardArgs) -> dict:
    """The investigated card's transactions, newest first (amount, merchant and MCC, country,
    channel, device, time, and whether it was labelled fraud), and which one is investigated."""
    investigation = _investigation(args.reference)
    card = investigation.transaction.account
    rows = card.transactions.order_by("-occurred_at", "-id")[:args.limit]
    return {"card": card.account_id, "home_country": card.home_country,
            "investigated": investigation.transaction.transaction_id, "count": card.transactions.count(),
            "transactions": [{"transaction_id": t.transaction_id, "amount": str(t.amount), "currency": t.currency,
                              "merchant": t.merchant, "mcc": t.mcc, "country": t.country, "channel": t.channel,
                              "device_id": t.device_id, "occurred_at": t.occurred_at.isoformat(),
                              "is_fraud": t.is_fraud} for t in rows]}


def get_investigation_record(args: CaseArgs) -> dict:
    """The investigation as recorded: status, severity and confidence, every tool execution
    (step, tool, status, time, output summary or error), the planner's decisions, the insights
    (hypotheses and evidence) and the recommendations with their status."""
    inv = _investigation(args.reference)
    return {
        "reference": inv.case.reference, "status": inv.status, "severity": inv.assessed_severity,
        "confidence": inv.confidence_score, "summary": inv.summary, "error": inv.error,
        "tool_executions": [{"step": t.step, "tool": t.tool_name, "status": t.status,
                             "execution_time_ms": t.execution_time_ms, "output": t.output_summary,
                             "error": t.error_message} for t in inv.tool_executions.order_by("step", "id")[:LIMIT]],
        "planner_decisions": [{"step": d.step, "tool": d.selected_tool, "reason": d.reason[:300],
                               "used_fallback": d.used_fallback} for d in inv.planner_decisions.order_by("step")[:LIMIT]],
        "insights": [{"kind": i.kind, "title": i.title, "confidence": i.confidence, "evidence": i.evidence[:5]}
                     for i in inv.insights.all()[:LIMIT]],
        "recommendations": [{"action": r.action, "title": r.title, "status": r.status, "priority": r.priority}
                            for r in inv.recommendations.all()[:LIMIT]],
    }


def transaction_chat_tools() -> tuple[Tool, ...]:
    return (Tool("get_card_transactions", get_card_transactions.__doc__.strip(), CardArgs, get_card_transactions,
                 consequence="read_only"),
            Tool("get_investigation_record", get_investigation_record.__doc__.strip(), CaseArgs,
                 get_investigation_record, consequence="read_only"))


def transaction_chat_context(case) -> dict:
    inv = getattr(case, "txn_investigation", None)
    if inv is None:
        return {}
    txn = inv.transaction
    return {"investigation": {"status": inv.status, "severity": inv.assessed_severity, "card": txn.account.account_id,
                              "transaction_id": txn.transaction_id, "amount": str(txn.amount),
                              "currency": txn.currency, "merchant": txn.merchant}}
